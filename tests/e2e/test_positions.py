"""Source positions end to end: two updates of one MariaDB/MySQL row with a binlog rotation between them, reaching
the job in one micro-batch. The update in the new binlog file orders after the one in the old file (in the harness's
fold and in the job's), so its value is the one silver holds."""

from __future__ import annotations

import random
import uuid

import pytest

from cdc_sandbox.config import Settings
from cdc_sandbox.schema import STR, Column
from cdc_sandbox.sources.positions import binlog_file_number, binlog_position, position_floor
from cdc_sandbox.stack import catalog, databases
from cdc_sandbox.stack.catalog import Placement
from cdc_sandbox.tickit_data.ddl import MYSQL

pytestmark = [pytest.mark.e2e]


def binlog_table(settings: Settings, mutator) -> tuple[Placement, Column]:
    """A TICKIT table on the MySQL-compatible source, and a text column of it that can change."""
    for placement in catalog.placements(settings):
        if placement.dialect == MYSQL:
            text = [c for c in mutator.changeable_columns(placement.table.name) if c.type == STR]
            if text:
                return placement, text[0]
    pytest.skip("no TICKIT table with a text column on the MySQL-compatible source in this topology")


def rotate_binlog(settings: Settings, placement: Placement) -> None:
    """Close the server's current binlog file and start the next (the harness's login holds RELOAD)."""
    with databases.table_connection(settings, placement) as conn:
        with conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")


def new_text(column: Column, *taken) -> str:
    value = uuid.uuid4().hex[: column.max_length]
    return value if value not in taken else new_text(column, *taken)


def test_an_update_in_the_next_binlog_file_wins_over_one_in_the_file_before(sandbox, pipeline_factory,
                                                                             oracle_factory, mutator):
    placement, column = binlog_table(sandbox, mutator)
    table = placement.table.name
    (pk,) = placement.table.primary_key
    oracle = oracle_factory(pipeline_factory(only=[table]))
    oracle.track([table])
    row = mutator.sample_row(table, random.Random(67))
    first_value = new_text(column, row[column.name])
    second_value = new_text(column, row[column.name], first_value)

    oracle.pause()  # both updates in one micro-batch: the job's in-batch reduction orders them by position
    first = mutator.update(table, {pk: row[pk]}, {column.name: first_value})
    rotate_binlog(sandbox, placement)
    second = mutator.update(table, {pk: row[pk]}, {column.name: second_value})
    oracle.resume()
    recorded = oracle.round("across a binlog rotation")  # also proves the updates reached the job in one batch

    assert binlog_file_number(second.position["file_from"]) > binlog_file_number(first.position["file_to"]), \
        f"the updates lie in one binlog file: {first.position} and {second.position}"
    end_of_first = binlog_position(first.position["file_to"], first.position["pos_to"])
    assert position_floor(first.position) < end_of_first <= position_floor(second.position)
    entry = recorded[table]
    assert entry.state[(row[pk],)][entry.shape.columns.index(column.name)] == second_value
