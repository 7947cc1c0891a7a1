"""The oracle's model of what silver must hold: each followed table's expected state, folded from the mutation
journal's changes round by round (inserts, updates, deletes, key updates, truncates, columns added, widened and
dropped), with the changed keys' rows read back from the source, and the history of states recorded per commit.
No service is involved but the source reads it is given (`read_rows`); the checks are the oracle's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from cdc_sandbox.config import Settings
from cdc_sandbox.harness.checking.silver import Shape
from cdc_sandbox.harness.running.timeline import Commit
from cdc_sandbox.sources.mutations import Change, added_column
from cdc_sandbox.sources.positions import position_floor
from cdc_sandbox.stack.catalog import Placement
from cdc_sandbox.stack.databases import table_connection
from cdc_sandbox.tickit_data.ddl import quote

# (table, its shape, the keys to read or None for all) -> the source's rows in the compared columns
SourceRows = Callable[[str, Shape, "set[tuple] | None"], list[tuple]]


@dataclass
class Recorded:
    """A commit the oracle recorded an expected state for."""

    table: str
    label: str
    commit: Commit
    shape: Shape  # the table's columns at this commit
    state: dict[tuple, tuple]
    changed: set[tuple]  # keys with a change event since the table's previous recorded commit
    deleted: dict[tuple, tuple] = field(default_factory=dict)  # soft-deleted keys seen deleted: their last values
    truncated: set[tuple] = field(default_factory=set)  # those of `deleted` a truncate deleted
    # Keys whose events Kafka delivered again since that commit (Debezium re-sends after a crash), not changed:
    # an incremental read may hold them, with unchanged values.
    redelivered: set[tuple] = field(default_factory=set)
    # `state` as Arrow tables by reader schema, built by its first check: the round's snapshot, time travel to this
    # commit and the comparison with the source all compare with the same state.
    arrow_tables: dict = field(default_factory=dict)


class ExpectedState:
    """Per followed table: its shape, live and deleted rows, the keys changed since its last recorded commit, and
    the states recorded so far."""

    def __init__(self, read_rows: SourceRows):
        self.read_rows = read_rows
        self.shapes: dict[str, Shape] = {}
        self.states: dict[str, dict[tuple, tuple]] = {}
        self.deleted: dict[str, dict[tuple, tuple]] = {}  # table -> key -> the values its delete carried
        self.truncated: dict[str, set[tuple]] = {}  # table -> the deleted keys a truncate deleted
        self.widenings: dict[str, list] = {}  # table -> columns a later step widens (`expect_widening`)
        self.pending: dict[str, set[tuple]] = {}  # table -> keys changed since its last round, read from the source
        # table -> {column: default} of columns added with a DEFAULT since the table's last change event: the job
        # can learn of a column only from an event carrying it
        self.unfilled: dict[str, dict[str, object]] = {}
        self.settled: dict[str, set[tuple]] = {}  # table -> keys changed since then whose state is known already
        self.recorded: dict[str, list[Recorded]] = {}
        # Tables whose rows the source's triggers changed in the last round (`apply`): no journaled position says
        # when silver holds those changes, so the round waits for silver to hold the state.
        self.changed_by_triggers: set[str] = set()

    def expect_widening(self, table: str, column) -> None:
        """A column that a later change widens to `column`'s type: a lake that saw it wide before (the topics'
        history of an earlier run) holds it wide from the moment it is added again, as Hudi never narrows."""
        self.widenings.setdefault(table, []).append(column)

    def follow(self, table: str, shape: Shape) -> None:
        """Start following a table: its whole state read from the source."""
        self.shapes[table] = shape
        self.pending[table], self.settled[table], self.truncated[table] = set(), set(), set()
        self.recorded[table], self.deleted[table] = [], {}
        self.states[table] = self._source_rows(table)

    def apply(self, changes: list[Change]) -> dict[str, int]:
        """Fold the changes into the expected state; returns the source position to wait for per table."""
        targets: dict[str, int] = {}
        removed: dict[str, dict[tuple, dict | None]] = {}  # the last values each key removed in this round had
        written: dict[str, dict[tuple, dict | None]] = {}  # the row each key's last change in this round left
        held: dict[str, dict[tuple, tuple]] = {}  # the rows last written before a drop: what silver holds of them
        for change in changes:
            if change.table not in self.shapes:
                continue
            if change.kind == "add_column":
                self._add_column(change)
                continue
            if change.kind == "alter_column":
                self._alter_column(change)
                continue
            if change.kind == "drop_column":  # of a column silver holds (else one it never saw, gone already)
                shape = self.shapes[change.table]
                if change.values["column"] in shape.columns:
                    self.shapes[change.table] = replace(shape, dropped=shape.dropped | {change.values["column"]})
                    rows = written.get(change.table, {})
                    held.setdefault(change.table, {}).update(
                        {key: shape.from_journal(row) for key, row in rows.items() if row is not None})
                continue
            if change.kind == "truncate":
                targets[change.table] = position_floor(change.position)
                self._truncate(change, removed.pop(change.table, {}))
                continue
            if change.debezium_ops:
                targets[change.table] = position_floor(change.position)
                if change.table in self.unfilled:
                    self._fill_defaults(change.table, self.unfilled.pop(change.table))
                if change.kind in ("delete", "update_key"):
                    removed.setdefault(change.table, {})[self.key(change.table, change.key)] = change.before
                    written.setdefault(change.table, {})[self.key(change.table, change.key)] = None
                for key in (change.key, change.new_key):
                    if key:
                        self.pending[change.table].add(self.key(change.table, key))
                if change.kind != "delete":
                    key = self.key(change.table, change.new_key or change.key)
                    written.setdefault(change.table, {})[key] = change.values
                    held.get(change.table, {}).pop(key, None)  # its event came after the drop: NULL there
        for table, keys in self.pending.items():
            if keys and table in targets:
                self._refresh(table, keys, removed.get(table, {}))
                self._not_carried_yet(table, keys)
        for table, rows in held.items():
            self._keep_dropped(table, rows)
        self.changed_by_triggers = {table for table, shape in self.shapes.items()
                                    if shape.table.written_by_triggers and changes and self._take_trigger_writes(table)}
        return targets

    def record(self, table: str, label: str, commit: Commit, redelivered: set[tuple]) -> Recorded:
        """The table's expected state for `commit`, kept in its history; `redelivered`: keys Kafka delivered again
        since its previous recorded commit."""
        changed = self.pending[table] | self.settled[table]
        entry = Recorded(table, label, commit, self.shapes[table], dict(self.states[table]), changed,
                         dict(self.deleted[table]), set(self.truncated[table]),
                         redelivered - changed)
        self.pending[table], self.settled[table] = set(), set()
        self.recorded[table].append(entry)
        return entry

    def provisional(self, table: str, label: str, commit: Commit) -> Recorded:
        """The table's expected state as a candidate for `commit`, not kept in its history."""
        return Recorded(table, label, commit, self.shapes[table], dict(self.states[table]), set(),
                        dict(self.deleted[table]), set(self.truncated[table]))

    def key(self, table: str, key: dict) -> tuple:
        """A key as the journal or an event gives it (a decimal as text, say), in the compared types."""
        shape = self.shapes[table]
        return shape.key_of(shape.from_journal(key))

    def _keep_dropped(self, table: str, rows: dict[tuple, tuple]) -> None:
        """Rows last changed before a column was dropped hold, in silver, the value their last event gave it, which
        the source no longer has: the expected state takes it from the journal."""
        shape, state = self.shapes[table], self.states[table]
        dropped = [i for i, column in enumerate(shape.columns) if column in shape.dropped]
        for key, row in rows.items():
            if key in state:
                state[key] = tuple(row[i] if i in dropped else value for i, value in enumerate(state[key]))

    def _truncate(self, change: Change, removed: dict[tuple, dict | None]) -> None:
        """Every row the table held at the truncate becomes deleted with its values (the journal recorded them);
        keys changed before it in the round and gone by then keep the values their delete carried."""
        table, shape = change.table, self.shapes[change.table]
        state, deleted, truncated = self.states[table], self.deleted[table], self.truncated[table]
        held = {shape.key_of(row): row for row in map(shape.from_journal, change.removed or [])}
        for key in self.pending[table] - held.keys():
            state.pop(key, None)
            if removed.get(key) is not None:
                deleted[key] = shape.from_journal(removed[key])
                truncated.discard(key)
        for key, row in held.items():
            state.pop(key, None)
            deleted[key] = row
            truncated.add(key)
        for key in list(state):  # rows the truncate removed that the journal did not list (another writer's)
            deleted[key] = state.pop(key)
            truncated.add(key)
        self.settled[table] |= self.pending[table] | held.keys()
        self.pending[table] = set()

    def _add_column(self, change: Change) -> None:
        shape = self.shapes[change.table]
        name, logical = change.values["column"], change.values["type"]
        if change.values.get("default") is not None:
            self.unfilled.setdefault(change.table, {})[name] = change.values["default"]
        if name in shape.columns:  # added again after a drop: existing rows keep what silver holds
            self.shapes[change.table] = replace(shape, dropped=shape.dropped - {name})
            return
        column = added_column(name, logical)
        wide = tuple(c for c in self.widenings.get(change.table, []) if c.name == name)
        self.shapes[change.table] = replace(shape, table=replace(shape.table, columns=(*shape.table.columns, column)),
                                            widened=shape.widened + wide)
        self.states[change.table] = {k: (*row, None) for k, row in self.states[change.table].items()}
        self.deleted[change.table] = {k: (*row, None) for k, row in self.deleted[change.table].items()}

    def _not_carried_yet(self, table: str, keys: set[tuple]) -> None:
        """Columns added with a DEFAULT after the table's last event of the round: the source's rows hold the
        default, but the events that wrote these keys came before the column, so silver holds NULL there until an
        event carries it (`_fill_defaults`)."""
        unfilled = self.unfilled.get(table)
        if not unfilled:
            return
        shape, state = self.shapes[table], self.states[table]
        absent = {i for i, column in enumerate(shape.columns) if column in unfilled}
        for key in keys & state.keys():
            state[key] = tuple(None if i in absent else value for i, value in enumerate(state[key]))

    def _fill_defaults(self, table: str, defaults: dict[str, object]) -> None:
        """The source's rows took these columns' defaults when they were added; silver's take them with the first
        event that carries the columns, in the same commit: every live row changes there."""
        shape, state = self.shapes[table], self.states[table]
        typed = shape.from_journal(defaults)
        filled = {i: typed[i] for i, column in enumerate(shape.columns) if column in defaults}
        for key, row in state.items():
            state[key] = tuple(filled.get(i, value) for i, value in enumerate(row))
        self.settled[table] |= set(state)

    def _alter_column(self, change: Change) -> None:
        """The column takes its new type; the values rows hold are the same values in it (a widening). Commits
        recorded before it may be read in the new type too."""
        shape = self.shapes[change.table]
        new = added_column(change.values["column"], change.values["type"])
        columns = tuple(new if c.name == new.name else c for c in shape.table.columns)
        self.shapes[change.table] = replace(shape, table=replace(shape.table, columns=columns))
        for entry in self.recorded.get(change.table, []):
            entry.shape = replace(entry.shape, widened=(*entry.shape.widened, new))

    def _take_trigger_writes(self, table: str) -> bool:
        """Whether the source's rows differ from the expected state, which takes them: a key gone from the source is
        deleted with the values it held (the delete a trigger makes carries the whole row). Columns where the state
        holds what the source cannot show (a dropped column's last value, NULL in a column added with a DEFAULT that
        no event carried yet) are not compared."""
        state, deleted, truncated, shape = self.states[table], self.deleted[table], self.truncated[table], self.shapes[table]
        unseen = shape.dropped | set(self.unfilled.get(table, {}))
        compared = [i for i, column in enumerate(shape.columns) if column not in unseen]
        fresh = self._source_rows(table)
        gone = state.keys() - fresh.keys()
        written = {key for key, row in fresh.items()
                   if key not in state or any(state[key][i] != row[i] for i in compared)}
        for key in gone:
            deleted[key] = state.pop(key)
            truncated.discard(key)
        for key in written:
            state[key] = fresh[key]
            deleted.pop(key, None)
            truncated.discard(key)
        self.pending[table] |= gone | written
        return bool(gone or written)

    def _refresh(self, table: str, keys: set[tuple], removed: dict[tuple, dict | None]) -> None:
        """The changed keys' rows from the source; a key gone from it keeps the values its delete carried (a
        delete journaled without them, by an older version of the harness, leaves the deleted row unchecked)."""
        state, deleted, shape = self.states[table], self.deleted[table], self.shapes[table]
        fresh = self._source_rows(table, keys)
        truncated = self.truncated[table]
        for key in keys:
            if key in fresh:
                state[key] = fresh[key]
                deleted.pop(key, None)
                truncated.discard(key)
                continue
            state.pop(key, None)
            if removed.get(key) is not None:
                deleted[key] = shape.from_journal(removed[key])
                truncated.discard(key)

    def _source_rows(self, table: str, keys: set[tuple] | None = None) -> dict[tuple, tuple]:
        shape = self.shapes[table]
        rows = self.read_rows(table, shape, keys)
        return {shape.key_of(row): row for row in rows}


def _key_in(dialect: str, key_columns: tuple[str, ...], count: int) -> str:
    """`key IN (...)`, or `(a, b) IN ((...), ...)` for a composite key."""
    if len(key_columns) == 1:
        return f"{quote(dialect, key_columns[0])} IN ({', '.join(['%s'] * count)})"
    row = "(" + ", ".join(["%s"] * len(key_columns)) + ")"
    return f"({', '.join(quote(dialect, c) for c in key_columns)}) IN ({', '.join([row] * count)})"


def read_source(settings: Settings, placement: Placement, shape: Shape, keys: set[tuple] | None = None) -> list[tuple]:
    """The source table's rows in the compared columns (all rows, or those with the given keys)."""
    sql = f"SELECT {placement.select_list(shape.source_columns)} FROM {placement.name}"
    params: tuple = ()
    if keys is not None:
        if not keys:
            return []
        sql += " WHERE " + _key_in(placement.dialect, shape.table.primary_key, len(keys))
        params = tuple(value for key in keys for value in key)
    with table_connection(settings, placement) as conn:
        with conn.cursor() as cur:
            cur.execute(sql, params)
            return [shape.from_source(row) for row in cur.fetchall()]
