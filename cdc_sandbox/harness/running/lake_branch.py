"""Test lakes branched from a baseline lake, instead of each replaying every change ever written to Kafka.

The baseline (`s3a://<lake bucket>-baseline/_baseline`) is the job's own lake over every table, kept by the same
job with the same options. It catches up (the job runs on it once, processing only the changes since its last run) when it
lags the topics by more than `CATCH_UP_LAG` events; a smaller gap the branch's own job replays for its tables only.
A branch copies the baseline's silver tables (server-side S3 copies; the baseline cleans old file versions, so a
copy holds little more than the latest ones) and its job starts at the Kafka offsets the baseline's checkpoint
committed: the branch's first micro-batch holds only the changes made after the branch point, and its silver and
checkpoint agree from the start. Bronze and the quarantine start at the branch point too.

Only a job with the baseline's options writes a branch (Copy-on-Write, soft deletes); anything else, and a job
deliberately broken for the harness's own tests, gets a lake of its own from the earliest offsets. A baseline an
earlier version of the job wrote in another layout (files without the bucket index, or `_source_position` of
another type: the marker beside it holds the job's `POSITION_LAYOUT` and bucket counts) is rebuilt, not copied.
"""

from __future__ import annotations

import time


from cdc_sandbox import kafka_clients
from cdc_sandbox.config import Settings
from cdc_sandbox.harness.running import sandbox_job
from cdc_sandbox.harness.running.lake_buckets import own_bucket
from cdc_sandbox.harness.running.checkpoint import committed_offsets
from cdc_sandbox.harness.running.pipeline import BatchFailed, Pipeline
from cdc_sandbox.sources.changes import close_soon, end_offsets
from cdc_sandbox.spark_jobs.cdc_hudi_job import STAMPED_WRITE_SUPPORT, written_with_buckets
from cdc_sandbox.spark_jobs.decode import POSITION_LAYOUT
from cdc_sandbox.spark_jobs.lake_layout import copy_prefix, delete_prefix, object_keys, silver_table, split_uri
from cdc_sandbox.spark_jobs.job_config import JobConfig
from cdc_sandbox.stack.services.localstack import sandbox_s3

BASELINE = "_baseline"
RETAINED_COMMITS = 2
# Events; past this the baseline catches up once, instead of every branch replaying the gap in its own job.
CATCH_UP_LAG = 500
EARLIEST = -2  # a starting offset, as Spark's Kafka source spells "from the partition's start"
LAYOUT_MARKER = "position-layout"  # in the baseline's lake: the `layout_marker` of the job that wrote it


