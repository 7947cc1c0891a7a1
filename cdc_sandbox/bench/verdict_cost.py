"""`make bench`'s "cost of a verdict": the core-seconds (the machine's, and by kind of process) and wall time of what
each verdict the sandbox gives is made of, on a machine doing nothing else:

- the Spark session a test run starts (its driver JVM, the job's jars);
- one oracle round over all seven tables (a change on each, then snapshot, time travel and incremental reads through
  both readers), after the lake is branched and the tables are tracked (shown apart);
- one scenario in each job mode (run once and continuous, Copy-on-Write and Merge-on-Read);
- one broken variant caught by its scenario (in a checkout, where the variants are);
- a replay of 10,000 recorded events on a new lake, every commit checked.
"""

from __future__ import annotations

from cdc_sandbox.bench import archives
from cdc_sandbox.stack.cpu_account import Cost, measure
from cdc_sandbox.bench.results import Results
from cdc_sandbox.config import PACKAGE_DIR, Settings
from cdc_sandbox.harness.checking.oracle import Oracle, RunStats
from cdc_sandbox.harness.driving import scenario as scenarios
from cdc_sandbox.harness.driving.scenario_tests import job_label
from cdc_sandbox.harness.running.lake_branch import LakeBranches
from cdc_sandbox.harness.running.lakes_for_tests import finish, pipeline_on_new_lake
from cdc_sandbox.harness.running.pipeline import spark_for
from cdc_sandbox.sources.mutations import Mutator
from cdc_sandbox.tickit_data import TABLE_NAMES

SECTION = "Cost of a verdict"
ALL_TABLES = list(TABLE_NAMES)
SCENARIO = PACKAGE_DIR / "fixtures" / "scenarios" / "delete-then-reinsert.yaml"
JOB_MODES = [{"continuous": continuous, "table_type": table_type}
             | ({"compaction_delta_commits": 2} if table_type == "MERGE_ON_READ" else {})
             for continuous in (False, True) for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ")]
VARIANT = "drop-deletes"  # a variant that takes over a branched lake: the catch is the scenario's own
REPLAY_EVENTS = 10_000
TIMEOUT = 240.0


def report(settings: Settings, results: Results) -> None:
    results.say(f"[bold]{SECTION}[/bold] (core-seconds of the whole machine, by process kind)")
    spark, cost = measure(lambda: spark_for(settings))
    _add(results, "spark.session", "a Spark session with the job's jars", cost)
    try:
        branches, mutator = LakeBranches(settings, spark), Mutator(settings)
        _oracle_round(settings, spark, branches, mutator, results)
        spec = scenarios.load(SCENARIO)
        for job in JOB_MODES:
            _, cost = measure(lambda: _scenario(settings, spark, branches, mutator, spec, job))
            _add(results, f"scenario.{job_label(job)}", f"scenario {SCENARIO.name} ({job_label(job)})", cost)
        _variant_caught(settings, spark, branches, mutator, spec, results)
    finally:
        spark.stop()
    done = archives.record_and_replay(settings, REPLAY_EVENTS)
    if isinstance(done, str):
        results.say(f"replay of {REPLAY_EVENTS:,} events: {done}")
    else:
        _add(results, "replay", f"`sandbox replay` of {REPLAY_EVENTS:,} recorded events "
             f"({'as recorded' if done.verdict.passed else 'WRONG'})", done.cost)


def _add(results: Results, key: str, label: str, cost: Cost) -> None:
    results.add(SECTION, f"{key}.core_seconds", f"{label}: core-seconds", cost.busy, "core-s")
    results.add(SECTION, f"{key}.seconds", f"{label}: wall time", cost.wall, "s", f"  {label}: {cost}")


def _oracle_round(settings: Settings, spark, branches: LakeBranches, mutator: Mutator, results: Results) -> None:
    pipeline = None

    def set_up() -> Oracle:
        nonlocal pipeline
        pipeline = pipeline_on_new_lake(settings, spark, branches)
        oracle = Oracle(settings, pipeline, mutator, timeout=TIMEOUT, stats=RunStats())
        oracle.track(ALL_TABLES, label="tracked")
        return oracle

    def one_round(oracle: Oracle) -> RunStats:
        for table in ALL_TABLES:
            mutator.touch(table)
        oracle.round("one round")
        return oracle.stats

    try:
        oracle, cost = measure(set_up)
        _add(results, "oracle.setup", "a lake branched and all seven tables tracked (a first round)", cost)
        stats, cost = measure(lambda: one_round(oracle))
        _add(results, "oracle.round", f"one oracle round over all seven tables ({stats.rows_compared:,} rows "
             "compared in both rounds)", cost)
    finally:
        finish([pipeline] if pipeline else [], failed=False)


def _scenario(settings: Settings, spark, branches, mutator: Mutator, spec, job: dict) -> None:
    pipeline = pipeline_on_new_lake(settings, spark, branches, only=spec.tables,
                                    **scenarios.pipeline_options(spec, job))
    try:
        scenarios.run(spec, pipeline, mutator, Oracle(settings, pipeline, mutator, timeout=TIMEOUT, stats=RunStats()),
                      job=job)
    finally:
        finish([pipeline], failed=False)


def _variant_caught(settings: Settings, spark, branches, mutator: Mutator, spec, results: Results) -> None:
    import pytest

    from cdc_sandbox.harness.running.broken_jobs import VARIANTS

    job = spec.jobs[0]
    pipeline = pipeline_on_new_lake(settings, spark, branches, only=spec.tables,
                                    **scenarios.pipeline_options(spec, job))

    def caught() -> bool:
        pipeline.run_once()  # the branch's gap, by the correct job
        with pytest.MonkeyPatch.context() as patch:
            VARIANTS[VARIANT](patch)
            try:
                scenarios.run(spec, pipeline, mutator,
                              Oracle(settings, pipeline, mutator, timeout=TIMEOUT, stats=RunStats()), job=job)
            except AssertionError:
                return True
        return False

    try:
        was_caught, cost = measure(caught)
    finally:
        finish([pipeline], failed=False)
    _add(results, "variant", f"broken variant {VARIANT} {'caught' if was_caught else 'NOT caught'} by "
         f"{SCENARIO.name}", cost)
