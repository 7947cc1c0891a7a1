"""The pipeline as tests drive it: a Spark session running the Hudi job in-process, and silver read back.

The job runs either a run at a time (`run_once`: everything in Kafka now, then stop) or continuously
(`start_continuous`: micro-batches every trigger interval until stopped). Either way `wait_for_positions` returns
once each table's silver has committed a given source position.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from pyspark.errors import StreamingQueryException

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import class_sharing
from cdc_sandbox.stack.spark_home import spark_home
from cdc_sandbox.harness.running import sandbox_job, job_adapters, timeline as commit_timeline
from cdc_sandbox.harness.running.checkpoint import (
    batch_start_offsets,
    committed_offsets,
    planned_offsets,
    settled_offsets,
)
from cdc_sandbox.harness.running.timeline import Commit
from cdc_sandbox.harness.findings import Finding, Verdict
from cdc_sandbox.sources import topics
from cdc_sandbox.sources.tickit import normalized_rows
from cdc_sandbox.spark_jobs import cdc_hudi_job, queries
from cdc_sandbox.spark_jobs.failures import cause_line
from cdc_sandbox.spark_jobs.job_config import JobConfig
from cdc_sandbox.spark_jobs.lake_layout import on_s3
from cdc_sandbox.spark_jobs.session import spark_session
from cdc_sandbox.stack.catalog import table_schema
from cdc_sandbox.stack.services.localstack import sandbox_s3
from cdc_sandbox.wait import wait_until

# The harness's in-process job gives up on an unreachable S3 within seconds: a test that stops the stack under a
# running job gets it back at once. A batch's driver threads make dozens of S3 calls one after another (bronze's
# commit, Hudi's repeated reads of hoodie.properties), so any retrying of each adds up: the SDK's few attempts retry a
# stale connection, and S3A retries once. Jobs run by `sandbox job run` keep S3A's defaults, and ride out a LocalStack
# restart.
HARNESS_S3A_RETRIES = {"spark.hadoop.fs.s3a.attempts.maximum": "3", "spark.hadoop.fs.s3a.retry.limit": "1",
                       "spark.hadoop.fs.s3a.retry.interval": "100ms"}
# Likewise with Kafka: the query's stop closes Spark's Kafka admin client, whose close waits for its pending request,
# which a stopped Kafka answers only with the client's API timeout. This shorter one still lets a killed Kafka come
# back before the job's offset lookups give up; the request timeout comes down with it, as the admin client refuses
# an API timeout below it. With nothing due, the client's network poll sleeps until its next metadata refresh, so a
# short metadata age wakes it sooner.
HARNESS_KAFKA_TIMEOUTS = {"kafka.default.api.timeout.ms": "10000", "kafka.request.timeout.ms": "10000",
                          "kafka.metadata.max.age.ms": "10000"}


# The harness's continuous job triggers every second, twice as often as `sandbox job run --continuous` does: a
# round's change waits half a trigger on average before a batch picks it up, and a trigger with nothing new costs
# one offsets request to Kafka.
HARNESS_TRIGGER_SECONDS = 1.0


def spark_for(settings: Settings, config: JobConfig | None = None, java_options: str = ""):
    """A Spark session with the job's jars and S3 settings for this sandbox (`java_options` for its driver)."""
    os.environ["TZ"] = "UTC"  # Spark hands timestamps to Python in the process's zone; sources hold UTC
    time.tzset()
    os.environ["SPARK_HOME"] = str(spark_home(settings))  # PySpark launches its driver from there
    config = config or sandbox_job.job_config(settings)
    archive_option, _ = class_sharing.driver_java_options(settings, config, record=False)
    # The session's catalog keeps its folder in the sandbox's state, not in the directory the tests run from.
    warehouse = {"spark.sql.warehouse.dir": str(settings.state_dir / "spark-warehouse")}
    quick_to_fail = replace(config, extra_spark_conf={**HARNESS_S3A_RETRIES, **warehouse, **config.extra_spark_conf})
    return spark_session(quick_to_fail, java_options=" ".join(filter(None, [archive_option, java_options])))


