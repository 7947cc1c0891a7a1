"""The mutation toolkit: apply changes to the source tables and journal each with the source position it produced.

Every mutation runs in its own transaction. Its journal entry records the source position just before the change
and just after its commit (Postgres WAL LSNs; MariaDB binlog file and offset; SQL Server commit LSNs; see
`cdc_sandbox.sources.positions`), so a test can ask "has the pipeline reached this change" (an event for this key and
operation whose position lies in that range) and "what must the table look like here" (the source state after the
entry).
"""

from __future__ import annotations

import base64
import datetime as dt
import fcntl
import ipaddress
import json
import os
import random
import re
import threading
import uuid
import zlib
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.schema import ARRAY, BIGINT, BOOL, BYTES, DATE, DECIMAL, INT, INTERVAL, JSON, NUMBER, SMALLINT, STR
from cdc_sandbox.schema import BIT_LAYOUTS, DOUBLE, FLOAT, TIME, TIMESTAMP, TIMESTAMPTZ, TIMETZ, UUID, Column
from cdc_sandbox.schema import RANGE_FORMS
from cdc_sandbox.sources.normalize import single_precision, time_text
from cdc_sandbox.sources.positions import BinlogMark, binlog_mark, current_position, position_in, position_range
from cdc_sandbox.stack import catalog
from cdc_sandbox.stack.catalog import Placement, left_out_placements, needs_text_array, placements
from cdc_sandbox.stack.databases import table_connection
from cdc_sandbox.stack.services.sqlserver_cdc import refresh_capture_instance_batch
from cdc_sandbox.tickit_data.ddl import MYSQL, POSTGRES, SQLSERVER, quote

KEY_LIMITS = {SMALLINT: 2**15 - 1, INT: 2**31 - 1, BIGINT: 2**63 - 1}  # the largest key each key type holds
# Debezium operations each mutation kind produces (a key update is a delete of the old key and a create).
DEBEZIUM_OPS = {"insert": ["c"], "update": ["u"], "delete": ["d"], "update_key": ["d", "c"], "add_column": [],
                "drop_column": [], "alter_column": [], "truncate": ["t"]}
LOGICAL_TYPES = {"int": INT, "smallint": SMALLINT, "bigint": BIGINT, "text": STR, "long_text": STR, "decimal": DECIMAL,
                 "date": DATE, "timestamp": TIMESTAMP, "timestamptz": TIMESTAMPTZ, "bool": BOOL}


@dataclass
class Change:
    seq: int  # the journal numbers an entry as it writes it
    kind: str
    table: str
    topic: str
    key: dict
    new_key: dict | None = None
    values: dict | None = None  # the row after the change (insert, update, update_key), JSON-safe; add_column: column, type
    before: dict | None = None  # the row a delete or key update removed: what Debezium's delete event carries
    removed: list[dict] | None = None  # the rows a truncate removed
    position: dict = field(default_factory=dict)
    debezium_ops: list[str] = field(default_factory=list)
    at: str = ""

    def produced_by(self, event_value: dict, event_key: dict, op: str) -> bool:
        """Whether a flattened Debezium event (key, value with `__op` and position fields) is this change's `op`."""
        if op not in self.debezium_ops or event_value.get("__op") != op:
            return False
        if op == "t":  # a truncate's event has no key
            return position_in(self.position, event_value)
        key = self.key if op == "d" else (self.new_key or self.key)
        return same_key(event_key, key) and position_in(self.position, event_value)


ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
EPOCH_DAY = dt.date(1970, 1, 1)


def same_key(event_key: dict | None, journaled: dict) -> bool:
    """An event's key is the journaled one: the journal keeps a decimal as text and bytes as base64."""
    if event_key is None or set(event_key) != set(journaled):
        return False
    return all(_same_value(event_key[name], journaled[name]) for name in journaled)


