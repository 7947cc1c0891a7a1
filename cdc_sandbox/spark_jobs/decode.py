"""Decoding Apicurio-framed Avro change events inside Spark.

A message value is a zero magic byte, the schema's 8-byte global id, then the Avro body. Within a micro-batch the
job finds the (topic, schema id) pairs, fetches each schema once from the registry, and decodes with Spark's
`from_avro` (in the JVM, no Python per row). Messages that cannot be decoded — wrong magic byte, an id the
registry does not know, a body the schema cannot read — are returned apart with the reason, never dropped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import reduce

import requests
from pyspark.sql import Column, DataFrame, functions as F
from pyspark.sql.avro.functions import from_avro
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from cdc_sandbox.spark_jobs.avro_schema import (
    VARIABLE_SCALE_DECIMAL,
    ZONED_TIMESTAMP,
    column_defaults,
    epoch_fields,
    is_envelope,
    semantic_types,
)
from cdc_sandbox.spark_jobs.job_config import REGISTRY_RETRY_PAUSES

KAFKA_COLUMNS = ["topic", "partition", "offset", "timestamp"]
LITERAL_DEFAULTS = (StringType, IntegerType, LongType, ShortType, BooleanType, DoubleType, FloatType)
# The source fields a flattened event carries as `__<name>` that make up its position (`source_position`).
POSITION_FIELDS = ("lsn", "file", "pos", "row", "commit_lsn", "change_lsn", "event_serial_no")
# Binlog and SQL Server positions are integers of up to 38 digits. The harness folds them on its own
# (`cdc_sandbox/sources/positions.py`); tests/unit/test_positions.py keeps the two in step.
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

    PAUSES = REGISTRY_RETRY_PAUSES  # seconds between tries, enough in all for a connector to register a new schema

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
    persisted: list[DataFrame] = field(default_factory=list)  # to unpersist once the batch is written

    def release(self) -> None:
        for frame in self.persisted:
            frame.unpersist()


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
    `schema_pairs`) saves a job.

    Each topic is decoded in one pass whatever the number of its schema versions, and kept for the batch: the
    position's aggregate, Hudi's upsert and the quarantine's count all read it. A union of one decoded frame per
    schema id made a stage of (schema ids x Kafka partitions) tasks per read, each carrying every version's plan:
    30 schema ids over 31 partitions came to 961 tasks for the quarantine's count alone."""
    rows = framed(batch.filter(F.col("value").isNotNull()))
    bad = [_quarantined(rows.filter(~framed_ok()), "not Apicurio-framed Avro "
                        "(magic byte is not 0 or the message is shorter than its header)")]
    if pairs is None:
        pairs = [(row["topic"], row["_schema_id"])
                 for row in rows.filter(framed_ok()).select("topic", "_schema_id").distinct().collect()]
    versions: dict[str, list[tuple[int, str]]] = {}
    for topic, schema_id in sorted(pairs):
        schema = schemas.get(schema_id)
        if schema is None:
            bad.append(_quarantined(rows.filter(framed_ok() & (F.col("topic") == topic)
                                                & (F.col("_schema_id") == schema_id)),
                                    f"schema id {schema_id} is not in the registry"))
        else:
            versions.setdefault(topic, []).append((schema_id, schema))
    tables, persisted = {}, []
    for topic, known in versions.items():
        records = _records(rows.filter(framed_ok() & (F.col("topic") == topic)
                                       & F.col("_schema_id").isin([schema_id for schema_id, _ in known])), known)
        persisted.append(records)
        bad.append(_quarantined(records.filter(~F.col("_decoded")), None))
        tables[tables_by_topic[topic]] = _merged(records.filter(F.col("_decoded")), known)
    return DecodedBatch(tables, reduce(DataFrame.unionByName, bad), persisted)


def _record_column(schema_id: int) -> str:
    return f"_record_{schema_id}"


