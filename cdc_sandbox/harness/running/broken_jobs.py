"""Deliberately broken variants of the sandbox's Hudi job: each patches the job, in the process that runs it, the way
a real bug would change it (a precombine on the wrong field, deletes dropped, a column list fixed, NULL written as
the default, ...). The incident catalogue is shown to have teeth by running a scenario against a variant and
expecting the failure the bug must cause (`checking.catches.Catch`); docs/guides/broken-variants.md lists them.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DateType

from cdc_sandbox.config import Settings
from cdc_sandbox.schema import BYTES, DATE, DECIMAL, INT, SMALLINT, TIMESTAMP, TIMESTAMPTZ
from cdc_sandbox.spark_jobs import cdc_hudi_job, decode, images
from cdc_sandbox.spark_jobs.decode import KAFKA_COLUMNS, RegistryUnavailable, SchemaCache
from cdc_sandbox.spark_jobs.job_config import TableSpec
from cdc_sandbox.spark_jobs.lake_layout import silver_table, split_uri
from cdc_sandbox.stack import catalog


# --- the variants --------------------------------------------------------------------------------------------
def _transform_changes(patch: pytest.MonkeyPatch, transform) -> None:
    """Pass each table's decoded changes through `transform(changes, spec)` before the job writes them to silver."""
    original = cdc_hudi_job.write_silver

    def write_silver(spark, config, spec, changes, batch_id):
        return original(spark, config, spec, transform(changes, spec), batch_id)

    patch.setattr(cdc_hudi_job, "write_silver", write_silver)


def _source_columns(changes: DataFrame, type_name: str | None = None) -> list[str]:
    """The changes' source columns (not Kafka's, the job's `_` or Debezium's `__` fields), of one Spark type if
    given."""
    return [f.name for f in changes.schema.fields if not f.name.startswith("_") and f.name not in KAFKA_COLUMNS
            and type_name in (None, f.dataType.typeName())]


def _with_hudi_options(patch: pytest.MonkeyPatch, **changed) -> None:
    """Override Hudi write options: each value a string, or a function of the table's spec giving one."""
    original = cdc_hudi_job.hudi_options

    def options(config, spec, max_position, batch_id):
        return original(config, spec, max_position, batch_id) | {
            key: value(spec) if callable(value) else value for key, value in changed.items()}

    patch.setattr(cdc_hudi_job, "hudi_options", options)


def _latest_by(column: str):
    """An in-batch reduction that keeps each key's row of the greatest `column` alone (ties in no set order)."""

    def latest_per_key(rows, spec):
        order = Window.partitionBy(*[F.col(k) for k in spec.key]).orderBy(F.desc(column))
        return rows.withColumn("_rank", F.row_number().over(order)).filter("_rank = 1").drop("_rank")

    return latest_per_key


ORDERING_FIELDS = {"order-by-timestamp": "__source_ts_ms", "order-by-kafka-offset": "_kafka_offset",
                   "merge-by-arrival-time": "_kafka_timestamp"}  # variant -> the silver column Hudi orders by
PRECOMBINE = "hoodie.datasource.write.precombine.field"


def order_by_timestamp(patch: pytest.MonkeyPatch) -> None:
    """Orders changes by the source timestamp alone (as a precombine on `ts_ms` does): ties and a clock that
    steps back pick the wrong change."""
    _with_hudi_options(patch, **{PRECOMBINE: ORDERING_FIELDS["order-by-timestamp"]})
    patch.setattr(cdc_hudi_job, "latest_per_key", _latest_by("__source_ts_ms"))


def order_by_kafka_offset(patch: pytest.MonkeyPatch) -> None:
    """Orders a key's changes by Kafka offset alone (as a precombine on the offset does): right while a key's
    changes share one partition, wrong once its topic gains partitions and its next change sits at a smaller offset
    in a new one."""
    _with_hudi_options(patch, **{PRECOMBINE: ORDERING_FIELDS["order-by-kafka-offset"]})
    patch.setattr(cdc_hudi_job, "latest_per_key", _latest_by("offset"))


def merge_by_arrival_time(patch: pytest.MonkeyPatch) -> None:
    """Lets Hudi order a key's stored and incoming versions by when Kafka received them (a precombine on the
    ingestion time, in effect merging by commit time); each batch's own reduction stays by source position. Right
    until an older change arrives after a newer one was written."""
    _with_hudi_options(patch, **{PRECOMBINE: ORDERING_FIELDS["merge-by-arrival-time"]})


