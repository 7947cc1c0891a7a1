"""A CDC job written the way many teams write their first one: Structured Streaming, `foreachBatch`, and Hudi's
datasource doing the merging with its own choices, configured by a plain properties file (`job.properties`).

It differs from the sandbox's own job (`cdc_sandbox/spark_jobs/cdc_hudi_job.py`) where teams usually differ:
  - the order of two changes of a key is Hudi's precombine on one column, `ordering` in the properties:
      source_ts_ms     Debezium's `__source_ts_ms`, the source's commit time in milliseconds (the reference
                       architecture's choice);
      source_sequence  the change's place in the source's log, as a sortable string (Postgres LSN; binlog file,
                       offset and row; SQL Server commit LSN, change LSN and serial number);
  - Hudi deduplicates each batch itself (`hoodie.combine.before.upsert`) and keeps the existing row when an
    incoming change orders before it (event-time ordering): no window function of the job's own;
  - no bronze table and no quarantine, Hudi's default index, and `hoodie.*` settings straight from the file.
Deletes stay as soft deletes (`__deleted = 'true'`) unless `hard.deletes=true`; a truncate deletes the rows live
before it the same way (`__op = 't'`). Avro decoding is the sandbox's
(`cdc_sandbox.spark_jobs.decode`), as a team would use its platform's deserializer.

Run: spark-submit examples/team_job/job.py --properties examples/team_job/job.properties [--set key=value ...]
     (--once | --continuous)
or, in a Spark session of one's own: `start(spark, settings, once)`, which returns the streaming query.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a plain file by spark-submit
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pyspark.sql import DataFrame, SparkSession, Window, functions as F  # noqa: E402

from cdc_sandbox.spark_jobs.decode import SchemaCache, decode, schema_pairs  # noqa: E402

ORDERINGS = ("source_ts_ms", "source_sequence")
ORDERING_COLUMN = "_ordering"


def read_properties(path: str | Path, overrides: list[str] = ()) -> dict[str, str]:
    """`key=value` lines (`#` starts a comment), then `overrides` in the same form on top."""
    settings = {}
    lines = [*Path(path).read_text().splitlines(), *overrides]
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"{path}: line {number} is not key=value: {line!r}")
        settings[key.strip()] = value.strip()
    return settings


def tables_of(settings: dict[str, str]) -> dict[str, dict[str, str]]:
    """{table: {topic, key}} from `table.<name>.topic` and `table.<name>.key` lines; only those `tables` names
    (comma-separated) if it is set."""
    tables: dict[str, dict[str, str]] = {}
    for name, value in settings.items():
        if name.startswith("table."):
            _, table, field = name.split(".", 2)
            tables.setdefault(table, {})[field] = value
    for table, fields in tables.items():
        if set(fields) != {"topic", "key"}:
            raise ValueError(f"table {table} needs table.{table}.topic and table.{table}.key, nothing else")
    wanted = settings.get("tables")
    return {t: fields for t, fields in tables.items() if not wanted or t in wanted.split(",")}


def ordering_value(rows: DataFrame, ordering: str) -> DataFrame:
    """The precombine column for the chosen ordering."""
    if ordering == "source_ts_ms":
        return rows.withColumn(ORDERING_COLUMN, F.col("__source_ts_ms").cast("long"))
    return rows.withColumn(ORDERING_COLUMN, source_sequence(rows))


def source_sequence(rows: DataFrame):
    """The change's place in the source's log, as a sortable string."""
    if "__lsn" in rows.columns:  # Postgres
        sequence = F.lpad(F.col("__lsn").cast("string"), 20, "0")
    elif "__file" in rows.columns:  # MySQL and MariaDB: binlog file number, offset, row
        sequence = F.concat(F.lpad(F.regexp_extract("__file", r"(\d+)$", 1), 10, "0"),
                            F.lpad(F.col("__pos").cast("string"), 20, "0"),
                            F.lpad(F.col("__row").cast("string"), 6, "0"))
    else:  # SQL Server: LSNs in fixed-width hexadecimal already sort as text
        sequence = F.concat(F.col("__commit_lsn"), F.coalesce(F.col("__change_lsn"), F.col("__commit_lsn")),
                            F.lpad(F.col("__event_serial_no").cast("string"), 4, "0"))
    return sequence


def after_truncates(spark: SparkSession, rows: DataFrame, key: str, path: str) -> DataFrame | None:
    """The batch's changes with its last truncate applied, by the source's log (whatever the ordering column): the
    changes after it stay as they are; a key with none, live after its last change before it, and each row of the
    table live then, becomes a deleted row with its last values, ordered at the truncate."""
    rows = rows.withColumn("_sequence", source_sequence(rows))
    truncated = F.col("__op") == F.lit("t")
    last_truncate = rows.filter(truncated).orderBy(F.desc("_sequence")).select("_sequence", ORDERING_COLUMN).first()
    changes = rows.filter(~truncated)
    if last_truncate is None:
        return changes.drop("_sequence")
    before = F.col("_sequence") < F.lit(last_truncate["_sequence"])
    after, last = None, None
    if key in changes.columns:  # else the batch holds only truncates of the table
        after = changes.filter(~before)
        by_log = Window.partitionBy(key).orderBy(F.desc("_sequence"))
        last = changes.filter(before).join(after.select(key).distinct(), key, "left_anti") \
            .withColumn("_last", F.row_number().over(by_log)).filter("_last = 1").drop("_last")
    if table_exists(spark, path):
        stored = spark.read.format("hudi").load(path)
        stored = stored.select(*[c for c in stored.columns if not c.startswith("_hoodie_")])
        stored = stored.withColumn("_sequence", source_sequence(stored)).filter(before)
        if after is not None:
            stored = stored.join(after.select(key).union(last.select(key)).distinct(), key, "left_anti")
        last = stored if last is None else last.unionByName(stored, allowMissingColumns=True)
    if last is None:
        return None  # a truncate of a table the job has not written yet
    live = F.coalesce(F.col("__deleted"), F.lit("false")) != "true"
    marks = {"__op": F.lit("t"), "__deleted": F.lit("true"), ORDERING_COLUMN: F.lit(last_truncate[ORDERING_COLUMN])}
    result = last.filter(~live).unionByName(last.filter(live).withColumns(marks))
    if after is not None:
        result = after.unionByName(result, allowMissingColumns=True)
    return result.drop("_sequence")


def table_exists(spark: SparkSession, path: str) -> bool:
    hoodie = spark._jvm.org.apache.hadoop.fs.Path(f"{path}/.hoodie")
    return hoodie.getFileSystem(spark._jsc.hadoopConfiguration()).exists(hoodie)


def write_table(rows: DataFrame, table: str, key: str, settings: dict[str, str]) -> None:
    if settings.get("hard.deletes") == "true":
        rows = rows.withColumn("_hoodie_is_deleted", F.col("__deleted") == F.lit("true"))
    options = {
        "hoodie.table.name": table,
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.datasource.write.recordkey.field": key,
        "hoodie.datasource.write.precombine.field": ORDERING_COLUMN,
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "hoodie.datasource.hive_sync.table": settings.get("catalog.table.prefix", "") + table,
        **{name: value for name, value in settings.items() if name.startswith("hoodie.")},
    }
    rows.write.format("hudi").options(**options).mode("append").save(f"{settings['silver']}/{table}")


def start(spark: SparkSession, settings: dict[str, str], once: bool):
    """Start the job's streaming query (its tables, endpoints and paths all from `settings`)."""
    ordering = settings.get("ordering", "source_ts_ms")
    if ordering not in ORDERINGS:
        raise ValueError(f"ordering={ordering}: use one of {', '.join(ORDERINGS)}")
    tables = tables_of(settings)
    by_topic = {fields["topic"]: table for table, fields in tables.items()}
    schemas = SchemaCache(settings["registry.url"])
    stream = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", settings["kafka.bootstrap.servers"])
              .option("subscribe", ",".join(by_topic))
              .option("startingOffsets", settings.get("starting.offsets", "earliest"))
              .load())

    def each_batch(batch: DataFrame, batch_id: int) -> None:
        batch = batch.cache()
        _, pairs = schema_pairs(batch)
        decoded = decode(batch, by_topic, schemas, pairs)
        for table, rows in decoded.tables.items():
            keep = [c for c in rows.columns if c not in ("topic", "partition", "offset", "timestamp", "_schema_id")]
            key, path = tables[table]["key"], f"{settings['silver']}/{table}"
            changes = after_truncates(spark, ordering_value(rows.select(*keep), ordering), key, path)
            if changes is not None:
                write_table(changes, table, key, settings)
        decoded.release()
        batch.unpersist()

    writer = stream.writeStream.foreachBatch(each_batch).option("checkpointLocation", settings["checkpoint"])
    trigger = {"availableNow": True} if once else {"processingTime": f"{settings.get('trigger.seconds', '2')} seconds"}
    return writer.trigger(**trigger).start()


