"""The harness catches a wrong pipeline: each deliberately broken variant of the job (tests/broken_variants.py)
makes the scenario aimed at its bug fail. (`make broken-variants` runs every suite against every variant.)"""

from __future__ import annotations

import pytest

from sandbox import scenario as scenarios
from sandbox.config import PROJECT_ROOT
from sandbox.errors import SandboxError
from sandbox.oracle import Oracle, RunStats
from tests.broken_variants import VARIANTS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCENARIOS = PROJECT_ROOT / "fixtures" / "scenarios"
CATCHING_SCENARIO = {
    "order-by-timestamp": "source-clock-skew.yaml",
    "drop-deletes": "delete-then-reinsert.yaml",
    "skip-table": "delete-then-reinsert.yaml",
    "off-by-one-commit": "primary-key-update.yaml",
}
WAIT_FOR_SKIPPED_TABLE = 30  # seconds: the table never commits, the oracle's wait must give up and say so (a round of a healthy job takes under 10 s)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_broken_job_is_caught(variant, sandbox, pipeline_factory, mutator, monkeypatch):
    spec = scenarios.load(SCENARIOS / CATCHING_SCENARIO[variant])
    VARIANTS[variant](monkeypatch)
    pipeline = pipeline_factory(only=spec.tables, branch=False)  # written by the broken job from the first change
    pipeline.run_once()  # the topics' backlog, on a JVM maybe cold: the oracle's wait is for the scenario's changes
    oracle = Oracle(sandbox, pipeline, mutator, timeout=WAIT_FOR_SKIPPED_TABLE, stats=RunStats())
    with pytest.raises((AssertionError, SandboxError)) as caught:
        scenarios.run(spec, pipeline, mutator, oracle)
    message = str(caught.value)
    waited_in_vain = isinstance(caught.value, SandboxError) and "timed out" in message and spec.tables[0] in message
    if variant == "skip-table":
        assert waited_in_vain, message
    elif variant == "drop-deletes":  # a batch of deletes only commits nothing: silver never reaches their position
        assert isinstance(caught.value, AssertionError) or waited_in_vain, message
    else:
        assert isinstance(caught.value, AssertionError), message
