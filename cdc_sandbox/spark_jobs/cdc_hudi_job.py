"""Debezium topics -> Hudi bronze and silver tables.

Run as `spark-submit cdc_sandbox/spark_jobs/cdc_hudi_job.py --config job.json --once` (or `--continuous`), or through
`sandbox job run`. Every endpoint and path comes from the config file (see `job_config.py`).

- Bronze: every change event as it arrived (Kafka coordinates, schema id, raw bytes), partitioned by table and
  micro-batch; a replayed batch overwrites its own partition, so bronze never holds a change twice.
- Silver: one Hudi table per source table, record key = the source primary key, precombine = the source position
  (Postgres LSN; binlog file, offset and row; SQL Server LSNs: `decode.source_position`), so the later of two
  changes in one millisecond wins. Deletes stay as soft deletes (`__op='d'`, `__deleted='true'`) unless
  `hard_deletes`; a truncate deletes every row live before it the same way (`__op='t'`), unless `ignore_truncates`.
  A column dropped in the source stays, NULL in rows written after the drop. A column the source adds with a
  DEFAULT holds it in the rows silver held before, as the source's rows do (`backfill_defaults`). A value an event
  leaves out (an unchanged TOASTed value's placeholder; the columns of a key-only delete) is the key's previous one
  (`images.py`).
  Each commit records the highest source position it holds, as plain digits, in its metadata
  (`sandbox.max_source_position`): the harness reads it from there (`cdc_sandbox/harness/running/timeline.py`), so the key and its
  format are a contract between the two.
- Messages that do not decode go to `<lake>/quarantine` with their topic, partition, offset and reason.
- Progress is Spark's checkpoint in `<lake>/checkpoints`: a restart, also after a kill, resumes without loss and
  without applying a change twice.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import reduce
from pathlib import Path

if __package__ in (None, ""):  # run as a plain file by spark-submit
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pyspark  # noqa: E402
from pyspark import inheritable_thread_target  # noqa: E402
from pyspark.sql import Column, DataFrame, SparkSession, Window, functions as F  # noqa: E402
from pyspark.sql.types import StructType  # noqa: E402

from cdc_sandbox.spark_jobs import images, queries  # noqa: E402
from cdc_sandbox.spark_jobs.decode import SchemaCache, decode, default_of, schema_pairs, source_position  # noqa: E402
from cdc_sandbox.spark_jobs.failures import cause_line  # noqa: E402
from cdc_sandbox.spark_jobs.job_config import JobConfig, TableSpec  # noqa: E402
from cdc_sandbox.spark_jobs.session import spark_session  # noqa: E402

COMMIT_META_PREFIX = "sandbox."  # of the commit metadata keys the harness reads (`cdc_sandbox/harness/running/timeline.py`)
BUCKETS_KEY = f"{COMMIT_META_PREFIX}buckets"  # the bucket count a commit was written with
COLUMNS_KEY = f"{COMMIT_META_PREFIX}source_columns"  # the source columns its events carried (`backfilled`)
STAMPED_WRITE_SUPPORT = "dev.cdcsandbox.hudi.SparkStampedAvroWriteSupport"
SPARK_VERSION_PROPERTY = "sandbox.parquet.spark.version"  # read by STAMPED_WRITE_SUPPORT
TRUNCATE = "t"  # Debezium's operation code of a truncate
STOP_GRACE_SECONDS = 300  # a stop waits this long for the running micro-batch: enough for one holding a full load
TRUNCATE_COORDINATES = ("_kafka_partition", "_kafka_offset", "_kafka_timestamp")  # of the rows a truncate deletes
RECORD_LOOK_BACK = 5  # commits searched for a key the job records (a compaction's commit has none)
UPSERT_THREADS = 4
SMALL_BATCH_EVENTS = 10_000
# Bronze is appended with the committer that moves each task's files into place as the task commits, and without a
# _SUCCESS file: overwriting its partitions dynamically staged every file twice more on S3, where a rename is a copy
# and a delete (73 S3 requests for a one-table batch).
BRONZE_COMMITTER = {"mapreduce.fileoutputcommitter.algorithm.version": "2",
                    "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false"}


class Stopwatch:
    """Seconds per named phase of a micro-batch, for its summary (`make bench` draws them)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.monotonic() - started, 3)