# The sandbox's values (`cdc_sandbox/harness/running/job_adapters.py`) and the settings they fill.
SANDBOX_VALUES = {"kafka_bootstrap": "kafka.bootstrap.servers", "registry_url": "registry.url", "silver": "silver",
                  "checkpoint": "checkpoint", "starting_offsets": "starting.offsets", "tables": "tables",
                  "table_type": "hoodie.datasource.write.table.type", "hard_deletes": "hard.deletes",
                  "compaction_delta_commits": "hoodie.compact.inline.max.delta.commits"}


def start_for_sandbox(spark: SparkSession, sandbox: dict[str, str], once: bool):
    """What the sandbox calls (`callable:` in sandbox-job.yaml): the job as its properties file has it, with the
    sandbox's endpoints, paths and tables, and its own settings on top (e.g. `ordering`)."""
    settings = read_properties(Path(__file__).with_name("job.properties"))
    settings |= {SANDBOX_VALUES.get(name, name): value for name, value in sandbox.items()
                 if name in SANDBOX_VALUES or name in settings}
    settings |= {f"table.{name.removeprefix('topic_')}.topic": topic for name, topic in sandbox.items()
                 if name.startswith("topic_") and f"table.{name.removeprefix('topic_')}.key" in settings}
    if settings["hoodie.datasource.write.table.type"] == "MERGE_ON_READ":
        settings["hoodie.compact.inline"] = "true"
    settings["hoodie.datasource.meta.sync.enable"] = "false"  # the harness's lakes live for one test module
    return start(spark, settings, once)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--properties", required=True)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one setting")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--once", action="store_true")
    mode.add_argument("--continuous", action="store_true")
    args = parser.parse_args(argv)
    settings = read_properties(args.properties, args.set)
    spark = SparkSession.builder.appName(settings.get("app.name", "team-cdc-job")).getOrCreate()
    start(spark, settings, once=args.once).awaitTermination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
