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
that the commits' files are still there; each is a Spark job in the driver that also runs the job under test.
The round's reads through the reader without a JVM fail a wrong round at once, at a fraction of that cost.

The expected state is `expected.ExpectedState`'s; when a round has landed, `landing.Landing`'s to find; this module
runs the rounds and the checks.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.checking.expected import ExpectedState, Recorded, read_source
from cdc_sandbox.harness.checking.landing import Landing
from cdc_sandbox.harness.checking.silver import Rows, RustSilver, Shape, SparkSilver
from cdc_sandbox.harness.checking.verdict import READ_CHECKS, Expectation, Finding, OracleMismatch, UnreadableSilver
from cdc_sandbox.harness.checking.verdict import judge
from cdc_sandbox.harness.running.timeline import Commit
from cdc_sandbox.sources.mutations import Mutator
from cdc_sandbox.spark_jobs.failures import cause_line
from cdc_sandbox.stack.catalog import table_schema

TABLE_CHECK_THREADS = 4
HUDI_RS_ERROR = "HudiCoreError"  # what hudi-rs raises (its module does not export the class)


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
    rows_by_reader: dict[str, int] = field(default_factory=dict)


RUN_STATS = RunStats()
STATS_LOCK = threading.Lock()  # the oracle checks several tables at once


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
        self.expected = ExpectedState(lambda table, shape, keys: read_source(settings, mutator.placement(table), shape,
                                                                            keys))
        self.topics = set(settings.topology.topics())  # the journal's entries of this project's tables
        self.landing = Landing(settings, pipeline, mutator.journal, self.expected, timeout)
        self.next_seq = mutator.journal.next_seq()
        self.rounds = 0
        self._verified_after = -1  # rounds done when the history was last verified

    @property
    def registry(self):
        """The schema registry's client the oracle reads change events with (scenario steps read through it too)."""
        return self.landing.registry

    @property
    def recorded(self) -> dict[str, list[Recorded]]:
        """Each followed table's recorded commits with their expected states, oldest first."""
        return self.expected.recorded

    def expect_widening(self, table: str, column) -> None:
        self.expected.expect_widening(table, column)

    # --- rounds --------------------------------------------------------------------------------------------
    def track(self, tables: list[str], label: str = "baseline") -> dict[str, Recorded]:
        """Start following these tables: change one row of each not changed since the oracle began (so the round
        has a source position to wait for), then record and check the whole table."""
        changed = {c.table for c in self.mutator.journal.since(self.next_seq, self.topics) if c.debezium_ops}
        for table in tables:
            if table not in changed:
                self.mutator.touch(table)
        for table in [t for t in tables if t not in self.expected.shapes]:
            self.expected.follow(table, Shape(table_schema(self.settings, table)))
        return self.round(label)

    def round(self, label: str = "") -> dict[str, Recorded]:
        """Wait for the pipeline to reach the journal's latest changes, record the expected state, check it."""
        changes = self.mutator.journal.since(self.next_seq, self.topics)
        self.next_seq = changes[-1].seq + 1 if changes else self.next_seq
        label = label or f"round {self.rounds + 1}"
        targets = self.expected.apply(changes)
        started = time.monotonic()
        landmarks = self.landing.locate(changes, targets, started + self.timeout)
        commits = self.pipeline.wait_for_positions(targets, max(1.0, started + self.timeout - time.monotonic()),
                                                   landmarks)
        for table in self.expected.changed_by_triggers:
            commits[table] = self._wait_for_trigger_writes(table, label, started + self.timeout)
        with STATS_LOCK:
            self.stats.seconds_waiting += time.monotonic() - started
        self.landing.note_consumed_past(landmarks, commits)
        self.landing.check_one_batch(commits)
        recorded = {table: self.expected.record(table, label, commit, self.landing.redelivered_since_last_round(table))
                    for table, commit in commits.items()}
        self.stats.tables.update(recorded)
        _each_table(self._check_round, list(recorded.values()), size=lambda entry: len(entry.state))
        with STATS_LOCK:
            self.stats.rounds += 1
        self.rounds += 1
        return recorded

    def _wait_for_trigger_writes(self, table: str, label: str, deadline: float) -> Commit:
        """A commit of the table, once the round's positions are reached, that holds what the source's triggers
        wrote (no journaled position says where it lands): the table's latest commit that writes changes is read by
        time travel and compared with the expected state, each new one as it comes; out of time, the last
        comparison's findings fail the round."""
        mismatch: OracleMismatch | None = None
        tried: set[str] = set()
        while not tried or time.monotonic() < deadline:
            self.pipeline.go_on()
            commits = [c for c in self.pipeline.timeline(table) if c.writes_changes]
            if commits and commits[-1].instant not in tried:
                candidate = self.expected.provisional(table, label, commits[-1])
                tried.add(candidate.commit.instant)
                try:
                    self._check("time travel", candidate, lambda r: r.as_of_batches(candidate.shape, candidate.commit),
                                candidate.state, readers=[self.round_reader])
                    return candidate.commit
                except OracleMismatch as found:
                    mismatch = found
            elif time.monotonic() >= deadline:
                break
            time.sleep(0.5)
        if mismatch is not None:
            raise mismatch
        raise SandboxError(f"timed out waiting for silver {table} to hold the rows the source's triggers wrote: it has "
                           "no commit since", "the job may be skipping the table; see its batch summaries")

    # --- changes that reach the job together ---------------------------------------------------------------
    def pause(self) -> None:
        """Hold the job: the changes made until `resume` reach it in one micro-batch."""
        self.pipeline.pause()
        self.landing.held()

    def resume(self) -> None:
        """Wait until Debezium has delivered every change made while paused, then let the job go on (a job run a
        batch at a time runs once now). The next round asserts that each table's first new commit holds all of
        its paused changes (`NotOneBatch` otherwise)."""
        self.landing.releasing()
        self.pipeline.resume()
        if self.pipeline.query is None and self.pipeline.drives_job:
            self.pipeline.run_once()

    def wait_delivered(self) -> None:
        """Wait until Debezium has delivered every change journaled since the last round (each tracked table's last
        one is found in Kafka; a topic holds a table's changes in source order, so the earlier ones are there too)."""
        self.landing.wait_delivered(self.next_seq)

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
        latest_is_newest = self.landing.last_instant(latest.table) == latest.commit.instant
        with ThreadPoolExecutor(1) as beside:  # the source's full read (seconds for a large table) meanwhile
            source_rows = beside.submit(self.expected.read_rows, latest.table, latest.shape, None)
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
            self.stats.rows_by_reader[reader] = self.stats.rows_by_reader.get(reader, 0) + rows


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

