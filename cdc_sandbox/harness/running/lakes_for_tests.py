"""The lakes tests run the job on: one per test or session, branched from the baseline where the job's options
allow, removed afterwards unless the test failed (then kept and named in the run's summary). The pytest plugin and
the fuzzer's replays both take their lakes from here. Spark is imported only when a pipeline is built."""

from __future__ import annotations

from cdc_sandbox.config import Settings
from cdc_sandbox.harness.running.lake_buckets import own_bucket, remove_lake

KEPT_LAKES: list[str] = []  # lakes of failed tests, named in the run's summary
SESSION_BRANCHES: list = []  # the session's LakeBranches, whose branches and catch-ups the summary counts


def new_lake(settings: Settings, name: str = "test") -> str:
    """A new lake, in a bucket of its own (`lake_buckets` says why)."""
    return f"s3a://{own_bucket(settings, name, unique=True)}/{name}"


# Job options under which the built-in job writes the baseline's lake as it is: how it reads later changes, not how
# silver is laid out.
LAKE_NEUTRAL_OPTIONS = {"key_only_deletes", "session_zone"}


def pipeline_on_new_lake(settings: Settings, spark, branches=None, only: list[str] | None = None, job_under_test=None,
                         **options):
    """The job (in the shared Spark session) on a new lake: branched from the baseline when `branches` is given and
    the built-in job runs with the baseline's options (`LAKE_NEUTRAL_OPTIONS` aside), otherwise empty (the job
    starts from the earliest offsets).
    `job_under_test` (`cdc_sandbox.harness.running.job_adapters`; the built-in job by default) writes the tables it names only."""
    from cdc_sandbox.harness.running import sandbox_job, job_adapters
    from cdc_sandbox.harness.running.pipeline import Pipeline

    job_under_test = job_under_test or job_adapters.builtin_job()
    if not job_under_test.builtin:
        branches = None  # the baseline lake is the built-in job's
    if job_under_test.tables is not None:
        only = [t for t in (only or job_under_test.tables) if t in job_under_test.tables]
    lake = new_lake(settings)
    branchable = branches is not None and set(options) <= LAKE_NEUTRAL_OPTIONS
    offsets = branches.branch(lake, only) if branchable else None
    config = sandbox_job.job_config(settings, lake=lake, only=only, starting_offsets=offsets, **options)
    return Pipeline(settings, config, spark, owns_session=False, job=job_under_test)


def finish(pipes: list, failed: bool) -> None:
    """Stop the pipelines; remove their lakes (and lakes named after them, such as `<lake>-mor`) unless a test
    failed, in which case they stay for a look and are named in the run's summary."""
    for pipe in pipes:
        pipe.stop()
        if failed:
            KEPT_LAKES.append(pipe.config.lake)
        else:
            remove_lake(pipe.settings, pipe.config.lake, whole_names=False)