class LakeBranches:
    def __init__(self, settings: Settings, spark):
        self.settings = settings
        self.s3 = sandbox_s3(settings)
        # In a bucket of its own (`lake_buckets`); a baseline an earlier version kept in the lake bucket goes.
        delete_prefix(self.s3, f"s3a://{settings.topology.lake_bucket}/{BASELINE}")
        config = sandbox_job.job_config(settings, lake=f"s3a://{own_bucket(settings, 'baseline')}/{BASELINE}",
                                        retain_commits=RETAINED_COMMITS, catalog_database="")
        self.baseline = Pipeline(settings, config, spark, owns_session=False)
        self._layout_is_current = False
        self.branches = 0
        self.catch_up_seconds: list[float] = []  # each run of the baseline's job (the run's summary shows them)
        self.rebuilt_after: list[str] = []  # the failures of its job that had the baseline rebuilt

    def branch(self, lake: str, only: list[str] | None = None) -> dict[str, dict[str, int]] | None:
        """Copy the baseline's silver for `only` (every table) into `lake`; returns the offsets the branch's job
        starts from, or None when the baseline cannot serve (a topic it never read). The baseline first catches
        up when it lags the topics by more than `CATCH_UP_LAG` events (the branch's job would otherwise replay
        them), or is rebuilt when a topic was recreated (its offsets lie past the topic's end)."""
        specs = [s for s in self.baseline.config.tables if only is None or s.table in only]
        offsets = committed_offsets(self.s3, self.baseline.config.checkpoint())
        lag = topic_lag(self.settings, offsets, [spec.topic for spec in specs])
        if lag is None or not self._current_layout():
            lag = None
            delete_prefix(self.s3, self.baseline.config.lake)
        if lag is None or lag > CATCH_UP_LAG:
            started = time.monotonic()
            self._catch_up()
            self.catch_up_seconds.append(time.monotonic() - started)
            self._mark_layout()
            offsets = committed_offsets(self.s3, self.baseline.config.checkpoint())
        if any(spec.topic not in offsets for spec in specs):
            return None
        self.branches += 1
        for spec in specs:
            copy_prefix(self.s3, self.baseline.path(spec.table), silver_table(lake, spec.table))
        return from_earliest_where_unread(self.settings, {spec.topic: offsets[spec.topic] for spec in specs})

    def _catch_up(self) -> None:
        """Run the baseline's job once. A baseline it can no longer write (one an earlier version of the job left
        behind, say a table whose source since dropped a column it could not take) is rebuilt from the topics
        rather than handed to every later test; a job that fails on the rebuilt one too fails the test."""
        try:
            self.baseline.run_once()
        except BatchFailed as failure:
            self.rebuilt_after.append(failure.message)
            delete_prefix(self.s3, self.baseline.config.lake)
            self.baseline.run_once()

    def _current_layout(self) -> bool:
        """False for a baseline an earlier version of the job wrote in another layout (rebuilt, not copied).
        Listed until it is found current, then not again in this session."""
        if not self._layout_is_current:
            bucket, prefix = split_uri(self.baseline.config.silver_root)
            keys = list(object_keys(self.s3, bucket, prefix + "/"))
            self._layout_is_current = layout_is_current(keys, self._marked_layout(), self.baseline.config)
        return self._layout_is_current

    def _marker(self) -> tuple[str, str]:
        bucket, prefix = split_uri(self.baseline.config.lake)
        return bucket, f"{prefix}/{LAYOUT_MARKER}"

    def _marked_layout(self) -> str | None:
        bucket, key = self._marker()
        try:
            return self.s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
        except self.s3.exceptions.NoSuchKey:
            return None

    def _mark_layout(self) -> None:
        bucket, key = self._marker()
        self.s3.put_object(Bucket=bucket, Key=key, Body=layout_marker(self.baseline.config).encode())


def layout_marker(config: JobConfig) -> str:
    """The job's position layout, Parquet write support and each table's bucket count: a baseline written under another is
    rebuilt."""
    buckets = " ".join(f"{spec.table}={config.buckets_of(spec)}" for spec in sorted(config.tables,
                                                                                     key=lambda s: s.table))
    return f"{POSITION_LAYOUT} {STAMPED_WRITE_SUPPORT} {buckets}"


def layout_is_current(silver_keys: list[str], marker: str | None, config: JobConfig) -> bool:
    """Whether a baseline with these objects under its silver root and this layout marker was written in the job's
    current layout: an empty one is; otherwise the marker must be `layout_marker`'s, and every data file a bucket
    of its table's index."""
    if not silver_keys:
        return True
    buckets = {spec.table: config.buckets_of(spec) for spec in config.tables}
    data = [key.rsplit("/", 2)[-2:] for key in silver_keys if "/.hoodie/" not in key]
    return marker == layout_marker(config) and all(written_with_buckets(name, buckets.get(table, config.buckets))
                                                   for table, name in data)


def from_earliest_where_unread(settings: Settings, offsets: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """`offsets` with each partition added to its topic since they were taken at -2 (Spark: the earliest offset):
    the baseline never read those, and Spark refuses starting offsets that leave out a partition."""
    consumer = kafka_clients.consumer(settings.endpoint("kafka").address, "branch")
    try:
        complete = {}
        for topic, known in offsets.items():
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            complete[topic] = {str(p): known.get(str(p), EARLIEST) for p in sorted(partitions)}
        return complete
    finally:
        close_soon(consumer)


def topic_lag(settings: Settings, offsets: dict[str, dict[str, int]], topics: list[str]) -> int | None:
    """Events in `topics` past `offsets` (a topic missing from `offsets` counts whole); None if an offset lies
    past its partition's end, i.e. the topic is not the one the offsets were taken from."""
    ends = end_offsets(settings.endpoint("kafka").address, list(dict.fromkeys([*topics, *offsets])))
    for topic, partitions in offsets.items():  # also other tables' topics: recreated ones spoil the baseline too
        for partition, start in partitions.items():
            if start > ends.get(topic, {}).get(int(partition), 0):
                return None
    return sum(end - offsets.get(topic, {}).get(str(partition), 0)
               for topic in topics for partition, end in ends.get(topic, {}).items())
