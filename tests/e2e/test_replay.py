"""`sandbox replay` end to end: three changes of one row recorded from Kafka, the archive edited so that the middle
one arrives last in a micro-batch of its own, then replayed on new lakes. The built-in job, which orders a key's
versions by source position, gives what the recorded events say at every commit; a job that lets Hudi order them
by Kafka's receive time keeps the late, older change, and the replay names the commit, the event that decides the
row and the late event the batch read."""

from __future__ import annotations

import datetime as dt
import functools
import time
import uuid

import pytest
from typer.testing import CliRunner

from cdc_sandbox import cli
from cdc_sandbox.config import PACKAGE_DIR
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.running import job_adapters
from cdc_sandbox.harness.driving import scenario as scenarios
from cdc_sandbox.harness.checking.oracle import Oracle, RunStats
from cdc_sandbox.replay import bronze, edit
from cdc_sandbox.replay import run as replay_run
from cdc_sandbox.replay.archive import Range, read_archive, record
from cdc_sandbox.replay.run import replay
from cdc_sandbox.sources.changes import ChangeReader, end_offsets
from cdc_sandbox.sources.registry import RegistryClient
from cdc_sandbox.spark_jobs.lake_layout import object_keys
from tests import PROJECT_ROOT
from tests.broken_variants import VARIANTS, skip_table

pytestmark = [pytest.mark.e2e]

KEY = {"catid": 9771}
TEAM_JOB = PROJECT_ROOT / "examples" / "team_job" / "sandbox-job.yaml"


@pytest.fixture
def late_change_archive(sandbox, mutator, tmp_path):
    """An archive of three changes of one row, the middle one moved behind the last; (path, its recorded offset)."""
    topic = sandbox.topology.topic(mutator.placement("category").captured.namespace, "category")
    bootstrap, registry = sandbox.endpoint("kafka").address, RegistryClient(sandbox.registry_api_url)
    if mutator.read_row("category", KEY) is not None:
        mutator.delete("category", KEY)
    before = end_offsets(bootstrap, [topic])[topic]  # a delete above may land after it: recorded from the insert
    first = mutator.insert("category", KEY | {"catgroup": "Shows", "catname": "first", "catdesc": "replayed"})
    mutator.update("category", KEY, {"catname": "second"})
    last = mutator.update("category", KEY, {"catname": "third"})
    with ChangeReader(bootstrap, topic, registry, from_offsets=before) as reader:
        [inserted] = reader.wait_for_change(first, 60)
        [event] = reader.wait_for_change(last, 60)
    recorded_path = tmp_path / "recorded.tar.gz"
    record(bootstrap, registry, [topic], recorded_path, Range(from_offset=inserted.offset))
    recorded = read_archive(recorded_path)
    lines = recorded.messages[topic][event.partition]
    assert len(lines) == 3, "the topic holds only the test's changes from there"
    late = lines[1]["offset"]
    edited = tmp_path / "second-late.tar.gz"
    edit.write_edited(edit.move(recorded, topic, event.partition, late, after=lines[2]["offset"]), edited)
    return edited, late


def test_an_older_change_delivered_late_is_judged_by_the_recorded_events(sandbox, spark, late_change_archive,
                                                                           monkeypatch):
    path, late = late_change_archive
    passed = replay(sandbox, path, f"late-{uuid.uuid4().hex[:6]}", batch_messages=1, spark=spark)
    assert passed.passed and [table.commits for table in passed.tables] == [3]

    VARIANTS["merge-by-arrival-time"](monkeypatch)
    failed = replay(sandbox, path, f"late-{uuid.uuid4().hex[:6]}", batch_messages=1, spark=spark)
    assert not failed.passed
    problem = failed.tables[0].problems[0]
    assert "(batch 2)" in problem and "expected (9771, 'Shows', 'third'" in problem
    assert f"the batch read its events at offset {late} " in problem


