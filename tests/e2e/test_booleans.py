"""MariaDB's BOOL is tinyint(1). Debezium types such a column by the DDL text it learned it from: `tinyint(1)` from
the table's definition (a snapshot, a rebuilt schema history), `BOOL` from a parsed `ALTER TABLE`. The connectors'
converter makes every tinyint(1) a boolean, so a column added as BOOL and TICKIT's `holiday` arrive alike, before
and after the connector restarts (and replays its schema history)."""

from __future__ import annotations

import random
import uuid

import pytest

from cdc_sandbox.sources.changes import ChangeReader, end_offsets, typed_row

pytestmark = [pytest.mark.e2e]


def test_tinyint1_columns_arrive_as_booleans_however_the_connector_learned_them(
        sandbox, mutator, connect_client, registry, kafka_bootstrap):
    column = f"flag_{uuid.uuid4().hex[:6]}"
    placement = mutator.placement("date")
    connector = sandbox.topology.sources[placement.captured.source].connector
    row = mutator.sample_row("date", random.Random(7))
    key = {"dateid": row["dateid"]}
    added = mutator.add_column("date", column, "bool")
    try:
        ends = end_offsets(kafka_bootstrap, [added.topic])[added.topic]
        changes = [mutator.update("date", key, {column: True, "holiday": not row["holiday"]})]
        connect_client.cycle(connector)
        changes.append(mutator.update("date", key, {column: False, "holiday": bool(row["holiday"])}))
        with ChangeReader(kafka_bootstrap, added.topic, registry, from_offsets=ends) as reader:
            values = [typed_row(reader.wait_for_change(change, 120)[-1], registry) for change in changes]
    finally:
        mutator.drop_column("date", column)
    assert [(value[column], value["holiday"]) for value in values] == [
        (True, not row["holiday"]), (False, bool(row["holiday"]))]
    assert all(type(value[name]) is bool for value in values for name in (column, "holiday"))
