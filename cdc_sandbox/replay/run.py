"""`sandbox replay`: an incident archive loaded into topics of its own (`load.py`), the built-in job run over them on
a new lake, and every commit the job wrote checked against the recorded events (`fold.py`).

A commit is checked by time travel, through Spark and through hudi-rs, against the fold of the events the job had
read when it wrote it (its micro-batch's end offsets in the checkpoint), so that an archive edited to deliver an
event late is judged by what the job could know. A wrong row is reported with the event that decided it: the topic,
partition and offset it was recorded at, its key and its source position.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.running import sandbox_job, job_adapters
from cdc_sandbox.harness.running.lakes_for_tests import new_lake
from cdc_sandbox.harness.running.pipeline import Pipeline, spark_for
from cdc_sandbox.harness.checking.silver import RustSilver, Shape, SparkSilver
from cdc_sandbox.harness.running.timeline import Commit
from cdc_sandbox.replay.archive import Archive, decoded_events, read_archive
from cdc_sandbox.replay.fold import Event, TableState, columns_of, fold
from cdc_sandbox.replay.load import Loaded, load, prepare, write
from cdc_sandbox.stack.catalog import table_schema


@dataclass
class TableVerdict:
    table: str
    events: int
    commits: int = 0
    problems: list[str] = field(default_factory=list)


@dataclass
class ReplayVerdict:
    lake: str
    topics: dict[str, str]
    tables: list[TableVerdict]

    @property
    def passed(self) -> bool:
        return not any(table.problems for table in self.tables)


def replay(settings: Settings, archive_path: Path, name: str, batch_messages: int | None = None,
           spark=None, job_under_test: job_adapters.JobUnderTest | None = None) -> ReplayVerdict:
    """Load the archive and run the job over it (`batch_messages` per micro-batch at most), checking every commit;
    the built-in job unless `job_under_test`."""
    recorded = read_archive(archive_path)
    tables = recorded_tables(settings, recorded)
    job_under_test = job_under_test or job_adapters.builtin_job()
    if job_under_test.builtin:
        return _replay_in_batches(settings, recorded, tables, name, batch_messages, spark)
    return _replay_in_steps(settings, recorded, tables, name, batch_messages, spark, job_under_test)


def _replay_in_batches(settings: Settings, recorded: Archive, tables: dict[str, str], name: str,
                       batch_messages: int | None, spark) -> ReplayVerdict:
    """The built-in job reads the whole archive, `batch_messages` per micro-batch, and records each commit's batch:
    every commit is checked against what its batch had read."""
    loaded = load(recorded, settings.endpoint("kafka").address, settings.registry_api_url, name)
    options = {"kafka_options": {"maxOffsetsPerTrigger": str(batch_messages)}} if batch_messages else {}
    pipeline = _pipeline(settings, tables, loaded, name, spark, job_adapters.builtin_job(), options)
    try:
        pipeline.run_once()
        verdicts = [check_table(settings, pipeline, recorded, topic, table) for topic, table in tables.items()]
    finally:
        pipeline.stop()
    return ReplayVerdict(pipeline.config.lake, loaded.topics, verdicts)


def _replay_in_steps(settings: Settings, recorded: Archive, tables: dict[str, str], name: str,
                     batch_messages: int | None, spark, job_under_test: job_adapters.JobUnderTest) -> ReplayVerdict:
    """A team's job records no batch in its commits: it gets the archive a step at a time, the next
    `batch_messages` messages of each partition written and the job run once over them, and each table's newest
    commit is checked against the fold of every event written so far."""
    bootstrap = settings.endpoint("kafka").address
    loaded = prepare(recorded, bootstrap, settings.registry_api_url, name)
    pipeline = _pipeline(settings, tables, loaded, name, spark, job_under_test, {})
    checks = {topic: _TableCheck(settings, pipeline, recorded, topic, table) for topic, table in tables.items()}
    written: dict[str, dict[int, int]] = {topic: {p: 0 for p in parts} for topic, parts in recorded.messages.items()}
    try:
        for until in steps(recorded, batch_messages):
            write(recorded, loaded, bootstrap, {topic: {p: (written[topic][p], end) for p, end in ends.items()}
                                                for topic, ends in until.items()})
            written = until
            pipeline.run_once()
            _expect_read(pipeline, loaded)
            for topic, check in checks.items():
                check.newest({str(p): end for p, end in until[topic].items()})
        for topic, check in checks.items():
            check.complete(archive_ends(recorded, topic))
    finally:
        pipeline.stop()
    return ReplayVerdict(pipeline.config.lake, loaded.topics, [check.verdict for check in checks.values()])


def steps(recorded: Archive, per_step: int | None) -> list[dict[str, dict[int, int]]]:
    """Where each step's writing ends, {topic: {partition: index past its last message}}: `per_step` more messages
    of each partition a step (all of them in one step when None)."""
    longest = max((len(lines) for parts in recorded.messages.values() for lines in parts.values()), default=0)
    size = per_step or max(longest, 1)
    return [{topic: {p: min(end, len(lines)) for p, lines in parts.items()}
             for topic, parts in recorded.messages.items()} for end in range(size, longest + size, size)]


def _expect_read(pipeline: Pipeline, loaded: Loaded) -> None:
    """A job that ignores the topics it is given reads the live ones, and its silver says nothing of the archive."""
    unread = sorted(set(loaded.topics.values()) - set(pipeline.consumed_offsets()))
    if unread:
        raise SandboxError(f"the job {pipeline.job.name} did not read the replay's topic {unread[0]}",
                           "have the job read the topics the sandbox gives it ({topic_<table>} in its job file, "
                           "see cdc_sandbox/harness/running/job_adapters.py)")


def _pipeline(settings: Settings, tables: dict[str, str], loaded: Loaded, name: str, spark,
              job_under_test: job_adapters.JobUnderTest, options: dict) -> Pipeline:
    """The job on a new lake, each recorded table read from its replay topic."""
    config = sandbox_job.job_config(settings, lake=new_lake(settings, f"replay-{name}"), only=sorted(tables.values()),
                            **options)
    config = replace(config, tables=tuple(replace(config.spec(table), topic=loaded.topics[topic])
                                          for topic, table in tables.items()))
    return Pipeline(settings, config, spark or spark_for(settings, config), owns_session=spark is None,
                    job=job_under_test)


def recorded_tables(settings: Settings, recorded: Archive) -> dict[str, str]:
    """recorded topic -> the project's table it carries, for the archive's topics of this project's tables."""
    topology = settings.topology
    ours = {topology.topic(captured.namespace, captured.name): captured.name for captured in topology.tables}
    found = {topic: ours[topic] for topic in recorded.messages if topic in ours}
    if not found:
        raise SandboxError(f"the archive's topics ({', '.join(sorted(recorded.messages))}) carry none of this "
                           f"project's tables", "replay it in the project whose tables it recorded")
    return found