def test_sandbox_replay_fails_naming_the_table_when_silver_misses_the_archives_end(sandbox, spark, late_change_archive,
                                                                                    monkeypatch):
    """`sandbox replay` (the command, in this process's Spark session) passes the built-in job, and exits 1 naming
    the table with a job that never writes the table, and with one that drops its last micro-batch (it writes each
    batch one late, so every commit it wrote is right and the last changes never land)."""
    path = late_change_archive[0].with_name("recorded.tar.gz")  # as recorded: the last change decides the row
    monkeypatch.setattr(replay_run, "replay", functools.partial(replay_run.replay, spark=spark))

    def sandbox_replay():
        return CliRunner().invoke(cli.app, ["replay", str(path), "--batch-messages", "1",
                                            "--name", f"end-{uuid.uuid4().hex[:6]}"], catch_exceptions=False)

    passed = sandbox_replay()
    assert passed.exit_code == 0 and "3 commits checked: as recorded" in passed.output, passed.output
    with monkeypatch.context() as patch:
        skip_table(patch, table="category")
        skipped = sandbox_replay()
    assert skipped.exit_code == 1, skipped.output
    assert "category: the job wrote no commit of it after reading the archive's 3 events" in skipped.output
    with monkeypatch.context() as patch:
        VARIANTS["offsets-before-silver"](patch)
        behind = sandbox_replay()
    assert behind.exit_code == 1, behind.output
    assert "WRONG" in behind.output and "category, commit " in behind.output
    assert "against the archive's end: key (9771,)" in " ".join(behind.output.split())


def test_a_replay_leaves_the_live_topics_and_lakes_alone_and_never_writes_to_a_topic_that_exists(
        sandbox, spark, s3, late_change_archive):
    """The live topics end where they ended and the lake bucket holds the same objects (the replay's lake has a bucket
    of its own); a second replay under the same name is refused, its topics holding the first one's messages."""
    path, _ = late_change_archive
    bootstrap, bucket = sandbox.endpoint("kafka").address, sandbox.topology.lake_bucket
    live_topics = sandbox.topology.topics()
    ends, objects = end_offsets(bootstrap, live_topics), set(object_keys(s3, bucket, ""))
    name = f"apart-{uuid.uuid4().hex[:6]}"
    replayed = replay(sandbox, path, name, batch_messages=1, spark=spark)
    assert replayed.passed and replayed.tables[0].commits == 3, replayed.tables[0].problems
    assert end_offsets(bootstrap, live_topics) == ends, "a replay writes to no live topic"
    assert not replayed.lake.startswith(f"s3a://{bucket}/"), "a replay's lake is in a bucket of its own"
    assert set(object_keys(s3, bucket, "")) == objects, "a replay leaves the lake bucket as it was"
    with pytest.raises(SandboxError, match=r"topic replay\.apart-\w+\.\S+ exists already"):
        replay(sandbox, path, name, spark=spark)


def test_a_scenario_recorded_and_replayed_gets_the_scenarios_verdict(request, sandbox, spark, pipeline_factory,
                                                                     mutator, tmp_path, monkeypatch):
    """A scenario whose older change arrives again after the newer one (old-event-redelivered) passes with the
    built-in job; the events it sent, recorded and replayed a message per micro-batch, pass too, and fail with the
    job that merges by arrival time, which that scenario catches (test_broken_variants_caught.py)."""
    spec = scenarios.load(PACKAGE_DIR / "fixtures" / "scenarios" / "old-event-redelivered.yaml")
    topics = [sandbox.topology.topic(mutator.placement(table).captured.namespace, table) for table in spec.tables]
    bootstrap, registry = sandbox.endpoint("kafka").address, RegistryClient(sandbox.registry_api_url)
    started_ms = int(time.time() * 1000)
    pipeline = pipeline_factory(only=spec.tables)
    oracle = Oracle(sandbox, pipeline, mutator, timeout=request.config.getoption("--oracle-timeout"), stats=RunStats())
    scenarios.run(spec, pipeline, mutator, oracle)
    path = tmp_path / "scenario.tar.gz"
    record(bootstrap, registry, topics, path, Range(from_time_ms=started_ms))
    sent = {p: lines for p, lines in read_archive(path).messages[topics[0]].items() if lines}
    assert sum(map(len, sent.values())) >= 4, "the scenario's changes"

    passed = replay(sandbox, path, f"round-{uuid.uuid4().hex[:6]}", batch_messages=1, spark=spark)
    assert passed.passed, passed.tables[0].problems
    assert passed.tables[0].commits >= 4, "a commit per recorded change of the scenario"

    from_bronze = tmp_path / "bronze.tar.gz"  # the same messages, as the scenario's job kept them in its bronze
    bronze.from_bronze(pipeline.s3, pipeline.config.bronze_path, registry, from_bronze, topics)
    kept = read_archive(from_bronze).messages[topics[0]]
    for partition, lines in sent.items():
        assert [_sent(line) for line in kept[partition] if line["offset"] >= lines[0]["offset"]] == \
            [_sent(line) for line in lines]
    replayed_bronze = replay(sandbox, from_bronze, f"bronze-{uuid.uuid4().hex[:6]}", spark=spark)
    assert replayed_bronze.passed, replayed_bronze.tables[0].problems
    assert replayed_bronze.tables[0].commits >= 1, "the bronze replay checked what the job wrote"

    VARIANTS["merge-by-arrival-time"](monkeypatch)
    failed = replay(sandbox, path, f"round-{uuid.uuid4().hex[:6]}", batch_messages=1, spark=spark)
    assert not failed.passed


