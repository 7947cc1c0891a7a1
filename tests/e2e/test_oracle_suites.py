"""The oracle suites: full TICKIT in silver, rounds of changes across every table, and the CDC edge cases. Each
round is checked through hudi-rs (the incremental read and the snapshot), and every recorded commit through both
readers at the end (time travel, the incremental reads between commits, the latest snapshot, the source)."""

from __future__ import annotations

import datetime as dt
import random
import uuid
from decimal import Decimal

import pytest

from cdc_sandbox.harness.checking.landing import NotOneBatch
from cdc_sandbox.harness.checking.silver import arrow_rows
from cdc_sandbox.sources import tickit
from cdc_sandbox.stack import catalog
from cdc_sandbox.tickit_data.generator import table_checksum

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ALL_TABLES = ["category", "venue", "date", "user", "event", "listing", "sale"]


def test_full_tickit_load_in_silver_then_rounds_of_inserts_updates_and_deletes_across_all_tables(sandbox, tickit_loaded,
                                                                                               oracle, mutator):
    """The full load in silver, then three rounds of every kind of change on every table; at the end every table
    has exact counts and checksums against the source (through each reader's Python rows of the latest snapshot
    the oracle read: a second path beside its Arrow comparison)."""
    loaded = oracle.track(ALL_TABLES, label="full load")
    assert set(loaded) == set(ALL_TABLES), "every table committed"
    for seed in (101, 102, 103):
        changes = mutator.random_batch(24, seed=seed)
        kinds = {c.kind for c in changes}
        assert kinds == {"insert", "update", "delete"}, f"round {seed} exercises every kind: {kinds}"
        oracle.round(f"seed {seed}")
    snapshots = oracle.verify_history()
    for placement in catalog.placements(sandbox):
        table = placement.table.name
        source = tickit.typed_rows(sandbox, placement)
        expected = table_checksum(table, source)
        for reader in oracle.readers:
            rows = arrow_rows(loaded[table].shape, snapshots[table][reader.name])
            silver = [row for row in rows.values() if row is not None]
            assert len(silver) == len(source), f"{table} ({reader.name}): {len(silver)} rows, source {len(source)}"
            assert table_checksum(table, silver) == expected, f"{table} ({reader.name})"


@pytest.mark.parametrize("table", ["venue", "date"])  # Postgres and MariaDB
def test_delete_then_reinsert_of_the_same_key(oracle, mutator, table):
    oracle.track([table])
    (pk,) = mutator.placement(table).table.primary_key
    template = mutator.sample_row(table, random.Random(41))
    key = {pk: template[pk]}
    mutator.delete(table, key)
    oracle.round("deleted")
    mutator.insert(table, template)
    oracle.round("re-inserted")
    oracle.pause()  # delete and re-insert inside one micro-batch
    mutator.delete(table, key)
    mutator.insert(table, template)
    oracle.resume()
    oracle.round("both in one micro-batch")
    oracle.verify_history()


def test_paused_changes_split_by_a_batch_are_not_taken_for_one(oracle, mutator):
    """The one-micro-batch proof can fail: here the job runs between two changes that were to reach it together."""
    pipeline = oracle.pipeline
    oracle.track(["category"])
    row = mutator.sample_row("category", random.Random(53))
    oracle.pause()
    mutator.update("category", {"catid": row["catid"]}, {"catdesc": "first half"})
    oracle.wait_delivered()
    pipeline.paused = False  # a job that does not hold still while paused
    pipeline.run_once()
    pipeline.paused = True
    mutator.update("category", {"catid": row["catid"]}, {"catdesc": "second half"})
    oracle.resume()
    with pytest.raises(NotOneBatch, match="category"):
        oracle.round("split in two")


@pytest.mark.parametrize("table", ["event", "date"])
def test_update_of_a_primary_key(oracle, mutator, table):
    oracle.track([table])
    (pk,) = mutator.placement(table).table.primary_key
    row = mutator.sample_row(table, random.Random(43))
    new_key = {pk: mutator.next_key(table) + 100}
    change = mutator.update_key(table, {pk: row[pk]}, new_key)
    assert change.debezium_ops == ["d", "c"]
    recorded = oracle.round("key moved")
    assert (row[pk],) not in recorded[table].state and (new_key[pk],) in recorded[table].state
    oracle.verify_history()


@pytest.mark.parametrize("table", ["category", "date"])
def test_many_updates_to_one_key_in_one_micro_batch(oracle, mutator, table):
    oracle.track([table])
    (pk,) = mutator.placement(table).table.primary_key
    row = mutator.sample_row(table, random.Random(47))
    column = next(c for c in mutator.changeable_columns(table) if c.type in ("str", "smallint", "decimal"))
    rng = random.Random(48)
    oracle.pause()
    for _ in range(5):  # separate transactions
        mutator.update(table, {pk: row[pk]}, {column.name: _value(column, rng)})
    with mutator.transaction(table):  # and several in one transaction (one commit timestamp)
        for _ in range(5):
            mutator.update(table, {pk: row[pk]}, {column.name: _value(column, rng)})
    oracle.resume()
    oracle.round("ten updates, one micro-batch")
    oracle.verify_history()


def _value(column, rng: random.Random):
    if column.type == "str":
        return f"v{rng.randint(0, 10**6)}"[: column.max_length]
    if column.type == "decimal":
        return Decimal(rng.randint(0, 99999)).scaleb(-2)
    return rng.randint(0, 30000)


EDGE_TIMES = [dt.datetime(1970, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59), dt.datetime(2038, 1, 19, 3, 14, 8),
              dt.datetime(2099, 12, 31, 23, 59, 59)]


def test_nulls_unicode_and_timestamp_edges(oracle, mutator):
    """(Decimal edges: cdc_sandbox/fixtures/scenarios/edge-values.yaml.)"""
    oracle.track(["venue", "event"])
    venue_id = mutator.next_key("venue")
    mutator.insert("venue", {"venueid": venue_id, "venuename": "Théâtre 東京 🎭 e\u0301 'quoted' \\ back\tslash",
                             "venuecity": None, "venuestate": None, "venueseats": None})
    event = mutator.sample_row("event", random.Random(51))
    for i, moment in enumerate(EDGE_TIMES):
        mutator.insert("event", {**event, "eventid": mutator.next_key("event"), "eventname": f"edge {i} ✓",
                                 "starttime": moment + dt.timedelta(microseconds=999999 if i == 3 else 0)})
    mutator.insert("event", {**event, "eventid": mutator.next_key("event"), "eventname": None, "starttime": None})
    recorded = oracle.round("edge values")
    assert recorded["venue"].state[(venue_id,)][1].startswith("Théâtre 東京 🎭")
    oracle.verify_history()


def test_column_added_while_the_pipeline_runs(oracle, mutator, pipeline_factory):
    running = pipeline_factory(only=["category", "venue"])
    running.start_continuous()
    oracle = oracle.__class__(oracle.settings, running, mutator, timeout=oracle.timeout, stats=oracle.stats)
    oracle.track(["category", "venue"])
    column = f"note_{uuid.uuid4().hex[:6]}"
    mutator.add_column("venue", column, "text")
    venue = mutator.sample_row("venue", random.Random(53))
    mutator.update("venue", {"venueid": venue["venueid"]}, {column: "added while running ✓"})
    new_id = mutator.next_key("venue")
    mutator.insert("venue", {**{k: v for k, v in venue.items()}, "venueid": new_id, column: None})
    recorded = oracle.round("column added")
    assert column in recorded["venue"].shape.columns
    oracle.verify_history()
