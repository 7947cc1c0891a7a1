"""The harness catches a wrong pipeline: each deliberately broken variant of the job (tests/broken_variants.py)
makes the scenario aimed at its bug fail. (`make broken-variants` runs every suite against every variant.)"""

from __future__ import annotations

import pytest

from sandbox import scenario as scenarios
from sandbox.config import PROJECT_ROOT
from sandbox.oracle import Oracle, RunStats
from sandbox.pipeline import SilverBehind
from tests.broken_variants import VARIANTS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCENARIOS = PROJECT_ROOT / "fixtures" / "scenarios"
CATCHING_SCENARIO = {
    "order-by-timestamp": "source-clock-skew.yaml",
    "drop-deletes": "delete-then-reinsert.yaml",
    "skip-table": "delete-then-reinsert.yaml",
    "off-by-one-commit": "primary-key-update.yaml",
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_broken_job_is_caught(request, variant, sandbox, pipeline_factory, mutator, monkeypatch):
    spec = scenarios.load(SCENARIOS / CATCHING_SCENARIO[variant])
    VARIANTS[variant](monkeypatch)
    pipeline = pipeline_factory(only=spec.tables, branch=False)  # written by the broken job from the first change
    pipeline.run_once()  # the topics' backlog, on a JVM maybe cold: the oracle's wait is for the scenario's changes
    oracle = Oracle(sandbox, pipeline, mutator, timeout=request.config.getoption("--oracle-timeout"), stats=RunStats())
    with pytest.raises(AssertionError) as caught:  # a verdict, not a time-out (SandboxError)
        scenarios.run(spec, pipeline, mutator, oracle)
    message = str(caught.value)
    if variant == "skip-table":  # the job reads the table's changes and never commits them: said at once
        assert isinstance(caught.value, SilverBehind) and spec.tables[0] in message, message
