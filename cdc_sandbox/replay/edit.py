"""Editing an incident archive to find which of its events a job mishandles: drop a message, send one twice, move
one after another (a reorder, or a delay past later messages), then replay the edited archive.

Messages are named as Kafka names them, (topic, partition, offset). An edit keeps each message's recorded offset;
a replay writes the messages of a partition in their order in the archive and Kafka gives them new offsets, so a
moved message arrives after the one it was moved behind. A message put behind a later one (a delay, a duplicate)
takes that message's timestamp when its own is older, as a late delivery is stamped when it is sent. The manifest's
counts follow each edit, and `write_edited` writes an archive that `sandbox replay` reads like a recorded one.

    from cdc_sandbox.replay import archive, edit
    recorded = archive.read_archive(Path("incident.tar.gz"))
    edited = edit.move(recorded, "tickit.ems.category", 0, 120, after=135)   # offset 120 now arrives after 135
    edit.write_edited(edited, Path("incident-120-late.tar.gz"))
"""

from __future__ import annotations

import copy
from pathlib import Path

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.replay import archive as archives
from cdc_sandbox.replay.archive import Archive


def drop(recorded: Archive, topic: str, partition: int, offset: int) -> Archive:
    """The archive without one message."""
    edited, lines = _editable(recorded, topic, partition)
    lines.pop(_index(lines, topic, partition, offset))
    return _counted(edited)


def duplicate(recorded: Archive, topic: str, partition: int, offset: int, after: int | None = None) -> Archive:
    """The archive with one message sent a second time: right after itself, or after the message at `after`."""
    edited, lines = _editable(recorded, topic, partition)
    copy_of = dict(lines[_index(lines, topic, partition, offset)])
    _place_after(lines, copy_of, _index(lines, topic, partition, offset if after is None else after))
    return _counted(edited)


def move(recorded: Archive, topic: str, partition: int, offset: int, after: int) -> Archive:
    """The archive with one message taken out of its place and put after the message at `after` (later in the
    partition: a delay; earlier: it overtakes the messages between)."""
    edited, lines = _editable(recorded, topic, partition)
    moved = lines.pop(_index(lines, topic, partition, offset))
    _place_after(lines, moved, _index(lines, topic, partition, after))
    return _counted(edited)


def swap(recorded: Archive, topic: str, partition: int, first: int, second: int) -> Archive:
    """The archive with two messages of one partition in each other's place."""
    edited, lines = _editable(recorded, topic, partition)
    i, j = _index(lines, topic, partition, first), _index(lines, topic, partition, second)
    lines[i], lines[j] = lines[j], lines[i]
    return _counted(edited)


def write_edited(edited: Archive, out: Path) -> None:
    """Write an edited archive; the manifest notes that it was edited."""
    manifest = edited.manifest | {"edited": True}
    archives.write(out, manifest, edited.messages, edited.schemas, edited.connectors)


def _editable(recorded: Archive, topic: str, partition: int) -> tuple[Archive, list[dict]]:
    if partition not in recorded.messages.get(topic, {}):
        raise SandboxError(f"the archive holds no partition {partition} of topic {topic}",
                           f"its topics: {', '.join(sorted(recorded.messages))}")
    edited = Archive(copy.deepcopy(recorded.manifest), copy.deepcopy(recorded.messages), recorded.schemas,
                     recorded.connectors)
    return edited, edited.messages[topic][partition]


def _place_after(lines: list[dict], line: dict, index: int) -> None:
    line["timestamp"] = max(line["timestamp"], lines[index]["timestamp"])
    lines.insert(index + 1, line)


def _index(lines: list[dict], topic: str, partition: int, offset: int) -> int:
    for index, line in enumerate(lines):
        if line["offset"] == offset:
            return index
    raise SandboxError(f"the archive holds no message at {topic} partition {partition} offset {offset}",
                       "name a recorded offset (the archive's messages/<topic>/<partition>.jsonl lists them)")


def _counted(edited: Archive) -> Archive:
    for topic, partitions in edited.messages.items():
        for partition, lines in partitions.items():
            edited.manifest["topics"][topic][str(partition)]["messages"] = len(lines)
    return edited
