"""Source positions on the harness side: where a source stands, the range a change's events lie in, and the one
number the job must give an event as its `_source_position`.

Written apart from the job (`cdc_sandbox.spark_jobs.decode.source_position`) on purpose, so that the oracle does not check the
job with the job's own arithmetic; `tests/unit/test_positions.py` runs both folds on the same events.

- Postgres: the WAL LSN (`16/B374D848` in the server's notation; Debezium's `__lsn` is already the number).
- MariaDB/MySQL: binlog file number, offset in the file and row in the event, as
  `file * 10^26 + offset * 10^6 + row`: exact for file numbers below 10^12 (the server's index ends at 2^31 - 1),
  any 64-bit offset (room to 10^20) and up to 10^6 rows per event, and ordered across a rotation.
- SQL Server: commit LSN, then change LSN, then event serial number, folded bitwise (`mssql_event_position`).
"""

from __future__ import annotations

from typing import NamedTuple

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.tickit_data.ddl import MYSQL, POSTGRES, SQLSERVER

BINLOG_FILE_FACTOR = 10**26
BINLOG_OFFSET_FACTOR = 10**6
MSSQL_LSN_PART_BITS = (40, 16)  # a compact LSN: VLF sequence << 40 | log block << 16 | slot
WITHIN_COMMIT_BITS = 44  # room for how far before its commit a change may lie (16 VLFs of 2^24 blocks)
SERIAL_BITS = 4


# --- Postgres ----------------------------------------------------------------------------------------------
def pg_lsn_to_int(lsn: str) -> int:
    """A Postgres LSN (`16/B374D848`: high and low 32 bits in hexadecimal) as the number Debezium reports."""
    high, low = lsn.split("/")
    return (int(high, 16) << 32) + int(low, 16)


# --- MariaDB/MySQL -----------------------------------------------------------------------------------------
def binlog_file_number(file_name: str) -> int:
    """The index of a binlog file: `mysql-bin.000123` -> 123 (the server widens the suffix past 999999)."""
    return int(file_name.rsplit(".", 1)[-1])


def binlog_position(file_name: str, offset: int, row: int = 0) -> int:
    """A binlog event's position as one number, ordered by file, then offset, then row."""
    return binlog_file_number(file_name) * BINLOG_FILE_FACTOR + offset * BINLOG_OFFSET_FACTOR + row


# --- SQL Server --------------------------------------------------------------------------------------------
def mssql_lsn_to_int(lsn: str) -> int:
    """A SQL Server LSN as an integer ordered like the LSNs.

    Accepts the hexadecimal form Debezium writes (`0000002b:00000158:0001`: VLF sequence, log block, slot) and the
    decimal form of the server's numeric(25,0) LSN columns (`43000000034400001`). Log blocks are assumed below 2^24
    (VLFs up to 8 GB).
    """
    text = lsn.strip()
    if ":" in text:
        vlf, block, slot = (int(part, 16) for part in text.split(":"))
    else:
        number = int(text)
        vlf, block, slot = number // 10**15, number // 10**5 % 10**10, number % 10**5
    return (vlf << MSSQL_LSN_PART_BITS[0]) | (block << MSSQL_LSN_PART_BITS[1]) | slot


def mssql_event_position(commit_lsn: str, change_lsn: str | None, event_serial_no: int | None) -> int:
    """The source position of a SQL Server change event: commit LSN, then change LSN, then event serial number.

    Folded into one integer (below 2^126, a Spark decimal(38,0)): the commit LSN in the high bits, then how close
    the change lies to its commit (later changes of one transaction are closer), then the serial number (an update
    that moves a key yields two events with one change LSN).
    """
    commit = mssql_lsn_to_int(commit_lsn)
    change = mssql_lsn_to_int(change_lsn) if change_lsn else commit
    distance = min(max(commit - change, 0), (1 << WITHIN_COMMIT_BITS) - 1)
    within_commit = (1 << WITHIN_COMMIT_BITS) - 1 - distance
    serial = min(event_serial_no or 0, (1 << SERIAL_BITS) - 1)
    return (commit << (WITHIN_COMMIT_BITS + SERIAL_BITS)) | (within_commit << SERIAL_BITS) | serial


