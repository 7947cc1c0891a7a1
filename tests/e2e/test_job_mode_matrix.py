"""Every job mode meets every kind of change under the oracle: Copy-on-Write and Merge-on-Read (rounds read before
and after compaction), soft and hard deletes. The default mode (Copy-on-Write, soft deletes) is what every other
suite runs; the scenario files run in the other modes too (their `job:` section)."""

from __future__ import annotations

import random
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TABLES = ["venue", "date"]  # Postgres and MariaDB
MODES = {
    "copy-on-write, hard deletes": {"hard_deletes": True},
    "merge-on-read, soft deletes": {"table_type": "MERGE_ON_READ", "compaction_delta_commits": 2},
    "merge-on-read, hard deletes": {"table_type": "MERGE_ON_READ", "compaction_delta_commits": 2,
                                    "hard_deletes": True},
}


def test_every_kind_of_change_in_every_job_mode(pipeline_factory, oracle_factory, mutator):
    """One job per mode over the same changes, each under an oracle of its own."""
    pipelines = {mode: pipeline_factory(only=TABLES, **options) for mode, options in MODES.items()}
    oracles = {mode: oracle_factory(pipeline) for mode, pipeline in pipelines.items()}
    rng = random.Random(61)

    def round_(label: str) -> None:  # the jobs' batches and checks side by side, as they share nothing but Spark
        each_mode(lambda mode: oracles[mode].round(f"{label} ({mode})"))

    first, *others = MODES
    oracles[first].track(TABLES)  # changes a row of each table; the other oracles' tracks wait for those changes
    each_mode(lambda mode: oracles[mode].track(TABLES), others)
    changes = mutator.random_batch(12, seed=62, tables=TABLES)
    assert {c.kind for c in changes} == {"insert", "update", "delete"}
    moved = {table: _move_a_key(mutator, table, rng) for table in TABLES}
    round_("inserts, updates, deletes, primary keys updated")

    for oracle in oracles.values():  # in one micro-batch: a delete and a re-insert of one key, two updates of another
        oracle.pause()
    for table in TABLES:
        _delete_and_reinsert(mutator, table, moved[table])
        _update_twice(mutator, table, rng)
    each_mode(lambda mode: oracles[mode].resume())
    round_("reduced in one micro-batch")

    column = f"note_{uuid.uuid4().hex[:6]}"
    for table in TABLES:
        mutator.add_column(table, column, "text")
        row = mutator.sample_row(table, rng)
        mutator.update(table, _key(mutator, table, row), {column: "added"})
        mutator.delete(table, _key(mutator, table, mutator.sample_row(table, rng)))
    round_("column added, rows deleted")
    each_mode(lambda mode: oracles[mode].verify_history())

    for mode, pipeline in pipelines.items():
        if MODES[mode].get("table_type") == "MERGE_ON_READ":
            for table in TABLES:
                assert _reads(pipeline.timeline(table), oracles[mode].recorded[table]) == {"compacted", "delta logs"}, \
                    f"{mode}, {table}: the rounds must read both compacted files and delta logs"


def each_mode(work, modes=tuple(MODES)) -> None:
    with ThreadPoolExecutor(len(modes)) as pool:
        list(pool.map(work, modes))


def _reads(timeline, recorded) -> set[str]:
    """What each recorded round read on Merge-on-Read: files just compacted (an inline compaction followed its
    delta commit) or delta logs on top of older base files."""
    instants = [c.instant for c in timeline]
    actions = {c.instant: c.action for c in timeline}
    kinds = set()
    for entry in recorded:
        later = instants[instants.index(entry.commit.instant) + 1:]
        kinds.add("compacted" if later and actions[later[0]] == "commit" else "delta logs")
    return kinds


def _key(mutator, table: str, row: dict) -> dict:
    (pk,) = mutator.placement(table).table.primary_key
    return {pk: row[pk]}


def _move_a_key(mutator, table: str, rng: random.Random) -> dict:
    """Update one row's primary key; returns the row under its new key."""
    row = mutator.sample_row(table, rng)
    (pk,) = mutator.placement(table).table.primary_key
    new_key = {pk: mutator.next_key(table)}
    mutator.update_key(table, {pk: row[pk]}, new_key)
    return row | new_key


def _delete_and_reinsert(mutator, table: str, row: dict) -> None:
    mutator.delete(table, _key(mutator, table, row))
    mutator.insert(table, {c: row[c] for c in mutator.placement(table).table.column_names})


def _update_twice(mutator, table: str, rng: random.Random) -> None:
    row = mutator.sample_row(table, rng)
    column = next(c for c in mutator.changeable_columns(table) if c.type == "str")
    for value in ("first", "second"):
        mutator.update(table, _key(mutator, table, row), {column.name: value[: column.max_length]})
