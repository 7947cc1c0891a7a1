"""Debezium's signalling table: an ad-hoc incremental snapshot of a captured table, asked for as production asks.

A row inserted into the signalling table (`signal.data.collection`) tells the connector to read a table again in
chunks of `incremental.snapshot.chunk.size` rows while it keeps streaming: each chunk arrives as snapshot reads
(`op` r), and a row changed while its chunk is read arrives as that change alone. The connector writes a watermark
row into the same table around each chunk, so its login may insert there.
"""

from __future__ import annotations

import json
import uuid

from cdc_sandbox.config import Settings
from cdc_sandbox.config import SIGNAL_TABLE
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack.catalog import Placement
from cdc_sandbox.stack.credentials import login
from cdc_sandbox.stack.databases import table_connection
from cdc_sandbox.tickit_data.ddl import MYSQL, POSTGRES, qualified, quote

# The columns Debezium reads a signal from, as its documentation gives them.
SIGNAL_COLUMNS = "id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL"


def collection(p: Placement) -> str:
    """The signalling table beside `p`'s table, named as the connector's `signal.data.collection` takes it."""
    return f"{p.captured.namespace}.{SIGNAL_TABLE}"


def ensure_signal_table(settings: Settings, p: Placement) -> None:
    """The signalling table in the namespace of `p`'s table, which the connector captures, writable by its login."""
    if p.dialect not in (POSTGRES, MYSQL):
        raise SandboxError(f"{p.table.name} lives on {p.captured.source}: the sandbox signals incremental snapshots "
                           "on Postgres and MariaDB/MySQL sources", "snapshot a table of one of those")
    name = qualified(p.dialect, p.captured.namespace, SIGNAL_TABLE)
    capture = login(settings, p.captured.source, "debezium").user
    grantee = quote(p.dialect, capture) if p.dialect == POSTGRES else f"'{capture}'@'%'"
    with table_connection(settings, p) as conn:
        with conn.cursor() as cur:
            cur.execute(f"CREATE TABLE IF NOT EXISTS {name} ({SIGNAL_COLUMNS})")
            cur.execute(f"GRANT SELECT, INSERT, DELETE ON {name} TO {grantee}")
        conn.commit()


def request_incremental_snapshot(settings: Settings, p: Placement) -> str:
    """Insert the signal that starts an incremental snapshot of `p`'s table; returns the signal's id."""
    return _signal(settings, p, "execute-snapshot",
                   {"data-collections": [f"{p.captured.namespace}.{p.table.name}"], "type": "incremental"})


def nudge(settings: Settings, p: Placement) -> None:
    """A `log` signal (Debezium logs its message and does nothing else): a change in the source's log, where a
    binlog connector would otherwise send no heartbeat while nothing changes."""
    ensure_signal_table(settings, p)
    _signal(settings, p, "log", {"message": "sandbox: nudge"})


def _signal(settings: Settings, p: Placement, kind: str, data: dict) -> str:
    """Insert a signal of `kind` into the signalling table beside `p`'s table; returns its id."""
    signal_id = str(uuid.uuid4())
    with table_connection(settings, p) as conn:
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO {qualified(p.dialect, p.captured.namespace, SIGNAL_TABLE)} (id, type, data) "
                        "VALUES (%s, %s, %s)", (signal_id, kind, json.dumps(data)))
        conn.commit()
    return signal_id


def completed(notice) -> bool:
    """Whether a notification (`notification.enabled.channels=sink`, a ChangeEvent of its topic) says an incremental
    snapshot completed."""
    value = notice.value or {}
    return value.get("aggregate_type") == "Incremental Snapshot" and value.get("type") == "COMPLETED"


def snapshot_in_progress(offsets: list[dict]) -> bool:
    """Whether a connector's committed offsets (Kafka Connect's `GET .../offsets`) hold a snapshot: an initial one
    (`snapshot`), or an incremental one whose place in the table Debezium keeps until its last chunk is read."""
    return any(key.startswith("incremental_snapshot") or (key == "snapshot" and value not in (False, "false"))
               for held in offsets for key, value in held.get("offset", {}).items())