def take_over_ordering(s3, lake: str, tables: list[str], variant: str) -> None:
    """Have silver tables the correct job wrote ordered by the variant's field from their next commit, as when a team
    changes the ordering field of a live table. Hudi keeps that field in the table's properties and refuses a write
    that names another, so the variant's write options alone cannot take over a lake."""
    for table in tables:
        bucket, prefix = split_uri(silver_table(lake, table))
        key = f"{prefix}/.hoodie/hoodie.properties"
        properties = s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
        changed = re.sub(r"(?m)^hoodie\.table\.precombine\.field=.*$",
                         f"hoodie.table.precombine.field={ORDERING_FIELDS[variant]}", properties)
        assert changed != properties, f"{key} names no ordering field"
        s3.put_object(Bucket=bucket, Key=key, Body=changed.encode())


def drop_deletes(patch: pytest.MonkeyPatch) -> None:
    """Filters delete events out before writing silver."""
    _transform_changes(patch, lambda changes, spec: changes.filter("__op != 'd'"))


def skip_table(patch: pytest.MonkeyPatch, table: str = "venue") -> None:
    """Never writes one table (a topic missing from the job's table list)."""
    original = cdc_hudi_job.write_silver

    def write_silver(spark, config, spec, changes, batch_id):
        return {"rows": 0} if spec.table == table else original(spark, config, spec, changes, batch_id)

    patch.setattr(cdc_hudi_job, "write_silver", write_silver)


def offsets_before_silver(patch: pytest.MonkeyPatch) -> None:
    """Writes each micro-batch into silver one batch late (a sink that writes behind, as an asynchronous write does):
    Spark records the batch's offsets as done while its changes are not in silver, and a job stopped then never
    writes them."""
    original = cdc_hudi_job.process_batch
    held = []

    def process_batch(spark, config, schemas, batch, batch_id):
        kept = batch.persist()
        kept.count()
        held.append((kept, batch_id))
        if len(held) < 2:
            return {"batch_id": batch_id, "empty": True}
        earlier, earlier_id = held.pop(0)
        return original(spark, config, schemas, earlier, earlier_id)

    patch.setattr(cdc_hudi_job, "process_batch", process_batch)


def offset_in_key(patch: pytest.MonkeyPatch) -> None:
    """The record key includes the Kafka offset (a key made "unique"): each change of a row lands as a row of its
    own, so silver holds the key several times."""
    _with_hudi_options(patch, **{"hoodie.datasource.write.recordkey.field":
                                 lambda spec: ",".join([*spec.key, "_kafka_offset"])})


def widened_integers(patch: pytest.MonkeyPatch) -> None:
    """Writes every integer column of the source as bigint (a cast to long "to be safe"): the values are right,
    the types are not."""
    _transform_changes(patch, lambda changes, spec: _cast(changes, _source_columns(changes, "integer"), "long"))


def insert_not_upsert(patch: pytest.MonkeyPatch) -> None:
    """Writes silver with Hudi's `insert` instead of `upsert` (no index lookup, no merge): a key changed again lands
    a second time."""
    _with_hudi_options(patch, **{"hoodie.datasource.write.operation": "insert"})


def zone_shifted_times(patch: pytest.MonkeyPatch, zone: str = "America/New_York") -> None:
    """Reads the source's UTC timestamps and dates as if they were in a local zone (a session time zone left at
    the machine's): every timestamp moves by hours, and a date to the day before."""

    def shifted(changes, spec):
        times, dates = _source_columns(changes, "timestamp"), _source_columns(changes, "date")
        return changes.select(*[
            F.from_utc_timestamp(c, zone).alias(c) if c in times
            else F.to_date(F.from_utc_timestamp(F.col(c).cast("timestamp"), zone)).alias(c) if c in dates
            else F.col(c) for c in changes.columns])

    _transform_changes(patch, shifted)


def money_as_double(patch: pytest.MonkeyPatch) -> None:
    """Writes decimal columns as double (a cast "for the arithmetic downstream"): amounts lose their exact value
    and the columns their decimal type."""
    _transform_changes(patch, lambda changes, spec: _cast(changes, _source_columns(changes, "decimal"), "double"))


def dropped_added_column(patch: pytest.MonkeyPatch) -> None:
    """Writes a MariaDB table's silver in the columns the project declares for it, as the job first met it (a
    column list fixed when the job was written, for binlog-sourced tables): a column a later migration adds never
    reaches silver."""
    settings, declared = Settings.load(), {}

    def created_columns(changes: DataFrame, spec: TableSpec) -> DataFrame:
        if spec.position != "binlog":
            return changes
        if spec.table not in declared:
            declared[spec.table] = catalog.table_schema(settings, spec.table).column_names
        return changes.drop(*[c for c in _source_columns(changes) if c not in declared[spec.table]])

    _transform_changes(patch, created_columns)


