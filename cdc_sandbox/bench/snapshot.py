"""Timing Debezium's initial snapshot: temporary connectors over a copy of TICKIT in `_bench` namespaces.

The copy lives in schemas/databases the sandbox's own connectors do not capture; the temporary connectors write to
topics under their own prefix, and everything is removed afterwards.
"""

from __future__ import annotations

import time


from cdc_sandbox import kafka_clients
from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.sources.changes import watermarks
from cdc_sandbox.stack.catalog import placements
from cdc_sandbox.stack.connectors import ConnectClient, connector_config, connector_states, failure_trace
from cdc_sandbox.stack.credentials import login
from cdc_sandbox.stack.databases import connection
from cdc_sandbox.wait import wait_until

SUFFIX = "_bench"
PREFIX = "bench"
PUBLICATION = "dbz_bench"
# Connect keeps a connector's offsets after it is deleted: each run gets new names so it snapshots afresh.
RUN = str(int(time.time()))
CONNECTORS = {"postgres": f"bench-postgres-{RUN}", "mysql": f"bench-mysql-{RUN}"}


def bench_topics(settings: Settings) -> list[str]:
    return [f"{PREFIX}.{p.captured.namespace}.{p.table.name}" for p in placements(settings, SUFFIX)]


def snapshot_seconds(settings: Settings, expected_rows: int, timeout: float = 900) -> float:
    _create_publication(settings)
    client = ConnectClient(settings.url("connect"))
    started = time.monotonic()
    for source_name, connector in CONNECTORS.items():
        client.put_config(connector, _bench_config(settings, source_name))
    topics = bench_topics(settings)

    def snapshot_done() -> bool:
        for connector in CONNECTORS.values():
            status = client.status(connector)
            if "FAILED" in connector_states(status):
                raise SandboxError(f"bench connector {connector} failed:\n{failure_trace(status)[:1500]}",
                                   "see `sandbox logs connect`")
        return _messages_in(settings, topics) >= expected_rows

    wait_until(snapshot_done, timeout, f"{expected_rows} snapshot rows in {', '.join(topics)}", interval=0.5)
    return time.monotonic() - started


def _bench_config(settings: Settings, source_name: str) -> dict[str, str]:
    source = settings.topology.sources[source_name]
    config = connector_config(settings, source) | {"topic.prefix": PREFIX}
    if source.engine == "postgres":
        schemas = ",".join(ns + SUFFIX for ns in source.namespaces)
        return config | {"schema.include.list": schemas, "slot.name": PUBLICATION, "publication.name": PUBLICATION}
    return config | {"database.include.list": source.database + SUFFIX, "database.server.id": "184099",
                     "schema.history.internal.kafka.topic": f"_schema-history.{PREFIX}.{RUN}"}


def _create_publication(settings: Settings) -> None:
    """Publish the bench schemas and let the capture role read them, as the sandbox does for its own."""
    quoted = [f'"{ns}{SUFFIX}"' for ns in settings.topology.sources["postgres"].namespaces]
    capture_role = login(settings, "postgres", "debezium").user
    with connection(settings, "postgres") as conn, conn.cursor() as cur:
        conn.autocommit = True
        for schema in quoted:
            cur.execute(f'GRANT USAGE ON SCHEMA {schema} TO "{capture_role}"')
            cur.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO "{capture_role}"')
        schemas = ", ".join(quoted)
        cur.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (PUBLICATION,))
        if not cur.fetchone():
            cur.execute(f"CREATE PUBLICATION {PUBLICATION} FOR TABLES IN SCHEMA {schemas}")


def _messages_in(settings: Settings, topics: list[str]) -> int:
    return sum(end - first for partitions in watermarks(settings.endpoint("kafka").address, topics).values()
               for first, end in partitions.values())


def clean_up(settings: Settings) -> None:
    """Remove the temporary connectors, their slot, publication and topics."""
    client = ConnectClient(settings.url("connect"))
    for connector in client.connectors():
        if connector.startswith("bench-"):
            client.delete(connector)
    with connection(settings, "postgres") as conn, conn.cursor() as cur:
        conn.autocommit = True
        wait_until(lambda: _slot_released(cur), 60, f"replication slot {PUBLICATION} to be released")
        cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                    (PUBLICATION,))
        cur.execute(f"DROP PUBLICATION IF EXISTS {PUBLICATION}")
    admin = kafka_clients.admin(settings.endpoint("kafka").address)
    doomed = [t for t in admin.list_topics(timeout=5).topics
              if t.startswith(PREFIX + ".") or t.startswith(f"_schema-history.{PREFIX}")]
    if doomed:
        for future in admin.delete_topics(doomed).values():
            future.result()


def _slot_released(cur) -> bool:
    cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (PUBLICATION,))
    row = cur.fetchone()
    return row is None or not row[0]


def drop_namespaces(settings: Settings) -> None:
    with connection(settings, "postgres") as conn, conn.cursor() as cur:
        conn.autocommit = True
        for namespace in settings.topology.sources["postgres"].namespaces:
            cur.execute(f'DROP SCHEMA IF EXISTS "{namespace}{SUFFIX}" CASCADE')
    with connection(settings, "mysql") as conn, conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{settings.topology.sources['mysql'].database}{SUFFIX}`")
