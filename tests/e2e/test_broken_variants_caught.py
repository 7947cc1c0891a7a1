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
from cdc_sandbox.harness.driving import fuzz, teeth
from cdc_sandbox.harness.driving import scenario as scenarios
from cdc_sandbox.harness.checking.oracle import Oracle, RunStats
from cdc_sandbox.harness.checking.verdict import OracleMismatch
from cdc_sandbox.harness.driving.scenario_tests import job_label
from tests.broken_variants import VARIANTS, _transform_changes, expect_catch
from tests.e2e.test_spark_cluster import CAUGHT_ON_THE_CLUSTER
from tests.e2e.test_team_project import CAUGHT_ON_TEAM_TABLES

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SCENARIOS = PACKAGE_DIR / "fixtures" / "scenarios"
# variant -> the shipped scenario that declares it catches it (its `catches:`)
CAUGHT_BY = {variant: path for path in sorted(SCENARIOS.glob("*.yaml"))
             for variant in scenarios.validate(scenarios.read(path), path, home=True).catches}
CASES = [(variant, job) for variant, path in CAUGHT_BY.items() for job in scenarios.load(path).jobs]


def test_every_variant_has_a_test_that_catches_it():
    """On TICKIT's scenarios, or on a team project's tables where TICKIT has no column the bug breaks, or on the
    Spark cluster for a bug local mode hides."""
    assert set(VARIANTS) == set(CAUGHT_BY) | set(CAUGHT_ON_TEAM_TABLES) | set(CAUGHT_ON_THE_CLUSTER)


@pytest.mark.parametrize(("variant", "job"), CASES, ids=[f"{v}[{job_label(j)}]" for v, j in CASES])
def test_broken_job_is_caught(request, variant, job, sandbox, pipeline_factory, mutator, monkeypatch):
    spec = scenarios.load(CAUGHT_BY[variant])
    judged = expect_catch(request, variant, CAUGHT_BY[variant].name, job_label(job), spec.catches[variant])
    caught = teeth.play(variant, spec, job, pipeline_factory, sandbox, mutator,
                        request.config.getoption("--oracle-timeout"), monkeypatch)
    assert not (wrong := judged(caught)), f"{variant}: {wrong}"


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