def timed(watch: Stopwatch, phase: str, work, *args):
    with watch.phase(phase):
        return work(*args)


def hudi_options(config: JobConfig, spec: TableSpec, max_position: int, batch_id: int) -> dict[str, str]:
    options = {
        "hoodie.table.name": spec.table,
        "hoodie.datasource.write.table.type": config.table_type_of(spec),
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.datasource.write.recordkey.field": ",".join(spec.key),
        "hoodie.datasource.write.precombine.field": spec.ordering or "_source_position",
        "hoodie.datasource.write.commitmeta.key.prefix": COMMIT_META_PREFIX,
        f"{COMMIT_META_PREFIX}max_source_position": str(max_position),
        f"{COMMIT_META_PREFIX}batch_id": str(batch_id),
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.insert.shuffle.parallelism": "2",
        # Off because they slow the job's small upserts (docs/reference/job-settings.md): the metadata table above
        # all, then the embedded timeline server with its markers; Hudi's own in-batch deduplication repeats
        # `latest_per_key`.
        "hoodie.metadata.enable": "false",
        "hoodie.embed.timeline.server": "false",
        "hoodie.write.markers.type": "DIRECT",
        "hoodie.combine.before.upsert": "false",
        # Bloom filters in the files' footers serve the bloom indexes only, which the job does not use.
        "hoodie.parquet.bloom.filter.enabled": "false",
        # Hudi's write support, stamping each file with the Spark version as Spark's own writer does: a Spark session
        # without the sandbox's settings, like a team's own, then reads dates before 1582 and times before 1900 as
        # written. Spark refuses such values from files without the stamp (READ_ANCIENT_DATETIME). The jar comes from
        # cdc_sandbox/stack/jvm/parquet-stamp; Hudi's Spark record path, which stamps its files too, fails to write a
        # Merge-on-Read delete with a decimal(38,0) position.
        "hoodie.avro.write.support.class": STAMPED_WRITE_SUPPORT,
        SPARK_VERSION_PROPERTY: pyspark.__version__,
        # A column dropped in the source stays in silver, NULL in rows written after the drop; without this every
        # batch whose events lack it fails (MissingSchemaFieldException).
        "hoodie.write.set.null.for.missing.columns": "true",
    } | partition_options(spec) | index_options(config, spec)
    if config.retain_commits is None:  # keep every file version: time travel must reach every commit
        options |= {"hoodie.clean.automatic": "false", "hoodie.keep.min.commits": "10000",
                    "hoodie.keep.max.commits": "10001"}
    else:
        options |= {"hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": str(config.retain_commits)}
    if config.table_type_of(spec) == "MERGE_ON_READ":
        options |= {"hoodie.compact.inline": "true",
                    "hoodie.compact.inline.max.delta.commits": str(config.compaction_delta_commits)}
    if config.metastore_uri and config.catalog_database:
        options |= hive_sync_options(config, spec)
    return options


def deleting(rows: DataFrame) -> Column:
    """Whether a change deletes its row (a truncate's deletes come from `truncated`)."""
    if "__deleted" not in rows.columns:  # a batch of truncates alone
        return F.lit(False)
    return F.coalesce(F.col("__deleted") == F.lit("true"), F.lit(False))


def compaction_now(config: JobConfig, spec: TableSpec, deletes: bool) -> dict[str, str]:
    """Merge-on-Read with hard deletes: compact in the commit of a batch that deletes (or truncates). Hudi 1.0.2 writes
    a hard delete into a log without its ordering value, and when a later log record of the same key (the key
    inserted again) meets it, compares the two ordering values of different classes: a ClassCastException on every
    compaction and read of the file group from then on. Compacted at once, a delete never waits in a log."""
    if config.table_type_of(spec) != "MERGE_ON_READ" or not config.hard_deletes_of(spec) or not deletes:
        return {}
    return {"hoodie.compact.inline.max.delta.commits": "1"}


def partition_options(spec: TableSpec) -> dict[str, str]:
    """Unpartitioned, or partitioned by one or several columns (`column=value` folders when Hive-style)."""
    if not spec.partition_by:
        return {"hoodie.datasource.write.partitionpath.field": "",
                "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator"}
    return {"hoodie.datasource.write.partitionpath.field": ",".join(spec.partition_by),
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
            "hoodie.datasource.write.hive_style_partitioning": str(spec.hive_style).lower()}