def _same_value(value, journaled) -> bool:
    """The journal keeps a decimal as text, bytes as base64 and dates and times as ISO text (an event gives a date's
    days since 1970, a timestamp's milliseconds or microseconds, a timestamptz's ISO text in UTC)."""
    if value == journaled or not isinstance(journaled, str):
        return value == journaled
    if isinstance(value, int) and not isinstance(value, bool) and ISO_DATE.fullmatch(journaled):
        return value == (dt.date.fromisoformat(journaled) - EPOCH_DAY).days
    if isinstance(value, (Decimal, int)) and not isinstance(value, bool):
        try:
            return value == Decimal(journaled)
        except InvalidOperation:
            pass  # a timestamp's count, journaled as ISO text
    if isinstance(value, bytes):
        return base64.b64encode(value).decode() == journaled
    moment = _instant(journaled)
    if moment is None:
        return False
    if isinstance(value, str) and value.endswith("Z"):  # a timestamptz: Debezium's ISO text in UTC
        return _instant(value) == moment
    if isinstance(value, int) and not isinstance(value, bool):  # a timestamp: milliseconds or microseconds
        micros = (moment - EPOCH) // dt.timedelta(microseconds=1)
        return value in (micros, micros // 1000)
    return False


EPOCH = dt.datetime(1970, 1, 1)


def _instant(text: str) -> dt.datetime | None:
    """An ISO date and time as naive UTC, or None for other text."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.astimezone(dt.timezone.utc).replace(tzinfo=None) if moment.tzinfo else moment


class Journal:
    """Append-only JSON lines, one applied change each: the audit log of every change made to the sources.

    A reader in the process that writes it (the oracle, through the Mutator) gets new entries from memory: each as
    journaled (JSON types), appended as it is written. The file is read once, at the first look, for the sequence to
    go on from, and afterwards only for what another writer appended since (from where this object last read).
    """

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.RLock()  # oracles of several pipelines read it from threads of their own
        self._offset: int | None = None  # bytes of the file this object has accounted for
        self._first_seq = 1  # the next seq when this object first looked
        self._recent: list[Change] = []  # every entry since then

    def entries(self) -> list[Change]:
        """The whole file."""
        if not self.path.exists():
            return []
        return [Change(**json.loads(line)) for line in self.path.read_text().splitlines() if line.strip()]

    def next_seq(self) -> int:
        with self._lock:
            self._catch_up()
            return self._recent[-1].seq + 1 if self._recent else self._first_seq

    def since(self, seq: int, topics: set[str] | None = None) -> list[Change]:
        """The entries from `seq` on, oldest first; with `topics`, those of a project's tables alone (projects on
        one stack share the journal, and two may name a table alike: TICKIT's and Pagila's `category`)."""
        with self._lock:
            self._catch_up()
            entries = self.entries() if seq < self._first_seq else self._recent
            return [c for c in entries if c.seq >= seq and (topics is None or c.topic in topics)]

    def append(self, change: Change) -> None:
        with self._lock:
            self._append(change)

    def _append(self, change: Change) -> None:
        """Number the change after the file's last entry and write it, holding the file locked: processes that
        change the sources side by side (a test run's lanes, the CLI) never give two entries one number."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        private = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)  # it holds row values
        os.fchmod(private, 0o600)  # also when an older sandbox created it readable by all
        with os.fdopen(private, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
            self._catch_up()
            change.seq = self._recent[-1].seq + 1 if self._recent else self._first_seq
            line = json.dumps(asdict(change), default=_json_value) + "\n"
            handle.write(line)
        self._recent.append(Change(**json.loads(line)))
        self._offset += len(line.encode())

    def _size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def _catch_up(self) -> None:
        size = self._size()
        if self._offset is None or size < self._offset:  # first look, or the file was replaced (`sandbox reset`)
            entries = self.entries()
            self._offset, self._recent = size, []
            self._first_seq = entries[-1].seq + 1 if entries else 1
        elif size > self._offset:  # another writer appended
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                tail = handle.read(size - self._offset)
            complete = tail[:tail.rfind(b"\n") + 1]  # a line still being written is read next time
            self._recent += [Change(**json.loads(line)) for line in complete.decode().splitlines() if line.strip()]
            self._offset += len(complete)


def _json_value(value):
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):  # a MySQL time
        return time_text(value)
    if isinstance(value, (ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Interface,
                          ipaddress.IPv6Interface, ipaddress.IPv4Network, ipaddress.IPv6Network)):
        return str(value)
    if isinstance(value, (set, frozenset)):  # a MySQL set's members
        return ",".join(sorted(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"cannot journal a {type(value).__name__}")


@dataclass
class _OpenTransaction:
    placement: Placement
    conn: object
    before: tuple
    changes: list[Change] = field(default_factory=list)


class Mutator:
    def __init__(self, settings: Settings, journal: Journal | None = None):
        self.settings = settings
        self.journal = journal or Journal(settings.state_dir / "journal.jsonl")
        self._placements = {p.table.name: p for p in placements(settings)}
        self._open: _OpenTransaction | None = None
        # When set, MySQL-compatible sources stamp changes with this time instead of the clock (`SET TIMESTAMP`), as
        # a source whose clock jumps back does: the binlog, and so Debezium's `ts_ms`, carries it.
        self.source_clock: dt.datetime | None = None

    def read_tables_again(self) -> None:
        """Read the tables' columns from the sources again: after columns were dropped outside the journal's view
        (a column an earlier process added, which this one read)."""
        catalog.forget()
        self._placements = {p.table.name: p for p in placements(self.settings)}

    def holds(self, table: str) -> bool:
        """Whether the table is captured here (a table left out of capture, e.g. a namesake, is not)."""
        return table in self._placements

    def placement(self, table: str) -> Placement:
        if table not in self._placements:
            raise SandboxError(f"unknown table {table!r}", "choose one of: " + ", ".join(self._placements))
        return self._placements[table]

    # --- the mutation kinds --------------------------------------------------------------------------------
    def insert(self, table: str, values: dict) -> Change:
        p = self.placement(table)
        return self._apply(p, "insert", self._key_of(p, values), p.insert_sql(list(values)), parameters(p, values))

    def update(self, table: str, key: dict, values: dict) -> Change:
        p = self.placement(table)
        sets = ", ".join(f"{quote(p.dialect, c)} = %s" for c in values)
        where, params = self._where(p, key)
        return self._apply(p, "update", key, f"UPDATE {p.name} SET {sets} WHERE {where}",
                           (*parameters(p, values), *params))

    def delete(self, table: str, key: dict) -> Change:
        p = self.placement(table)
        where, params = self._where(p, key)
        return self._apply(p, "delete", key, f"DELETE FROM {p.name} WHERE {where}", params)

    def update_key(self, table: str, key: dict, new_key: dict) -> Change:
        p = self.placement(table)
        sets = ", ".join(f"{quote(p.dialect, c)} = %s" for c in new_key)
        where, params = self._where(p, key)
        sql = f"UPDATE {p.name} SET {sets} WHERE {where}"
        return self._apply(p, "update_key", key, sql, (*new_key.values(), *params), new_key=new_key)

    def add_column(self, table: str, column: str, logical_type: str, default=None) -> Change:
        """Add a nullable column; with a `default`, the rows the table holds take it, without a change event."""
        p = self.placement(table)
        sql_type = _sql_type(p.dialect, logical_type)
        present = p.dialect == MYSQL and self._has_column(p, column)
        sql = _add_column_sql(p, column, sql_type, present, _default_clause(p.dialect, default))
        added = {"column": column, "type": logical_type}
        if default is not None:
            added["default"] = default if isinstance(default, (str, bool, int)) else _json_value(default)
        return self._apply(p, "add_column", {}, sql, (), added=added)

    def drop_column(self, table: str, column: str) -> Change:
        """Drop a column (not a key column) from the source table; silver keeps it, NULL in rows written after."""
        p = self.placement(table)
        if column in p.table.primary_key:
            raise SandboxError(f"{column} is a key column of {table}", "drop a column outside the primary key")
        sql = _drop_column_sql(p, column, present=p.dialect != MYSQL or self._has_column(p, column))
        return self._apply(p, "drop_column", {}, sql, (), added={"column": column})

    def alter_column(self, table: str, column: str, logical_type: str) -> Change:
        """Change a column's type in the source (a migration widening it); silver must follow or the job stop."""
        p = self.placement(table)
        sql_type = _sql_type(p.dialect, logical_type)
        if column in p.table.primary_key:
            raise SandboxError(f"{column} is a key column of {table}", "change a column outside the primary key")
        sql = _alter_column_sql(p, column, sql_type)
        return self._apply(p, "alter_column", {}, sql, (), added={"column": column, "type": logical_type})

    def truncate(self, table: str) -> Change:
        """Empty the table with TRUNCATE; the journal keeps the rows it removed (the oracle's deleted rows)."""
        p = self.placement(table)
        if p.dialect == SQLSERVER:
            raise SandboxError(f"SQL Server refuses TRUNCATE on {p.name}: change data capture is enabled on it",
                               "delete the rows instead")
        if self._open is not None:
            raise SandboxError("a truncate runs in a transaction of its own", "make it a step of its own")
        return self._apply(p, "truncate", {}, f"TRUNCATE TABLE {p.name}", ())

    @contextmanager
    def replica_identity(self, tables: list[str], identity: str):
        """The Postgres ones of `tables` with REPLICA IDENTITY `identity` for a while, then their own again (the
        project file's, FULL by default). DEFAULT, as most production tables run: a delete's old row holds the key
        alone, and an update leaves out the TOASTed values it did not change."""
        postgres = [self.placement(t) for t in tables if self.placement(t).dialect == POSTGRES]
        self._set_replica_identity(postgres, lambda p: identity)
        try:
            yield
        finally:
            self._set_replica_identity(
                postgres, lambda p: self.settings.topology.silver_of(p.table.name).replica_identity)

    def _set_replica_identity(self, placements: list[Placement], identity_of) -> None:
        for p in placements:
            with table_connection(self.settings, p) as conn:
                with conn.cursor() as cur:
                    cur.execute(f"ALTER TABLE {p.name} REPLICA IDENTITY {identity_of(p).upper()}")
                conn.commit()

    # --- seeded random batches -----------------------------------------------------------------------------
    def random_batch(self, count: int, seed: int, tables: list[str] | None = None) -> list[Change]:
        rng = random.Random(seed)
        names = tables or list(self._placements)
        changes = []
        for _ in range(count):
            table = rng.choice(names)
            kind = rng.choices(["insert", "update", "delete"], weights=[4, 4, 2])[0]
            changes.append(getattr(self, f"_random_{kind}")(self.placement(table), rng))
        return changes

    def _random_insert(self, p: Placement, rng: random.Random) -> Change:
        template = self._random_row(p, rng)
        key = self.new_key(p.table.name, rng)
        values = {c.name: unique_value(c, key, rng) if c.unique else template[c.name] for c in p.table.columns} | key
        for column in self._free_columns(p, rng):
            values[column.name] = self._random_value(p, column, rng)
        return self.insert(p.table.name, values)

    def _random_update(self, p: Placement, rng: random.Random) -> Change:
        row = self._random_row(p, rng)
        values = {c.name: self._random_value(p, c, rng) for c in self._free_columns(p, rng)}
        return self.update(p.table.name, self._key_of(p, row), values)

    def _random_value(self, p: Placement, column: Column, rng: random.Random):
        """A partition column takes another row's value: rows move between the partitions silver has, rather than
        each change opening one of its own."""
        if column.name in self.settings.topology.silver_of(p.table.name).partition_by:
            return self._random_row(p, rng)[column.name]
        return random_value(column, rng)

    def _random_delete(self, p: Placement, rng: random.Random) -> Change:
        return self.delete(p.table.name, self._key_of(p, self._random_row(p, rng)))

    def touch(self, table: str, rng: random.Random | None = None) -> Change:
        """Give one column of one row a new value: a change whose arrival shows everything before it arrived."""
        rng = rng or random.Random()
        row = self.sample_row(table, rng)
        column = self.changeable_columns(table)[0]
        value = row[column.name]
        while value == row[column.name] or value is None:
            value = random_value(column, rng)
        return self.update(table, self._key_of(self.placement(table), row), {column.name: value})

    def changeable_columns(self, table: str) -> list[Column]:
        """Columns that are neither key, nor reference, nor unique: changing them keeps the data set consistent."""
        p = self.placement(table)
        fixed = set(p.table.primary_key) | {fk.column for fk in p.table.foreign_keys} | \
            {c.name for c in p.table.columns if c.unique}
        return [c for c in p.table.columns if c.name not in fixed]

    def _free_columns(self, p: Placement, rng: random.Random) -> list[Column]:
        free = self.changeable_columns(p.table.name)
        return rng.sample(free, k=min(len(free), rng.randint(1, 3))) if free else []

    # --- plumbing ------------------------------------------------------------------------------------------
    @contextmanager
    def transaction(self, table: str):
        """Group the changes made inside into one source transaction (they share its commit timestamp); each is
        journaled at commit with the position range of the whole transaction."""
        p = self.placement(table)
        with table_connection(self.settings, p) as conn:
            self._open = _OpenTransaction(p, conn, current_position(conn, p.dialect))
            try:
                yield
                conn.commit()
                after = current_position(conn, p.dialect)
                for change in self._open.changes:
                    change.position = position_range(self._open.before, after)
                    self.journal.append(change)
            except BaseException:
                conn.rollback()
                raise
            finally:
                self._open = None

    def _apply(self, p: Placement, kind: str, key: dict, sql: str, params: tuple, new_key=None,
               added: dict | None = None) -> Change:
        """Run one change in a transaction of its own (or the open one) and journal it; `added` describes the
        column an `add_column` adds."""
        if self._open is not None:
            change = self._apply_in_transaction(p, kind, key, sql, params, new_key)
            change.values = added or change.values
            return change
        with table_connection(self.settings, p) as conn:
            before = current_position(conn, p.dialect)
            removed = self._removed_row(conn, p, kind, key)
            emptied = self._all_rows(conn, p) if kind == "truncate" else None
            ops = self._execute(conn, p, kind, key, sql, params)
            conn.commit()
            after = current_position(conn, p.dialect)
            values = self._read_row(conn, p, new_key or key) if kind in ("insert", "update", "update_key") else None
        change = self._change(p, kind, key, new_key, ops)
        change.values, change.position, change.before = added or values, position_range(before, after), removed
        change.removed = emptied
        self.journal.append(change)
        return change

    def _apply_in_transaction(self, p: Placement, kind: str, key: dict, sql: str, params: tuple, new_key) -> Change:
        if p.dialect != self._open.placement.dialect:
            raise SandboxError(f"{p.table.name} is not in the database of the open transaction "
                               f"({self._open.placement.table.name})", "a transaction spans one source database")
        removed = self._removed_row(self._open.conn, p, kind, key)
        ops = self._execute(self._open.conn, p, kind, key, sql, params)
        change = self._change(p, kind, key, new_key, ops)
        change.before = removed
        if kind not in ("delete", "add_column", "alter_column"):
            change.values = self._read_row(self._open.conn, p, new_key or key)  # the transaction sees its own writes
        self._open.changes.append(change)
        return change

    def _execute(self, conn, p: Placement, kind: str, key: dict, sql: str, params: tuple) -> list[str]:
        """Run one change; returns the Debezium operations it causes."""
        with conn.cursor() as cur:
            if self.source_clock is not None:
                _set_session_clock(cur, p.dialect, self.source_clock)
            cur.execute(sql, params)
            affected = cur.rowcount
            if self.source_clock is not None:
                _set_session_clock(cur, p.dialect, None)
        if kind in ("add_column", "drop_column", "alter_column", "truncate") or affected == 1:
            return list(DEBEZIUM_OPS[kind])
        if kind == "update" and affected == 0 and self._read_row(conn, p, key):
            return []  # MySQL counts only changed rows and logs no event for an update to the same values
        conn.rollback()
        raise SandboxError(f"{kind} on {p.table.name} {key} changed {affected} rows, not 1",
                           "check that the key exists (and, for inserts, that it does not)")

    def _change(self, p: Placement, kind: str, key: dict, new_key: dict | None, ops: list[str]) -> Change:
        return Change(seq=0, kind=kind, table=p.table.name,
                      topic=self.settings.topology.topic(p.captured.namespace, p.table.name),
                      key=key, new_key=new_key, debezium_ops=ops, at=dt.datetime.now(dt.timezone.utc).isoformat())

    def _where(self, p: Placement, key: dict) -> tuple[str, tuple]:
        return " AND ".join(f"{quote(p.dialect, c)} = %s" for c in key), tuple(key.values())

    def _key_of(self, p: Placement, row: dict) -> dict:
        return {c: row[c] for c in p.table.primary_key}

    def _removed_row(self, conn, p: Placement, kind: str, key: dict) -> dict | None:
        """The row a delete or key update is about to remove, read in its transaction."""
        return self._read_row(conn, p, key) if kind in ("delete", "update_key") else None

    def _all_rows(self, conn, p: Placement) -> list[dict]:
        with conn.cursor() as cur:
            cur.execute(f"SELECT {p.select_list()} FROM {p.name}")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, values)) for values in cur.fetchall()]

    def _read_row(self, conn, p: Placement, key: dict) -> dict | None:
        where, params = self._where(p, key)
        with conn.cursor() as cur:
            cur.execute(f"SELECT {p.select_list()} FROM {p.name} WHERE {where}", params)
            row = cur.fetchone()
            return dict(zip([d[0] for d in cur.description], row)) if row else None

    # --- reading the source --------------------------------------------------------------------------------
    def binlog_mark(self, table: str) -> BinlogMark:
        """Where the binlog of the MariaDB/MySQL server holding the table ends now."""
        p = self.placement(table)
        if p.dialect != MYSQL:
            raise SandboxError(f"{table} lives on {p.captured.source}, which keeps no binlog",
                               "mark a table on a MariaDB or MySQL source")
        with table_connection(self.settings, p) as conn:
            return binlog_mark(conn)

    def read_row(self, table: str, key: dict) -> dict | None:
        """The source row with this key, or None."""
        p = self.placement(table)
        with table_connection(self.settings, p) as conn:
            return self._read_row(conn, p, key)

    def _has_column(self, p: Placement, column: str) -> bool:
        with table_connection(self.settings, p) as conn:
            with conn.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM information_schema.COLUMNS "
                            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND COLUMN_NAME = %s",
                            (p.captured.namespace, p.table.name, column))
                return cur.fetchone()[0] > 0

    def sample_row(self, table: str, rng: random.Random) -> dict:
        return self._random_row(self.placement(table), rng)

    def new_key(self, table: str, rng: random.Random) -> dict:
        """A key no row has: above every existing one for a single integer key, else drawn from the key columns'
        types until free."""
        p = self.placement(table)
        key_columns = [p.table.column(name) for name in p.table.primary_key]
        if len(key_columns) == 1 and key_columns[0].type in KEY_LIMITS:
            return {key_columns[0].name: self.next_key(table)}
        with table_connection(self.settings, p) as conn:
            for _ in range(100):
                key = {c.name: random_value(replace(c, nullable=False), rng) for c in key_columns}
                if self._read_row(conn, p, key) is None:
                    return key
        raise SandboxError(f"no free key of {table} found in 100 draws", "delete rows of the table, or reload it")

    def new_row(self, table: str, rng: random.Random) -> dict:
        """A row the table can take as it stands: a key no row has (its columns that are references naming rows
        that exist), each reference naming an existing row (a UNIQUE one a row no row names yet), a UNIQUE column a
        value made from the key, the rest drawn from the column types (within partitions and simple CHECKs)."""
        p = self.placement(table)
        with table_connection(self.settings, p) as conn:
            for _ in range(100):
                row = {c.name: random_value(c, rng) for c in p.table.columns}
                row |= self._references(conn, p, rng)
                key_references = {fk.column for fk in p.table.foreign_keys} & set(p.table.primary_key)
                if not key_references:
                    row |= self.new_key(table, rng)
                key = self._key_of(p, row)
                row |= {c.name: unique_value(c, key, rng) for c in p.table.columns
                        if c.unique and c.name not in key and c.name not in {fk.column for fk in p.table.foreign_keys}}
                if self._read_row(conn, p, key) is None:
                    return row
        raise SandboxError(f"no new row of {table} found in 100 draws: every key its references allow is taken",
                           "give the referenced tables more rows")

    def _references(self, conn, p: Placement, rng: random.Random) -> dict:
        """Values for the table's reference columns, a referenced table's from one of its rows (a UNIQUE reference
        column's from a row no row of this table names yet)."""
        values = {}
        for referenced in dict.fromkeys(fk.references_table for fk in p.table.foreign_keys):
            columns = [fk for fk in p.table.foreign_keys if fk.references_table == referenced]
            target = self._placements.get(referenced) or next(
                (q for q in left_out_placements(self.settings) if q.table.name == referenced), None)
            if target is None or target.captured.source != p.captured.source:
                continue
            wanted = ", ".join(quote(p.dialect, fk.references_column) for fk in columns)
            condition = " AND ".join(
                f"{quote(p.dialect, fk.references_column)} NOT IN (SELECT {quote(p.dialect, fk.column)} FROM {p.name} "
                f"WHERE {quote(p.dialect, fk.column)} IS NOT NULL)"
                for fk in columns if p.table.column(fk.column).unique) or "1 = 1"
            with conn.cursor() as cur:  # in a set order: a seeded draw picks the same row every run
                cur.execute(f"SELECT {wanted} FROM {target.name} WHERE {condition} ORDER BY {wanted}")
                found = cur.fetchall()
            if found:
                chosen = rng.choice(found)
                values |= {fk.column: value for fk, value in zip(columns, chosen)}
            elif any(not p.table.column(fk.column).nullable for fk in columns):
                raise SandboxError(f"a new row of {p.table.name} must reference a row of {referenced}, and "
                                   f"{referenced} has none it could take (a UNIQUE reference takes each row once)",
                                   f"add rows to {referenced} first")
        return values

    def next_key(self, table: str) -> int:
        """A key above every existing one, or, when that would not fit the key's type, the lowest one free."""
        p = self.placement(table)
        (pk,) = p.table.primary_key
        above = self._max_key(p) + 1
        if above <= p.table.column(pk).value_range[1]:  # a tinyint unsigned key ends at 255
            return above
        taken = set(self.rows(table))
        free = next((key for key in range(1, above) if (key,) not in taken), None)
        if free is None:
            raise SandboxError(f"every key of {table} from 1 to {above - 1} is taken",
                               "delete rows of the table, or reload TICKIT: `sandbox reset` then `sandbox up`")
        return free

    def row_count(self, table: str) -> int:
        p = self.placement(table)
        with table_connection(self.settings, p) as conn, conn.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM {p.name}")
            return cur.fetchone()[0]

    def rows(self, table: str) -> dict[tuple, dict]:
        """Every source row of the table, by key."""
        p = self.placement(table)
        with table_connection(self.settings, p) as conn:
            rows = self._all_rows(conn, p)
        return {tuple(row[c] for c in p.table.primary_key): row for row in rows}

    def restore(self, table: str, rows: dict[tuple, dict]) -> list[Change]:
        """Bring the table back to `rows` (from `rows(table)`) by ordinary deletes, updates and inserts: they reach
        Kafka and silver like any other change, and the oracle checks them."""
        p = self.placement(table)
        current = self.rows(table)
        changes = [self.delete(table, self._key_of(p, row)) for key, row in current.items() if key not in rows]
        for key, row in rows.items():
            now = current.get(key)
            if now is None:
                changes.append(self.insert(table, row))
            elif any(now.get(column) != value for column, value in row.items()):
                changed = {column: value for column, value in row.items() if now.get(column) != value}
                changes.append(self.update(table, self._key_of(p, row), changed))
        return changes

    def first_keys(self, table: str, count: int) -> list[tuple]:
        """The keys of the table's first `count` rows in key order."""
        p = self.placement(table)
        columns = ", ".join(quote(p.dialect, name) for name in p.table.primary_key)
        page = "OFFSET 0 ROWS FETCH NEXT %s ROWS ONLY" if p.dialect == SQLSERVER else "LIMIT %s"
        with table_connection(self.settings, p) as conn:
            with conn.cursor() as cur:
                cur.execute(f"SELECT {columns} FROM {p.name} ORDER BY {columns} {page}", (count,))
                return [tuple(row) for row in cur.fetchall()]

    def _max_key(self, p: Placement) -> int:
        (pk,) = p.table.primary_key
        with table_connection(self.settings, p) as conn:
            with conn.cursor() as cur:
                cur.execute(f"SELECT COALESCE(MAX({quote(p.dialect, pk)}), 0) FROM {p.name}")
                return int(cur.fetchone()[0])  # MariaDB types COALESCE of an unsigned column as a decimal

    def _random_row(self, p: Placement, rng: random.Random) -> dict:
        column = ", ".join(quote(p.dialect, name) for name in p.table.primary_key)
        with table_connection(self.settings, p) as conn:
            with conn.cursor() as cur:
                cur.execute(f"SELECT COUNT(*) FROM {p.name}")
                (count,) = cur.fetchone()
                if not count:
                    raise SandboxError(f"{p.table.name} is empty", "load its rows first: `sandbox load`")
                # Every row equally likely: a draw between the smallest and largest key favours the rows after gaps
                # (the fuzzer's keys lie far above TICKIT's), and drew the same two rows again and again.
                page = "OFFSET %s ROWS FETCH NEXT 1 ROWS ONLY" if p.dialect == SQLSERVER else "LIMIT 1 OFFSET %s"
                cur.execute(f"SELECT {p.select_list()} FROM {p.name} ORDER BY {column} {page}",
                            (rng.randrange(count),))
                names = [d[0] for d in cur.description]
                return dict(zip(names, cur.fetchone()))