def closed_port() -> int:
    """A local TCP port nobody listens on (just given back by the OS)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class BatchFailed(SandboxError):
    """The job under test failed on a micro-batch: its cause in one line, the stack trace in Spark's log."""

    def __init__(self, failure: BaseException):
        super().__init__(f"the job failed on a micro-batch: {cause_line(failure)}",
                         "the whole stack trace is in the test's output above (Spark's log)")
        self.text = str(failure)


class SilverBehind(Verdict):
    """The job consumed a round's change from Kafka but silver never committed it."""


SLOW_STOP_SECONDS = 10
STOP_GRACE_SECONDS = 30  # how long a final stop lets a running micro-batch finish before it interrupts it
OUTAGE_RETRY_PAUSES = (0.1, 0.2)  # the job's tries of the registry in `run_once_without_registry`
# Threads a stop can wait on: the query's own, its tasks, Kafka's admin client, and the threads of the job's table
# writes (py4j threads, known by what they run).
STOP_THREAD_PREFIXES = ("stream execution thread", "Executor task launch worker", "kafka-admin-client-thread")
STOP_THREAD_PACKAGES = ("org.apache.hudi.", "org.apache.hadoop.fs.s3a.", "com.amazonaws.")


def jvm_thread_dump(spark, prefixes: tuple[str, ...], packages: tuple[str, ...] = ()) -> str:
    """The stacks of the driver JVM's threads whose names begin with one of `prefixes`, or that run code of one of
    `packages`."""
    traces = spark.sparkContext._jvm.java.lang.Thread.getAllStackTraces()
    dumps = []
    for thread in traces.keySet().toArray():
        name, frames = thread.getName(), [frame.toString() for frame in traces.get(thread)]
        if name.startswith(prefixes) or any(package in frame for frame in frames for package in packages):
            shown = "\n".join(f"    at {frame}" for frame in frames)
            dumps.append(f"{name} ({thread.getState().toString()})\n{shown}")
    return "\n\n".join(dumps) + "\n"