def index_options(config: JobConfig, spec: TableSpec) -> dict[str, str]:
    if spec.bucketed:
        # A key's file group follows from its hash: no index lookup reading every key of the table per upsert.
        return {"hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": str(config.buckets_of(spec)),
                BUCKETS_KEY: str(config.buckets_of(spec))}  # `check_layout` reads it back
    # A global index finds a key in whichever partition holds it: a row whose partition value changes is deleted
    # from its old partition and written to its new one, never held twice.
    return {"hoodie.index.type": "GLOBAL_SIMPLE", "hoodie.simple.index.update.partition.path": "true"}


def hive_sync_options(config: JobConfig, spec: TableSpec) -> dict[str, str]:
    """Hudi's Hive sync after every commit: the table, its schema and last synced commit in the metastore."""
    return {"hoodie.datasource.meta.sync.enable": "true",
            "hoodie.datasource.hive_sync.enable": "true",
            "hoodie.datasource.hive_sync.mode": "hms",
            "hoodie.datasource.hive_sync.metastore.uris": config.metastore_uri,
            "hoodie.datasource.hive_sync.database": config.catalog_database,
            "hoodie.datasource.hive_sync.table": spec.table,
            **hive_partitions(spec)}


def hive_partitions(spec: TableSpec) -> dict[str, str]:
    if not spec.partition_by:
        return {"hoodie.datasource.hive_sync.partition_extractor_class": "org.apache.hudi.hive.NonPartitionedExtractor"}
    extractor = "MultiPartKeysValueExtractor" if spec.hive_style or len(spec.partition_by) > 1 else \
        "SinglePartPartitionValueExtractor"
    return {"hoodie.datasource.hive_sync.partition_fields": ",".join(spec.partition_by),
            "hoodie.datasource.hive_sync.partition_extractor_class": f"org.apache.hudi.hive.{extractor}"}


def latest_per_key(rows: DataFrame, spec: TableSpec) -> DataFrame:
    """Within one batch keep each key's last change: highest source position, then highest Kafka offset."""
    order = Window.partitionBy(*[F.col(k) for k in spec.key]).orderBy(F.desc("_source_position"), F.desc("offset"))
    return rows.withColumn("_rank", F.row_number().over(order)).filter("_rank = 1").drop("_rank")


def batch_extent(positioned: DataFrame, spec: TableSpec, truncate: Column, key_only_deletes: bool):
    """What one pass over the table's changes tells: the highest position among all of them (the commit reaches it,
    also where a later change of the same key supersedes one), and what the batch holds."""
    return positioned.agg(F.max("_source_position").alias("position"), F.max("timestamp").alias("kafka"),
                          F.count(F.lit(1)).alias("changes"),
                          F.max(F.when(truncate, F.col("_source_position"))).alias("truncated_at"),
                          F.max(images.any_left_out(positioned, spec, key_only_deletes)).alias("left_out"),
                          F.max_by("_schema_id", F.when(~truncate, F.col("_source_position"))).alias("schema"),
                          F.max(deleting(positioned)).alias("deletes"),
                          F.max(F.col("_source_position").isNull()).alias("unplaced")
                          ).first()


def placed_snapshot_reads(spark: SparkSession, config: JobConfig, spec: TableSpec, rows: DataFrame) -> DataFrame:
    """Debezium's incremental snapshot reads of a Postgres table carry no LSN. A read holds its row as the chunk
    found it, after every change the connector sent before it and before every change it sends after (its
    watermarks), so it takes the highest position among the events before it in its partition, or else that of the
    table's latest commit."""
    before = Window.partitionBy("partition").orderBy("offset").rowsBetween(Window.unboundedPreceding, -1)
    position = rows.schema["_source_position"].dataType
    floor = F.lit(reached_before(spark, config.silver_path(spec.table))).cast(position)
    placed = F.greatest(F.max("_source_position").over(before), floor)
    return rows.withColumn("_source_position", F.coalesce(F.col("_source_position"), placed))


def reached_before(spark: SparkSession, path: str) -> int:
    """The highest source position the table's commits reached (0 for a table without one)."""
    if path not in _REACHED:
        table, fs = hadoop_path(spark, path)
        value = recorded(spark, fs, path, f"{COMMIT_META_PREFIX}max_source_position") if fs.exists(table) else None
        _REACHED[path] = int(value) if value else 0
    return _REACHED[path]


