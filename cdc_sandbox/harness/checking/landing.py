"""When a round's changes have landed in silver: each change's event found in Kafka first (a job whose checkpoint
passes the event without silver reaching the change's source position fails the round at once), the keys Kafka
delivered again meanwhile (they may be rewritten unchanged), and whether changes made while the job was held reached
silver in one commit.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from cdc_sandbox.config import Settings
from cdc_sandbox.harness.checking.expected import ExpectedState
from cdc_sandbox.harness.running.timeline import Commit
from cdc_sandbox.sources.changes import ChangeReader, end_offsets
from cdc_sandbox.sources.mutations import Change
from cdc_sandbox.sources.positions import position_floor
from cdc_sandbox.sources.registry import RegistryClient

LOCATE_THREADS = 4  # tables whose events are looked for at once


class NotOneBatch(AssertionError):
    """Changes made while the job was paused did not reach silver in one micro-batch: the in-batch reduction the
    test meant to exercise was not."""


class Landing:
    """Where each awaited change's event lies in Kafka, and what the job read besides, for one oracle's tables."""

    def __init__(self, settings: Settings, pipeline, journal, expected: ExpectedState, timeout: float):
        self.settings, self.pipeline, self.journal, self.expected = settings, pipeline, journal, expected
        self.timeout = timeout
        self.registry = RegistryClient(settings.registry_api_url)
        # Every change the oracle waits for is made after this: its event lies past these offsets.
        self.kafka_floor = end_offsets(settings.endpoint("kafka").address,
                                       [spec.topic for spec in pipeline.config.tables])
        self._located: dict[int, tuple[int, int]] = {}  # journal seq -> Kafka (partition, offset) of its last event
        self.redelivered: dict[str, set[tuple]] = {}  # table -> keys with events in Kafka since its last round
        self._paused_after: dict[str, str | None] = {}  # table -> its last commit instant when the job was paused
        self._paused_from = 0  # the journal's first entry made while paused
        self._resumed: dict[str, tuple[str | None, int]] = {}  # table -> (that instant, the paused changes' target)

    def held(self) -> None:
        """The job was just paused: what each table had committed, and where the journal stood."""
        self._paused_after = {table: self.last_instant(table) for table in self.expected.shapes}
        self._paused_from = self.journal.next_seq()

    def releasing(self) -> None:
        """Before the job resumes: wait until Debezium has delivered every change made while it was held; the next
        round's `check_one_batch` asserts that each table's first new commit holds them all."""
        targets = self.wait_delivered(self._paused_from)
        self._resumed |= {table: (self._paused_after.get(table), target) for table, target in targets.items()}

    def redelivered_since_last_round(self, table: str) -> set[tuple]:
        return self.redelivered.pop(table, set())

    def wait_delivered(self, since_seq: int) -> dict[str, int]:
        changes = self.journal.since(since_seq, set(self.settings.topology.topics()))
        targets = {c.table: position_floor(c.position) for c in changes
                   if c.table in self.expected.shapes and c.debezium_ops}
        self.locate(changes, targets, time.monotonic() + self.timeout)
        return targets

    def last_instant(self, table: str) -> str | None:
        commits = self.pipeline.timeline(table)
        return commits[-1].instant if commits else None

    def check_one_batch(self, commits: dict[str, Commit]) -> None:
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

    def locate(self, changes: list[Change], targets: dict[str, int], deadline: float) -> dict[str, tuple[int, int]]:
        """The Kafka (partition, offset) of each target table's last event of the round, read from its topic; the
        pipeline's wait fails at once if the job commits past it without silver reaching the target."""
        last = {c.table: c for c in changes if c.table in targets and c.debezium_ops}
        with ThreadPoolExecutor(max(1, min(LOCATE_THREADS, len(last)))) as pool:
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
                    self.expected.key(change.table, e.key) for e in reader.events if e.key)
            self._located[change.seq] = (event.partition, event.offset)
        return (topic, *self._located[change.seq])

    def note_consumed_past(self, landmarks: dict[str, tuple[int, int]], commits: dict[str, Commit]) -> None:
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
            self.redelivered.setdefault(table, set()).update(self.expected.key(table, e.key) for e in events if e.key)

    def _first_offsets_since_last_round(self, table: str, commit: Commit, topic: str) -> dict[int, int]:
        floor = self.kafka_floor.get(topic, {})
        previous = self.expected.recorded[table][-1].commit if self.expected.recorded.get(table) else None
        if previous is None:
            return dict(floor)
        since = [c for c in self.pipeline.timeline(table) if previous.completed < c.completed <= commit.completed]
        return reread_from(floor, previous, since,
                           lambda batch: self.pipeline.batch_start(batch).get(topic, {}))


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
