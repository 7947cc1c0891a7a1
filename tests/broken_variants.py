"""Deliberately broken variants of the Hudi job, to show that the suites fail when the pipeline is wrong.

Each variant patches the in-process job the way a real bug would change it, and names the failure it must cause
(`Catch`: the oracle's check, the table, the column or the rows by key). `python -m tests.broken_variants` (`make
broken-variants`) runs the catch tests (`CATCH_TESTS`, also in `make test`): each variant in every job mode its
scenario declares, and on the team project's tables; it prints the matrix of variant, mode, scenario and what
caught it, and fails on any variant missed or caught by anything else.

With `--every-scenario` it sweeps instead: the suites once with the unbroken job and once per variant
(`SANDBOX_BROKEN_JOB=<variant>` applies one to a whole pytest run; see the project's conftest.py), reporting which
tests caught each: a test catches a variant when it passes with the unbroken job and fails with one of the
oracle's verdicts (`VERDICTS`) with the variant, never by an error of the harness or a time-out.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DateType

from cdc_sandbox.config import Settings
from cdc_sandbox.harness.checking.landing import NotOneBatch
from cdc_sandbox.harness.running.pipeline import SilverBehind
from cdc_sandbox.harness.checking.verdict import OracleMismatch
from cdc_sandbox.schema import BYTES, DATE, DECIMAL, INT, SMALLINT, TIMESTAMP, TIMESTAMPTZ
from cdc_sandbox.spark_jobs import cdc_hudi_job, decode, images
from cdc_sandbox.spark_jobs.decode import KAFKA_COLUMNS, RegistryUnavailable, SchemaCache
from cdc_sandbox.spark_jobs.job_config import TableSpec
from cdc_sandbox.spark_jobs.lake_layout import silver_table, split_uri
from cdc_sandbox.stack import catalog
from cdc_sandbox.tickit_data.schema import get_table

SUITES = ["cdc_sandbox/fixtures/scenarios"]
REPORTS = Path("reports/broken-variants")


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
    """Writes a MariaDB table's silver in the columns the table was created with (a fixed column list for
    binlog-sourced tables): a column a later migration adds never reaches silver."""

    def created_columns(changes: DataFrame, spec: TableSpec) -> DataFrame:
        if spec.position != "binlog":
            return changes
        created = get_table(spec.table).column_names
        return changes.drop(*[c for c in _source_columns(changes) if c not in created])

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


@dataclass(frozen=True)
class Catch:
    """The failure a variant must cause, and no other: the check that finds it (a `verdict.Finding`'s), the table,
    and the column it names; without a column, the keys whose rows are missing, extra or held twice (or, for
    "behind", the table alone). With `key`, the finding must name that row too: the scenario's own."""

    check: str
    table: str
    column: str | None = None
    key: tuple | None = None

    def matches(self, finding) -> bool:
        if finding is None or (finding.check, finding.table) != (self.check, self.table):
            return False
        if self.key is not None and self.key not in finding.keys | finding.differing_keys:
            return False
        return self.column in finding.columns if self.column else bool(finding.keys) or self.check == "behind"

    def __str__(self) -> str:
        shown = "(rows by key)" if self.column is None else f"(column {self.column})"
        return f"{self.check} of {self.table} {shown}" + (f" at key {', '.join(map(str, self.key))}" if self.key else "")


def caught_as(error: BaseException, catches: tuple[Catch, ...]) -> str:
    """"" when `error` is one of `catches`, else what it is instead (for the assertion's message)."""
    finding = getattr(error, "finding", None)
    if any(catch.matches(finding) for catch in catches):
        return ""
    expected = " or ".join(map(str, catches))
    return f"expected {expected}; caught as {finding or type(error).__name__}:\n{error}"


def expect_catch(request, variant: str, where: str, mode: str, catches: tuple[Catch, ...]):
    """Note the case in the test's junit properties (which `make broken-variants` tabulates); returns the judge of
    the error that caught the variant: "" when it is one of `catches`, else what it is instead."""
    properties = request.node.user_properties
    properties += [("variant", variant), ("where", where), ("mode", mode),
                   ("expected", " or ".join(map(str, catches)))]

    def judged(error: BaseException) -> str:
        finding = getattr(error, "finding", None)
        properties.append(("caught_as", str(finding) if finding else type(error).__name__))
        return caught_as(error, catches)

    return judged


def unmet_need(variant: str, settings, tables: list) -> str:
    """What the project's tables lack for the variant to show ("" when nothing)."""
    need, met = NEEDS.get(variant, ("", lambda settings, tables: True))
    return "" if met(settings, tables) else f"the project's tables have no {need}"


def break_job(name: str) -> pytest.MonkeyPatch:
    if name not in VARIANTS:
        raise SystemExit(f"SANDBOX_BROKEN_JOB={name!r} is not a variant; choose one of: {', '.join(VARIANTS)}")
    patch = pytest.MonkeyPatch()
    VARIANTS[name](patch)
    return patch


# --- judging a run -------------------------------------------------------------------------------------------
VERDICTS = (OracleMismatch, NotOneBatch, SilverBehind)  # what the harness finds wrong in silver (and subclasses)
PYTEST_EXITS = {2: "interrupted (Ctrl-C, or errors during collection)", 3: "internal error", 4: "usage error",
                5: "no tests collected"}
FIRST_NAME = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")


@dataclass(frozen=True)
class Outcome:
    """One test in one run: passed, skipped, caught (failed with a verdict), failed (otherwise) or error."""

    status: str
    detail: str = ""  # the failure's or error's first line


@dataclass(frozen=True)
class Judgement:
    caught_by: tuple[str, ...] = ()
    not_judged: str = ""  # why the run cannot tell whether the variant is caught
    not_applicable: str = ""  # what the project's tables lack for the bug to show


def is_verdict(kind: str) -> bool:
    """Whether an exception's qualified name (as a failure message starts) names one of the oracle's verdicts."""
    module, _, name = kind.rpartition(".")
    try:
        found = getattr(importlib.import_module(module), name, None) if module else None
    except ImportError:
        return False
    return isinstance(found, type) and issubclass(found, VERDICTS)


def outcomes(junit_xml: str) -> dict[str, Outcome]:
    """Each test of a junit report (`classname::name`) with its outcome. An error (in setup, teardown or
    collection) outweighs a failure: the test did not get to judge."""
    results = {}
    for case in ET.fromstring(junit_xml).iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        error, failure = case.find("error"), case.find("failure")
        if error is not None:
            results[test] = Outcome("error", _first_line(error.get("message", "")))
        elif failure is not None:
            message = _first_line(failure.get("message", ""))
            kind = FIRST_NAME.match(message)
            results[test] = Outcome("caught" if kind and is_verdict(kind.group(1)) else "failed", message)
        else:
            results[test] = Outcome("skipped" if case.find("skipped") is not None else "passed")
    return results


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def run_problem(exit_code: int, junit_xml: str | None) -> str:
    """Why a pytest run says nothing about its tests ("" when it does: exit code 0 or 1 and a junit report)."""
    if exit_code not in (0, 1):
        return f"pytest exited {exit_code}: {PYTEST_EXITS.get(exit_code, 'killed or crashed')}"
    if not junit_xml:
        return "pytest wrote no junit report"
    return ""


def judge(exit_code: int, junit_xml: str | None, baseline: dict[str, Outcome]) -> Judgement:
    """Which tests caught the variant, counting only tests that passed with the unbroken job (`baseline`)."""
    problem = run_problem(exit_code, junit_xml)
    if problem:
        return Judgement(not_judged=problem)
    results = outcomes(junit_xml)
    judging = {test: result for test, result in results.items() if test in baseline
               and baseline[test].status == "passed"}
    caught = tuple(test for test, result in judging.items() if result.status == "caught")
    if caught:
        return Judgement(caught_by=caught)
    others = [test for test, result in results.items() if result.status == "caught" and test not in judging]
    if others:
        return Judgement(not_judged=f"caught only by tests that fail with the unbroken job: "
                                    f"{', '.join(map(short_name, others))}")
    unjudged = [(test, result) for test, result in judging.items() if result.status in ("failed", "error")]
    if unjudged:
        test, result = unjudged[0]
        return Judgement(not_judged=f"{len(unjudged)} test(s) failed for another reason, e.g. {short_name(test)} "
                                    f"({result.status}: {result.detail[:160]})")
    if not judging:
        return Judgement(not_judged="no test passed with the unbroken job")
    return Judgement()


def short_name(test: str) -> str:
    """A scenario file's stem, or a test function's name with its parameters."""
    module, _, name = test.partition("::")
    if module.endswith((".yaml", ".yml")):
        return module.rsplit(".", 2)[-2]
    return name


def verdict_line(variant: str, judgement: Judgement) -> str:
    if judgement.not_applicable:
        return f"{variant}: does not apply ({judgement.not_applicable})"
    if judgement.caught_by:
        return f"{variant}: caught by {', '.join(map(short_name, judgement.caught_by))}"
    if judgement.not_judged:
        return f"{variant}: not judged ({judgement.not_judged})"
    return f"{variant}: NOT CAUGHT"


def matrix(judgements: dict[str, Judgement]) -> list[str]:
    """Variants by the tests that caught any of them (numbered, named below the table): `x` where a test caught a
    variant, `?` across a variant the run could not judge."""
    tests = list(dict.fromkeys(test for j in judgements.values() for test in j.caught_by))
    if not tests:
        return ["(no test caught any variant)"]
    width = max(map(len, judgements), default=0)
    header = " " * width + "".join(f"{n:>4}" for n in range(1, len(tests) + 1))
    rows = [variant.ljust(width) + "".join(
        f"{'-' if j.not_applicable else '?' if j.not_judged else 'x' if test in j.caught_by else '.':>4}" for test in tests)
        for variant, j in judgements.items()]
    return [header, *rows, *[f"{n:>4}  {short_name(test)}" for n, test in enumerate(tests, 1)]]


def catch_matrix(junit_xml: str) -> tuple[list[str], bool]:
    """The catch tests' cases (variant, job mode, scenario or tables, what caught it, the outcome) as an aligned
    table, and whether every case was caught by its expected failure."""
    rows = []
    for case in ET.fromstring(junit_xml).iter("testcase"):
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        if "variant" in properties:
            rows.append((properties["variant"], properties["mode"], properties["where"],
                         properties.get("caught_as", "-"), _catch_outcome(case, properties)))
    if not rows:
        return ["(no catch test ran)"], False
    table = [("variant", "job mode", "scenario or tables", "caught as", "outcome"), *rows]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[4] for row in table]
    return lines, all(row[4] == "ok" for row in rows)