def _records(part: DataFrame, known: list[tuple[int, str]]) -> DataFrame:
    """One topic's messages, each decoded by its own schema into that schema's record column (the others null),
    with whether it decoded; a message's bytes are kept only when it did not. Persisted."""
    body = F.expr("substring(value, 10, length(value) - 9)")
    decoded = part.select(*KAFKA_COLUMNS, "_schema_id", "value", *[
        F.when(F.col("_schema_id") == schema_id, from_avro(body, schema, {"mode": "PERMISSIVE"}))
        .alias(_record_column(schema_id)) for schema_id, schema in known])
    ok = reduce(lambda a, b: a | b, [_read(decoded, _record_column(schema_id)) for schema_id, _ in known])
    # Spark does not fold this projection into the one above: that would decode each record twice.
    return decoded.select(*KAFKA_COLUMNS, "_schema_id", *[_record_column(schema_id) for schema_id, _ in known],
                          ok.alias("_decoded"), F.when(~ok, F.col("value")).alias("value")).persist()


def _read(decoded: DataFrame, record: str) -> Column:
    """Whether the record column holds a record its schema read. A body the schema cannot read comes out of
    `from_avro` (permissive) as a record whose every field is null, not as null; no change event is one."""
    fields = decoded.schema[record].dataType.fieldNames()
    return F.col(record).isNotNull() & reduce(lambda a, b: a | b,
                                              [F.col(f"`{record}`.`{name}`").isNotNull() for name in fields])


def _merged(records: DataFrame, known: list[tuple[int, str]]) -> DataFrame:
    """The decoded records as columns: a column any version has, in the order the versions add them, holds the
    value from the row's own version (Spark widens a type that changed between versions). A Debezium envelope (a
    truncate, which the connectors leave unflattened) gives its operation and source position only.

    A column added with a DEFAULT (`column_defaults`) holds it in the live rows of the versions before it, as the
    source rows took it then, and carries it in its metadata (`default_of`) for the rows silver holds. A source column's
    metadata names the schema versions that have it (`schema_ids`)."""
    columns: dict[str, list[Column]] = {}
    present: dict[str, set[int]] = {}
    defaults: dict[str, dict] = {}
    for schema_id, schema in known:
        fields = records.schema[_record_column(schema_id)].dataType
        envelope = is_envelope(schema)
        for name, value in (_envelope_fields if envelope else _typed_fields)(fields, schema,
                                                                             _record_column(schema_id)).items():
            columns.setdefault(name, []).append(value)
            present.setdefault(name, set()).add(schema_id)
        if not envelope:
            defaults |= _defaults(fields, schema)  # a later version's wins
    row_versions = [schema_id for schema_id, schema in known if not is_envelope(schema)]
    # A row deleted before the column was added keeps what its delete carried.
    live = F.coalesce(F.coalesce(*columns["__deleted"]) != F.lit("true"), F.lit(True)) if "__deleted" in columns \
        else F.lit(True)
    for name, default in defaults.items():
        lacking = [schema_id for schema_id in row_versions if schema_id not in present[name]]
        if lacking:
            columns[name].append(F.when(F.col("_schema_id").isin(lacking) & live, _default_value(default)))
    return records.select(*KAFKA_COLUMNS, "_schema_id", *[
        (values[0] if len(values) == 1 else F.coalesce(*values)).alias(name, metadata=defaults.get(name, {}) | (
            {} if name.startswith("__") else {"schema_ids": sorted(present[name])}))
        for name, values in columns.items()])


def _defaults(fields: StructType, schema_json: str) -> dict[str, dict]:
    """Column name -> what `_default_value` makes its default from, for the defaults a literal gives: a decimal's
    (Avro bytes) and any other kind are left out, and Debezium's own `__` fields."""
    units, semantic = epoch_fields(schema_json), semantic_types(schema_json)
    found = {}
    for name, default in column_defaults(schema_json).items():
        if name.startswith("__") or name not in fields.fieldNames() or isinstance(default, (dict, list)):
            continue
        kind = fields[name].dataType
        if name in units and isinstance(kind, (IntegerType, LongType)):
            found[name] = {"source_default": default, "epoch_unit": units[name]}
        elif semantic.get(name) == ZONED_TIMESTAMP:
            found[name] = {"source_default": default, "cast": "timestamp"}
        elif isinstance(kind, LITERAL_DEFAULTS):
            found[name] = {"source_default": default, "cast": kind.simpleString()}
    return found


