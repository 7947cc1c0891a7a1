"""The oracle: what the silver tables must hold after each round of source changes, checked through two readers.

A round is everything the mutation journal recorded since the previous round. The oracle waits until the pipeline
has committed each touched table up to the source position of the round's last change (it finds that change's
event in Kafka first: a job whose checkpoint passes the event without silver reaching the position fails the round
at once), reads the changed keys back from the source, and records the expected state for that commit. The round
then asserts exact typed equality, through hudi-rs, of
  - the incremental read from the previous recorded commit to this one with the rows changed in between,
  - the latest snapshot with the expected state (which is the source table's state).
`verify_history()` (which the fixtures and scenarios run at the end of every test) checks each recorded commit
through both readers, and the two readers with each other: time travel to every commit against the state recorded
for it, the latest through a snapshot read, which is also compared with a full read of the source, and the
incremental read between every two recorded commits. Spark reads only there: time travel to a commit reads what a
snapshot read when it was the latest, and an incremental range read later, with newer commits on top, also tests
that the commits' files are still there; each costs the driver that also runs the job under test about a second.
The round's reads through the reader without a JVM fail a wrong round at once, at a fraction of that cost.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from cdc_sandbox.config import Settings
from cdc_sandbox.harness.checking.silver import Rows, RustSilver, Shape, SparkSilver
from cdc_sandbox.harness.running.timeline import Commit
from cdc_sandbox.harness.checking.verdict import READ_CHECKS, Expectation, Finding, UnreadableSilver, judge
from cdc_sandbox.sources.changes import ChangeReader, end_offsets
from cdc_sandbox.sources.mutations import Change, Mutator, added_column
from cdc_sandbox.sources.positions import position_floor
from cdc_sandbox.sources.registry import RegistryClient
from cdc_sandbox.spark_jobs.failures import cause_line
from cdc_sandbox.stack.catalog import Placement, table_schema
from cdc_sandbox.stack.databases import table_connection
from cdc_sandbox.tickit_data.ddl import quote

TABLE_CHECK_THREADS = 4
HUDI_RS_ERROR = "HudiCoreError"  # what hudi-rs raises (its module does not export the class)


class NotOneBatch(AssertionError):
    """Changes made while the job was paused did not reach silver in one micro-batch: the in-batch reduction the
    test meant to exercise was not."""


@dataclass
class RunStats:
    """What the oracles of one test run checked (printed in the run's summary)."""

    tables: set[str] = field(default_factory=set)
    rounds: int = 0
    rows_compared: int = 0
    snapshots: int = 0
    time_travel_instants: set[tuple[str, str]] = field(default_factory=set)
    incremental_ranges: int = 0
    seconds_waiting: float = 0.0
    seconds_by_reader: dict[str, float] = field(default_factory=dict)


RUN_STATS = RunStats()
STATS_LOCK = threading.Lock()  # the oracle checks several tables at once


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


class _ReadOnce:
    """A read per reader, done on the first call and given again on later ones."""

    def __init__(self, read):
        self.read, self.batches = read, {}

    def __call__(self, reader):
        if reader.name not in self.batches:
            self.batches[reader.name] = self.read(reader)
        return self.batches[reader.name]


class Oracle:
    def __init__(self, settings: Settings, pipeline, mutator: Mutator, timeout: float = 240,
                 stats: RunStats = RUN_STATS):
        self.settings, self.pipeline, self.mutator, self.timeout = settings, pipeline, mutator, timeout
        self.readers = [SparkSilver(pipeline.spark, pipeline.config), RustSilver(pipeline.config)]
        self.round_reader = self.readers[1]  # reads a round; both readers do at `verify_history`
        self.stats = stats
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
        self.next_seq = mutator.journal.next_seq()
        self.registry = RegistryClient(settings.registry_api_url)
        # Every change the oracle waits for is made after this: its event lies past these offsets.
        self.kafka_floor = end_offsets(settings.endpoint("kafka").address,
                                       [spec.topic for spec in pipeline.config.tables])
        self.rounds = 0
        self._verified_after = -1  # rounds done when the history was last verified
        self._located: dict[int, tuple[int, int]] = {}  # journal seq -> Kafka (partition, offset) of its last event
        self.redelivered: dict[str, set[tuple]] = {}  # table -> keys with events in Kafka since its last round
        self._paused_after: dict[str, str | None] = {}  # table -> its last commit instant when the job was paused
        self._paused_from = 0  # the journal's first entry made while paused
        self._resumed: dict[str, tuple[str | None, int]] = {}  # table -> (that instant, the paused changes' target)

    # --- rounds --------------------------------------------------------------------------------------------
    def expect_widening(self, table: str, column) -> None:
        """A column that a later change widens to `column`'s type: a lake that saw it wide before (the topics'
        history of an earlier run) holds it wide from the moment it is added again, as Hudi never narrows."""
        self.widenings.setdefault(table, []).append(column)

    def track(self, tables: list[str], label: str = "baseline") -> dict[str, Recorded]:
        """Start following these tables: change one row of each not changed since the oracle began (so the round
        has a source position to wait for), then record and check the whole table."""
        changed = {c.table for c in self.mutator.journal.since(self.next_seq) if c.debezium_ops}
        for table in tables:
            if table not in changed:
                self.mutator.touch(table)
        new = [t for t in tables if t not in self.shapes]
        for table in new:
            self.shapes[table] = Shape(table_schema(self.settings, table))
            self.pending[table] = set()
            self.settled[table] = set()
            self.recorded[table] = []
            self.deleted[table] = {}
            self.truncated[table] = set()
        for table in new:
            self.states[table] = self._source_rows(table)
        return self.round(label)

    def round(self, label: str = "") -> dict[str, Recorded]:
        """Wait for the pipeline to reach the journal's latest changes, record the expected state, check it."""
        changes = self._new_changes()
        label = label or f"round {self.rounds + 1}"
        targets = self._apply(changes)
        started = time.monotonic()
        landmarks = self._locate(changes, targets, started + self.timeout)
        commits = self.pipeline.wait_for_positions(targets, max(1.0, started + self.timeout - time.monotonic()),
                                                   landmarks)
        with STATS_LOCK:
            self.stats.seconds_waiting += time.monotonic() - started
        self._note_consumed_past(landmarks, commits)
        self._check_one_batch(commits)
        recorded = {table: self._record(table, label, commit) for table, commit in commits.items()}
        _each_table(self._check_round, list(recorded.values()), size=lambda entry: len(entry.state))
        with STATS_LOCK:
            self.stats.rounds += 1
        self.rounds += 1
        return recorded

    # --- changes that reach the job together ---------------------------------------------------------------
    def pause(self) -> None:
        """Hold the job: the changes made until `resume` reach it in one micro-batch."""
        self.pipeline.pause()
        self._paused_after = {table: self._last_instant(table) for table in self.shapes}
        self._paused_from = self.mutator.journal.next_seq()

    def resume(self) -> None:
        """Wait until Debezium has delivered every change made while paused, then let the job go on (a job run a
        batch at a time runs once now). The next round asserts that each table's first new commit holds all of
        its paused changes (`NotOneBatch` otherwise)."""
        targets = self._wait_delivered(self._paused_from)
        self.pipeline.resume()
        if self.pipeline.query is None and self.pipeline.drives_job:
            self.pipeline.run_once()
        self._resumed |= {table: (self._paused_after.get(table), target) for table, target in targets.items()}

    def wait_delivered(self) -> None:
        """Wait until Debezium has delivered every change journaled since the last round (each tracked table's last
        one is found in Kafka; a topic holds a table's changes in source order, so the earlier ones are there too)."""
        self._wait_delivered(self.next_seq)

    def _wait_delivered(self, since_seq: int) -> dict[str, int]:
        changes = self.mutator.journal.since(since_seq)
        targets = {c.table: position_floor(c.position) for c in changes if c.table in self.shapes and c.debezium_ops}
        self._locate(changes, targets, time.monotonic() + self.timeout)
        return targets

    def _last_instant(self, table: str) -> str | None:
        commits = self.pipeline.timeline(table)
        return commits[-1].instant if commits else None

    def _check_one_batch(self, commits: dict[str, Commit]) -> None:
        for table in [t for t in commits if t in self._resumed]:
            before, target = self._resumed.pop(table)
            later = [c for c in self.pipeline.timeline(table) if before is None or c.instant > before]
            if self.pipeline.job.records_positions:
                split = _split_by_position(later, target)
            else:
                split = _split_by_commit(later, commits[table])
            if split:
                raise NotOneBatch(f"{table}: the changes made while the job was paused (up to source position "
                                  f"{target}) did not land in one commit; the first commit after the pause {split}")

    def verify_history(self) -> dict[str, dict[str, list]]:
        """Time travel to every recorded commit and the incremental reads between them; the latest snapshot
        against a full read of the source. Nothing to repeat if no round ran since the last verification.
        Returns each table's latest snapshot as each reader read it ({table: {reader name: Arrow batches}}; {} when
        nothing was verified), for a test's own checks of the whole table."""
        if self._verified_after == self.rounds:
            return {}
        snapshots = _each_table(self._verify_table, list(self.recorded.values()), size=_history_size)
        self._verified_after = self.rounds
        return {entries[-1].table: batches for entries, batches in zip(self.recorded.values(), snapshots)}

    def verify_and_forget(self, tables: list[str]) -> None:
        """Verify these tables' history, then keep only each one's latest recorded commit (where the next round's
        incremental check starts): a long run of examples costs, in time and memory, one example at a time."""
        _each_table(self._verify_table, [self.recorded[table] for table in tables if self.recorded[table]],
                    size=_history_size)
        for table in tables:
            del self.recorded[table][:-1]

    def _verify_table(self, entries: list[Recorded]) -> dict[str, list]:
        latest = entries[-1]
        # While the latest recorded commit is the table's newest, a snapshot read holds it: one read serves that
        # commit's check and the comparison with the source.
        snapshot = _ReadOnce(lambda r: r.snapshot_batches(latest.shape))
        latest_is_newest = self._last_instant(latest.table) == latest.commit.instant
        with ThreadPoolExecutor(1) as beside:  # the source's full read (seconds for a large table) meanwhile
            source_rows = beside.submit(read_source, self.settings, self.mutator.placement(latest.table), latest.shape)
            for previous, entry in zip([None, *entries], entries):
                if entry is latest and latest_is_newest:
                    self._check("snapshot", entry, snapshot, entry.state)
                else:
                    self._check("time travel", entry, lambda r, e=entry: r.as_of_batches(e.shape, e.commit),
                                entry.state)
                if previous is not None:
                    self._check_changes(previous, entry)
            source = {latest.shape.key_of(row): row for row in source_rows.result()}
        agrees = latest.shape.without_dropped(source) == latest.shape.without_dropped(latest.state)
        self._check("snapshot vs source", latest, snapshot, latest.state if agrees else source)
        return snapshot.batches

    # --- the expected state --------------------------------------------------------------------------------
    def _new_changes(self) -> list[Change]:
        changes = self.mutator.journal.since(self.next_seq)
        if changes:
            self.next_seq = changes[-1].seq + 1
        return changes

    def _apply(self, changes: list[Change]) -> dict[str, int]:
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
                    removed.setdefault(change.table, {})[self._key(change.table, change.key)] = change.before
                    written.setdefault(change.table, {})[self._key(change.table, change.key)] = None
                for key in (change.key, change.new_key):
                    if key:
                        self.pending[change.table].add(self._key(change.table, key))
                if change.kind != "delete":
                    key = self._key(change.table, change.new_key or change.key)
                    written.setdefault(change.table, {})[key] = change.values
                    held.get(change.table, {}).pop(key, None)  # its event came after the drop: NULL there
        for table, keys in self.pending.items():
            if keys and table in targets:
                self._refresh(table, keys, removed.get(table, {}))
        for table, rows in held.items():
            self._keep_dropped(table, rows)
        return targets

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

    def _key(self, table: str, key: dict) -> tuple:
        """A key as the journal or an event gives it (a decimal as text, say), in the compared types."""
        shape = self.shapes[table]
        return shape.key_of(shape.from_journal(key))

    def _locate(self, changes: list[Change], targets: dict[str, int], deadline: float) -> dict[str, tuple[int, int]]:
        """The Kafka (partition, offset) of each target table's last event of the round, read from its topic; the
        pipeline's wait fails at once if the job commits past it without silver reaching the target."""
        last = {c.table: c for c in changes if c.table in targets and c.debezium_ops}
        with ThreadPoolExecutor(max(1, min(TABLE_CHECK_THREADS, len(last)))) as pool:
            found = dict(zip(last, pool.map(lambda change: self._find_event(change, deadline), last.values())))
        for table, (topic, partition, offset) in found.items():
            self.kafka_floor.setdefault(topic, {})[partition] = max(offset + 1,
                                                                    self.kafka_floor[topic].get(partition, 0))
        return {table: (partition, offset) for table, (_, partition, offset) in found.items()}

    def _find_event(self, change: Change, deadline: float) -> tuple[str, int, int]:
        """The topic, partition and offset of the change's last event (remembered: found once per change)."""
        topic = self.pipeline.config.spec(change.table).topic
        if change.seq not in self._located:  # else found when the job resumed
            op = change.debezium_ops[-1]
            with ChangeReader(self.settings.endpoint("kafka").address, topic, self.registry,
                              from_offsets=self.kafka_floor.get(topic)) as reader:
                event = reader.wait_for(lambda e: e.value is not None and change.produced_by(e.value, e.key, op),
                                        max(1.0, deadline - time.monotonic()),
                                        f"{op!r} of journal entry {change.seq} ({change.kind} {change.key})")
                self.redelivered.setdefault(change.table, set()).update(
                    self._key(change.table, e.key) for e in reader.events if e.key)
            self._located[change.seq] = (event.partition, event.offset)
        return (topic, *self._located[change.seq])

    def _note_consumed_past(self, landmarks: dict[str, tuple[int, int]], commits: dict[str, Commit]) -> None:
        """Keys the job may have written again since a table's previous round without a change in the source: those
        of events read past the round's last change (the next round's changes are not made yet: Kafka delivering
        earlier changes again, e.g. Debezium re-sending after a crash), and of every event of a micro-batch that
        Spark ran again after a restart (its range begins before this round's changes, and its commit rewrites
        those keys with the values they had). They count as re-delivered."""
        consumed = self.pipeline.planned_offsets() if landmarks else {}
        for table in landmarks:
            topic = self.pipeline.config.spec(table).topic
            start = self._first_offsets_since_last_round(table, commits[table], topic)
            ends = {int(p): end for p, end in consumed.get(topic, {}).items() if end > start.get(int(p), 0)}
            if not ends:
                continue
            with ChangeReader(self.settings.endpoint("kafka").address, topic, self.registry,
                              from_offsets=start) as reader:
                events = reader.read_to_end(self.timeout, ends)
            self.redelivered.setdefault(table, set()).update(self._key(table, e.key) for e in events if e.key)

    def _first_offsets_since_last_round(self, table: str, commit: Commit, topic: str) -> dict[int, int]:
        floor = self.kafka_floor.get(topic, {})
        previous = self.recorded[table][-1].commit if self.recorded.get(table) else None
        if previous is None:
            return dict(floor)
        since = [c for c in self.pipeline.timeline(table) if previous.completed < c.completed <= commit.completed]
        return reread_from(floor, previous, since,
                           lambda batch: self.pipeline.batch_start(batch).get(topic, {}))

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
        placement = self.mutator.placement(table)
        rows = read_source(self.settings, placement, shape, keys)
        return {shape.key_of(row): row for row in rows}

    def _record(self, table: str, label: str, commit: Commit) -> Recorded:
        changed = self.pending[table] | self.settled[table]
        entry = Recorded(table, label, commit, self.shapes[table], dict(self.states[table]), changed,
                         dict(self.deleted[table]), set(self.truncated[table]),
                         self.redelivered.pop(table, set()) - changed)
        self.pending[table], self.settled[table] = set(), set()
        self.recorded[table].append(entry)
        self.stats.tables.add(table)
        return entry

    # --- the checks ----------------------------------------------------------------------------------------
    def _check_round(self, entry: Recorded) -> None:
        self._check("snapshot", entry, lambda r: r.snapshot_batches(entry.shape), entry.state,
                    readers=[self.round_reader])
        entries = self.recorded[entry.table]
        if len(entries) > 1:
            self._check_changes(entries[-2], entry, readers=[self.round_reader])

    def _check_changes(self, previous: Recorded, entry: Recorded, readers: list | None = None) -> None:
        shape = entry.shape
        expected = {key: entry.state.get(key) for key in entry.changed}
        if self.hard_deletes(entry.table):
            expected = {key: row for key, row in expected.items() if row is not None}
        unchanged = {key: entry.state.get(key) for key in entry.redelivered}
        self._check(f"incremental after {previous.commit.instant}", entry,
                    lambda r: r.changes_batches(shape, previous.commit, entry.commit), expected, live_only=False,
                    unchanged=unchanged, readers=readers)
        with STATS_LOCK:
            self.stats.incremental_ranges += 1

    def _check(self, what: str, entry: Recorded, read, expected: Rows, live_only: bool = True,
               unchanged: Rows | None = None, readers: list | None = None) -> None:
        """`read(reader)` gives the reader's Arrow batches (of each of `readers`, all by default); `verdict.judge`
        decides. `unchanged` rows (keys Kafka re-delivered) are allowed in the read besides `expected`, with these
        values."""
        batches_by_reader = {}
        readers = readers or self.readers
        with ThreadPoolExecutor(len(readers)) as pool:  # Spark works in its JVM meanwhile
            reads = {reader.name: pool.submit(_timed, read, reader) for reader in readers}
            for name, future in reads.items():
                batches_by_reader[name], seconds = _read_or_name_why(future, self._where(what, entry), name,
                                                                     entry.table)
                self._count_read(name, seconds, len(expected))
        with STATS_LOCK:
            if what.startswith("time travel"):
                self.stats.time_travel_instants.add((entry.table, entry.commit.instant))
            elif what.startswith("snapshot"):
                self.stats.snapshots += 1
        expectation = Expectation(entry.shape, expected, self.mutator.placement(entry.table).dialect,
                                  deleted=entry.deleted, truncated=entry.truncated, live_keys=entry.state.keys(),
                                  live_only=live_only,
                                  unchanged=unchanged or {}, hard_deletes=self.hard_deletes(entry.table),
                                  arrow_tables=entry.arrow_tables if expected is entry.state else {})
        judge(self._where(what, entry), expectation, batches_by_reader,
              on_rows_built=lambda name, seconds: self._count_read(name, seconds, 0),
              check=next(check for check in READ_CHECKS if what.startswith(check)))

    def hard_deletes(self, table: str) -> bool:
        """Whether the job drops deleted rows of this table (its own setting, else the job's)."""
        config = self.pipeline.config
        return config.hard_deletes_of(config.spec(table))

    def _where(self, what: str, entry: Recorded) -> str:
        position = entry.commit.max_source_position
        reached = "a job that records no source position" if position is None else f"source position {position}"
        return (f"silver {entry.table} in {self.pipeline.config.lake}, {what}, commit {entry.commit.instant} "
                f"(round {entry.label!r}, {reached}):\n")

    def _count_read(self, reader: str, seconds: float, rows: int) -> None:
        with STATS_LOCK:
            self.stats.seconds_by_reader[reader] = self.stats.seconds_by_reader.get(reader, 0.0) + seconds
            self.stats.rows_compared += rows


def _split_by_position(later: list[Commit], target: int) -> str | None:
    """Why the first commit since a pause that holds source positions does not hold all of its changes (None: it
    does)."""
    first = next((c for c in later if c.max_source_position is not None), None)
    if first is None:
        return "(none) reached -"
    return f"{first.instant} reached {first.max_source_position}" if first.max_source_position < target else None


def _split_by_commit(later: list[Commit], awaited: Commit) -> str | None:
    """For a job that records no positions: why the first commit since a pause that writes changes is not the one
    the round waited for (None: it is)."""
    first = next((c for c in later if c.writes_changes), None)
    if first is not None and first.instant == awaited.instant:
        return None
    return f"{first.instant if first else '(none)'} is not the commit that holds them, {awaited.instant}"


def _each_table(check, entries: list, size) -> list:
    """`check(entry)` for every table's entry, several tables at once: a table's checks alternate between Spark jobs
    in the driver, hudi-rs scans in this process and S3 requests, so tables side by side keep both cores busy. The
    entries of largest `size` start first, so that the last check to end is not a large table's begun late. Returns
    the checks' results in the entries' order; the first table's failure, in that order, is raised."""
    order = sorted(range(len(entries)), key=lambda i: -size(entries[i]))
    with ThreadPoolExecutor(max(1, min(TABLE_CHECK_THREADS, len(entries)))) as pool:
        started = {i: pool.submit(check, entries[i]) for i in order}
        return [started[i].result() for i in range(len(entries))]


def _history_size(entries: list[Recorded]) -> int:
    """Rows a table's history check reads: its recorded states'."""
    return sum(len(entry.state) for entry in entries)


def _read_or_name_why(future, where: str, reader: str, table: str):
    """A reader's result; its failure (an error of Spark, py4j or hudi-rs) as `UnreadableSilver`, in one line."""
    try:
        return future.result()
    except Exception as exc:
        if not _from_a_reader(exc):
            raise  # the harness's own
        raise UnreadableSilver(f"{where}{reader} cannot read it: {cause_line(exc)}",
                               Finding("unreadable", table)) from exc


def _from_a_reader(exc: Exception) -> bool:
    """Whether Spark (through py4j) or hudi-rs raised it. By name: the pytest plugin loads this module, and must
    not import Spark (or py4j) where a suite uses no Spark."""
    return any(kind.__module__.split(".")[0] in ("py4j", "pyspark") for kind in type(exc).__mro__) \
        or type(exc).__name__ == HUDI_RS_ERROR


def _timed(work, arg):
    started = time.monotonic()
    result = work(arg)
    return result, time.monotonic() - started


def reread_from(floor: dict[int, int], previous: Commit, since: list[Commit], batch_start) -> dict[int, int]:
    """Where, per partition, the events lie that the commits `since` the previous round's commit may hold: past the
    round's Kafka `floor`, or from the start of the micro-batch that wrote `previous` if Spark ran it again
    (`batch_start(batch)` gives a batch's first offsets). Commits without a batch id (another job) keep the floor."""
    batches = [c.batch_id for c in since if c.batch_id is not None]
    if previous.batch_id is None or not batches or min(batches) > previous.batch_id:
        return dict(floor)
    start = dict(floor)
    for partition, offset in batch_start(min(batches)).items():
        start[int(partition)] = min(offset, start.get(int(partition), offset))
    return start


def _key_in(dialect: str, key_columns: tuple[str, ...], count: int) -> str:
    """`key IN (...)`, or `(a, b) IN ((...), ...)` for a composite key."""
    if len(key_columns) == 1:
        return f"{quote(dialect, key_columns[0])} IN ({', '.join(['%s'] * count)})"
    row = "(" + ", ".join(["%s"] * len(key_columns)) + ")"
    return f"({', '.join(quote(dialect, c) for c in key_columns)}) IN ({', '.join([row] * count)})"


def read_source(settings: Settings, placement: Placement, shape: Shape, keys: set[tuple] | None = None) -> list[tuple]:
    """The source table's rows in the compared columns (all rows, or those with the given keys)."""
    columns = ", ".join(quote(placement.dialect, c) for c in shape.source_columns)
    sql = f"SELECT {columns} FROM {placement.name}"
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