def _catch_outcome(case, properties: dict) -> str:
    error, failure, skipped = case.find("error"), case.find("failure"), case.find("skipped")
    if error is not None:
        return f"ERROR: {_first_line(error.get('message', ''))[:120]}"
    if skipped is not None:
        return f"skipped: {_first_line(skipped.get('message', ''))[:120]}"
    if failure is None:
        return "ok"
    if "caught_as" in properties:
        return f"WRONG KIND (expected {properties['expected']})"
    message = _first_line(failure.get("message", ""))
    return "MISSED" if "DID NOT RAISE" in message else f"FAILED: {message[:120]}"


# --- running the suites --------------------------------------------------------------------------------------
CATCH_TESTS = ["tests/e2e/test_broken_variants_caught.py::test_broken_job_is_caught",
               "tests/e2e/test_team_project.py::test_a_broken_job_is_caught_on_the_team_tables",
               "tests/e2e/test_spark_cluster.py::test_a_bug_only_a_cluster_shows_passes_in_local_mode_and_is_caught_there"]


def run_catch_check() -> int:
    """Every variant in every job mode its scenario declares (and on the team tables), each of which must be caught
    by the failure it names; prints the matrix of what caught each."""
    junit = REPORTS / "catches.xml"
    junit.unlink(missing_ok=True)
    code = subprocess.run([sys.executable, "-m", "pytest", *CATCH_TESTS, "-q", "-p", "no:cacheprovider",
                           f"--junitxml={junit}", f"--sandbox-summary={REPORTS / 'catches.txt'}"]).returncode
    report = junit.read_text() if junit.exists() else None
    if problem := run_problem(code, report):
        print(f"the catch tests say nothing: {problem}")
        return 1
    lines, every_one_caught = catch_matrix(report)
    (REPORTS / "catch-matrix.txt").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines))
    return 0 if every_one_caught and code == 0 else 1