def write_silver(spark: SparkSession, config: JobConfig, spec: TableSpec, changes: DataFrame, batch_id: int) -> dict:
    watch = Stopwatch()
    with watch.phase("prepare"):
        defaults = {f.name: default_of(f) for f in changes.schema.fields if default_of(f) is not None}
        positioned = source_position(changes, spec.position)
        truncate = F.col("__op") == F.lit(TRUNCATE) if "__op" in positioned.columns else F.lit(False)
        key_only_deletes = config.key_only_deletes_of(spec)
        extent = batch_extent(positioned, spec, truncate, key_only_deletes)
        if extent["unplaced"]:
            positioned = placed_snapshot_reads(spark, config, spec, positioned)
            extent = batch_extent(positioned, spec, truncate, key_only_deletes)
        # A decimal(38,0) position (binlog, SQL Server) arrives as a Decimal; as an int it goes into the commit
        # metadata as plain digits and into the batch summary as a number.
        reached = None if extent["position"] is None else int(extent["position"])
        count = extent["changes"]
        carried = source_columns(changes, extent["schema"])
        # A batch whose only events of the table are truncates has none of its columns.
        changed = all(k in positioned.columns for k in spec.key)
        if changed and extent["left_out"]:
            positioned = images.completed(positioned, spec, key_only_deletes,
                                          live_silver_rows(spark, config.silver_path(spec.table)))
        rows = kafka_named(latest_per_key(positioned.filter(~truncate), spec)) if changed else None
        truncated_at = None if config.ignore_truncates else extent["truncated_at"]
        deletes = bool(extent["deletes"]) or truncated_at is not None
        if truncated_at is not None:
            rows = truncated(spark, config, spec, rows, kafka_named(positioned.filter(truncate)), truncated_at)
        if rows is not None and defaults and config.backfill_defaults:
            rows = backfilled(spark, config, spec, rows, defaults)
        if config.hard_deletes_of(spec) and rows is not None:
            rows = rows.withColumn("_hoodie_is_deleted", F.col("__deleted") == F.lit("true"))
    if not count or rows is None:  # nothing, or a truncate of a table silver does not hold yet
        return {"rows": 0}
    if spec.bucketed:
        check_layout(spark, config.silver_path(spec.table), config.buckets_of(spec), config.buckets)
    with watch.phase("upsert"):
        try:
            options = hudi_options(config, spec, reached, batch_id) | compaction_now(config, spec, deletes)
            if carried:  # a batch of truncates alone carries no column
                options[COLUMNS_KEY] = ",".join(sorted(carried))
            rows.write.format("hudi").options(**options).mode("append").save(config.silver_path(spec.table))
        except Exception as exc:
            if "SchemaBackwardsCompatibilityException" in str(exc):
                stored = queries.snapshot(spark, config.silver_path(spec.table)).schema
                raise ColumnTypeRefused(spec.table, retyped_columns(stored, rows.schema)) from exc
            raise
    if carried:
        _CARRIED[config.silver_path(spec.table)] = carried
    if reached is not None:
        _REACHED[config.silver_path(spec.table)] = max(reached, _REACHED.get(config.silver_path(spec.table), 0))
    if not config.metastore_uri:  # with a metastore, Hudi's Hive sync registered it as part of the upsert
        with watch.phase("register"):
            register(spark, config, spec.table)
    summary = {"rows": count, "max_source_position": reached, "kafka_timestamp_max": extent["kafka"].timestamp(),
               "upsert_ended_at": time.time(), "seconds": watch.seconds}
    if extent["truncated_at"] is not None:
        summary["truncate" if truncated_at is not None else "truncate_ignored"] = int(extent["truncated_at"])
    return summary


class ColumnTypeRefused(RuntimeError):
    """A source column changed type in a way Hudi cannot write over what silver holds (a decimal's precision: its
    Avro type is a fixed of another size). The batch stops uncommitted, so nothing is lost."""

    def __init__(self, table: str, retyped: list[str]):
        super().__init__(
            f"silver {table} cannot take the new type of {', '.join(retyped) or 'a column'} that the source's changes "
            f"now carry, which Hudi cannot write over the type silver holds; nothing of this batch is committed. "
            f"Rebuild silver {table} under the new type (a new lake, or the table written again from the topics), "
            f"or give the source column its old type back")