def sql_parameter(value, column: Column | None = None):
    """A value as the driver takes it for the column: a JSON value (a dict or list, as drivers read it) as the JSON
    text the column takes; an array's list as it is."""
    if isinstance(value, (dict, list)) and (column is None or column.type != ARRAY):
        return json.dumps(value)
    return value


def parameters(p: Placement, values: dict) -> tuple:
    """A row's values (by column name) as the driver takes them for the table's columns (a boolean for a Postgres
    bit(1) as its bit, which Postgres does not cast from a boolean)."""
    columns = set(p.table.column_names)
    result = []
    for name, value in values.items():
        column = p.table.column(name) if name in columns else None
        if isinstance(value, bool) and p.dialect == POSTGRES and column and (column.sql_type or "").startswith("bit"):
            value = "1" if value else "0"
        elif isinstance(value, int) and p.dialect == POSTGRES and column and column.carried in BIT_LAYOUTS:
            value = format(value, f"0{column.bit_length or 1}b")  # Postgres takes a bit string as its text
        elif isinstance(value, list) and p.dialect == POSTGRES and column and column.type == ARRAY \
                and needs_text_array(column.element):
            value = array_literal(value)
        result.append(sql_parameter(value, column))
    return tuple(result)


def array_literal(values: list) -> str:
    """A Postgres array as its literal text, which the server reads into the column's array type (the driver sends
    a list as an array of text, which no uuid or enum column takes)."""
    def element(value) -> str:
        return "NULL" if value is None else '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'

    return "{" + ",".join(element(value) for value in values) + "}"


