"""Decoding Apicurio-framed Avro change events inside Spark.

A message value is a zero magic byte, the schema's 8-byte global id, then the Avro body. Within a micro-batch the
job finds the (topic, schema id) pairs, fetches each schema once from the registry, and decodes with Spark's
`from_avro` (in the JVM, no Python per row). Messages that cannot be decoded — wrong magic byte, an id the
registry does not know, a body the schema cannot read — are returned apart with the reason, never dropped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import reduce

import requests
from pyspark.sql import Column, DataFrame, functions as F
from pyspark.sql.types import IntegerType, LongType
from pyspark.sql.avro.functions import from_avro

from spark_jobs.avro_schema import epoch_fields
from spark_jobs.job_config import REGISTRY_RETRY_PAUSES

KAFKA_COLUMNS = ["topic", "partition", "offset", "timestamp"]
# Binlog and SQL Server positions are integers of up to 38 digits. The harness folds them on its own
# (`sandbox/sources/positions.py`); tests/unit/test_positions.py keeps the two in step.
WIDE_POSITION = "decimal(38,0)"
# MariaDB/MySQL: file * 10^26 + offset * 10^6 + row, exact for every file number the server names (its index ends at
# 2^31 - 1; room to 10^12), any 64-bit offset (room to 10^20) and up to 10^6 rows per event.
BINLOG_FILE_FACTOR = 10**26
BINLOG_POS_FACTOR = 10**6
# SQL Server: commit LSN, change LSN and event serial number folded bitwise.
LSN_VLF_SHIFT, LSN_BLOCK_SHIFT = 40, 16
WITHIN_COMMIT_BITS, SERIAL_BITS = 44, 4
# The type and order of `_source_position` per source. A silver table keeps the type it was created with (Hudi does
# not widen long to decimal), so a lake written under another layout is rebuilt. 1: binlog positions as a long
# (which wrapped from binlog file 92,234 on); 2: binlog positions as WIDE_POSITION.
POSITION_LAYOUT = 2


class RegistryUnavailable(RuntimeError):
    """The registry did not answer: the batch stops rather than set valid changes aside."""


class SchemaCache:
    """Schemas by global id from the Apicurio v2 API; a schema never changes once registered, so each is fetched
    once. An id the registry does not know (yet: a connector may register it a moment later) is asked again with
    backoff and never remembered as missing; an unreachable registry stops the batch."""

    PAUSES = REGISTRY_RETRY_PAUSES  # seconds between tries, about 8 s in all

    def __init__(self, registry_url: str, pauses: tuple[float, ...] = PAUSES):
        self.registry_url = registry_url.rstrip("/")
        self.pauses = pauses
        self._schemas: dict[int, str] = {}

    def get(self, global_id: int) -> str | None:
        """The schema's text; None if the registry still does not know the id after every try."""
        if global_id in self._schemas:
            return self._schemas[global_id]
        url = f"{self.registry_url}/ids/globalIds/{global_id}"
        for pause in (*self.pauses, None):
            problem = self._ask(url, global_id)
            if problem is None:
                return self._schemas[global_id]
            if pause is None:
                break
            time.sleep(pause)
        if problem == "HTTP 404":
            return None
        raise RegistryUnavailable(
            f"the schema registry did not answer for schema id {global_id} after {len(self.pauses) + 1} tries "
            f"({url}: {problem}). The batch stops so that no valid change is set aside: start the registry, then "
            f"the job again (it resumes from its checkpoint).")

    def _ask(self, url: str, global_id: int) -> str | None:
        """Fetch and keep the schema; what went wrong, or None."""
        try:
            response = requests.get(url, timeout=10)
        except requests.RequestException as exc:
            return f"{type(exc).__name__}: {exc}"
        if response.status_code != 200:
            return f"HTTP {response.status_code}"
        self._schemas[global_id] = response.text
        return None


@dataclass
class DecodedBatch:
    tables: dict[str, DataFrame]  # table name -> decoded change rows (source columns + __ fields + kafka fields)
    quarantine: DataFrame | None  # topic, partition, offset, timestamp, schema_id, reason, value


def framed(batch: DataFrame) -> DataFrame:
    """Kafka rows with the Apicurio header taken apart."""
    return batch.select(
        *KAFKA_COLUMNS, "value",
        (F.hex(F.substring("value", 1, 1)) == F.lit("00")).alias("_framed"),
        F.conv(F.hex(F.substring("value", 2, 8)), 16, 10).cast("long").alias("_schema_id"),
    )


def framed_ok() -> Column:
    return F.col("_framed") & (F.length("value") >= 9)


def schema_pairs(batch: DataFrame) -> tuple[int, list[tuple[str, int]]]:
    """The batch's number of messages and its (topic, schema id) pairs, in one Spark job."""
    counts = framed(batch).groupBy("topic", "_schema_id", (F.col("value").isNotNull() & framed_ok()).alias("ok")) \
        .count().collect()
    return sum(row["count"] for row in counts), sorted({(row["topic"], row["_schema_id"]) for row in counts if row["ok"]})


