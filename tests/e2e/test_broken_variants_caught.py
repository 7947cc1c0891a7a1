"""The harness catches a wrong pipeline: each deliberately broken variant of the job (tests/broken_variants.py)
makes the scenario aimed at its bug fail, in every job mode the scenario declares, by the failure the bug must cause
(the check, the table, the column or the keys) and no other; and the fuzzer finds one with no scenario's help and
shrinks what it found. (`make broken-variants` runs every suite against every variant.)"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import replace

import pytest

from cdc_sandbox import debezium_settings
from cdc_sandbox.config import PACKAGE_DIR
from cdc_sandbox.harness.driving import fuzz
from cdc_sandbox.harness.driving import scenario as scenarios
from cdc_sandbox.harness.checking.oracle import Oracle, RunStats
from cdc_sandbox.harness.checking.verdict import OracleMismatch
from cdc_sandbox.harness.driving.scenario_tests import job_label
from cdc_sandbox.stack.services.localstack import sandbox_s3
from tests.broken_variants import (ORDERING_FIELDS, VARIANTS, Catch, _transform_changes, expect_catch,
                                   take_over_ordering)
from tests.e2e.test_spark_cluster import CAUGHT_ON_THE_CLUSTER
from tests.e2e.test_team_project import CAUGHT_ON_TEAM_TABLES

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCENARIOS = PACKAGE_DIR / "fixtures" / "scenarios"
# A variant takes over a lake the correct job has written (branched from the baseline), so that what it gets wrong
# is the scenario's own changes; one that orders by another field changes the field the table keeps
# (`take_over_ordering`). A record key or a column's type cannot change on a written table: these variants write
# their lake from the topics' first change.
FROM_FIRST_CHANGE = {"offset-in-key", "money-as-double"}
CAUGHT_BY = {  # variant -> the scenario aimed at its bug, and the failure it must cause there (in each of its modes)
    # A later update that carries an earlier clock loses to the one before it, stored in the batch before.
    "order-by-timestamp": ("source-clock-skew.yaml", (Catch("snapshot", "date", "day", key=(9001,)),)),
    # The update in the new partition loses to the row's earlier change at a larger offset: an older value. The row is
    # the one the step finds hashing to a new partition, so the catch names the columns the step sets, at any key.
    "order-by-kafka-offset": ("topic-gains-partitions.yaml", (Catch("snapshot", "venue", "venueseats"),)),
    # A delete that shares its micro-batch with other changes leaves the row live; one alone in its batch leaves
    # nothing to commit, so the job moves past it without a commit.
    "drop-deletes": ("delete-then-reinsert.yaml", (Catch("snapshot", "venue"), Catch("behind", "venue"))),
    "skip-table": ("delete-then-reinsert.yaml", (Catch("behind", "venue"),)),  # read, and never committed
    # Kafka's offsets are past the change while silver is not: the round that waits for it says so at once.
    "offsets-before-silver": ("job-restart-mid-stream.yaml", (Catch("behind", "venue"),)),
    "offset-in-key": ("same-transaction-updates.yaml", (Catch("duplicates", "category"),)),
    "widened-integers": ("same-transaction-updates.yaml", (Catch("types", "category", "catid"),)),
    # Copy-on-Write: on Merge-on-Read the bucket index sends the insert to the key's file group, where it merges.
    "insert-not-upsert": ("source-clock-skew.yaml", (Catch("duplicates", "date"),)),
    "zone-shifted-times": ("source-clock-skew.yaml", (Catch("snapshot", "date", "caldate"),)),
    "money-as-double": ("binlog-column-added.yaml", (Catch("types", "date", "surcharge"),)),  # a decimal(8,2)
    "dropped-added-column": ("binlog-column-added.yaml", (Catch("snapshot", "date", "surcharge"),)),
    # A key update deletes the old key: its soft-deleted row must carry the values the delete carried. On a sandbox
    # that ran the scenario before, its `given` first deletes the rows that run left under the new keys.
    "empty-deletes": ("primary-key-update.yaml", (Catch("deletes", "category", "catname", key=(9101,)),
                                                  Catch("deletes", "date", "caldate", key=(9101,)))),
    # The outage's batch lands in the quarantine and its offsets are committed: silver never reaches the changes,
    # or (when a later change of the table lands first) holds the table without them.
    "registry-quarantine": ("registry-outage.yaml", (Catch("behind", "venue"), Catch("snapshot", "venue"))),
    # The truncated rows still live when the truncate shares its batch with a change the job writes; one alone in
    # its batch leaves nothing to commit, so the job moves past it without a commit. The scenario truncates both
    # tables in its first round, and where the micro-batches fall decides which of them shows it first.
    # The first update that leaves the long text out writes the placeholder over it.
    "placeholders-as-values": ("replica-identity-default.yaml", (Catch("snapshot", "category", "long_notes"),
                                                                 Catch("snapshot", "event", "programme"))),
    # The re-delivered rename arrives last and wins over the stored, newer one.
    "merge-by-arrival-time": ("old-event-redelivered.yaml", (Catch("snapshot", "venue", "venuename", key=(9601,)),)),
    # The first batch after the widening carries values past the integer's range.
    "first-types-kept": ("column-widened-mid-stream.yaml", tuple(Catch(check, table, "visits")
                                                             for table in ("category", "date")
                                                             for check in ("types", "snapshot"))),
    # The rows the batch leaves alone keep NULL in the added column, where the source gave them its default.
    "defaults-not-backfilled": ("column-added-with-default.yaml", (Catch("snapshot", "category", "region"),
                                                                   Catch("snapshot", "date", "priority"))),
    # The explicit NULLs in the added columns hold their defaults: the first round that checks them names each.
    "null-as-default": ("null-in-a-column-with-a-default.yaml", tuple(Catch("snapshot", table, column) for table, column
                                                                      in (("category", "nullable_visits"),
                                                                          ("category", "nullable_featured"),
                                                                          ("date", "nullable_note"),
                                                                          ("date", "nullable_flagged")))),
    "ignores-truncates": ("truncate-mid-stream.yaml", tuple(Catch(check, table) for table in ("category", "date")
                                                            for check in ("snapshot", "deletes", "behind"))),
}
CASES = [(variant, job) for variant, (scenario, _) in CAUGHT_BY.items()
         for job in scenarios.load(SCENARIOS / scenario).jobs]


def test_every_variant_has_a_test_that_catches_it():
    """On TICKIT's scenarios, or on a team project's tables where TICKIT has no column the bug breaks, or on the
    Spark cluster for a bug local mode hides."""
    assert set(VARIANTS) == set(CAUGHT_BY) | set(CAUGHT_ON_TEAM_TABLES) | set(CAUGHT_ON_THE_CLUSTER)


@pytest.mark.parametrize(("variant", "job"), CASES, ids=[f"{v}[{job_label(j)}]" for v, j in CASES])
def test_broken_job_is_caught(request, variant, job, sandbox, pipeline_factory, mutator, monkeypatch):
    scenario, catches = CAUGHT_BY[variant]
    spec = scenarios.load(SCENARIOS / scenario)
    options = scenarios.pipeline_options(spec, job)
    first_change = variant in FROM_FIRST_CHANGE
    if first_change:
        VARIANTS[variant](monkeypatch)
    pipeline = pipeline_factory(only=spec.tables, branch=not first_change, **options)
    pipeline.run_once()  # the topics' backlog, or the branch's gap by the correct job
    if not first_change:
        if variant in ORDERING_FIELDS:
            take_over_ordering(sandbox_s3(sandbox), pipeline.config.lake, spec.tables, variant)
        VARIANTS[variant](monkeypatch)
    oracle = Oracle(sandbox, pipeline, mutator, timeout=request.config.getoption("--oracle-timeout"), stats=RunStats())
    judged = expect_catch(request, variant, scenario, job_label(job), catches)
    with pytest.raises(AssertionError) as caught:  # a verdict, not a time-out (SandboxError)
        scenarios.run(spec, pipeline, mutator, oracle, job=job)
    assert not (wrong := judged(caught.value)), f"{variant}: {wrong}"


def test_a_connector_that_writes_the_default_for_null_is_caught_naming_the_column_and_why(
        request, sandbox, pipeline_factory, mutator):
    """The NULL scenario with the two settings a production connector often has (Debezium's
    `replace.null.with.default`, the converter's `ignore.default.for.nullables`), as a team copies them into its
    project file: the real connector writes the default for NULL, and the oracle names the table, key and column."""
    spec = replace(scenarios.load(SCENARIOS / "null-in-a-column-with-a-default.yaml"),
                   debezium=dict(debezium_settings.NULL_AS_DEFAULT))
    job = spec.jobs[0]
    pipeline = pipeline_factory(only=spec.tables, **scenarios.pipeline_options(spec, job))
    oracle = Oracle(sandbox, pipeline, mutator, timeout=request.config.getoption("--oracle-timeout"), stats=RunStats())
    with pytest.raises(OracleMismatch) as caught:
        scenarios.run(spec, pipeline, mutator, oracle, job=job)
    finding, message = caught.value.finding, str(caught.value)
    assert finding.check == "snapshot" and finding.table in spec.tables, finding
    assert finding.columns and finding.columns <= {"nullable_visits", "nullable_featured", "nullable_note",
                                                   "nullable_flagged"}, finding
    assert any(f"key {key}=9763: column " in message for key in ("catid", "dateid")), message
    assert "why: silver holds a value where NULL is expected" in message


FUZZ_SEED = 333  # the job's default settings; its first example updates venue and category over two batches, and
# its first three change no column (a column a lake saw before holds what the oracle cannot know)
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
    pipeline = pipeline_factory(only=["category", "venue"], **fuzz.job_mode(FUZZ_SEED))
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
