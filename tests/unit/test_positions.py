"""Source positions: the harness's own parsing and folding (`cdc_sandbox.sources.positions`), their order across binlog
rotations and file numbers a long could not hold, the same folds computed by the job in Spark, and the position
each commit records, read back by the harness."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import fastavro

from cdc_sandbox.harness.running.timeline import MAX_POSITION_KEY, Commit, commit_of
from cdc_sandbox.sources.positions import (
    binlog_file_number,
    binlog_position,
    event_position,
    mssql_event_position,
    mssql_lsn_to_int,
    pg_lsn_to_int,
    position_floor,
    position_in,
)
from cdc_sandbox.spark_jobs.cdc_hudi_job import hudi_options
from cdc_sandbox.spark_jobs.job_config import JobConfig, TableSpec

LONG_MAX = 2**63 - 1
FILE_NUMBERS = [1, 92_233, 92_234, 999_999, 1_000_000, 2_147_483_647]  # 92,234 * 10^14 no longer fits a long
OFFSETS = [4, 2**32 - 1, 2**32, 2**32 + 1, 2**63 - 2, LONG_MAX]


def binlog_name(number: int, prefix: str = "mysql-bin") -> str:
    return f"{prefix}.{number:06d}"


# --- Postgres ----------------------------------------------------------------------------------------------
def test_postgres_lsns_read_as_debezium_reports_them():
    assert pg_lsn_to_int("0/0") == 0
    assert pg_lsn_to_int("16/B374D848") == 0x16_B374D848
    assert pg_lsn_to_int("0/FFFFFFFF") < pg_lsn_to_int("1/0")
    assert event_position("lsn", {"__lsn": 0x16_B374D848}) == 0x16_B374D848


# --- MariaDB/MySQL -----------------------------------------------------------------------------------------
def test_binlog_file_numbers_from_their_names():
    assert binlog_file_number("mysql-bin.000123") == 123
    assert binlog_file_number("mariadb-bin.2147483647") == 2_147_483_647
    assert binlog_file_number("binlog.1000000") == 1_000_000


def test_binlog_positions_fold_file_offset_and_row():
    assert binlog_position("mysql-bin.000123", 4, 2) == 123 * 10**26 + 4 * 10**6 + 2
    assert binlog_position("mysql-bin.092234", LONG_MAX, 999_999) == 92_234 * 10**26 + LONG_MAX * 10**6 + 999_999


def test_binlog_positions_order_like_file_offset_and_row_for_every_real_file_number():
    events = [(binlog_name(number), offset, row) for number in FILE_NUMBERS for offset in OFFSETS for row in (0, 999_999)]
    folded = [binlog_position(*event) for event in events]
    assert folded == sorted(folded) and len(set(folded)) == len(folded)
    assert max(folded) < 10**38  # fits the job's decimal(38,0)


def test_a_binlog_rotation_orders_the_new_files_first_event_after_the_old_files_last():
    for number in FILE_NUMBERS[:-1]:
        assert binlog_position(binlog_name(number), LONG_MAX, 999_999) < binlog_position(binlog_name(number + 1), 4)
    # the server widens the suffix past 999999: the names no longer sort as text
    assert binlog_position("binlog.999999", 2**32, 3) < binlog_position("binlog.1000000", 4)


def test_a_journal_position_spanning_a_rotation_covers_the_events_in_both_files():
    position = {"file_from": "binlog.999999", "pos_from": 500, "file_to": "binlog.1000000", "pos_to": 300}
    assert position_in(position, {"__file": "binlog.999999", "__pos": 600, "__row": 0})
    assert position_in(position, {"__file": "binlog.1000000", "__pos": 200, "__row": 0})
    assert not position_in(position, {"__file": "binlog.999999", "__pos": 400, "__row": 0})
    assert not position_in(position, {"__file": "binlog.1000000", "__pos": 301, "__row": 0})


def test_a_binlog_changes_floor_lies_at_or_below_its_events():
    change = SimpleNamespace(position={"file_from": "binlog.000041", "pos_from": 2**32 + 8,
                                       "file_to": "binlog.000042", "pos_to": 900})
    floor = position_floor(change.position)
    assert floor == binlog_position("binlog.000041", 2**32 + 8)
    for event in ({"__file": "binlog.000041", "__pos": 2**32 + 8, "__row": 0},
                  {"__file": "binlog.000042", "__pos": 4, "__row": 3}):
        assert position_in(change.position, event) and floor <= event_position("binlog", event)


# --- SQL Server --------------------------------------------------------------------------------------------
def test_lsns_read_the_same_in_debeziums_and_the_servers_notation():
    assert mssql_lsn_to_int("0000002b:00000158:0001") == mssql_lsn_to_int("43000000034400001")
    ordered = ["0000002b:00000158:0001", "0000002b:00000158:0002", "0000002b:00000159:0000", "0000002c:00000001:0001"]
    assert [mssql_lsn_to_int(lsn) for lsn in ordered] == sorted(mssql_lsn_to_int(lsn) for lsn in ordered)


def test_event_positions_order_by_commit_then_change_then_serial():
    events = [
        ("0000002b:00000158:0010", "0000002b:00000150:0002", 1),
        ("0000002b:00000158:0010", "0000002b:00000150:0002", 2),
        ("0000002b:00000158:0010", "0000002b:00000157:0001", 1),
        ("0000002b:00000160:0004", "0000002b:00000100:0001", 1),  # a later commit, an earlier change
        ("0000002c:00000001:0002", "0000002c:00000001:0001", 0),
    ]
    positions = [mssql_event_position(*event) for event in events]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    assert max(positions) < 10**38  # fits Spark's decimal(38,0)


def test_a_journal_position_covers_the_commit_lsn_of_its_event():
    position = {"commit_lsn_from": mssql_lsn_to_int("0000002b:00000158:0001"),
                "commit_lsn_to": mssql_lsn_to_int("0000002b:00000160:0001")}
    assert position_in(position, {"__commit_lsn": "0000002b:00000159:0003"})
    assert not position_in(position, {"__commit_lsn": "0000002b:00000160:0002"})
    assert position_floor(position) <= mssql_event_position("0000002b:00000159:0003", None, 0)


# --- the job's fold in Spark -------------------------------------------------------------------------------
SCHEMAS = {"lsn": "__lsn long", "binlog": "__file string, __pos long, __row int",
           "sqlserver": "__commit_lsn string, __change_lsn string, __event_serial_no long"}
EVENTS = {
    "lsn": [{"__lsn": 0}, {"__lsn": pg_lsn_to_int("16/B374D848")}, {"__lsn": LONG_MAX}],
    "binlog": [{"__file": "mysql-bin.000001", "__pos": 4, "__row": 0},
               {"__file": "mysql-bin.092233", "__pos": 2**32 + 5, "__row": 3},
               {"__file": "mysql-bin.092234", "__pos": 4, "__row": 0},
               {"__file": "mariadb-bin.999999", "__pos": LONG_MAX, "__row": 999_999},
               {"__file": "mariadb-bin.1000000", "__pos": 4, "__row": 0},
               {"__file": "mariadb-bin.2147483647", "__pos": LONG_MAX, "__row": 999_999}],
    "sqlserver": [{"__commit_lsn": "0000002b:00000158:0010", "__change_lsn": "0000002b:00000150:0002",
                   "__event_serial_no": 2},
                  {"__commit_lsn": "00ffffff:00fffff0:ffff", "__change_lsn": "00ffffff:00ffff00:0001",
                   "__event_serial_no": 1},
                  {"__commit_lsn": "0000002c:00000001:0002", "__change_lsn": None, "__event_serial_no": None}],
}
SPARK_FOLD = """
import json, sys
from pyspark.sql import SparkSession, functions as F
from cdc_sandbox.spark_jobs.decode import source_position
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false") \\
    .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1").getOrCreate()
