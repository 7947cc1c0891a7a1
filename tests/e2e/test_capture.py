"""A change in each source database arrives in Kafka as Apicurio-framed Avro that decodes to exactly the row."""

from __future__ import annotations

import datetime as dt
import itertools
import time
from decimal import Decimal

import pytest

from cdc_sandbox.sources.changes import ChangeReader, typed_row
from cdc_sandbox.stack.databases import connection

pytestmark = pytest.mark.e2e

CAPTURE_TIMEOUT = 120
SOURCE_COLUMNS = ("id", "name", "amount", "created_at", "flag")
_ids = itertools.count(int(time.time() * 1000) % 1_000_000_000)


def fresh_id() -> int:
    return next(_ids)


def select_row(conn, table: str, row_id: int) -> dict:
    with conn.cursor() as cur:
        cur.execute(f"SELECT {', '.join(SOURCE_COLUMNS)} FROM {table} WHERE id = %s", (row_id,))
        return dict(zip(SOURCE_COLUMNS, cur.fetchone()))


def source_part(event_row: dict) -> dict:
    return {column: event_row[column] for column in SOURCE_COLUMNS}


def run_insert_update_delete(conn, table: str, reader: ChangeReader, registry) -> list[dict]:
    """Insert, update and delete one row; return the three decoded events after checking each against the source."""
    row_id = fresh_id()
    inserted = {"id": row_id, "name": "Zoë «probe» 東京", "amount": Decimal("123456.78"),
                "created_at": dt.datetime(2008, 2, 29, 23, 59, 59, 999999), "flag": True}
    with conn.cursor() as cur:
        cur.execute(f"INSERT INTO {table} ({', '.join(inserted)}) VALUES (%s, %s, %s, %s, %s)", tuple(inserted.values()))
    conn.commit()
    source_after_insert = select_row(conn, table, row_id)

    def event_for(op):
        return lambda e: e.key == {"id": row_id} and e.value is not None and e.value["__op"] == op

    created = typed_row(reader.wait_for(event_for("c"), CAPTURE_TIMEOUT, f"insert of id {row_id}"), registry)
    assert source_part(created) == source_after_insert
    assert created["__deleted"] == "false"

    with conn.cursor() as cur:
        cur.execute(f"UPDATE {table} SET name = %s, amount = %s, flag = %s WHERE id = %s",
                    ("updated", Decimal("-0.01"), False, row_id))
    conn.commit()
    source_after_update = select_row(conn, table, row_id)
    updated = typed_row(reader.wait_for(event_for("u"), CAPTURE_TIMEOUT, f"update of id {row_id}"), registry)
    assert source_part(updated) == source_after_update
    assert updated["__deleted"] == "false"

    with conn.cursor() as cur:
        cur.execute(f"DELETE FROM {table} WHERE id = %s", (row_id,))
    conn.commit()
    deleted = typed_row(reader.wait_for(event_for("d"), CAPTURE_TIMEOUT, f"delete of id {row_id}"), registry)
    assert deleted["__deleted"] == "true"
    assert source_part(deleted) == source_after_update, "a rewritten delete carries the row as it was"
    return [created, updated, deleted]


def test_postgres_changes_arrive_as_avro(kafka_bootstrap, registry, sandbox):
    topic = sandbox.topology.topic("ems", "cdc_probe")
    with ChangeReader(kafka_bootstrap, topic, registry) as reader, connection(sandbox, "postgres") as conn:
        created, updated, deleted = run_insert_update_delete(conn, "ems.cdc_probe", reader, registry)
    assert created["__table"] == "cdc_probe" and created["__schema"] == "ems" and created["__db"] == "tickit"
    assert created["__lsn"] < updated["__lsn"] < deleted["__lsn"], "LSNs order the changes"


def test_mariadb_changes_arrive_as_avro(kafka_bootstrap, registry, sandbox):
    topic = sandbox.topology.topic("ecomm", "cdc_probe")
    with ChangeReader(kafka_bootstrap, topic, registry) as reader, connection(sandbox, "mysql", "ecomm") as conn:
        created, updated, deleted = run_insert_update_delete(conn, "ecomm.cdc_probe", reader, registry)
    assert created["__table"] == "cdc_probe" and created["__db"] == "ecomm"
    positions = [(e["__file"], e["__pos"], e["__row"]) for e in (created, updated, deleted)]
    assert positions == sorted(positions) and len(set(positions)) == 3, "binlog positions order the changes"


def test_schema_ids_resolve_in_the_registry(registry, sandbox):
    artifacts = set(registry.artifacts())
    for topic in sandbox.topology.probe_topics():
        assert {f"{topic}-key", f"{topic}-value"} <= artifacts
