"""Every mutation kind lands in the source, in the journal, and as the right Debezium event in Kafka."""

from __future__ import annotations

import random

import pytest

from cdc_sandbox.sources.changes import ChangeReader, typed_row
from cdc_sandbox.sources.mutations import Change, random_value

pytestmark = pytest.mark.e2e

EVENT_TIMEOUT = 180
# One table per engine for the kinds; the update test covers all seven tables.
POSTGRES_TABLE, MYSQL_TABLE = "event", "sale"


@pytest.fixture
def watch(sandbox, kafka_bootstrap, registry):
    """Start reading a table's topic at its current end, before the change is made."""
    readers = []

    def start(table: str) -> ChangeReader:
        captured = sandbox.topology.table(table)
        reader = ChangeReader(kafka_bootstrap, sandbox.topology.topic(captured.namespace, table), registry,
                              from_end=True)
        readers.append(reader)
        return reader

    yield start
    for reader in readers:
        reader.close()


def events_of(change: Change, reader: ChangeReader, registry) -> list[dict]:
    """Every event the change must produce, decoded, in the change's operation order."""
    return [typed_row(event, registry) for event in reader.wait_for_change(change, EVENT_TIMEOUT)]


def source_columns(row: dict, source: dict) -> dict:
    return {name: row[name] for name in source}


def own_entries(mutator) -> list[Change]:
    """The journal's entries for this sandbox's tables: the example projects' lane writes to the same file meanwhile."""
    topology = mutator.settings.topology
    topics = {topology.topic(table.namespace, table.name) for table in topology.tables}
    return [entry for entry in mutator.journal.entries() if entry.topic in topics]


def assert_journaled(mutator, change: Change) -> None:
    last = own_entries(mutator)[-1]
    assert last.seq == change.seq and last.kind == change.kind and last.table == change.table
    assert last.position == change.position and last.position


def different_value(mutator, table: str, row: dict, rng: random.Random) -> dict:
    """A new non-null value for the first changeable column of the row."""
    column = mutator.changeable_columns(table)[0]
    value = row[column.name]
    while value == row[column.name] or value is None:
        value = random_value(column, rng)
    return {column.name: value}


def key_of(mutator, table: str, row: dict) -> dict:
    return {name: row[name] for name in mutator.placement(table).table.primary_key}


@pytest.mark.parametrize("table", ["category", "event", "venue", "user", "date", "listing", "sale"])
def test_update_reaches_kafka_for_every_table(mutator, watch, registry, table):
    reader = watch(table)
    rng = random.Random(1)
    row = mutator.sample_row(table, rng)
    change = mutator.update(table, key_of(mutator, table, row), different_value(mutator, table, row, rng))
    (event,) = events_of(change, reader, registry)
    assert event["__op"] == "u" and event["__deleted"] == "false"
    assert source_columns(event, change.values) == change.values
    assert_journaled(mutator, change)


@pytest.mark.parametrize("table", [POSTGRES_TABLE, MYSQL_TABLE])
def test_insert_update_delete(mutator, watch, registry, table):
    reader = watch(table)
    placement = mutator.placement(table)
    template = mutator.sample_row(table, random.Random(7))
    (pk,) = placement.table.primary_key
    new_id = mutator.next_key(table) + 1000
    values = {c: template[c] for c in placement.table.column_names} | {pk: new_id}

    inserted = mutator.insert(table, values)
    (created,) = events_of(inserted, reader, registry)
    assert created["__op"] == "c" and source_columns(created, inserted.values) == inserted.values
    assert_journaled(mutator, inserted)

    new_values = different_value(mutator, table, inserted.values, random.Random(2))
    updated = mutator.update(table, {pk: new_id}, new_values)
    (event,) = events_of(updated, reader, registry)
    assert event["__op"] == "u"
    assert source_columns(event, updated.values) == updated.values

    deleted = mutator.delete(table, {pk: new_id})
    (gone,) = events_of(deleted, reader, registry)
    assert gone["__op"] == "d" and gone["__deleted"] == "true"
    assert source_columns(gone, updated.values) == updated.values, "the delete carries the row as it was"
    assert_journaled(mutator, deleted)
    assert mutator.read_row(table, {pk: new_id}) is None