def _set_session_clock(cur, dialect: str, at: dt.datetime | None) -> None:
    if dialect != MYSQL:
        raise SandboxError("only MySQL-compatible sources can stamp changes with a chosen time",
                           "set the source clock on changes to MySQL tables only")
    if at is None:
        cur.execute("SET TIMESTAMP = DEFAULT")
    else:
        cur.execute("SET TIMESTAMP = %s", (at.replace(tzinfo=dt.timezone.utc).timestamp(),))


def _add_column_sql(p: Placement, column: str, sql_type: str, present: bool = False, default: str = "") -> str:
    """The statement adding the column, which does nothing where it is `present` already; `default` is its
    DEFAULT clause (`_default_clause`)."""
    name = quote(p.dialect, column)
    if p.dialect == SQLSERVER:  # the column and its new capture instance in one batch, as Debezium advises
        return (f"IF COL_LENGTH(N'{p.name}', N'{column}') IS NULL\nBEGIN\n"
                f"ALTER TABLE {p.name} ADD {name} {sql_type} NULL{default};\n"
                f"{refresh_capture_instance_batch(p.captured.namespace, p.table.name)}\nEND")
    if p.dialect == MYSQL:  # MySQL 8.0 has no ADD COLUMN IF NOT EXISTS (MariaDB has): the caller looks first
        return "DO 0" if present else f"ALTER TABLE {p.name} ADD COLUMN {name} {sql_type} NULL{default}"
    return f"ALTER TABLE {p.name} ADD COLUMN IF NOT EXISTS {name} {sql_type} NULL{default}"