def retyped_columns(stored: StructType, incoming: StructType) -> list[str]:
    """`column: stored type -> new type` for each column of silver (`stored`) whose type a batch changes."""
    held = {f.name: f.dataType for f in stored.fields}
    return [f"{f.name}: {held[f.name].simpleString()} -> {f.dataType.simpleString()}" for f in incoming.fields
            if f.name in held and held[f.name] != f.dataType]


def kafka_named(rows: DataFrame) -> DataFrame:
    """Kafka's columns as silver names them."""
    return rows.withColumnRenamed("offset", "_kafka_offset").withColumnRenamed("partition", "_kafka_partition") \
        .withColumnRenamed("timestamp", "_kafka_timestamp").drop("topic", "_schema_id")


def truncated(spark: SparkSession, config: JobConfig, spec: TableSpec, rows: DataFrame | None, truncates: DataFrame,
              at) -> DataFrame | None:
    """The batch's rows (latest per key; None if it changed no row) after a truncate at source position `at`, the
    batch's last: a key live after its latest change before it, and every live row of silver not changed in the
    batch, becomes a deleted row carrying its last values, written at the truncate's position and Kafka coordinates with
    `__op='t'`. Changes after the truncate apply as they are."""
    position = F.lit(str(at)).cast(truncates.schema["_source_position"].dataType)
    event = truncates.filter(F.col("_source_position") == position).select(*TRUNCATE_COORDINATES).first()

    def deleted(frame: DataFrame) -> DataFrame:
        marks = {"_source_position": position, "__op": F.lit(TRUNCATE), "__deleted": F.lit("true")}
        marks |= {name: F.lit(event[name]).cast(truncates.schema[name].dataType) for name in TRUNCATE_COORDINATES}
        return frame.withColumns(marks)

    gone = F.col("__deleted") == F.lit("true")  # deleted before the truncate: stays its delete
    parts = [] if rows is None else [rows.filter((F.col("_source_position") > position) | gone),
                                     deleted(rows.filter((F.col("_source_position") < position) & ~gone))]
    stored = live_silver_rows(spark, config.silver_path(spec.table))
    if stored is not None:
        untouched = stored.filter(F.col("_source_position") < position)
        if rows is not None:
            untouched = untouched.join(rows.select(*spec.key), list(spec.key), "left_anti")
        parts.append(deleted(untouched))
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts) if parts else None


_CARRIED: dict[str, frozenset[str]] = {}  # silver table -> the source columns its latest commit's events carried
_REACHED: dict[str, int] = {}  # silver table -> the highest source position its commits reached


def source_columns(changes: DataFrame, schema_id: int | None) -> frozenset[str]:
    """The source's columns that events of this schema version carry (`decode`'s column metadata). The batch's
    latest change is the one to ask: a column dropped and added again brings back an earlier version's id."""
    return frozenset(f.name for f in changes.schema.fields if schema_id in f.metadata.get("schema_ids", []))


def carried_before(spark: SparkSession, path: str) -> frozenset[str] | None:
    """The source columns the table's latest commit recorded (None when it has none: a new table, or one an earlier
    version of the job wrote)."""
    if path not in _CARRIED:
        table, fs = hadoop_path(spark, path)
        value = recorded(spark, fs, path, COLUMNS_KEY) if fs.exists(table) else None
        if value is None:
            return None
        _CARRIED[path] = frozenset(value.split(","))
    return _CARRIED[path]


def backfilled(spark: SparkSession, config: JobConfig, spec: TableSpec, rows: DataFrame,
               defaults: dict[str, Column]) -> DataFrame:
    """The batch's rows and, for each column added with a DEFAULT (`defaults`) that the events of silver's latest
    commit did not carry, every live row of silver the batch leaves alone given the default at its own source
    position: the source's rows took it without an event. (A table whose commits do not record their columns is
    filled where silver lacks the column.)"""
    path = config.silver_path(spec.table)
    before = carried_before(spark, path)
    stored = live_silver_rows(spark, path) if before is None or set(defaults) - before else None
    if stored is None:
        return rows
    held = stored.columns if before is None else before
    new = {name: value for name, value in defaults.items() if name not in held}
    if not new:
        return rows
    untouched = stored.join(rows.select(*spec.key), list(spec.key), "left_anti").withColumns(new)
    return rows.unionByName(untouched, allowMissingColumns=True)