@pytest.mark.parametrize("table", [POSTGRES_TABLE, MYSQL_TABLE])
def test_primary_key_update_is_a_delete_and_a_create(mutator, watch, registry, table):
    reader = watch(table)
    placement = mutator.placement(table)
    (pk,) = placement.table.primary_key
    row = mutator.sample_row(table, random.Random(3))
    new_id = mutator.next_key(table) + 1000
    change = mutator.update_key(table, {pk: row[pk]}, {pk: new_id})
    old, new = events_of(change, reader, registry)
    assert old["__op"] == "d" and old["__deleted"] == "true" and old[pk] == row[pk]
    assert new["__op"] == "c" and new[pk] == new_id
    assert source_columns(new, change.values) == change.values
    assert mutator.read_row(table, {pk: row[pk]}) is None
    assert_journaled(mutator, change)
    mutator.update_key(table, {pk: new_id}, {pk: row[pk]})  # put it back for the other suites


@pytest.mark.parametrize("table", [POSTGRES_TABLE, MYSQL_TABLE])
def test_added_column_appears_in_later_events(mutator, watch, registry, table):
    reader = watch(table)
    placement = mutator.placement(table)
    (pk,) = placement.table.primary_key
    added = mutator.add_column(table, "loyalty_note", "text")
    assert added.kind == "add_column" and added.debezium_ops == []
    assert_journaled(mutator, added)
    row = mutator.sample_row(table, random.Random(5))
    note = f"gold {mutator.journal.next_seq()}"  # a new value each run: MySQL logs nothing for an unchanged row
    change = mutator.update(table, {pk: row[pk]}, {"loyalty_note": note})
    (event,) = events_of(change, reader, registry)
    assert event["loyalty_note"] == note
    assert change.values["loyalty_note"] == note
    mutator.add_column(table, "loyalty_note", "text")  # adding it again changes nothing (MySQL 8 has no IF NOT EXISTS)
    assert "loyalty_note" in mutator.read_row(table, {pk: row[pk]})


def test_random_batch_is_journaled_and_captured(mutator, sandbox, kafka_bootstrap, registry):
    readers = {}
    for captured in sandbox.topology.tables:
        readers[captured.name] = ChangeReader(kafka_bootstrap, sandbox.topology.topic(captured.namespace, captured.name),
                                              registry, from_end=True)
    try:
        before = len(own_entries(mutator))
        changes = mutator.random_batch(12, seed=42)
        assert [c.seq for c in own_entries(mutator)[before:]] == [c.seq for c in changes]
        for change in changes:
            events = events_of(change, readers[change.table], registry)
            assert [e["__op"] for e in events] == change.debezium_ops
    finally:
        for reader in readers.values():
            reader.close()


@pytest.mark.parametrize("table", ["category", "date"])  # Postgres and MariaDB
def test_restore_brings_a_table_back_by_changes_that_reach_kafka(mutator, watch, registry, table):
    known = mutator.rows(table)
    (pk,) = mutator.placement(table).table.primary_key
    rng = random.Random(31)
    removed, edited, moved = (mutator.sample_row(table, rng) for _ in range(3))
    while edited[pk] == removed[pk] or moved[pk] in (removed[pk], edited[pk]):
        edited, moved = mutator.sample_row(table, rng), mutator.sample_row(table, rng)
    mutator.delete(table, {pk: removed[pk]})
    column = mutator.changeable_columns(table)[0]
    mutator.update(table, {pk: edited[pk]}, {column.name: random_value(column, rng)})
    mutator.update_key(table, {pk: moved[pk]}, {pk: mutator.next_key(table)})
    mutator.insert(table, {**removed, pk: mutator.next_key(table)})
    reader = watch(table)
    restoring = mutator.restore(table, known)
    assert mutator.rows(table) == known
    assert {c.kind for c in restoring} >= {"delete", "insert"}
    for change in restoring:
        assert events_of(change, reader, registry), f"{change.kind} of {change.key} reached Kafka"
    assert mutator.restore(table, known) == [], "a table in its known state needs no change"


def test_next_key_stays_inside_the_key_type(mutator):
    """category's key is a smallint: once its largest key is the type's largest, the next key is a free one below."""
    (pk,) = mutator.placement("category").table.primary_key
    template = mutator.sample_row("category", random.Random(3))
    top = mutator.insert("category", {**template, pk: 2**15 - 1})
    try:
        key = mutator.next_key("category")
        assert 1 <= key < 2**15 - 1 and mutator.read_row("category", {pk: key}) is None
    finally:
        mutator.delete("category", top.key)
