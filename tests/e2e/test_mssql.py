"""SQL Server as the `mssql` source: CDC on `crm.user`, its connector, and changes reaching Kafka with the LSNs the
journal recorded. Runs where a SQL Server is reachable (the compose backend, or SANDBOX_MSSQL_DSN natively)."""

from __future__ import annotations

import random
import uuid

import pytest

from cdc_sandbox.config import Settings
from cdc_sandbox.sources import tickit
from cdc_sandbox.sources.changes import ChangeReader, typed_row
from cdc_sandbox.sources.mutations import Mutator
from cdc_sandbox.sources.positions import mssql_event_position, mssql_lsn_to_int
from cdc_sandbox.sources.registry import RegistryClient
from cdc_sandbox.stack import source_tables
from cdc_sandbox.stack.connectors import ConnectClient, connector_states
from cdc_sandbox.stack.services.sqlserver import SqlServer
from cdc_sandbox.tickit_data import get_table

pytestmark = [pytest.mark.e2e, pytest.mark.mssql]

EVENT_TIMEOUT = 180  # generous: the Agent's capture job polls every second, once it runs
USER = get_table("user")


NO_SQL_SERVER = ("no SQL Server in this sandbox: crm.user lives on its Postgres stand-in; set SANDBOX_MSSQL_DSN or "
                 "run the compose backend (SANDBOX_BACKEND=compose make up)")


@pytest.fixture(scope="module")
def mssql_settings(sandbox: Settings) -> Settings:
    """The sandbox under test (ephemeral or not); skipped without a SQL Server, failed when one is configured and
    does not answer."""
    if "mssql" not in sandbox.topology.sources:
        pytest.skip(NO_SQL_SERVER)
    server = SqlServer(sandbox)
    try:
        server.is_ready()
    except Exception as exc:  # any failure to answer: configured, yet broken
        pytest.fail(f"SQL Server at {server.endpoint.address} is configured and does not answer: {exc}")
    source_tables.create_tables(sandbox)
    return sandbox


@pytest.fixture(scope="module")
def user_reader(mssql_settings):
    registry = RegistryClient(mssql_settings.registry_api_url)
    with ChangeReader(mssql_settings.endpoint("kafka").address, mssql_settings.topology.topic("crm", "user"),
                      registry, from_end=True) as reader:
        yield reader, registry


def new_user(mutator: Mutator) -> dict:
    row = next(tickit.GeneratedRows(seed=0, scale=0.01).rows(USER))
    values = dict(zip(USER.column_names, row))
    values["userid"] = mutator.next_key("user")
    return values


def test_cdc_captures_crm_user(mssql_settings):
    assert "crm.user" in SqlServer(mssql_settings).cdc_enabled_tables()


def test_the_sql_server_connector_runs(mssql_settings):
    connector = mssql_settings.topology.sources["mssql"].connector
    states = connector_states(ConnectClient(mssql_settings.url("connect")).status(connector))
    assert states and set(states) == {"RUNNING"}


def test_changes_reach_kafka_within_their_journaled_lsns(mssql_settings, user_reader, tmp_path):
    reader, registry = user_reader
    mutator = Mutator(mssql_settings)
    values = new_user(mutator)
    inserted = mutator.insert("user", values)
    updated = mutator.update("user", inserted.key, {"city": "Sandbox City"})
    events = []
    for change, op in ((inserted, "c"), (updated, "u")):
        event = reader.wait_for(lambda e, c=change, o=op: e.value is not None and c.produced_by(e.value, e.key, o),
                                EVENT_TIMEOUT, f"{op!r} of journal entry {change.seq}")
        events.append(event.value)
    assert mssql_lsn_to_int(events[0]["__commit_lsn"]) < mssql_lsn_to_int(events[1]["__commit_lsn"])
    positions = [mssql_event_position(e["__commit_lsn"], e["__change_lsn"], e["__event_serial_no"]) for e in events]
    assert positions == sorted(positions)
    row = typed_row(reader.events[-1], registry)
    assert row["city"] == "Sandbox City" and row["userid"] == values["userid"] and row["__op"] == "u"


def test_rounds_on_sql_server_reach_silver_with_time_travel(mssql_settings, oracle, mutator):
    """The oracle over `user` on SQL Server: positions from commit LSNs, both readers, every commit."""
    oracle.track(["user"])
    for seed in (7, 8):
        mutator.random_batch(10, seed=seed, tables=["user"])
        oracle.round(f"seed {seed}")
    oracle.verify_history()


def test_key_update_column_added_and_deletes_on_sql_server(mssql_settings, oracle, mutator):
    """What the other engines go through, on SQL Server, each an oracle round: a primary key moved (a delete and a
    create in one commit LSN), a delete and a re-insert of one key in one micro-batch, several updates to one key
    in one transaction, a column added (Debezium moves to the new capture instance) and rows written with it."""
    oracle.track(["user"])
    rng = random.Random(61)
    row = mutator.sample_row("user", rng)
    moved = {"userid": mutator.next_key("user")}
    assert mutator.update_key("user", {"userid": row["userid"]}, moved).debezium_ops == ["d", "c"]
    recorded = oracle.round("key moved")
    assert (row["userid"],) not in recorded["user"].state and (moved["userid"],) in recorded["user"].state

    again = mutator.sample_row("user", rng)
    oracle.pause()
    mutator.delete("user", {"userid": again["userid"]})
    mutator.insert("user", {**again, "city": "Back Again"})
    with mutator.transaction("user"):
        for i in range(3):
            mutator.update("user", moved, {"city": f"City {i} ✓"})
    oracle.resume()
    oracle.round("delete, re-insert and updates in one micro-batch")

    column = f"note_{uuid.uuid4().hex[:6]}"
    mutator.add_column("user", column, "text")
    mutator.update("user", moved, {column: "after the new capture instance"})
    mutator.insert("user", {**new_user(mutator), column: "written with it"})
    mutator.delete("user", {"userid": again["userid"]})
    recorded = oracle.round("column added")
    assert column in recorded["user"].shape.columns
    oracle.verify_history()