def check_table(settings: Settings, pipeline: Pipeline, recorded: Archive, topic: str, table: str) -> TableVerdict:
    """Every commit of the table, against what its micro-batch had read (the built-in job's commits name it), then
    its newest against the whole archive."""
    check = _TableCheck(settings, pipeline, recorded, topic, table)
    for commit in [c for c in pipeline.timeline(table) if c.writes_changes]:
        check.commit(commit, pipeline.batch_start(commit.batch_id).get(check.spec.topic, {}),
                     pipeline.batch_start(commit.batch_id + 1).get(check.spec.topic, {}))
        if check.verdict.problems:
            break  # the first wrong commit; later ones inherit its rows
    check.complete(archive_ends(recorded, topic))
    return check.verdict


def archive_ends(recorded: Archive, topic: str) -> dict[str, int]:
    """Each partition's offset past its last message in the replay topic (written in the archive's order from 0)."""
    return {str(partition): len(lines) for partition, lines in recorded.messages[topic].items()}


class _TableCheck:
    """A table's commits checked through both readers against the fold of the recorded events the job had read."""

    def __init__(self, settings: Settings, pipeline: Pipeline, recorded: Archive, topic: str, table: str):
        self.pipeline, self.spec = pipeline, pipeline.config.spec(table)
        self.events, _ = decoded_events(recorded, topic)
        self.verdict = TableVerdict(table, len(self.events))
        self.shape = Shape(table_schema(settings, table))
        self.readers = [RustSilver(pipeline.config), SparkSilver(pipeline.spark, pipeline.config)]
        self.checked: set[str] = set()
        self.read_before: dict[str, int] = {}
        self.previous: tuple[Commit, dict] | None = None  # the commit checked last, and the rows expected there
        self.previous_read_until: dict[str, int] = {}  # where the events that commit was checked against end

    def newest(self, read_until: dict[str, int]) -> None:
        """The table's newest commit after a step that wrote the events before `read_until`: a new one wherever the
        step wrote events of the table."""
        commits = [c for c in self.pipeline.timeline(self.verdict.table) if c.writes_changes]
        written = [event for event in read_between(self.events, self.read_before, read_until) if event.value]
        if self.verdict.problems or not written:
            return
        if not commits or commits[-1].instant in self.checked:
            self.verdict.problems.append(
                f"{self.verdict.table}: the job wrote no commit after reading {len(written)} events of it, the last at "
                f"{written[-1].where()}")
            return
        self.commit(commits[-1], self.read_before, read_until)
        self.read_before = read_until

    def commit(self, commit: Commit, read_from: dict[str, int], read_until: dict[str, int]) -> None:
        """The commit by time travel, and what changed since the commit checked before it by an incremental read,
        through both readers."""
        state = fold(delivered(self.events, read_until), self.spec.position, self.spec.key)
        expected = expected_rows(self.shape, state, self.pipeline.config.hard_deletes_of(self.spec))
        self.checked.add(commit.instant)
        self.verdict.commits += 1
        changed, written = self._changed_since(expected, read_from, read_until) if self.previous else ({}, set())
        for reader in self.readers:
            self._judge(commit, reader, "", reader.as_of(self.shape, commit), expected, state, read_from, read_until)
            if self.previous is not None:
                self._judge(commit, reader, f" (incremental after {self.previous[0].instant})",
                            reader.changes(self.shape, self.previous[0], commit), changed, state, read_from,
                            read_until, full=expected, may=written)
        self.previous, self.previous_read_until = (commit, expected), read_until

    def complete(self, ends: dict[str, int]) -> None:
        """After the archive's last message: the table has a commit, and its newest holds the fold of every event
        the archive has of it, through both readers (a job that skips the table, or never writes its last batch,
        fails here, however right each commit it wrote was)."""
        changes = [event for event in self.events if event.value]
        if self.verdict.problems or not changes:
            return
        commits = [c for c in self.pipeline.timeline(self.verdict.table) if c.writes_changes]
        if not commits:
            self.verdict.problems.append(
                f"{self.verdict.table}: the job wrote no commit of it after reading the archive's {len(changes)} "
                f"events of it, the last at {changes[-1].where()}")
            return
        newest = commits[-1]
        if self.previous and self.previous[0].instant == newest.instant and self._reached(ends):
            return  # checked against the whole archive already
        state = fold(self.events, self.spec.position, self.spec.key)
        expected = expected_rows(self.shape, state, self.pipeline.config.hard_deletes_of(self.spec))
        self.verdict.commits += newest.instant not in self.checked
        self.checked.add(newest.instant)
        for reader in self.readers:
            self._judge(newest, reader, " against the archive's end", reader.as_of(self.shape, newest), expected,
                        state, {}, ends)

    def _reached(self, ends: dict[str, int]) -> bool:
        return all(int(self.previous_read_until.get(p, 0)) >= end for p, end in ends.items())

    def _changed_since(self, expected: dict, read_from: dict[str, int], read_until: dict[str, int]) -> tuple:
        """The rows an incremental read since the previous commit must hold (each key whose row changed: a deleted
        one as None, none for a hard delete), and the keys it may hold besides, unchanged (those the batch wrote)."""
        before = self.previous[1]
        changed = {key: expected[key] for key in expected if key not in before or before[key] != expected[key]}
        written = {key_of(event, self.spec.key) for event in read_between(self.events, read_from, read_until)}
        return changed, written - {None}

    def _judge(self, commit: Commit, reader, view: str, actual: dict, must: dict, state: TableState,
               read_from: dict[str, int], read_until: dict[str, int], full: dict | None = None,
               may: set | frozenset = frozenset()) -> None:
        """`actual` must hold every row of `must` and nothing else but rows of keys in `may`, each as `full` (the
        commit's whole expected table; `must` itself by default) has it."""
        full = must if full is None else full
        wrong = sorted((key for key in must.keys() | actual.keys()
                        if key not in actual or (key not in must and key not in may) or actual[key] != full.get(key)),
                       key=str)
        if wrong:
            key = wrong[0]
            self.verdict.problems.append(
                f"{self.verdict.table}, commit {commit.instant}{_batch_of(commit)}, {reader.name}{view}: key {key} "
                f"expected {describe(full, key)}, found {describe(actual, key)}; {len(wrong)} keys wrong. "
                f"The event that decides it: {state.culprit(key)}; the batch read "
                f"{batch_events(self.events, read_from, read_until, key, self.spec.key)}")


