"""`sandbox replay` end to end: three changes of one row recorded from Kafka, the archive edited so that the middle
one arrives last in a micro-batch of its own, then replayed on new lakes. The built-in job, which orders a key's
versions by source position, gives what the recorded events say at every commit; a job that lets Hudi order them
by Kafka's receive time keeps the late, older change, and the replay names the commit, the event that decides the
row and the late event the batch read."""

from __future__ import annotations

import uuid

import pytest

from cdc_sandbox.replay import edit
from cdc_sandbox.replay.archive import Range, read_archive, record
from cdc_sandbox.replay.run import replay
from cdc_sandbox.sources.changes import ChangeReader, end_offsets
from cdc_sandbox.sources.registry import RegistryClient
from tests.broken_variants import VARIANTS

pytestmark = [pytest.mark.e2e]

KEY = {"catid": 9771}


@pytest.fixture
def late_change_archive(sandbox, mutator, tmp_path):
    """An archive of three changes of one row, the middle one moved behind the last; (path, its recorded offset)."""
    topic = sandbox.topology.topic(mutator.placement("category").captured.namespace, "category")
    bootstrap, registry = sandbox.endpoint("kafka").address, RegistryClient(sandbox.registry_api_url)
    if mutator.read_row("category", KEY) is not None:
        mutator.delete("category", KEY)
    before = end_offsets(bootstrap, [topic])[topic]
    mutator.insert("category", KEY | {"catgroup": "Shows", "catname": "first", "catdesc": "replayed"})
    mutator.update("category", KEY, {"catname": "second"})
    last = mutator.update("category", KEY, {"catname": "third"})
    with ChangeReader(bootstrap, topic, registry, from_offsets=before) as reader:
        [event] = reader.wait_for_change(last, 60)
    recorded_path = tmp_path / "recorded.tar.gz"
    record(bootstrap, registry, [topic], recorded_path, Range(from_offset=before[event.partition]))
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