def _sent(line: dict) -> tuple:
    return line["offset"], line["timestamp"], line["key"], line["value"]


def test_a_teams_job_replayed_keeps_a_late_older_change_when_it_orders_by_source_time(sandbox, spark, mutator,
                                                                                       tmp_path):
    """Two updates of a row stamped with one source time (a binlog's second), recorded and swapped so that the older
    arrives in a later micro-batch: the team's example job ordering by `source_ts_ms` lets Hudi keep the late one,
    and the replay names the event that decides the row and the late one; ordered by the source log it passes."""
    key = {"dateid": 9791}
    topic = sandbox.topology.topic(mutator.placement("date").captured.namespace, "date")
    bootstrap, registry = sandbox.endpoint("kafka").address, RegistryClient(sandbox.registry_api_url)
    if mutator.read_row("date", key) is not None:
        mutator.delete("date", key)
    before = end_offsets(bootstrap, [topic])[topic]
    mutator.source_clock = dt.datetime(2008, 9, 1, 12, 0, 0)
    try:
        mutator.insert("date", key | {"caldate": dt.date(2008, 9, 1), "day": "MO", "week": 35, "month": "SEP",
                                      "qtr": "3", "year": 2008, "holiday": False})
        mutator.update("date", key, {"week": 36})
        last = mutator.update("date", key, {"week": 37})
    finally:
        mutator.source_clock = None
    with ChangeReader(bootstrap, topic, registry, from_offsets=before) as reader:
        [event] = reader.wait_for_change(last, 60)
    recorded_path = tmp_path / "recorded.tar.gz"
    record(bootstrap, registry, [topic], recorded_path, Range(from_offset=before[event.partition]))
    lines = read_archive(recorded_path).messages[topic][event.partition]
    assert len(lines) == 3, "the topic holds only the test's changes from there"
    swapped = tmp_path / "swapped.tar.gz"
    edit.write_edited(edit.swap(read_archive(recorded_path), topic, event.partition, lines[1]["offset"],
                                lines[2]["offset"]), swapped)

    team = job_adapters.load(TEAM_JOB, {"ordering": "source_ts_ms"})
    failed = replay(sandbox, swapped, f"team-{uuid.uuid4().hex[:6]}", batch_messages=1, spark=spark,
                    job_under_test=team)
    assert not failed.passed
    problem = failed.tables[0].problems[0]
    assert "expected (9791, " in problem and f"the batch read its events at offset {lines[1]['offset']} " in problem
    assert f"offset {lines[2]['offset']}" in problem.split("The event that decides it: ")[1].split(";")[0]
    passed = replay(sandbox, swapped, f"team-{uuid.uuid4().hex[:6]}", batch_messages=1, spark=spark,
                    job_under_test=team.with_settings(ordering="source_sequence"))
    assert passed.passed, passed.tables[0].problems
    assert passed.tables[0].commits == 3