def _default_value(default: dict) -> Column:
    if "epoch_unit" in default:
        return _from_epoch(str(int(default["source_default"])), default["epoch_unit"])
    return F.lit(default["source_default"]).cast(default["cast"])


def default_of(field: StructField) -> Column | None:
    """The value a decoded column's source rows took when it was added with a DEFAULT, or None."""
    return _default_value(field.metadata) if "source_default" in field.metadata else None


def _typed_fields(fields: StructType, schema_json: str, record: str | None = None) -> dict[str, Column]:
    """Each field (of the struct column `record`, if given), Debezium's dates and times carried as Avro numbers
    (`EPOCH_UNITS`) turned back into dates and timestamps, its zoned timestamps (ISO text) into instants and its
    decimals of any scale (a struct of scale and digits) into their exact text."""
    units, semantic = epoch_fields(schema_json), semantic_types(schema_json)
    typed = {}
    for f in fields.fields:
        name = f"`{record}`.`{f.name}`" if record else f"`{f.name}`"
        # A field that is no number came from from_avro as a date or timestamp already (an Avro logical type).
        is_epoch = f.name in units and isinstance(f.dataType, (IntegerType, LongType))
        if is_epoch:
            typed[f.name] = _from_epoch(name, units[f.name])
        elif semantic.get(f.name) == ZONED_TIMESTAMP and isinstance(f.dataType, StringType):
            typed[f.name] = F.col(name).cast("timestamp")  # the text carries its offset: no session zone applies
        elif semantic.get(f.name) == VARIABLE_SCALE_DECIMAL and isinstance(f.dataType, StructType):
            typed[f.name] = variable_scale_text(F.col(name))
        else:
            typed[f.name] = F.col(name)
    return typed


def variable_scale_text(struct: Column) -> Column:
    """Debezium's VariableScaleDecimal (a scale and the big-endian two's-complement digits) as exact text. A Python
    function, run only for columns of this kind (Spark SQL converts no bytes this wide); self-contained, so that an
    executor runs it without this module."""

    def exact_text(value):
        from decimal import Decimal

        if value is None or value["scale"] is None or value["value"] is None:
            return None
        digits, scale = int.from_bytes(value["value"], "big", signed=True), value["scale"]
        return format(Decimal(f"{digits}E-{scale}") if scale else Decimal(digits), "f")

    return F.udf(exact_text, StringType())(struct)


def _envelope_fields(fields: StructType, schema_json: str, record: str) -> dict[str, Column]:
    """A Debezium envelope's operation and source position, named as the flattened events name them."""
    source = fields["source"].dataType.fieldNames() if "source" in fields.fieldNames() else []
    typed = {"__op": F.col(f"`{record}`.`op`")}
    for name in (f for f in POSITION_FIELDS if f in source):
        typed[f"__{name}"] = F.col(f"`{record}`.`source`.`{name}`")
    if "ts_ms" in source:  # as the connectors' `add.fields` name the source's commit time
        typed["__source_ts_ms"] = F.col(f"`{record}`.`source`.`ts_ms`")
    return typed


def _quarantined(rows: DataFrame, reason: str | None) -> DataFrame:
    """`reason` None: the body did not decode with the row's schema id."""
    why = F.lit(reason) if reason else F.concat(F.lit("body does not decode with schema id "),
                                                F.col("_schema_id").cast("string"))
    return rows.select(*KAFKA_COLUMNS, F.col("_schema_id").alias("schema_id"), why.alias("reason"),
                       F.base64("value").alias("value_base64"))


def with_source_types(rows: DataFrame, schema_json: str) -> DataFrame:
    """Turn Debezium's dates and times carried as Avro numbers (`EPOCH_UNITS`) back into dates and timestamps: on
    a flat frame, what `decode` does to each schema version's record column."""
    return rows.select(*[value.alias(name) for name, value in _typed_fields(rows.schema, schema_json).items()])


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