given, folded = json.load(sys.stdin), {}
for kind, (schema, events) in given.items():
    positioned = source_position(spark.createDataFrame(events, schema), kind)
    folded[kind] = {"type": positioned.schema["_source_position"].dataType.simpleString(),
                    "values": [str(row[0]) for row in positioned.select("_source_position").collect()]}
print(json.dumps(folded))
spark.stop()
"""


def test_spark_folds_positions_exactly_as_the_harness():
    # In a process of its own: PySpark fixes the JVM's classpath at the first session, and the end-to-end
    # suites in this process need one started with the job's jars.
    given = {kind: (SCHEMAS[kind], events) for kind, events in EVENTS.items()}
    run = subprocess.run([sys.executable, "-c", SPARK_FOLD], input=json.dumps(given), capture_output=True, text=True,
                         cwd=Path(__file__).parents[2])
    assert run.returncode == 0, run.stderr
    folded = json.loads(run.stdout)
    assert {kind: folded[kind]["type"] for kind in EVENTS} == \
        {"lsn": "bigint", "binlog": "decimal(38,0)", "sqlserver": "decimal(38,0)"}
    for kind, events in EVENTS.items():
        values = folded[kind]["values"]
        assert all(value.isdigit() for value in values), f"{kind}: plain digits, not exponent notation: {values}"
        assert [int(value) for value in values] == [event_position(kind, event) for event in events], kind


# --- the position a commit records -------------------------------------------------------------------------
COMMIT_METADATA = {"type": "record", "name": "HoodieCommitMetadata", "fields": [
    {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}]},
    {"name": "operationType", "type": ["null", "string"]}]}


def commit_file(extra: dict) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(COMMIT_METADATA), [{"extraMetadata": extra, "operationType": "UPSERT"}])
    return out.getvalue()


def test_the_harness_reads_back_the_binlog_position_the_job_records():
    config = JobConfig(kafka_bootstrap="k:9092", registry_url="http://r", lake="s3a://lake",
                       tables=(TableSpec("t.ecomm.sale", "sale", ("salesid",), "binlog"),))
    reached = binlog_position("mariadb-bin.2147483647", LONG_MAX, 999_999)
    options = hudi_options(config, config.tables[0], reached, 7)
    extra = {key: value for key, value in options.items() if key.startswith("sandbox.")}
    assert extra[MAX_POSITION_KEY] == str(reached)
    commit = commit_of("20260101000000000_20260101000001000.commit", commit_file(extra))
    assert commit == Commit("20260101000000000", "20260101000001000", "commit", reached, 7, "UPSERT")
    assert commit_of("20260101000000000_20260101000001000.clean", commit_file({})) is None
