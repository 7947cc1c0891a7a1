"""Editing an incident archive: a message dropped, sent twice, moved or swapped, the manifest's counts following,
the recorded archive left as it was, and the edited one read back like a recorded one."""

from __future__ import annotations

import pytest

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.replay import archive, edit
from cdc_sandbox.replay.archive import Archive

TOPIC = "tickit.ems.category"


def recorded() -> Archive:
    lines = [{"offset": offset, "timestamp": offset, "timestamp_type": 1, "key": None, "value": None, "headers": []}
             for offset in range(10, 15)]
    manifest = {"format": archive.FORMAT, "topics": {TOPIC: {"0": {"from_offset": 10, "messages": 5}}}}
    return Archive(manifest, {TOPIC: {0: lines}})


def offsets(edited: Archive) -> list[int]:
    return [line["offset"] for line in edited.messages[TOPIC][0]]


def test_each_edit_changes_the_order_a_replay_writes_and_the_count():
    original = recorded()
    assert offsets(edit.drop(original, TOPIC, 0, 12)) == [10, 11, 13, 14]
    assert offsets(edit.duplicate(original, TOPIC, 0, 11)) == [10, 11, 11, 12, 13, 14]
    assert offsets(edit.duplicate(original, TOPIC, 0, 11, after=14)) == [10, 11, 12, 13, 14, 11]
    assert offsets(edit.move(original, TOPIC, 0, 11, after=13)) == [10, 12, 13, 11, 14]
    assert offsets(edit.move(original, TOPIC, 0, 14, after=10)) == [10, 14, 11, 12, 13]
    assert offsets(edit.swap(original, TOPIC, 0, 10, 14)) == [14, 11, 12, 13, 10]
    assert edit.drop(original, TOPIC, 0, 12).manifest["topics"][TOPIC]["0"]["messages"] == 4
    assert offsets(original) == [10, 11, 12, 13, 14] and original.manifest["topics"][TOPIC]["0"]["messages"] == 5


def test_an_edited_archive_reads_back_like_a_recorded_one(tmp_path):
    path = tmp_path / "edited.tar.gz"
    edit.write_edited(edit.duplicate(recorded(), TOPIC, 0, 13), path)
    read = archive.read_archive(path)
    assert read.manifest["edited"] and offsets(read) == [10, 11, 12, 13, 13, 14]


def test_a_message_or_partition_the_archive_lacks_is_named():
    with pytest.raises(SandboxError, match="no message at tickit.ems.category partition 0 offset 99"):
        edit.drop(recorded(), TOPIC, 0, 99)
    with pytest.raises(SandboxError, match="no partition 3 of topic tickit.ems.category"):
        edit.move(recorded(), TOPIC, 3, 10, after=11)


def test_a_message_delivered_later_is_stamped_no_earlier_than_the_one_before_it():
    moved = edit.move(recorded(), TOPIC, 0, 11, after=13).messages[TOPIC][0]
    assert [line["timestamp"] for line in moved] == [10, 12, 13, 13, 14]
    assert edit.move(recorded(), TOPIC, 0, 14, after=10).messages[TOPIC][0][1]["timestamp"] == 14
