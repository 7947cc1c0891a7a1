"""The job's transforms on small DataFrames in a local Spark, without Kafka, the registry or S3: a key's changes in
one micro-batch reduce to the last by source position (not by Kafka offset), and a message that does not decode is
set aside with its coordinates and the reason, never dropped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_sandbox.sources.changes import from_epoch
from cdc_sandbox.spark_jobs.avro_schema import epoch_fields

# In a process of its own: PySpark fixes the JVM's classpath at the first session, and the end-to-end suites in this
# process need one started with the job's jars.
TRANSFORMS = """
import datetime as dt, json, os, sys, time
os.environ["TZ"] = "UTC"
time.tzset()
from pyspark.sql import SparkSession
from cdc_sandbox.spark_jobs.cdc_hudi_job import latest_per_key
from cdc_sandbox.spark_jobs.decode import decode, with_source_types
from cdc_sandbox.spark_jobs.images import PLACEHOLDER, completed
from cdc_sandbox.spark_jobs.job_config import TableSpec

given = json.load(sys.stdin)
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false") \\
    .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1") \\
    .config("spark.sql.session.timeZone", "UTC").getOrCreate()
spec = TableSpec(topic="tickit.ems.category", table="category", key=("catid",), position="lsn")
changes = spark.createDataFrame(
    [(1, "first", 100, 0), (1, "last", 300, 1), (1, "middle", 200, 2),  # a later change at a lower offset
     (2, "a", 500, 3), (2, "b", 500, 4)],                                  # one position: the later offset wins
    "catid int, catname string, _source_position long, offset long")
kept = {row.catid: row.catname for row in latest_per_key(changes, spec).collect()}

class NoSchemas:
    def get(self, global_id):
        return None

unframed = bytes([1]) + bytes(8) + b"body"
unknown = bytes([0]) + (77).to_bytes(8, "big") + b"body"
batch = spark.createDataFrame(
    [(spec.topic, 0, 10, None, unframed), (spec.topic, 0, 11, None, unknown), (spec.topic, 0, 12, None, b"\\x00")],
    "topic string, partition int, offset long, timestamp timestamp, value binary")
decoded = decode(batch, {spec.topic: spec.table}, NoSchemas(), pairs=[(spec.topic, 77)])
quarantined = sorted((row.offset, row.reason) for row in decoded.quarantine.collect())

numbers = spark.createDataFrame([[*row, dt.datetime(2008, 2, 18, 2, 36, 48)] for row in given["numbers"]],
                                "d int, ms long, us long, ns long, ts timestamp")
typed = [[value.isoformat() for value in row] for row in with_source_types(numbers, given["schema"]).collect()]
P = PLACEHOLDER
changes = spark.createDataFrame(
    [(1, "u", P, b"x", 10, 0),                            # silver holds the key: its value
     (2, "u", "in batch", b"y", 20, 1), (2, "u", P, b"y", 21, 2),   # the key's earlier change in the batch
     (3, "u", None, b"z", 30, 3), (3, "d", None, None, 31, 4),      # a NULL set earlier in the batch is a value
     (4, "d", None, None, 40, 5),                         # a key-only delete of a row silver holds
     (5, "u", P, P.encode(), 50, 6)],                     # silver does not hold the key
    "catid int, __op string, notes string, blob binary, _source_position long, offset long")
stored = spark.createDataFrame([(1, "stored", b"s1"), (3, "old", b"s3"), (4, "kept", b"s4")],
                               "catid int, notes string, blob binary")
def filled(key_only_deletes):
    return {f"{row.catid}@{row._source_position}": [row.notes, row.blob and bytes(row.blob).decode()]
            for row in completed(changes, spec, key_only_deletes, stored).collect()}
from pyspark.sql import functions as F
# `gone` is in schema version 1 only: dropped from the source before the key-only delete of version 2
versions = spark.createDataFrame([(6, "u", "set", 60, 7, 1), (6, "d", None, 61, 8, 2), (7, "d", None, 70, 9, 2)],
                                 "catid int, __op string, gone string, _source_position long, offset long, "
                                 "_schema_id long")
versions = versions.withColumn("gone", F.col("gone").alias("gone", metadata={"schema_ids": [1]}))
stored_gone = spark.createDataFrame([(7, "stored")], "catid int, gone string")
after_drop = {f"{row.catid}@{row._source_position}": row.gone
              for row in completed(versions, spec, True, stored_gone).collect()}
print(json.dumps({"kept": kept, "quarantined": quarantined, "tables": sorted(decoded.tables), "typed": typed,
                  "filled": filled(True), "filled_full_deletes": filled(False), "after_drop": after_drop}))