def _default_clause(dialect: str, value) -> str:
    """` DEFAULT <value>` as the dialect writes the literal (the rows a table holds take it: on SQL Server only
    `WITH VALUES` says so), or "" for no default."""
    if value is None:
        return ""
    if isinstance(value, bool):
        literal = ("TRUE" if value else "FALSE") if dialect == POSTGRES else str(int(value))
    elif isinstance(value, (int, float, Decimal)):
        literal = str(value)
    else:
        text = value.isoformat(sep=" ") if isinstance(value, dt.datetime) else str(value)
        if dialect == MYSQL:  # a backslash escapes in MySQL's string literals
            text = text.replace("\\", "\\\\")
        literal = "'" + text.replace("'", "''") + "'"
    return f" DEFAULT {literal} WITH VALUES" if dialect == SQLSERVER else f" DEFAULT {literal}"


def _alter_column_sql(p: Placement, column: str, sql_type: str) -> str:
    name = quote(p.dialect, column)
    if p.dialect == SQLSERVER:  # the capture instance follows the table's new column type
        return (f"ALTER TABLE {p.name} ALTER COLUMN {name} {sql_type} NULL;\n"
                f"{refresh_capture_instance_batch(p.captured.namespace, p.table.name)}")
    if p.dialect == MYSQL:
        return f"ALTER TABLE {p.name} MODIFY COLUMN {name} {sql_type} NULL"
    return f"ALTER TABLE {p.name} ALTER COLUMN {name} TYPE {sql_type}"


