"""A team's own Hudi job under the oracle, through the job adapter (`cdc_sandbox/harness/running/job_adapters.py`): the job in
`examples/team_job/` (foreachBatch, Hudi's own precombine and deduplication, settings in a properties file) writes
no commit metadata of the sandbox's, so the harness knows a round has landed from the job's checkpoint alone.

Ordered by Debezium's `__source_ts_ms`, as the reference architecture does, the job loses the later of two
changes when the source's clock steps back: the source-clock-skew scenario shows it. Ordered by the change's place
in the source's log, the same job passes that scenario and the oracle's rounds. (The whole suite runs against it
with `--sandbox-job examples/team_job/sandbox-job.yaml`: docs/guides/own-job.md.)"""

from __future__ import annotations

import random

import pytest

from cdc_sandbox.config import PACKAGE_DIR
from cdc_sandbox.harness.running import job_adapters
from cdc_sandbox.harness.driving import scenario
from cdc_sandbox.harness.checking.verdict import OracleMismatch
from tests import PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TEAM_JOB = PROJECT_ROOT / "examples" / "team_job" / "sandbox-job.yaml"
SUBMITTED = PROJECT_ROOT / "examples" / "team_job" / "sandbox-job-submitted.yaml"
CLOCK_SKEW = PACKAGE_DIR / "fixtures" / "scenarios" / "source-clock-skew.yaml"


@pytest.mark.parametrize("ordering", ["source_ts_ms", "source_sequence"])
def test_ordering_by_source_timestamp_loses_a_change_when_the_clock_steps_back(ordering, pipeline_factory,
                                                                               oracle_factory, mutator):
    spec = scenario.load(CLOCK_SKEW)
    pipeline = pipeline_factory(only=spec.tables, job=job_adapters.load(TEAM_JOB, {"ordering": ordering}))
    oracle = oracle_factory(pipeline)
    if ordering == "source_ts_ms":
        # The known bug this configuration reproduces: the update made after the clock stepped back carries the
        # older timestamp, and Hudi keeps the row it already has.
        with pytest.raises(OracleMismatch, match=r"silver date .*older timestamp, later change \(next micro-batch\)"):
            scenario.run(spec, pipeline, mutator, oracle)
        oracle.recorded.clear()  # it recorded the state this configuration fails to reach: no history to verify
        return
    scenario.run(spec, pipeline, mutator, oracle)
    rng = random.Random(13)  # and the oracle's rounds of random changes, one of them made while the job waits
    mutator.random_batch(10, seed=rng.randrange(1 << 30), tables=spec.tables)
    oracle.round("random changes")
    oracle.pause()
    mutator.random_batch(6, seed=rng.randrange(1 << 30), tables=spec.tables)
    oracle.resume()
    oracle.round("random changes made while the job was paused, in one batch")


def test_a_teams_job_submitted_as_its_own_process(pipeline_factory, oracle_factory, mutator):
    """The adapter's other form: the job's spark-submit command line with the sandbox's endpoints, running
    continuously in a JVM of its own."""
    pipeline = pipeline_factory(only=["category"], job=job_adapters.load(SUBMITTED, {"ordering": "source_sequence"}))
    oracle = oracle_factory(pipeline)
    pipeline.start_continuous()
    oracle.track(["category"])
    mutator.random_batch(6, seed=7, tables=["category"])
    oracle.round()
    pipeline.stop_continuous()
    assert pipeline.query is None
