"""The harness catches a wrong pipeline: each deliberately broken variant of the job (tests/broken_variants.py)
makes the scenario aimed at its bug fail, and the fuzzer finds one with no scenario's help and shrinks what it found.
(`make broken-variants` runs every suite against every variant.)"""

from __future__ import annotations

import time
from contextlib import contextmanager

import pytest

from cdc_sandbox.config import PACKAGE_DIR
from cdc_sandbox.harness import fuzz
from cdc_sandbox.harness import scenario as scenarios
from cdc_sandbox.harness.oracle import Oracle, RunStats
from cdc_sandbox.harness.pipeline import SilverBehind
from cdc_sandbox.harness.verdict import DuplicateKeys, OracleMismatch, WrongTypes
from tests.broken_variants import VARIANTS, _transform_changes
from tests.e2e.test_team_project import CAUGHT_ON_TEAM_TABLES

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCENARIOS = PACKAGE_DIR / "fixtures" / "scenarios"
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
    # The truncated rows still live (a wrong value) when the truncate shares its batch with a change the job writes;
    # one alone in its batch leaves nothing to commit, so the job moves past it without a commit (SilverBehind).
    "ignores-truncates": ("truncate-mid-stream.yaml", {OracleMismatch, SilverBehind}),
}


def test_every_variant_has_a_test_that_catches_it():
    """On TICKIT's scenarios, or on a team project's tables where TICKIT has no column the bug breaks."""
    assert set(VARIANTS) == set(CAUGHT_BY) | set(CAUGHT_ON_TEAM_TABLES)


@pytest.mark.parametrize("variant", list(CAUGHT_BY))
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


FUZZ_SEED = 118  # its first example on category and venue: updates and inserts of category, one batch
SHRINK_SECONDS = 120  # a bound on finding the first smaller example, which is all this test asks for


@contextmanager
def dropping_updates():
    """A job that writes inserts and deletes but filters updates out (as a filter on `op IN ('c', 'd')` would).
    Unlike the variants above it leaves every change before it in place, so a fuzz example fails by its own changes
    alone, never by what earlier examples left in Kafka."""
    with pytest.MonkeyPatch.context() as patch:
        _transform_changes(patch, lambda changes, spec: changes.filter("__op != 'u'"))
        yield


def test_the_fuzzer_finds_a_broken_job_and_shrinks_the_failure_to_a_scenario_file(
        request, sandbox, spark, lake_branches, pipeline_factory, mutator, tmp_path, fuzz_rows_deleted):
    pipeline = pipeline_factory(only=["category", "venue"])
    pipeline.run_once()  # the branch's gap, by the correct job
    timeout = request.config.getoption("--oracle-timeout")
    oracle = Oracle(sandbox, pipeline, mutator, timeout=timeout, stats=RunStats())
    with dropping_updates():
        failure = fuzz.Fuzzer(pipeline, oracle, mutator, FUZZ_SEED, tmp_path).run(fuzz.Budget(examples=3))
        pipeline.stop_continuous()
    assert failure is not None, "three examples passed with a job that drops updates"

    replay = fuzz.Replay(sandbox, spark, lake_branches, mutator, timeout, fuzz.signature(failure.error), tmp_path,
                         around=dropping_updates)
    found = fuzz.settle(failure, replay, time.monotonic() + SHRINK_SECONDS, tmp_path, FUZZ_SEED, most_shrinks=1)
    assert found.reproduced, found.message
    assert len(found.raw["steps"]) < len(failure.raw["steps"]), found.message
    assert f"sandbox scenario run {found.path}" in found.message and fuzz.sequence(found.raw) in found.message
    assert any("update" in change for step in found.raw["steps"] for change in step.get("transaction") or [step])

    spec = scenarios.load(found.path)  # the file is a test of the bug: the job without it passes
    correct = pipeline_factory(only=spec.tables)
    scenarios.run(spec, correct, mutator, Oracle(sandbox, correct, mutator, timeout=timeout, stats=RunStats()))


@pytest.fixture
def fuzz_rows_deleted(mutator):
    """The rows the examples leave at their keys go afterwards, as after a fuzz run (through the source)."""
    yield
    fuzz.delete_rows(mutator, ["category", "venue"])