def _drop_column_sql(p: Placement, column: str, present: bool = True) -> str:
    """The statement dropping the column, which does nothing where it is gone already."""
    name = quote(p.dialect, column)
    if p.dialect == SQLSERVER:  # the capture instance follows the table's new columns
        return (f"IF COL_LENGTH(N'{p.name}', N'{column}') IS NOT NULL\nBEGIN\n"
                f"ALTER TABLE {p.name} DROP COLUMN {name};\n"
                f"{refresh_capture_instance_batch(p.captured.namespace, p.table.name)}\nEND")
    if p.dialect == MYSQL:  # MySQL 8.0 has no DROP COLUMN IF EXISTS (MariaDB has): the caller looks first
        return f"ALTER TABLE {p.name} DROP COLUMN {name}" if present else "DO 0"
    return f"ALTER TABLE {p.name} DROP COLUMN IF EXISTS {name}"


def added_column(name: str, logical_type: str) -> Column:
    """The column `add_column` adds for a logical type name (text is varchar(100), long_text has no limit, decimal is
    decimal(8,2))."""
    if logical_type not in LOGICAL_TYPES:
        raise SandboxError(f"unknown column type {logical_type!r}", "choose one of: " + ", ".join(LOGICAL_TYPES))
    logical = LOGICAL_TYPES[logical_type]
    return Column(name, logical, max_length=100 if logical_type == "text" else None,
                  precision=8 if logical == DECIMAL else None, scale=2 if logical == DECIMAL else None)