# --- a flattened Debezium event ----------------------------------------------------------------------------
def event_position(kind: str, event_value: dict) -> int:
    """The `_source_position` the job must give an event of a table whose positions are of `kind` (the job
    config's `lsn`, `binlog` or `sqlserver`)."""
    if kind == "lsn":
        return event_value["__lsn"]
    if kind == "sqlserver":
        return mssql_event_position(event_value["__commit_lsn"], event_value.get("__change_lsn"),
                                    event_value.get("__event_serial_no"))
    if kind == "binlog":
        return binlog_position(event_value["__file"], event_value["__pos"], event_value["__row"])
    raise ValueError(f"unknown source position kind {kind!r}")


# --- where a source stands, and the range of a journaled change ----------------------------------------------
class SqlServerLsn(NamedTuple):
    """The end of a SQL Server database's log, as `mssql_lsn_to_int` orders LSNs."""

    lsn: int


def current_position(conn, dialect: str) -> tuple:
    """Where the source's log ends now: (LSN,) on Postgres, (file, offset) on MariaDB/MySQL, a `SqlServerLsn`."""
    with conn.cursor() as cur:
        if dialect == SQLSERVER:
            cur.execute("SELECT log_end_lsn FROM sys.dm_db_log_stats(DB_ID())")
            return SqlServerLsn(mssql_lsn_to_int(cur.fetchone()[0]))
        if dialect == POSTGRES:
            cur.execute("SELECT pg_current_wal_insert_lsn()::text")
            return (pg_lsn_to_int(cur.fetchone()[0]),)
        if dialect == MYSQL:
            cur.execute("SHOW MASTER STATUS")
            row = cur.fetchone()
            return (row[0], row[1])
    raise SandboxError(f"no source position for {dialect}", "")


class BinlogMark(NamedTuple):
    """Where a MariaDB/MySQL binlog ends: file, offset, and the server's GTID set ("" where GTIDs are off)."""

    file: str
    pos: int
    gtids: str


def binlog_mark(conn) -> BinlogMark:
    """Where the binlog ends now, in the terms of a Debezium offset: MariaDB's connector restarts from the GTID
    position alone, MySQL's from it when GTIDs are on, else from the file and offset."""
    file, pos = current_position(conn, MYSQL)
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        variable = "gtid_binlog_pos" if "mariadb" in cur.fetchone()[0].lower() else "gtid_executed"
        cur.execute(f"SELECT @@{variable}")
        return BinlogMark(file, int(pos), cur.fetchone()[0] or "")


def position_range(before: tuple, after: tuple) -> dict:
    """A journal entry's position: the source positions before the change and after its commit."""
    if isinstance(before, SqlServerLsn):  # Debezium's events carry the commit LSN
        return {"commit_lsn_from": before.lsn, "commit_lsn_to": after.lsn}
    if len(before) == 1:
        return {"lsn_from": before[0], "lsn_to": after[0]}
    return {"file_from": before[0], "pos_from": before[1], "file_to": after[0], "pos_to": after[1]}


def position_in(position: dict, event_value: dict) -> bool:
    """Whether a flattened Debezium event lies in a journal entry's position range."""
    if "commit_lsn_from" in position:  # SQL Server
        commit = mssql_lsn_to_int(event_value["__commit_lsn"])
        return position["commit_lsn_from"] <= commit <= position["commit_lsn_to"]
    if "lsn_from" in position:
        return position["lsn_from"] <= event_value["__lsn"] <= position["lsn_to"]
    at = binlog_position(event_value["__file"], event_value["__pos"])
    return binlog_position(position["file_from"], position["pos_from"]) <= at \
        <= binlog_position(position["file_to"], position["pos_to"])


def position_floor(position: dict) -> int:
    """The lowest job `_source_position` an event of a journal entry can have (the position before it began), from
    the entry's position range."""
    if "lsn_from" in position:
        return position["lsn_from"]
    if "commit_lsn_from" in position:  # SQL Server: the commit LSN is the high part of the position
        return position["commit_lsn_from"] << (WITHIN_COMMIT_BITS + SERIAL_BITS)
    return binlog_position(position["file_from"], position["pos_from"])
