"""What a table must hold at a source position, from its change events alone: the oracle of a replay, where no
source database is there to read.

The events of a table are folded by key in source-position order (`cdc_sandbox.sources.positions.event_position`;
events at one position keep their order in Kafka): a create, update or snapshot read sets the key's row, a delete
leaves the key deleted with the values its event carried, a truncate deletes every live row with its last values;
what an event leaves out (Debezium's placeholder for an unchanged TOASTed value, the columns of a key-only delete) is
the key's previous value.
A key update arrives as Debezium sends it, a delete of the old key and a create of the new one. A column that
appears in a table's events (an ADD COLUMN, the first event after it) gives every live row its default, or NULL: the
source's rows took it without an event. Written apart from
the job's code, as the positions are, so that a replay does not check the job with the job's own logic.

Each key remembers the event that decided it, so a wrong row in silver is reported as that event: topic,
partition, offset, key and position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from cdc_sandbox.sources.positions import event_position

DELETE, TRUNCATE = "d", "t"
# What Debezium writes for a value an event leaves out (Postgres's unchanged TOASTed values under REPLICA IDENTITY
# DEFAULT): its `unavailable.value.placeholder`, left at its default, as text or as bytes.
LEFT_OUT = ("__debezium_unavailable_value", b"__debezium_unavailable_value")


@dataclass(frozen=True)
class Event:
    """One recorded change event: where Kafka held it, its decoded key and flattened value (None for a tombstone)."""

    topic: str
    partition: int
    offset: int
    key: dict | None
    value: dict | None
    timestamp: int = 0  # Kafka's, in milliseconds: orders a key's events across partitions at one position
    defaults: dict = field(default_factory=dict, compare=False)  # column -> DEFAULT, from the value's schema
    place: int = 0  # its place in its partition in the archive: its offset once replayed into a topic of its own

    def where(self) -> str:
        return f"{self.topic} partition {self.partition} offset {self.offset}"


@dataclass
class TableState:
    """A table folded up to a position: its live rows and deleted rows by key, and the event behind each."""

    key_columns: tuple[str, ...]
    live: dict[tuple, dict] = field(default_factory=dict)
    deleted: dict[tuple, dict] = field(default_factory=dict)
    decided_by: dict[tuple, tuple[Event, int]] = field(default_factory=dict)  # key -> (event, its position)
    position: int | None = None  # of the last event folded in
    carried: frozenset[str] | None = None  # the columns the last row event carried

    def culprit(self, key: tuple) -> str:
        """The event that decided a key, named so that a team can find it in its topics."""
        if key not in self.decided_by:
            return f"no event of key {key}"
        event, position = self.decided_by[key]
        return f"{event.where()}, key {key}, source position {position}"


def positioned(events: Iterable[Event], kind: str) -> list[tuple[int, Event]]:
    """The events that change the table (tombstones carry nothing), each with its source position, in the order
    they take effect. A Postgres incremental snapshot's read carries no LSN: it takes the highest position of the
    events before it in its partition, after all of which and before any after which Debezium sent it."""
    placed, highest = [], {}
    for event in sorted((e for e in events if e.value is not None), key=lambda e: (e.partition, e.place, e.offset)):
        position = event_position(kind, event.value)
        if position is None:
            position = highest.get(event.partition, 0)
        highest[event.partition] = max(position, highest.get(event.partition, 0))
        placed.append((position, event))
    return sorted(placed, key=lambda pair: (pair[0], pair[1].timestamp, pair[1].partition, pair[1].offset))


def fold(events: Iterable[Event], kind: str, key_columns: tuple[str, ...], until: int | None = None) -> TableState:
    """The table after every event at or before source position `until` (all of them when None). `kind` is the
    source's: "lsn", "binlog" or "sqlserver"."""
    state = TableState(tuple(key_columns))
    for position, event in positioned(events, kind):
        if until is not None and position > until:
            break
        apply(state, event, position)
    return state


def states_at(events: Iterable[Event], kind: str, key_columns: tuple[str, ...],
              positions: Iterable[int]) -> dict[int, TableState]:
    """The table at each of `positions` (a commit's highest source position, say), in one pass over the events."""
    wanted = sorted(set(positions))
    ordered = positioned(events, kind)
    state, found, next_event = TableState(tuple(key_columns)), {}, 0
    for target in wanted:
        while next_event < len(ordered) and ordered[next_event][0] <= target:
            apply(state, ordered[next_event][1], ordered[next_event][0])
            next_event += 1
        found[target] = snapshot(state)
    return found


def apply(state: TableState, event: Event, position: int) -> None:
    value = event.value
    op = value.get("__op")
    state.position = position
    if op == TRUNCATE:
        for key, row in state.live.items():
            state.deleted[key] = row
            state.decided_by[key] = (event, position)
        state.live.clear()
        return
    row = columns_of(value)
    added = set(row) - state.carried if state.carried is not None else set()
    if added:  # an ADD COLUMN: the rows the table held took its default, or NULL
        for live in state.live.values():
            live.update({column: event.defaults.get(column) for column in added})
    state.carried = frozenset(row)
    key = tuple(row[name] for name in state.key_columns)
    deleting = op == DELETE or value.get("__deleted") == "true"
    row = completed(row, state.live.get(key), state.key_columns, deleting)
    if deleting:
        state.live.pop(key, None)
        state.deleted[key] = row
    else:
        state.deleted.pop(key, None)
        state.live[key] = row
    state.decided_by[key] = (event, position)


def completed(row: dict, previous: dict | None, key_columns: tuple[str, ...], deleting: bool) -> dict:
    """The row with what its event left out taken from the key's previous one: a placeholder's value, and every
    column of a delete that carries the key alone (REPLICA IDENTITY DEFAULT)."""
    if previous is None:
        return row
    if deleting and all(value is None for column, value in row.items() if column not in key_columns):
        return {**previous, **{column: row[column] for column in key_columns}}
    return {column: previous.get(column) if value in LEFT_OUT else value for column, value in row.items()}


def columns_of(value: dict) -> dict:
    """The source's columns of a flattened value (Debezium's own fields start with `__`)."""
    return {name: item for name, item in value.items() if not name.startswith("__")}


def snapshot(state: TableState) -> TableState:
    return TableState(state.key_columns, {key: dict(row) for key, row in state.live.items()}, dict(state.deleted),
                      dict(state.decided_by), state.position, state.carried)