def _batch_of(commit: Commit) -> str:
    return f" (batch {commit.batch_id})" if commit.batch_id is not None else ""


def delivered(events: list[Event], read_until: dict[str, int]) -> list[Event]:
    """The events the job had read: those before each partition's end offset. The replay wrote each partition's
    messages in the archive's order, so a message's offset in the replay topic is its place in that order."""
    return read_between(events, {}, read_until)


def read_between(events: list[Event], read_from: dict[str, int], read_until: dict[str, int]) -> list[Event]:
    """The events a micro-batch read: from each partition's `read_from` offset up to its `read_until`."""
    def window(event: Event) -> tuple[int, int]:
        return int(read_from.get(str(event.partition), 0)), int(read_until.get(str(event.partition), 0))

    return [event for event in events if window(event)[0] <= event.place < window(event)[1]]


def key_of(event: Event, key_columns: tuple[str, ...]) -> tuple | None:
    """The key of the row an event changes, as the fold keys its rows (None for a tombstone or a truncate)."""
    if event.value is None or event.value.get("__op") == "t":
        return None
    row = columns_of(event.value)
    return tuple(row[column] for column in key_columns)


def batch_events(events: list[Event], read_from: dict[str, int], read_until: dict[str, int], key: tuple,
                 key_columns: tuple[str, ...]) -> str:
    """The key's events a micro-batch read, where they were recorded (the suspects when its commit is wrong)."""
    read = [event for event in read_between(events, read_from, read_until) if key_of(event, key_columns) == key]
    return "its events at " + ", ".join(f"offset {event.offset} (partition {event.partition})" for event in read) \
        if read else "no event of it"


def expected_rows(shape: Shape, state: TableState, hard_deletes: bool) -> dict[tuple, tuple | None]:
    """The fold as the readers give a table: {key: row in the compared columns}, a soft-deleted key None."""
    rows = {key: shape.normalize([row.get(column) for column in shape.columns]) for key, row in state.live.items()}
    if not hard_deletes:
        rows |= {key: None for key in state.deleted}
    return rows


def describe(rows: dict, key: tuple) -> str:
    if key not in rows:
        return "no row"
    return "a deleted row" if rows[key] is None else repr(rows[key])