def _sql_type(dialect: str, logical_type: str) -> str:
    from cdc_sandbox.tickit_data.ddl import column_type

    return column_type(dialect, added_column("x", logical_type))


FLOAT_EDGES = (0.0, -0.0, 3.4028234663852886e38, -3.4028234663852886e38, 1.401298464324817e-45)
DOUBLE_EDGES = (0.0, -0.0, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324, 0.1)


def random_value(column: Column, rng: random.Random):
    """A value of the column's type within its limits (and a partition's bounds); now and then one of its edges."""
    if column.nullable and rng.random() < 0.1:
        return None
    if column.partitions:
        return _in_a_partition(column, rng)
    if column.type == ARRAY:  # never all NULLs: the server could not tell the array's type
        elements = [random_value(column.element, rng) for _ in range(rng.randint(0, 4))]
        return elements if any(e is not None for e in elements) else []
    edge = rng.random() < 0.1
    if column.type in (INT, SMALLINT, BIGINT):
        low, high = column.value_range
        return rng.choice([low, high, max(low, 0)]) if edge else rng.randint(max(low, 0), min(high, 30_000))
    if column.type == DECIMAL:
        largest = 10 ** column.precision - 1
        low = 0 if column.unsigned else -largest
        if column.unsigned and column.precision == 20 and column.scale == 0:  # bigint unsigned
            largest = 2**64 - 1
        if column.limits:
            low, largest = column.limits
        digits = rng.choice([low, largest, 0]) if edge else rng.randint(0, min(largest, 10**6 * 10**column.scale))
        return _exact(digits, column.scale)
    if column.type == NUMBER:
        return _exact(rng.randint(-10**30, 10**30), rng.randint(0, 20)) if edge else \
            _exact(rng.randint(0, 10**8), rng.randint(0, 6))
    if column.type == DATE:
        return rng.choice([dt.date(1, 1, 1), dt.date(9999, 12, 31)]) if edge else \
            dt.date(2008, 1, 1) + dt.timedelta(days=rng.randint(0, 365))
    if column.type in (TIMESTAMP, TIMESTAMPTZ):
        moment = dt.datetime(2008, 1, 1) + dt.timedelta(seconds=rng.randint(0, 366 * 86400 - 1),
                                                        microseconds=rng.randint(0, 999_999))
        return moment.replace(tzinfo=dt.timezone.utc) if column.type == TIMESTAMPTZ else moment
    if column.type in (TIME, TIMETZ):
        return _time_of_day(column, rng, edge)
    if column.type == INTERVAL:  # as Postgres reads it: months, days and a time of any sign
        sign = rng.choice(["", "-"])
        return (f"{rng.randint(-30, 30)} mons {rng.randint(-400, 400)} days {sign}{rng.randint(0, 200)}:"
                f"{rng.randint(0, 59):02}:{rng.randint(0, 59):02}.{rng.randint(0, 999_999):06}")
    if column.type == BOOL:
        return rng.random() < 0.5
    if column.type in (FLOAT, DOUBLE):  # finite: NaN equals nothing, itself included
        edges = FLOAT_EDGES if column.type == FLOAT else DOUBLE_EDGES
        value = rng.choice(edges) if edge else rng.uniform(-1e6, 1e6)
        return single_precision(value) if column.type == FLOAT else value
    if column.type == JSON:
        return {"n": rng.randint(0, 1000), "tags": [_text(rng, 8) for _ in range(rng.randint(0, 3))],
                "nested": {"ok": rng.random() < 0.5}}
    if column.type == UUID:
        return str(uuid.UUID(int=rng.getrandbits(128)))
    if column.carried in BIT_LAYOUTS:  # as a number: MySQL takes it so, `parameters` makes Postgres's text of it
        width = column.bit_length or rng.randint(1, 64)
        return rng.choice([0, 2**width - 1]) if edge else rng.getrandbits(width)
    if column.type == BYTES:
        return bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 16]) if edge else rng.randint(1, 16)))
    if column.form:
        return _formed_text(column, rng)
    if column.labels:
        return rng.choice(column.labels)
    return _text(rng, column.max_length or 40)