def empty_deletes(patch: pytest.MonkeyPatch) -> None:
    """Writes a delete as its key, `__op` and `__deleted` alone (as if built from the Kafka key): the deleted row
    loses the values its delete carried."""

    def emptied(changes: DataFrame, spec: TableSpec) -> DataFrame:
        values = [c for c in _source_columns(changes) if c not in spec.key]
        return changes.select(*[F.when(F.col("__op") == "d", F.lit(None)).otherwise(F.col(c)).alias(c)
                                if c in values else F.col(c) for c in changes.columns])

    _transform_changes(patch, emptied)


def registry_quarantine(patch: pytest.MonkeyPatch) -> None:
    """Takes a registry that does not answer for one that does not know the schema: the batch's messages go to
    the quarantine and the checkpoint moves past them, instead of the batch stopping until the registry is back."""

    class QuarantiningSchemaCache(SchemaCache):
        def get(self, global_id: int) -> str | None:
            try:
                return super().get(global_id)
            except RegistryUnavailable:
                return None

    patch.setattr(cdc_hudi_job, "SchemaCache", QuarantiningSchemaCache)


def ignores_truncates(patch: pytest.MonkeyPatch) -> None:
    """Runs the job with `ignore_truncates` (as a job that knows inserts, updates and deletes only): a truncated
    table keeps in silver every row the TRUNCATE removed."""
    original = cdc_hudi_job.write_silver

    def write_silver(spark, config, spec, changes, batch_id):
        return original(spark, replace(config, ignore_truncates=True), spec, changes, batch_id)

    patch.setattr(cdc_hudi_job, "write_silver", write_silver)


def defaults_not_backfilled(patch: pytest.MonkeyPatch) -> None:
    """Runs the job without `backfill_defaults` (as a job that writes what events carry and nothing else): a column
    the source adds with a DEFAULT is NULL in every row silver held before, which the source gave the default."""
    original = cdc_hudi_job.write_silver

    def write_silver(spark, config, spec, changes, batch_id):
        return original(spark, replace(config, backfill_defaults=False), spec, changes, batch_id)

    patch.setattr(cdc_hudi_job, "write_silver", write_silver)


def null_as_default(patch: pytest.MonkeyPatch) -> None:
    """Writes a column's DEFAULT where a change holds NULL, as a production connector left at
    `replace.null.with.default: true` or a converter reading fields with Connect's Struct.get does (KAFKA-8713):
    every explicit NULL in a column with a default becomes that default, and no error says so."""

    def defaults_for_nulls(changes: DataFrame, spec: TableSpec) -> DataFrame:
        return changes.select(*[
            F.coalesce(F.col(f.name), decode.default_of(f)).alias(f.name, metadata=f.metadata)
            if decode.default_of(f) is not None else F.col(f.name) for f in changes.schema.fields])

    _transform_changes(patch, defaults_for_nulls)


def decimals_through_double(patch: pytest.MonkeyPatch) -> None:
    """Passes decimals through a double and back to their own type (arithmetic "in floating point, then rounded"):
    the types stay right, and a value wider than a double's 15-17 digits loses its last ones."""

    def through_double(changes: DataFrame, spec: TableSpec) -> DataFrame:
        decimals = {f.name: f.dataType.simpleString() for f in changes.schema.fields
                    if f.name in _source_columns(changes, "decimal")}
        return changes.select(*[F.col(c).cast("double").cast(decimals[c]).alias(c) if c in decimals else F.col(c)
                                for c in changes.columns])

    _transform_changes(patch, through_double)


def session_zone_times(patch: pytest.MonkeyPatch) -> None:
    """Writes each timestamp as the wall-clock time it shows in the Spark session's zone, taken for UTC (a zoned
    timestamp's offset dropped before its cast): right while the session runs in UTC, hours off in any other zone."""

    def local_wall_clock(changes: DataFrame, spec: TableSpec) -> DataFrame:
        zone = changes.sparkSession.conf.get("spark.sql.session.timeZone")
        times = _source_columns(changes, "timestamp")
        return changes.select(*[F.to_utc_timestamp(c, zone).alias(c) if c in times else F.col(c)
                                for c in changes.columns])

    _transform_changes(patch, local_wall_clock)