def live_silver_rows(spark: SparkSession, path: str) -> DataFrame | None:
    """The live rows of a silver table in its own columns (no Hudi metadata), or None if it has no commit yet."""
    timeline, fs = hadoop_path(spark, f"{path}/.hoodie")
    if not fs.exists(timeline):
        return None
    stored = queries.snapshot(spark, path)
    stored = stored.drop(*[name for name in stored.columns if name.startswith("_hoodie_")])
    return stored.filter(F.col("__deleted").isNull() | (F.col("__deleted") != F.lit("true")))


BUCKETED_FILE = re.compile(r"^\.?(\d{8})-")  # a bucket-index file group's base or log file: its bucket number first
_CHECKED: set[tuple[str, int]] = set()  # (silver table, bucket count) this process has checked


def check_layout(spark: SparkSession, path: str, buckets: int, default_buckets: int) -> None:
    """Refuse a silver table the job cannot upsert into without writing keys twice: one written without the bucket
    index (by an earlier version of the job), or with another number of buckets (a key's file group follows from
    its hash and that number). Commits record their number; a table whose commits do not was written with the
    job's `default_buckets`."""
    if (path, buckets) in _CHECKED:
        return
    table, fs = hadoop_path(spark, path)
    if fs.exists(table):
        names = [status.getPath().getName() for status in fs.listStatus(table) if status.isFile()]
        written = recorded_buckets(spark, fs, path) or default_buckets
        if written != buckets or not all(written_with_buckets(name, buckets) for name in names):
            raise RuntimeError(f"silver table {path} was written without the bucket index or with another number of "
                               f"buckets ({written}, this job writes {buckets}): by an earlier version of this job or "
                               f"under another config. Write a new lake (`sandbox job run --lake "
                               f"s3a://<bucket>/<new prefix>`), or delete the table's folder and its lake's "
                               f"checkpoints to rebuild it from Kafka.")
    _CHECKED.add((path, buckets))


def recorded_buckets(spark: SparkSession, fs, path: str) -> int | None:
    """The bucket count the table's latest commits recorded (None if none of them did)."""
    value = recorded(spark, fs, path, BUCKETS_KEY)
    return None if value is None else int(value)


def recorded(spark: SparkSession, fs, path: str, key: str) -> str | None:
    """The value of one of the job's commit metadata keys in the table's latest commit that holds it, or None."""
    timeline = spark._jvm.org.apache.hadoop.fs.Path(f"{path}/.hoodie/timeline")
    if not fs.exists(timeline):
        return None
    names = sorted((status.getPath().getName() for status in fs.listStatus(timeline) if status.isFile()),
                   reverse=True)
    completed = [name for name in names if "_" in name and name.rsplit(".", 1)[-1] in ("commit", "deltacommit")]
    for name in completed[:RECORD_LOOK_BACK]:
        row = spark.read.format("avro").load(f"{path}/.hoodie/timeline/{name}").select("extraMetadata").first()
        value = (row["extraMetadata"] or {}).get(key) if row else None
        if value is not None:
            return value
    return None


def written_with_buckets(file_name: str, buckets: int) -> bool:
    """True for a file that is no data file, or a data file named by one of the table's buckets."""
    if not (file_name.endswith(".parquet") or ".log." in file_name):
        return True
    bucket = BUCKETED_FILE.match(file_name)
    return bucket is not None and int(bucket.group(1)) < buckets


_REGISTERED: set[tuple[str, str]] = set()  # (catalog table, location) registered in this process
_REGISTERING = threading.Lock()


