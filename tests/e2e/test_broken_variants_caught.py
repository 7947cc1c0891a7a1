"""The harness catches a wrong pipeline: each deliberately broken variant of the job (tests/broken_variants.py)
makes the scenario aimed at its bug fail. (`make broken-variants` runs every suite against every variant.)"""

from __future__ import annotations

import pytest

from sandbox import scenario as scenarios
from sandbox.config import PROJECT_ROOT
from sandbox.oracle import DuplicateKeys, Oracle, OracleMismatch, RunStats, WrongTypes
from sandbox.pipeline import SilverBehind
from tests.broken_variants import VARIANTS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCENARIOS = PROJECT_ROOT / "fixtures" / "scenarios"
CAUGHT_BY = {  # variant -> the scenario aimed at its bug, and the kinds of failure the bug must cause
    "order-by-timestamp": ("source-clock-skew.yaml", {OracleMismatch}),  # a wrong value
    # The key's update in the new partition loses to its earlier change at a larger offset: an older value.
    "order-by-kafka-offset": ("topic-gains-partitions.yaml", {OracleMismatch}),
    # A delete that shares its micro-batch with other changes leaves the row live (a wrong value); one alone in its
    # batch leaves nothing to commit, so the job moves past it without a commit (SilverBehind).
    "drop-deletes": ("delete-then-reinsert.yaml", {OracleMismatch, SilverBehind}),
    "skip-table": ("delete-then-reinsert.yaml", {SilverBehind}),  # the job reads the changes and never commits them
    "offset-in-key": ("same-transaction-updates.yaml", {DuplicateKeys}),
    "widened-integers": ("same-transaction-updates.yaml", {WrongTypes}),
    "insert-not-upsert": ("same-transaction-updates.yaml", {DuplicateKeys}),
    "zone-shifted-times": ("source-clock-skew.yaml", {OracleMismatch}),  # `date` holds a date column
    "money-as-double": ("binlog-column-added.yaml", {WrongTypes}),  # the added column is a decimal(8,2)
    "dropped-added-column": ("binlog-column-added.yaml", {OracleMismatch}),  # the column's values are missing
    "empty-deletes": ("delete-then-reinsert.yaml", {OracleMismatch}),  # a soft-deleted row without its values
    # The outage's batch lands in the quarantine and its offsets are committed: silver never reaches the changes,
    # or (when a later change of the table lands first) holds the table without them.
    "registry-quarantine": ("registry-outage.yaml", {SilverBehind, OracleMismatch}),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_broken_job_is_caught(request, variant, sandbox, pipeline_factory, mutator, monkeypatch):
    scenario, failures = CAUGHT_BY[variant]
    spec = scenarios.load(SCENARIOS / scenario)
    VARIANTS[variant](monkeypatch)
    pipeline = pipeline_factory(only=spec.tables, branch=False)  # written by the broken job from the first change
    pipeline.run_once()  # the topics' backlog, on a JVM maybe cold: the oracle's wait is for the scenario's changes
    oracle = Oracle(sandbox, pipeline, mutator, timeout=request.config.getoption("--oracle-timeout"), stats=RunStats())
    with pytest.raises(AssertionError) as caught:  # a verdict, not a time-out (SandboxError)
        scenarios.run(spec, pipeline, mutator, oracle)
    message = str(caught.value)
    kinds = " or ".join(sorted(kind.__name__ for kind in failures))
    assert type(caught.value) in failures, f"{variant} must fail as {kinds}, not:\n{message}"
    assert any(table in message for table in spec.tables), message