spark.stop()
"""


FIELDS = {"d": "io.debezium.time.Date", "ms": "io.debezium.time.Timestamp", "us": "io.debezium.time.MicroTimestamp",
          "ns": "io.debezium.time.NanoTimestamp", "ts": "org.apache.kafka.connect.data.Timestamp"}
SCHEMA = json.dumps({"type": "record", "name": "Value", "fields": [
    {"name": name, "type": ["null", {"type": "int" if name == "d" else "long", "connect.name": semantic}
                            | ({"logicalType": "timestamp-millis"} if name == "ts" else {})]}
    for name, semantic in FIELDS.items()]})
NUMBERS = [[13926, 1203302208123, 1203302208123456, 1203302208123456789],
           [-1, -1, -1, -1500]]  # before 1970: nanoseconds floor to the microsecond, as Python's // does


def run_transforms() -> dict:
    run = subprocess.run([sys.executable, "-c", TRANSFORMS], capture_output=True, text=True,
                         input=json.dumps({"schema": SCHEMA, "numbers": NUMBERS}), cwd=Path(__file__).parents[2])
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def result() -> dict:
    return run_transforms()


def test_in_batch_reduction_and_quarantine(result):
    assert result["kept"] == {"1": "last", "2": "b"}, "highest source position, then highest Kafka offset"
    reasons = dict(result["quarantined"])
    assert sorted(reasons) == [10, 11, 12], "every undecodable message is kept with its offset"
    assert reasons[10].startswith("not Apicurio-framed Avro") and reasons[12].startswith("not Apicurio-framed Avro")
    assert reasons[11] == "schema id 77 is not in the registry"
    assert result["tables"] == [], "nothing decoded, nothing written"


def test_the_job_and_the_harness_turn_debeziums_numbers_into_the_same_dates_and_times(result):
    units = epoch_fields(SCHEMA)
    assert units == {"d": "days", "ms": "millis", "us": "micros", "ns": "nanos", "ts": "millis"}
    for numbers, typed in zip(NUMBERS, result["typed"]):
        harness = [from_epoch(value, units[name]).isoformat() for name, value in zip(FIELDS, numbers)]
        assert typed[:4] == harness, "the job's Spark and the harness's Python agree"
        assert typed[4] == "2008-02-18T02:36:48", "a field the Avro reader already typed is left as it is"
    assert result["typed"][0][:4] == ["2008-02-17", "2008-02-18T02:36:48.123000", "2008-02-18T02:36:48.123456",
                                      "2008-02-18T02:36:48.123456"]
    assert result["typed"][1][3] == "1969-12-31T23:59:59.999998"


def test_values_an_event_leaves_out_are_the_keys_previous_ones(result):
    assert result["filled"] == {
        "1@10": ["stored", "x"], "2@20": ["in batch", "y"], "2@21": ["in batch", "y"],
        "3@30": [None, "z"], "3@31": [None, "z"], "4@40": ["kept", "s4"], "5@50": [None, None]}


def test_a_key_only_delete_after_a_column_is_dropped_holds_it_null(result):
    """The delete's schema version lacks the column: neither the key's earlier change nor silver's row fills it."""
    assert result["after_drop"] == {"6@60": "set", "6@61": None, "7@70": None}


def test_a_delete_keeps_its_own_values_unless_the_table_sends_key_only_deletes(result):
    assert result["filled_full_deletes"]["4@40"] == [None, None]
    assert result["filled_full_deletes"]["3@31"] == [None, None]


def test_a_type_hudi_cannot_write_over_is_named_with_both_types():
    from pyspark.sql.types import DecimalType, IntegerType, LongType, StringType, StructField, StructType

    from cdc_sandbox.spark_jobs.cdc_hudi_job import ColumnTypeRefused, retyped_columns

    stored = StructType([StructField("catid", IntegerType()), StructField("price", DecimalType(8, 2)),
                         StructField("visits", LongType())])
    incoming = StructType([StructField("catid", IntegerType()), StructField("price", DecimalType(12, 2)),
                           StructField("visits", LongType()), StructField("note", StringType())])
    retyped = retyped_columns(stored, incoming)
    assert retyped == ["price: decimal(8,2) -> decimal(12,2)"]
    message = str(ColumnTypeRefused("category", retyped))
    assert "silver category cannot take the new type of price: decimal(8,2) -> decimal(12,2)" in message
    assert "nothing of this batch is committed" in message and "Rebuild silver category" in message