def register(spark: SparkSession, config: JobConfig, table: str) -> None:
    """Make `SELECT * FROM <catalog_database>.<table>` read this lake's table in this session's catalog, once per
    table and lake: a session whose jobs wrote another lake before (the harness's test lakes) has the catalog table
    pointed here, where `CREATE TABLE IF NOT EXISTS` alone kept the first lake's location."""
    name, location = f"{config.catalog_database}.`{table}`", config.silver_path(table)
    if not config.catalog_database or (name, location) in _REGISTERED:
        return
    with _REGISTERING:  # checked, then acted on: two jobs of one session must not race on it
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {config.catalog_database}")
        if not spark.catalog.tableExists(name):
            spark.sql(f"CREATE TABLE {name} USING hudi LOCATION '{location}'")
        elif catalog_location(spark, config.catalog_database, table).rstrip("/") != location.rstrip("/"):
            # The entry goes and comes back pointing here; no file moves. `ALTER TABLE ... SET LOCATION` would have
            # Hudi read the table at its old location first, which a test lake's removed bucket no longer has.
            catalog, identifier = _session_catalog(spark), _identifier(spark, config.catalog_database, table)
            catalog.dropTable(identifier, True, False)
            catalog.refreshTable(identifier)
            spark.sql(f"CREATE TABLE {name} USING hudi LOCATION '{location}'")
    _REGISTERED.add((name, location))


def catalog_location(spark: SparkSession, database: str, table: str) -> str:
    """Where the session's catalog says the table is, from its entry alone: `DESCRIBE` would read the table there,
    and a test lake's location may be gone with its bucket."""
    entry = _session_catalog(spark).getTableMetadata(_identifier(spark, database, table))
    return str(entry.location().toString())


def _session_catalog(spark: SparkSession):
    return spark._jsparkSession.sessionState().catalog()


def _identifier(spark: SparkSession, database: str, table: str):
    jvm = spark._jvm
    return jvm.org.apache.spark.sql.catalyst.TableIdentifier(table, jvm.scala.Some(database))


def write_bronze(batch: DataFrame, config: JobConfig, batch_id: int) -> None:
    """Append the batch's events under `table=<t>/batch_id=<n>`, after removing what an earlier attempt of the same
    micro-batch (a replay after a crash) left there."""
    table_of = F.create_map(*[item for spec in config.tables for item in (F.lit(spec.topic), F.lit(spec.table))])
    # The batch id as text: Spark writes an integer literal into the code it generates, so every batch compiled two
    # new classes (and the JIT warmed them up anew); a string is passed by reference. The paths are the same.
    raw = batch.select(table_of[F.col("topic")].alias("table"), F.lit(str(batch_id)).alias("batch_id"),
                       "topic", "partition", "offset", "timestamp", "key", "value")
    remove_paths(batch.sparkSession, [f"{config.bronze_path}/table={spec.table}/batch_id={batch_id}"
                                      for spec in config.tables])
    raw.write.mode("append").options(**BRONZE_COMMITTER).partitionBy("table", "batch_id").parquet(config.bronze_path)


def hadoop_path(spark: SparkSession, path: str):
    """`path` as a Hadoop Path, with the FileSystem that serves it."""
    target = spark._jvm.org.apache.hadoop.fs.Path(path)
    return target, target.getFileSystem(spark._jsc.hadoopConfiguration())


def remove_paths(spark: SparkSession, paths: list[str]) -> None:
    for path in paths:
        target, fs = hadoop_path(spark, path)
        fs.delete(target, True)


def write_quarantine(quarantine: DataFrame, config: JobConfig, batch_id: int) -> int:
    """Write the messages that did not decode, if any; how many there were."""
    count = quarantine.count()
    if count:
        quarantine.withColumn("batch_id", F.lit(batch_id)).write.mode("overwrite") \
            .partitionBy("batch_id").parquet(config.quarantine_path)
    return count