@dataclass
class Pipeline:
    settings: Settings
    config: JobConfig
    spark: object
    reports: list[str] = field(default_factory=list)
    owns_session: bool = True
    query: object = None  # the streaming query while running continuously
    paused: bool = False
    resume_continuous: bool = False  # paused while running continuously
    drives_job: bool = True  # False: the job runs elsewhere (e.g. `sandbox job run`); waits only read silver
    topics_seen: bool = False  # every topic the job reads exists
    job: job_adapters.JobUnderTest = field(default_factory=job_adapters.builtin_job)

    def __post_init__(self) -> None:
        self.config = replace(self.config, kafka_options={**HARNESS_KAFKA_TIMEOUTS, **self.config.kafka_options},
                              trigger_seconds=HARNESS_TRIGGER_SECONDS)

    def __repr__(self) -> str:  # short: a failing property example prints its arguments
        tables = ", ".join(spec.table for spec in self.config.tables)
        kind = self.config.table_type if self.job.builtin else f"job {self.job.name}"
        return f"Pipeline({self.config.lake}, {kind}, tables: {tables}, {len(self.reports)} batches)"

    @classmethod
    def start(cls, settings: Settings, lake: str, job_under_test: job_adapters.JobUnderTest | None = None,
              **options) -> "Pipeline":
        """The job (the built-in one unless `job_under_test`) on `lake`, in a Spark session of its own."""
        job_under_test = job_under_test or job_adapters.builtin_job()
        if job_under_test.tables is not None and options.get("only"):
            missing = set(options["only"]) - set(job_under_test.tables)
            if missing:
                raise SandboxError(f"the job {job_under_test.name} does not write {', '.join(sorted(missing))}",
                                   "choose a scenario over the tables its job file lists")
        config = sandbox_job.job_config(settings, lake=lake, **options)
        return cls(settings, config, spark_for(settings, config), job=job_under_test)

    def sibling(self, lake: str, **options) -> "Pipeline":
        """Another lake (and job options) in the same Spark session, e.g. Merge-on-Read beside Copy-on-Write."""
        return Pipeline(self.settings, sandbox_job.job_config(self.settings, lake=lake, **options), self.spark,
                        owns_session=False, job=self.job)

    def stop(self) -> None:
        """Stop the job for good (a test's teardown): a micro-batch in flight finishes first, so that a teardown
        after a failed test does not interrupt the batch's Python code (a py4j traceback in the log)."""
        self._let_batch_finish()
        self.stop_continuous()
        if self.owns_session:
            self.spark.stop()

    def _let_batch_finish(self) -> None:
        if not hasattr(self.query, "status"):  # no query, or a job submitted as a process of its own
            return
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while self.query is not None and self.query.isActive and self.query.status["isTriggerActive"] \
                and time.monotonic() < deadline:
            time.sleep(0.1)

    # --- running the job -----------------------------------------------------------------------------------
    def run_once(self) -> list[dict]:
        """Process everything in Kafka now; returns the batch summaries of this run."""
        self._wait_for_topics()
        before = len(self.reports)
        try:
            self.job.start(self.spark, self.config, True, self.reports.append).awaitTermination()
        except StreamingQueryException as exc:
            raise BatchFailed(exc) from exc
        return [json.loads(line) for line in self.reports[before:]]

    def run_once_without_registry(self) -> list[dict]:
        """`run_once` in a schema registry outage: the job's lookups go to a local port where nothing listens, so
        each is refused at once (the sandbox's registry keeps serving everyone else). The sandbox's own job asks
        again after shorter pauses than its default (about 8 s of sleeping), which would test nothing more."""
        normal = self.config
        self.config = replace(normal, registry_url=f"http://127.0.0.1:{closed_port()}/apis/registry/v2",
                              registry_retry_pauses=OUTAGE_RETRY_PAUSES)
        try:
            return self.run_once()
        finally:
            self.config = normal

    def start_continuous(self) -> None:
        self._wait_for_topics()
        if self.query is None:
            self.query = self.job.start(self.spark, self.config, False, self.reports.append)

    def _wait_for_topics(self) -> None:
        """Right after `sandbox up` Debezium may still be creating topics; once all exist, they stay."""
        if not self.topics_seen:
            topics.wait_for_topics(self.settings.endpoint("kafka").address, [s.topic for s in self.config.tables])
            self.topics_seen = True

    def stop_continuous(self) -> None:
        if self.query is not None:
            stopped = threading.Event()
            watchdog = threading.Thread(target=self._record_slow_stop, args=(stopped,), daemon=True)
            watchdog.start()
            try:
                self.query.stop()
            finally:
                stopped.set()
                self.query = None

    def _record_slow_stop(self, stopped: threading.Event) -> None:
        """If the query takes long to stop (a fault test once waited 59 s), write where its JVM threads wait."""
        if stopped.wait(SLOW_STOP_SECONDS):
            return
        path = self.settings.log_file("job-slow-stop")
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as log:
            log.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')}: the streaming query on {self.config.lake} had not "
                      f"stopped after {SLOW_STOP_SECONDS} s; its threads:\n\n"
                      + jvm_thread_dump(self.spark, STOP_THREAD_PREFIXES, STOP_THREAD_PACKAGES) + "\n")
        print(f"the job is slow to stop: where it waits is in {path}", file=sys.stderr)

    def pause(self) -> None:
        """Changes made while paused reach the job together, in one micro-batch, when it resumes."""
        self.paused = True
        self.resume_continuous = self.query is not None
        self._let_batch_finish()
        self.stop_continuous()
        if self.resume_continuous and self.drives_job and on_s3(self.config.checkpoint()) \
                and self.settled_offsets() is None:
            # The stop cut a micro-batch short. Spark runs it again first when the job resumes, apart from the
            # changes made while paused: it runs now, before any of them.
            self.run_once()

    def resume(self) -> None:
        self.paused = False
        if self.resume_continuous:
            self.start_continuous()

    def restart(self) -> None:
        """Stop the job and start it again from its checkpoint (a run-at-a-time job starts from it every run).

        The stop waits for a micro-batch in flight, as an operator's restart would: one that interrupts Spark while it
        writes its commit log can leave that write landing on S3 after the new query planned the batch again, and
        Spark then stops with CONCURRENT_STREAM_LOG_UPDATE. A batch cut short before its commit is tested as such
        (tests/e2e/test_first_batch_restart.py)."""
        if self.query is not None:
            self._let_batch_finish()
            self.stop_continuous()
            self.start_continuous()

    def go_on(self) -> None:
        """A step of a wait on silver: a job run a batch at a time runs once (unless paused); a continuous job's
        failure is raised."""
        if self.query is not None and self.query.exception() is not None:
            raise BatchFailed(self.query.exception())
        if self.query is None and not self.paused and self.drives_job:
            self.run_once()

    def wait_for_positions(self, targets: dict[str, int], timeout: float,
                           landmarks: dict[str, tuple[int, int]] | None = None) -> dict[str, Commit]:
        """Wait until each table's latest commit holds its target source position; returns those commits.

        `landmarks` gives, per table, the Kafka (partition, offset) of the event that carries its target: once the
        job's checkpoint has committed past that offset and the table still has no such commit, the job read the
        change and did not write it, and the wait fails at once (SilverBehind) instead of running out of time."""
        reached: dict[str, Commit] = {}

        def all_reached() -> bool:
            self.go_on()
            if not self.job.records_positions:
                return self._reach_by_offsets(targets, reached, landmarks or {})
            consumed = self.consumed_offsets() if landmarks else {}  # before the timeline: its commits come first
            if self._reach(targets, reached):
                return True
            self._fail_if_consumed(targets, reached, landmarks or {}, consumed)
            return False

        if self.paused and targets:
            raise SandboxError("the pipeline is paused", "resume it before waiting for it to reach a position")
        waiting = ", ".join(f"{t} at {p}" for t, p in targets.items() if t not in reached)
        wait_until(all_reached, timeout, f"silver to commit source positions ({waiting})",
                   "the job may be skipping a table or failing; see its batch summaries: "
                   + "; ".join(self.reports[-3:]), interval=0.5)
        return reached

    @functools.cached_property
    def s3(self):
        return sandbox_s3(self.settings)

    @functools.cached_property
    def s3_timelines(self) -> commit_timeline.S3Timelines:
        return commit_timeline.S3Timelines(self.s3)

    def consumed_offsets(self) -> dict[str, dict[str, int]]:
        """{topic: {partition: next offset}} the job's checkpoint has committed ({} for a lake not on S3)."""
        if not on_s3(self.config.checkpoint()):
            return {}
        return committed_offsets(self.s3, self.config.checkpoint())

    def settled_offsets(self) -> dict[str, dict[str, int]] | None:
        """The committed offsets while no micro-batch runs; None while one does."""
        return settled_offsets(self.s3, self.config.checkpoint())

    def planned_offsets(self) -> dict[str, dict[str, int]]:
        """{topic: {partition: next offset}} the job's latest micro-batch reads up to ({} for a lake not on S3)."""
        if not on_s3(self.config.checkpoint()):
            return {}
        return planned_offsets(self.s3, self.config.checkpoint())

    def batch_start(self, batch: int) -> dict[str, dict[str, int]]:
        """{topic: {partition: offset}} the job's micro-batch `batch` read from ({} if unknown or not on S3)."""
        if not on_s3(self.config.checkpoint()):
            return {}
        return batch_start_offsets(self.s3, self.config.checkpoint(), batch, self.config.starting_offsets)

    def _fail_if_consumed(self, targets: dict[str, int], reached: dict, landmarks: dict[str, tuple[int, int]],
                          consumed: dict[str, dict[str, int]]) -> None:
        for table, (partition, offset) in landmarks.items():
            topic = self.config.spec(table).topic
            done = consumed.get(topic, {}).get(str(partition), -1)
            if table not in reached and done > offset:
                raise SilverBehind(
                    f"silver {table} in {self.config.lake} has no commit at source position {targets[table]}, yet the "
                    f"job has committed {topic} partition {partition} up to offset {done}, past the change at offset "
                    f"{offset}: it read the change and did not write it (latest commit: "
                    f"{self._latest_commit(table)})", Finding("behind", table))

    def _latest_commit(self, table: str) -> str:
        commits = self.timeline(table)
        return f"{commits[-1].instant} at position {commits[-1].max_source_position}" if commits else "none"

    def _reach(self, targets: dict[str, int], reached: dict[str, Commit]) -> bool:
        pending = [table for table in targets if table not in reached]
        with ThreadPoolExecutor(max(1, min(4, len(pending)))) as pool:  # one small Spark job per table's timeline
            found = pool.map(lambda table: self.first_commit_at(table, targets[table]), pending)
            reached |= {table: commit for table, commit in zip(pending, found) if commit is not None}
        return len(reached) == len(targets)

    def _reach_by_offsets(self, targets: dict[str, int], reached: dict[str, Commit],
                          landmarks: dict[str, tuple[int, int]]) -> bool:
        """For a job whose commits do not say which source position they reach: a table has reached its target
        once the job's checkpoint has committed past the Kafka offset of the round's last event, with no
        micro-batch running; its latest commit of writes (not a compaction) then holds it. Offsets read again after
        the timelines must not have moved, or a batch that started meanwhile may have added a later commit."""
        if set(targets) - set(landmarks):
            raise SandboxError(f"no Kafka offsets for {', '.join(sorted(set(targets) - set(landmarks)))}",
                               "a job without source positions in its commits is waited for by offsets")
        settled = self.settled_offsets()
        if settled is None:
            return False
        passed = [table for table, (partition, offset) in landmarks.items()
                  if settled.get(self.config.spec(table).topic, {}).get(str(partition), -1) > offset]
        latest = {table: [c for c in self.timeline(table) if c.writes_changes] for table in passed}
        if self.settled_offsets() != settled:
            return False
        for table, commits in latest.items():
            if not commits:
                raise SilverBehind(f"silver {table} in {self.config.lake} has no commit, yet the job {self.job.name} "
                                   f"has committed its topic past the round's change at offset {landmarks[table][1]}",
                                   Finding("behind", table))
            reached[table] = commits[-1]
        return len(reached) == len(targets)

    def first_commit_at(self, table: str, target: int) -> Commit | None:
        """The earliest commit of the table whose source position reaches `target`."""
        for commit in self.timeline(table):
            if commit.max_source_position is not None and commit.max_source_position >= target:
                return commit
        return None

    def _table_exists(self, table: str) -> bool:
        timeline, fs = cdc_hudi_job.hadoop_path(self.spark, f"{self.path(table)}/.hoodie/timeline")
        return fs.exists(timeline)

    # --- reading silver ------------------------------------------------------------------------------------
    def path(self, table: str) -> str:
        return self.config.silver_path(table)

    def timeline(self, table: str) -> list[Commit]:
        """The table's completed commits, oldest first ([] before its first commit)."""
        if on_s3(self.path(table)):
            return self.s3_timelines.read(self.path(table))
        if not self._table_exists(table):
            return []
        return commit_timeline.read_timeline(self.spark, self.path(table))

    def snapshot(self, table: str):
        return queries.snapshot(self.spark, self.path(table))

    def time_travel(self, table: str, instant: str):
        return queries.time_travel(self.spark, self.path(table), instant)

    def live_rows(self, frame, table: str) -> list[tuple]:
        """Rows not soft-deleted, in the source table's columns and Python types, in key order."""
        schema = table_schema(self.settings, table)
        rows = frame.filter("__deleted IS NULL OR __deleted != 'true'").select(*schema.column_names).collect()
        return normalized_rows(schema, [tuple(row) for row in rows])
