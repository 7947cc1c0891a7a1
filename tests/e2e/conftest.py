"""Fixtures shared by the job suites."""

from __future__ import annotations

import random
import uuid

import pytest

from sandbox.changes import ChangeReader
from sandbox.mutations import random_value

EVENT_TIMEOUT = 180


@pytest.fixture
def settle(sandbox, mutator, kafka_bootstrap, registry):
    """Change one row of each table and wait until Debezium has put that change in Kafka: everything before it in
    the table is then in Kafka too (one partition per topic, in source order)."""

    def settle_tables(tables: list[str]) -> list:
        changes = []
        for table in tables:
            rng = random.Random(uuid.uuid4().int)
            row = mutator.sample_row(table, rng)
            column = mutator.changeable_columns(table)[0]
            value = row[column.name]
            while value == row[column.name] or value is None:
                value = random_value(column, rng)
            key = {k: row[k] for k in mutator.placement(table).table.primary_key}
            captured = sandbox.topology.table(table)
            with ChangeReader(kafka_bootstrap, sandbox.topology.topic(captured.namespace, table), registry,
                              from_end=True) as reader:
                change = mutator.update(table, key, {column.name: value})
                reader.wait_for(lambda e: e.value is not None and change.produced_by(e.value, e.key, "u"),
                                EVENT_TIMEOUT, f"journal entry {change.seq} in Kafka")
            changes.append(change)
        return changes

    return settle_tables