def run_suites(variant: str | None, suites: list[str]) -> tuple[int, str | None, float]:
    """pytest over the suites with the variant (None: the unbroken job): exit code, junit report, seconds. Every run
    writes its lakes from the first change on, as a broken job's must be (no branches of the shared baseline)."""
    name = variant or "unbroken"
    junit, log = REPORTS / f"{name}.xml", REPORTS / f"{name}.log"
    junit.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "SANDBOX_BROKEN_JOB"} | {"SANDBOX_BRANCH_LAKES": "0"} | (
        {"SANDBOX_BROKEN_JOB": variant} if variant else {})
    started = time.monotonic()
    with open(log, "w") as output:
        code = subprocess.run([sys.executable, "-m", "pytest", *suites, "-q", "-p", "no:cacheprovider",
                               "--oracle-timeout", "120", f"--junitxml={junit}",
                               f"--sandbox-summary={REPORTS / name}.txt"],
                              env=env, stdout=output, stderr=subprocess.STDOUT).returncode
    return code, junit.read_text() if junit.exists() else None, time.monotonic() - started


def main(argv: list[str]) -> int:
    """The catch check (`run_catch_check`); with --every-scenario, the sweep: the suites with the unbroken job, then
    once per variant, printing which tests caught each and failing unless every variant is caught by some test."""
    parser = argparse.ArgumentParser(description="Check that each broken variant of the job is caught as it must be.")
    parser.add_argument("--every-scenario", action="store_true",
                        help="run whole suites under each variant and report which tests catch it")
    parser.add_argument("variants", nargs="*", help=f"with --every-scenario; default: all of {', '.join(VARIANTS)}")
    parser.add_argument("--suite", action="append", help=f"with --every-scenario: test paths (repeatable; default: "
                                                         f"{' '.join(SUITES)})")
    args = parser.parse_args(argv)
    for name in args.variants:
        if name not in VARIANTS:
            parser.error(f"no variant {name!r}; choose from {', '.join(VARIANTS)}")
    if (args.variants or args.suite) and not args.every_scenario:
        parser.error("variants and --suite choose what --every-scenario runs; the catch check runs every variant")
    REPORTS.mkdir(parents=True, exist_ok=True)
    if not args.every_scenario:
        return run_catch_check()
    suites, variants = args.suite or SUITES, args.variants or list(VARIANTS)
    settings = Settings.load()
    tables = [catalog.table_schema(settings, t.name) for t in settings.topology.tables]
    baseline, problem = run_baseline(suites)
    judgements = {}
    for name in variants:
        if unmet := unmet_need(name, settings, tables):
            judgements[name] = Judgement(not_applicable=unmet)
            continue
        if problem:
            judgements[name] = Judgement(not_judged=f"the unbroken job's run: {problem}")
            continue
        print(f"--- {name}: {' '.join(VARIANTS[name].__doc__.split())}", flush=True)
        code, junit, seconds = run_suites(name, suites)
        judgements[name] = judge(code, junit, baseline)
        print(f"    {seconds:.0f} s; {verdict_line(name, judgements[name])}", flush=True)
    report = [*matrix(judgements), "", *(verdict_line(name, j) for name, j in judgements.items())]
    (REPORTS / "matrix.txt").write_text("\n".join(report) + "\n")
    print("\n" + "\n".join(report))
    return 0 if all(j.caught_by or j.not_applicable for j in judgements.values()) else 1


def run_baseline(suites: list[str]) -> tuple[dict[str, Outcome], str]:
    """The unbroken job's outcomes, or why its run says nothing; prints the tests that cannot judge."""
    print("--- the unbroken job", flush=True)
    code, junit, seconds = run_suites(None, suites)
    problem = run_problem(code, junit)
    if problem:
        print(f"    {seconds:.0f} s; {problem}", flush=True)
        return {}, problem
    baseline = outcomes(junit)
    failing = {test: result for test, result in baseline.items() if result.status not in ("passed", "skipped")}
    print(f"    {seconds:.0f} s; {len(baseline) - len(failing)} of {len(baseline)} tests can judge", flush=True)
    for test, result in failing.items():
        print(f"    cannot judge (fails with the unbroken job): {short_name(test)}: {result.detail}", flush=True)
    return baseline, ""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