def _in_a_partition(column: Column, rng: random.Random):
    """A value inside one of the column's partitions (`Column.partitions`): one of a list's values, or one between
    a range's bounds (a year's worth past an unbounded end)."""
    kind, *bounds = rng.choice(column.partitions)
    if kind == "list" or column.type not in (DATE, TIMESTAMP, TIMESTAMPTZ, SMALLINT, INT, BIGINT):
        return _parsed(column, rng.choice(bounds))
    low, high = (None if b is None else _parsed(column, b) for b in bounds)
    span = dt.timedelta(days=365) if column.type in (DATE, TIMESTAMP, TIMESTAMPTZ) else 1000
    low, high = (high - span if low is None else low), (low + span if high is None else high)
    if column.type in (SMALLINT, INT, BIGINT):
        return rng.randrange(low, high)
    step = dt.timedelta(days=1) if column.type == DATE else dt.timedelta(microseconds=1)
    return low + step * rng.randrange((high - low) // step)


def _parsed(column: Column, text: str):
    """A partition bound as the catalog writes it, in the column's type."""
    if column.type in (SMALLINT, INT, BIGINT):
        return int(text)
    if column.type == DATE:
        return dt.date.fromisoformat(text)
    if column.type in (TIMESTAMP, TIMESTAMPTZ):
        moment = dt.datetime.fromisoformat(text)
        return moment.astimezone(dt.timezone.utc) if moment.tzinfo else moment
    return text


def _time_of_day(column: Column, rng: random.Random, edge: bool) -> dt.time:
    """A time of day (with an offset for a timetz), to the column's precision; now and then midnight or the last
    microsecond of the day."""
    micros = rng.choice([0, 86_400_000_000 - 1]) if edge else rng.randrange(86_400_000_000)
    if column.carried == "millis":
        micros -= micros % 1000
    seconds, micro = divmod(micros, 1_000_000)
    zone = dt.timezone(dt.timedelta(minutes=rng.choice([0, 60, -300, 330, 840, -720]))) if column.type == TIMETZ \
        else None
    return dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, micro, tzinfo=zone)


def _formed_text(column: Column, rng: random.Random) -> str:
    """Text in the grammar of the column's form (`schema.TEXT_FORMS`), as the server writes it back."""
    octets = [rng.randrange(256) for _ in range(16)]
    if column.form == "inet":
        if rng.random() < 0.2:
            return str(ipaddress.IPv6Address(bytes(octets)))
        address = ipaddress.IPv4Address(bytes(octets[:4]))
        return str(address) if rng.random() < 0.7 else f"{address}/{rng.randint(8, 32)}"
    if column.form == "cidr":
        return str(ipaddress.IPv4Network((bytes(octets[:4]), rng.randint(8, 32)), strict=False))
    if column.form in ("macaddr", "macaddr8"):
        return ":".join(f"{octet:02x}" for octet in octets[:6 if column.form == "macaddr" else 8])
    if column.form == "set":
        return ",".join(label for label in column.labels if rng.random() < 0.5)
    if column.form in RANGE_FORMS:
        return _range_text(column.form, rng)
    if column.form == "tsvector":  # words, which the server keeps sorted and once each
        return " ".join(_text(rng, 8).replace(" ", "") or "x" for _ in range(rng.randint(1, 5)))
    return f"<note n=\"{rng.randint(0, 999)}\">{_text(rng, 20).replace('&', '').replace('<', '')}</note>"


def _range_text(form: str, rng: random.Random) -> str:
    """A range as the server writes it back: a discrete one canonical (`[low,high)`), now and then empty or
    unbounded."""
    if rng.random() < 0.1:
        return rng.choice(["empty", "(,)"])
    low, span = rng.randint(-1000, 1000), rng.randint(1, 1000)
    if form in ("int4range", "int8range"):
        return f"[{low},{low + span})"
    if form == "numrange":
        return f"[{Decimal(low).scaleb(-2)},{Decimal(low + span).scaleb(-2)}]"
    start = dt.date(2008, 1, 1) + dt.timedelta(days=low)
    if form == "daterange":
        return f"[{start},{start + dt.timedelta(days=span)})"
    moment = dt.datetime.combine(start, dt.time()) + dt.timedelta(seconds=rng.randrange(86_400))
    if form == "tstzrange":
        moment = moment.replace(tzinfo=dt.timezone(dt.timedelta(minutes=rng.choice([0, 330, -300]))))
    return f'["{moment}","{moment + dt.timedelta(minutes=span)}")'


def unique_value(column: Column, key: dict, rng: random.Random):
    """A value of a column with a UNIQUE constraint for a new row: text made from the row's new key, which no
    other row has (seeded draws repeat from one run to the next, and the rows of earlier runs stay)."""
    if column.type == STR and not column.labels and not column.form:
        return "k" + "-".join(str(value) for value in key.values())[-(column.max_length or 40) + 1:]
    if column.type in (SMALLINT, INT, BIGINT):  # the key itself where it is one number, else a number made from it
        low, high = column.value_range
        (only,) = key.values() if len(key) == 1 else (None,)
        number = only if isinstance(only, int) else zlib.crc32("-".join(map(str, key.values())).encode())
        return low + (number - low) % (high - low + 1)
    return random_value(replace(column, nullable=False), rng)


def _exact(digits: int, scale: int) -> Decimal:
    """digits * 10^-scale without rounding (Decimal arithmetic rounds to 28 digits)."""
    return Decimal(f"{digits}E-{scale}")


def _text(rng: random.Random, longest: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz ÄÖÜßéñ東京"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, longest))).strip() or "x"