def process_batch(spark: SparkSession, config: JobConfig, schemas: SchemaCache, batch: DataFrame,
                  batch_id: int) -> dict:
    started_at, started = time.time(), time.monotonic()
    watch = Stopwatch()
    with watch.phase("read"):
        cached = batch.cache()
        events, pairs = schema_pairs(cached)
    if not events:
        return {"batch_id": batch_id, "empty": True}
    # Kafka gives a partition per topic: a few changes spread over seven partitions cost seven tasks in every stage
    # of every table's plan. One partition does it in one task each; a backlog keeps them, to use every core.
    batch = cached.coalesce(1) if events <= SMALL_BATCH_EVENTS else cached
    # Bronze, the quarantine and each table's upsert wait mostly on S3 and the driver, so they run side by side.
    # Their Spark jobs join the query's job group (`inheritable_thread_target`), so stopping the query cancels
    # them: otherwise a stop waits while their tasks retry an unreachable S3 (a minute, measured).
    in_query = inheritable_thread_target
    with ThreadPoolExecutor(max_workers=UPSERT_THREADS) as pool:
        bronze = pool.submit(in_query(timed), watch, "bronze", write_bronze, batch, config, batch_id)
        with watch.phase("decode"):
            decoded = decode(batch, {t.topic: t.table for t in config.tables}, schemas, pairs)
        quarantine = pool.submit(in_query(timed), watch, "quarantine", write_quarantine, decoded.quarantine, config,
                                 batch_id)
        changed = [spec for spec in config.tables if spec.table in decoded.tables]
        written = pool.map(in_query(lambda spec: write_silver(spark, config, spec, decoded.tables[spec.table],
                                                              batch_id)), changed)
        tables = dict(zip((spec.table for spec in changed), written))
        quarantined = quarantine.result()
        bronze.result()
    decoded.release()
    cached.unpersist()
    return {"batch_id": batch_id, "events": events, "tables": tables, "quarantined": quarantined,
            "started_at": started_at, "phases": watch.seconds, "seconds": round(time.monotonic() - started, 2)}


def start(spark: SparkSession, config: JobConfig, once: bool, report=print):
    schemas = SchemaCache(config.registry_url, config.registry_retry_pauses)
    if config.metastore_uri and config.catalog_database:  # once, not by the tables' Hive syncs side by side
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {config.catalog_database}")
    stream = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", config.kafka_bootstrap)
              .option("subscribe", ",".join(spec.topic for spec in config.tables))
              .option("startingOffsets", json.dumps(config.starting_offsets) if config.starting_offsets
                      else "earliest")
              .option("failOnDataLoss", str(config.fail_on_data_loss).lower())
              # Spark reads a known offset range, so a fetch never needs to wait for data to arrive; the consumer's
              # default wait would hold each partition's last fetch of a micro-batch for its whole length.
              .option("kafka.fetch.max.wait.ms", "10")
              .options(**config.kafka_options)
              .load())

    def on_batch(batch: DataFrame, batch_id: int) -> None:
        summary = process_batch(spark, config, schemas, batch, batch_id)
        if summary.get("quarantined"):
            summary["quarantine_path"] = config.quarantine_path
        report(json.dumps(summary, sort_keys=True, default=str))

    writer = stream.writeStream.foreachBatch(on_batch).option("checkpointLocation", config.checkpoint())
    writer = writer.trigger(availableNow=True) if once else writer.trigger(processingTime=f"{config.trigger_seconds} seconds")
    return writer.start()


def run(spark: SparkSession, config: JobConfig, once: bool, report=print) -> None:
    query = start(spark, config, once, report)
    query.awaitTermination()


def run_until_stopped(spark: SparkSession, config: JobConfig, once: bool, report=print) -> None:
    """`run`, but SIGTERM or SIGINT lets the running micro-batch finish and stops the query between two
    micro-batches, so the checkpoint and the lake agree. One line reports how it stopped."""
    requested = threading.Event()
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: requested.set())
    query = start(spark, config, once, report)
    while not query.awaitTermination(1):  # raises what failed the query
        if requested.is_set():
            report(json.dumps({"stopped": _stop_between_batches(query)}))
            return


def _stop_between_batches(query) -> str:
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    while query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.2)
    abandoned = query.status["isTriggerActive"]
    query.stop()
    if abandoned:
        return (f"the running micro-batch did not finish within {STOP_GRACE_SECONDS} s and was abandoned; "
                "the next run processes it again")
    return "between micro-batches; the next run goes on from the last one"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="job config JSON (see cdc_sandbox/spark_jobs/job_config.py)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--once", action="store_true", help="process what is available, then exit")
    mode.add_argument("--continuous", action="store_true", help="run micro-batches until stopped")
    args = parser.parse_args(argv)
    config = JobConfig.read(args.config)
    spark = spark_session(config)

    def report(line: str) -> None:
        print(line, flush=True)

    try:
        run_until_stopped(spark, config, once=args.once, report=report)
    except Exception as exc:  # noqa: BLE001 - the cause in one line on stdout, the stack trace in the log
        print(json.dumps({"failed": cause_line(exc)}), flush=True)
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
