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
from cdc_sandbox.harness import job
from cdc_sandbox.harness.lakes_for_tests import new_lake
from cdc_sandbox.harness.pipeline import Pipeline, spark_for
from cdc_sandbox.harness.silver import RustSilver, Shape, SparkSilver
from cdc_sandbox.replay.archive import Archive, decoded_events, read_archive
from cdc_sandbox.replay.fold import Event, TableState, fold
from cdc_sandbox.replay.load import load
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
           spark=None) -> ReplayVerdict:
    """Load the archive, run the job once over it (`batch_messages` per micro-batch at most), check every commit."""
    recorded = read_archive(archive_path)
    tables = recorded_tables(settings, recorded)
    loaded = load(recorded, settings.endpoint("kafka").address, settings.registry_api_url, name)
    options = {"kafka_options": {"maxOffsetsPerTrigger": str(batch_messages)}} if batch_messages else {}
    config = job.job_config(settings, lake=new_lake(settings, f"replay-{name}"), only=sorted(tables.values()),
                            **options)
    config = replace(config, tables=tuple(replace(config.spec(table), topic=loaded.topics[topic])
                                          for topic, table in tables.items()))
    pipeline = Pipeline(settings, config, spark or spark_for(settings, config), owns_session=spark is None)
    try:
        pipeline.run_once()
        verdicts = [check_table(settings, pipeline, recorded, topic, table) for topic, table in tables.items()]
    finally:
        pipeline.stop()
    return ReplayVerdict(config.lake, loaded.topics, verdicts)


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
    spec = pipeline.config.spec(table)
    events, _ = decoded_events(recorded, topic)
    verdict = TableVerdict(table, len(events))
    shape = Shape(table_schema(settings, table))
    readers = [RustSilver(pipeline.config), SparkSilver(pipeline.spark, pipeline.config)]
    for commit in [c for c in pipeline.timeline(table) if c.writes_changes]:
        read_from = pipeline.batch_start(commit.batch_id).get(spec.topic, {})
        read_until = pipeline.batch_start(commit.batch_id + 1).get(spec.topic, {})
        state = fold(delivered(events, read_until), spec.position, spec.key)
        expected = expected_rows(shape, state, pipeline.config.hard_deletes_of(spec))
        verdict.commits += 1
        for reader in readers:
            actual = reader.as_of(shape, commit)
            wrong = sorted((key for key in expected.keys() | actual.keys() if expected.get(key) != actual.get(key)
                            or (key in expected) != (key in actual)), key=str)
            if wrong:
                key = wrong[0]
                verdict.problems.append(
                    f"{table}, commit {commit.instant} (batch {commit.batch_id}), {reader.name}: key {key} "
                    f"expected {describe(expected, key)}, found {describe(actual, key)}; {len(wrong)} keys wrong. "
                    f"The event that decides it: {state.culprit(key)}; the batch read "
                    f"{batch_events(events, read_from, read_until, key)}")
        if verdict.problems:
            break  # the first wrong commit; later ones inherit its rows
    return verdict


def delivered(events: list[Event], read_until: dict[str, int]) -> list[Event]:
    """The events the job had read: those before each partition's end offset. The replay wrote each partition's
    messages in the archive's order, so a message's offset in the replay topic is its place in that order."""
    return [event for event in events if event.place < int(read_until.get(str(event.partition), 0))]


def batch_events(events: list[Event], read_from: dict[str, int], read_until: dict[str, int], key: tuple) -> str:
    """The key's events a micro-batch read, where they were recorded (the suspects when its commit is wrong)."""
    earlier = delivered(events, read_from)
    read = [event for event in delivered(events, read_until) if event not in earlier
            and event.key is not None and tuple(event.key.values()) == key]
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