def wall_clock_round_trip(patch: pytest.MonkeyPatch) -> None:
    """Passes each timestamp through the wall clock of the Spark session's zone and back (a "normalise to local
    time" step): the same instant in every hour but the one a daylight-saving change repeats, whose second pass
    comes back as the first."""

    def round_trip(changes: DataFrame, spec: TableSpec) -> DataFrame:
        zone = changes.sparkSession.conf.get("spark.sql.session.timeZone")
        times = _source_columns(changes, "timestamp")
        return changes.select(*[F.to_utc_timestamp(F.from_utc_timestamp(c, zone), zone).alias(c) if c in times
                                else F.col(c) for c in changes.columns])

    _transform_changes(patch, round_trip)


def partition_change_kept_twice(patch: pytest.MonkeyPatch) -> None:
    """Writes partitioned tables with a partition-local index (Hudi's SIMPLE, not GLOBAL_SIMPLE): a row whose
    partition value changes is written to its new partition and stays in its old one."""
    original = cdc_hudi_job.hudi_options

    def options(config, spec, max_position, batch_id):
        chosen = original(config, spec, max_position, batch_id)
        return chosen | {"hoodie.index.type": "SIMPLE"} if spec.partition_by else chosen

    patch.setattr(cdc_hudi_job, "hudi_options", options)


def _cast(changes: DataFrame, columns: list[str], type_name: str) -> DataFrame:
    return changes.select(*[F.col(c).cast(type_name).alias(c) if c in columns else F.col(c) for c in changes.columns])


def millisecond_times(patch: pytest.MonkeyPatch) -> None:
    """Writes timestamps at millisecond precision (as a pipeline that carries them as epoch milliseconds does): a
    source time with microseconds loses them."""

    def truncated(changes: DataFrame, spec: TableSpec) -> DataFrame:
        times = _source_columns(changes, "timestamp")
        return changes.select(*[F.timestamp_millis(F.unix_millis(c)).alias(c) if c in times else F.col(c)
                                for c in changes.columns])

    _transform_changes(patch, truncated)


def empty_strings_as_nulls(patch: pytest.MonkeyPatch) -> None:
    """Writes an empty string as NULL (a "clean-up" of blank text): '' and NULL are different values in the source."""

    def nulled(changes: DataFrame, spec: TableSpec) -> DataFrame:
        texts = _source_columns(changes, "string")
        return changes.select(*[F.when(F.col(c) == "", F.lit(None)).otherwise(F.col(c)).alias(c) if c in texts
                                else F.col(c) for c in changes.columns])

    _transform_changes(patch, nulled)


def first_types_kept(patch: pytest.MonkeyPatch) -> None:
    """Writes bigint columns as int (a job that casts each batch to the types silver was created with, so that a
    migration widening a column never reaches it): values past the integer's range are lost."""

    def narrowed(changes: DataFrame, spec: TableSpec) -> DataFrame:
        wide = _source_columns(changes, "long")
        return changes.select(*[F.col(c).cast("int").alias(c) if c in wide else F.col(c) for c in changes.columns])

    _transform_changes(patch, narrowed)


def placeholders_as_values(patch: pytest.MonkeyPatch) -> None:
    """Writes the values an event leaves out as they arrive (a job written for REPLICA IDENTITY FULL): Debezium's
    TOAST placeholder as the text an update did not change, a key-only delete's NULLs as the deleted row's values."""
    patch.setattr(images, "completed", lambda rows, spec, key_only_deletes, stored: rows)


def binary_as_text(patch: pytest.MonkeyPatch) -> None:
    """Writes binary columns as Base64 text (a job written for a connector set to `binary.handling.mode: base64`,
    run against one that sends bytes): the bytes are all there, in a column of the wrong type."""

    def encoded(changes: DataFrame, spec: TableSpec) -> DataFrame:
        binary = _source_columns(changes, "binary")
        return changes.select(*[F.base64(c).alias(c) if c in binary else F.col(c) for c in changes.columns])

    _transform_changes(patch, encoded)


def partial_record_key(patch: pytest.MonkeyPatch) -> None:
    """Keys silver by the first column of a composite primary key (a record key set by hand to the column that "is
    unique in practice"): rows that share it overwrite each other."""
    _with_hudi_options(patch, **{"hoodie.datasource.write.recordkey.field": lambda spec: spec.key[0]})