def decode(batch: DataFrame, tables_by_topic: dict[str, str], schemas: SchemaCache,
           pairs: list[tuple[str, int]] | None = None) -> DecodedBatch:
    """The batch's change rows per table (named by `tables_by_topic`), and what cannot be decoded. `pairs` (from
    `schema_pairs`) saves a job."""
    rows = framed(batch.filter(F.col("value").isNotNull())).cache()
    bad = [_quarantined(rows.filter(~F.col("_framed") | (F.length("value") < 9)), "not Apicurio-framed Avro "
                        "(magic byte is not 0 or the message is shorter than its header)")]
    decoded: dict[str, list[DataFrame]] = {}
    if pairs is None:
        pairs = rows.filter(framed_ok()).select("topic", "_schema_id").distinct().collect()
    for topic, schema_id in pairs:
        part = rows.filter((F.col("topic") == topic) & (F.col("_schema_id") == schema_id) & F.col("_framed"))
        schema = schemas.get(schema_id)
        if schema is None:
            bad.append(_quarantined(part, f"schema id {schema_id} is not in the registry"))
            continue
        body = F.expr("substring(value, 10, length(value) - 9)")
        with_record = part.withColumn("_record", from_avro(body, schema, {"mode": "PERMISSIVE"}))
        bad.append(_quarantined(with_record.filter(F.col("_record").isNull()),
                                f"body does not decode with schema id {schema_id}"))
        good = with_record.filter(F.col("_record").isNotNull()).select(*KAFKA_COLUMNS, "_schema_id", "_record.*")
        decoded.setdefault(tables_by_topic[topic], []).append(with_source_types(good, schema))
    tables = {t: reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts) for t, parts in decoded.items()}
    return DecodedBatch(tables, reduce(DataFrame.unionByName, bad))


def _quarantined(rows: DataFrame, reason: str) -> DataFrame:
    return rows.select(*KAFKA_COLUMNS, F.col("_schema_id").alias("schema_id"), F.lit(reason).alias("reason"),
                       F.base64("value").alias("value_base64"))


def with_source_types(rows: DataFrame, schema_json: str) -> DataFrame:
    """Turn Debezium's dates and times carried as Avro numbers (`EPOCH_UNITS`) back into dates and timestamps."""
    numbers = {field.name for field in rows.schema.fields if isinstance(field.dataType, (IntegerType, LongType))}
    for name, unit in epoch_fields(schema_json).items():
        if name in numbers:  # else from_avro already gave a date or timestamp (an Avro logical type)
            rows = rows.withColumn(name, _from_epoch(f"`{name}`", unit))
    return rows


def _from_epoch(number: str, unit: str) -> Column:
    """The SQL expression `number` (a count of `unit`s since 1970-01-01) as a date or timestamp."""
    if unit == "days":
        return F.expr(f"date_add(DATE'1970-01-01', CAST({number} AS INT))")
    if unit == "millis":
        return F.expr(f"timestamp_millis({number})")
    if unit == "micros":
        return F.expr(f"timestamp_micros({number})")
    return F.expr(f"timestamp_micros(({number} - pmod({number}, 1000)) div 1000)")  # nanos, floored as Python does


def source_position(rows: DataFrame, kind: str) -> DataFrame:
    """A monotonic ordering of changes: the Postgres LSN (a long); binlog file, offset and row, or the SQL Server
    commit LSN, change LSN and event serial number, folded into one decimal(38,0)."""
    if kind == "lsn":
        return rows.withColumn("_source_position", F.col("__lsn").cast("long"))
    if kind == "sqlserver":
        return rows.withColumn("_source_position", sqlserver_position(
            F.col("__commit_lsn"), F.col("__change_lsn"), F.col("__event_serial_no")))
    return rows.withColumn("_source_position", binlog_position(F.col("__file"), F.col("__pos"), F.col("__row")))


def _wide(number: int) -> Column:
    """An integer literal as a decimal(38,0), from its digits (it may lie past a long's range)."""
    return F.lit(str(number)).cast(WIDE_POSITION)


def _power_of_two(bits: int) -> Column:
    return _wide(2**bits)


def binlog_position(file_name: Column, offset: Column, row: Column) -> Column:
    """Binlog file number (the digits ending its name), offset and row as one decimal(38,0), ordered by all three."""
    file_number = F.regexp_extract(file_name, r"(\d+)$", 1).cast(WIDE_POSITION)
    folded = (file_number * _wide(BINLOG_FILE_FACTOR) + offset.cast(WIDE_POSITION) * _wide(BINLOG_POS_FACTOR)
              + row.cast(WIDE_POSITION))
    return folded.cast(WIDE_POSITION)


def _lsn_number(lsn):
    """`0000002b:00000158:0001` (VLF sequence, log block, slot in hexadecimal) as one ordered number."""
    part = [F.conv(F.split(lsn, ":").getItem(i), 16, 10).cast(WIDE_POSITION) for i in range(3)]
    return part[0] * _power_of_two(LSN_VLF_SHIFT) + part[1] * _power_of_two(LSN_BLOCK_SHIFT) + part[2]


def sqlserver_position(commit_lsn, change_lsn, serial):
    commit = _lsn_number(commit_lsn)
    change = F.coalesce(_lsn_number(change_lsn), commit)
    room = _power_of_two(WITHIN_COMMIT_BITS) - F.lit(1).cast(WIDE_POSITION)
    distance = F.least(F.greatest(commit - change, F.lit(0).cast(WIDE_POSITION)), room)
    serial_part = F.least(F.coalesce(serial.cast("long"), F.lit(0)), F.lit(2**SERIAL_BITS - 1)).cast(WIDE_POSITION)
    folded = (commit * _power_of_two(WITHIN_COMMIT_BITS + SERIAL_BITS)
              + (room - distance) * _power_of_two(SERIAL_BITS) + serial_part)
    return folded.cast(WIDE_POSITION)
