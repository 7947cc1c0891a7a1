"""Every service answers as itself: connectors run, the registry lists schemas, the bucket stores objects."""

from __future__ import annotations

import uuid

import pytest

from cdc_sandbox.stack import backends
from cdc_sandbox.stack.connectors import connector_states

pytestmark = pytest.mark.e2e

DEBEZIUM_PLUGINS = {
    "io.debezium.connector.postgresql.PostgresConnector",
    "io.debezium.connector.mysql.MySqlConnector",
    "io.debezium.connector.mariadb.MariaDbConnector",
    "io.debezium.connector.sqlserver.SqlServerConnector",
}


def test_connectors_and_tasks_are_running(connect_client, sandbox):
    for source in sandbox.topology.sources.values():
        states = connector_states(connect_client.status(source.connector))
        assert states and set(states) == {"RUNNING"}, f"{source.connector}: {states}"


def test_connect_worker_has_the_debezium_plugins(connect_client):
    assert DEBEZIUM_PLUGINS <= set(connect_client.plugins())


def test_connector_configs_hold_no_password(connect_client, sandbox):
    for source in sandbox.topology.sources.values():
        config = connect_client.registered_config(source.connector)
        assert config["database.password"].startswith("${file:"), "passwords come through FileConfigProvider"
        assert config["value.converter"] == "dev.cdcsandbox.connect.NullKeepingAvroConverter"


def test_object_round_trips_through_the_lake_bucket(s3, lake_bucket):
    key = f"probe/{uuid.uuid4()}.txt"
    body = "bronze → silver\n".encode()
    s3.put_object(Bucket=lake_bucket, Key=key, Body=body)
    assert s3.get_object(Bucket=lake_bucket, Key=key)["Body"].read() == body
    s3.delete_object(Bucket=lake_bucket, Key=key)


def test_status_reports_every_service_running(sandbox):
    backend = backends.of(sandbox)
    statuses, connectors = backend.status(sandbox)
    assert {s.service: s.state for s in statuses} == {s.service: "running" for s in statuses}
    assert all(s.version not in ("", "-", "?") for s in statuses), statuses
    running = backend.instances(sandbox)
    assert {s.service for s in statuses} <= {name for name, instance in running.items() if instance}
    assert {name for name, _ in connectors} == {s.connector for s in sandbox.topology.sources.values()}