def hard_deletes_everywhere(patch: pytest.MonkeyPatch) -> None:
    """Removes deleted rows from every table, whatever its setting (one job-wide switch where a table keeps its
    deletes for an audit): a soft-delete table loses the rows it must keep marked as deleted."""
    original = cdc_hudi_job.write_silver

    def write_silver(spark, config, spec, changes, batch_id):
        return original(spark, config, replace(spec, hard_deletes=True), changes, batch_id)

    patch.setattr(cdc_hudi_job, "write_silver", write_silver)


def dates_in_the_process_zone(patch: pytest.MonkeyPatch) -> None:
    """Dates decoded by Python's `date.fromtimestamp`, which reads the zone of the process it runs in: right while
    the Python workers run where the driver does (local mode, UTC), a day early on executors west of UTC."""
    original = decode._from_epoch

    def from_epoch(number: str, unit: str):
        if unit != "days":
            return original(number, unit)

        def to_date(days):  # nested: shipped to the executors by value
            import datetime

            try:
                return None if days is None else datetime.date.fromtimestamp(days * 86400)
            except (OverflowError, ValueError):  # 0001-01-01 a day early: NULL, as such a job's authors chose
                return None

        return F.udf(to_date, DateType())(F.expr(number))

    patch.setattr(decode, "_from_epoch", from_epoch)


VARIANTS = {"order-by-timestamp": order_by_timestamp, "order-by-kafka-offset": order_by_kafka_offset,
            "drop-deletes": drop_deletes, "skip-table": skip_table,
            "offset-in-key": offset_in_key, "widened-integers": widened_integers,
            "insert-not-upsert": insert_not_upsert, "zone-shifted-times": zone_shifted_times,
            "money-as-double": money_as_double, "dropped-added-column": dropped_added_column,
            "empty-deletes": empty_deletes, "registry-quarantine": registry_quarantine,
            "ignores-truncates": ignores_truncates, "decimals-through-double": decimals_through_double,
            "session-zone-times": session_zone_times, "partition-change-kept-twice": partition_change_kept_twice,
            "millisecond-times": millisecond_times, "empty-strings-as-nulls": empty_strings_as_nulls,
            "wall-clock-round-trip": wall_clock_round_trip, "placeholders-as-values": placeholders_as_values,
            "first-types-kept": first_types_kept, "merge-by-arrival-time": merge_by_arrival_time,
            "binary-as-text": binary_as_text, "partial-record-key": partial_record_key,
            "hard-deletes-everywhere": hard_deletes_everywhere, "defaults-not-backfilled": defaults_not_backfilled,
            "offsets-before-silver": offsets_before_silver, "dates-in-the-process-zone": dates_in_the_process_zone,
            "null-as-default": null_as_default}


def _has_column(*kinds: str):
    return lambda settings, tables: any(c.type in kinds for t in tables for c in t.columns)


# What a variant needs of the project's tables to be caught at all; the others need nothing.
NEEDS = {
    "money-as-double": ("decimal column", _has_column(DECIMAL)),
    "decimals-through-double": ("decimal column", _has_column(DECIMAL)),
    "widened-integers": ("int or smallint column", _has_column(INT, SMALLINT)),
    "zone-shifted-times": ("date or timestamp column", _has_column(DATE, TIMESTAMP, TIMESTAMPTZ)),
    "session-zone-times": ("timestamp column", _has_column(TIMESTAMP, TIMESTAMPTZ)),
    "millisecond-times": ("timestamp column", _has_column(TIMESTAMP, TIMESTAMPTZ)),
    "wall-clock-round-trip": ("timestamp column", _has_column(TIMESTAMP, TIMESTAMPTZ)),
    "partition-change-kept-twice": ("partitioned table", lambda settings, tables: any(
        settings.topology.silver_of(t.name).partition_by for t in tables)),
    "dropped-added-column": ("MariaDB or MySQL table", lambda settings, tables: any(
        settings.topology.sources[settings.topology.table(t.name).source].engine in ("mariadb", "mysql")
        for t in tables)),
    "binary-as-text": ("binary column", _has_column(BYTES)),
    "partial-record-key": ("table with a composite key", lambda settings, tables: any(
        len(t.primary_key) > 1 for t in tables)),
    "hard-deletes-everywhere": ("table with soft deletes", lambda settings, tables: any(
        not settings.topology.silver_of(t.name).hard_deletes for t in tables)),
    "skip-table": ("table venue", lambda settings, tables: any(t.name == "venue" for t in tables)),
}


def unmet_need(variant: str, settings, tables: list) -> str:
    """What the project's tables lack for the variant to show ("" when nothing)."""
    need, met = NEEDS.get(variant, ("", lambda settings, tables: True))
    return "" if met(settings, tables) else f"the project's tables have no {need}"
