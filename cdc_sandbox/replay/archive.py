"""The incident archive: a team's change stream around an incident, in one file that `sandbox replay` loads again.

`record` reads chosen topics of a Kafka cluster over an offset or time range and writes a gzip-compressed tar:

    manifest.json                         format, when and where it was recorded, and for each topic its partitions
                                          with the first offset and the count of messages recorded from each
    messages/<topic>/<partition>.jsonl    one message per line, in the partition's order: offset, timestamp and its
                                          type, key and value as base64 (null for none), headers as [name, base64]
    schemas/<global id>.avsc              every schema a recorded key or value names (Apicurio framing: magic byte 0,
                                          the 8-byte global id), as the registry served it
    connectors/<name>.json                the configuration of each connector the Kafka Connect cluster runs

A message that is not Apicurio-framed Avro (the JSON converter's, say) is recorded as it is, with no schema.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import fastavro
from confluent_kafka import Consumer, KafkaError, TopicPartition

from cdc_sandbox import kafka_clients
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.replay.fold import Event
from cdc_sandbox.sources.changes import close_soon, flattened, with_epoch_types
from cdc_sandbox.sources.registry import RegistryClient, WireFormatError, frame_global_id, read_framed
from cdc_sandbox.spark_jobs.avro_schema import column_defaults, epoch_fields

FORMAT = 1
MANIFEST = "manifest.json"
POLL_SECONDS = 5.0  # a partition that yields nothing for this long before its recorded end has stalled


@dataclass
class Range:
    """Where to start reading each partition: an offset, a time (milliseconds since the epoch), or its start."""

    from_offset: int | None = None
    from_time_ms: int | None = None


@dataclass
class Archive:
    manifest: dict
    messages: dict[str, dict[int, list[dict]]]  # topic -> partition -> messages in order
    schemas: dict[int, str] = field(default_factory=dict)  # global id -> schema text
    connectors: dict[str, dict] = field(default_factory=dict)


def record(bootstrap: str, registry: RegistryClient, topics: list[str], out: Path, start: Range = Range(),
           connectors: dict[str, dict] | None = None) -> dict:
    """Record every message of `topics` from `start` up to each partition's end as it is now into `out`; returns
    the manifest. Messages go to disk as they are read: a recording holds in memory only the schema ids it saw."""
    consumer = kafka_clients.consumer(bootstrap, "record")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        try:
            ranges = {topic: _partition_ranges(consumer, topic, start) for topic in topics}
            counts, ids = {}, set()
            for topic in topics:
                counts[topic] = _read(consumer, topic, ranges[topic], root / "messages" / topic, ids)
        finally:
            close_soon(consumer)
        schemas = {global_id: registry.schema_by_global_id(global_id) for global_id in sorted(ids)}
        manifest = {"format": FORMAT, "recorded_at": dt.datetime.now(dt.timezone.utc).isoformat(),
                    "bootstrap": bootstrap, "registry": registry.api_url,
                    "topics": {topic: {str(p): {"from_offset": first, "messages": counts[topic][p]}
                                       for p, (first, _) in ranges[topic].items()} for topic in topics},
                    "schemas": sorted(schemas), "connectors": sorted(connectors or {})}
        _write_rest(root, manifest, schemas, connectors or {})
        _pack(root, out)
    return manifest


def _partition_ranges(consumer: Consumer, topic: str, start: Range) -> dict[int, tuple[int, int]]:
    """partition -> (first offset to record, end offset now)."""
    metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
    if metadata is None or metadata.error is not None or not metadata.partitions:
        raise SandboxError(f"topic {topic} does not exist", "name a topic `sandbox status` lists, or its table's")
    ranges = {}
    for partition in sorted(metadata.partitions):
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        first = low
        if start.from_offset is not None:
            first = max(low, start.from_offset)
        elif start.from_time_ms is not None:
            found = consumer.offsets_for_times([TopicPartition(topic, partition, start.from_time_ms)], timeout=10)
            first = high if found[0].offset < 0 else max(low, found[0].offset)
        ranges[partition] = (min(first, high), high)
    return ranges


def _read(consumer: Consumer, topic: str, ranges: dict[int, tuple[int, int]], folder: Path,
          ids: set[int]) -> dict[int, int]:
    """Write each partition's messages in the range to `folder/<partition>.jsonl`, adding the schema ids they name
    to `ids`; returns the count per partition."""
    folder.mkdir(parents=True)
    files = {partition: (folder / f"{partition}.jsonl").open("w") for partition in ranges}
    counts = {partition: 0 for partition in ranges}
    remaining = {partition: end for partition, (first, end) in ranges.items() if first < end}
    try:
        consumer.assign([TopicPartition(topic, partition, ranges[partition][0]) for partition in remaining])
        while remaining:
            message = consumer.poll(POLL_SECONDS)
            if message is None:
                raise SandboxError(f"reading {topic} stalled before the end it had when recording began",
                                   "check the Kafka cluster (`sandbox status`) and record again")
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise SandboxError(f"reading {topic}: {message.error()}", "check the Kafka cluster and record again")
            partition = message.partition()
            if partition not in remaining or message.offset() >= remaining[partition]:
                continue
            line = _as_line(message)
            files[partition].write(json.dumps(line) + "\n")
            counts[partition] += 1
            ids |= named_id(message.key()) | named_id(message.value())
            if message.offset() + 1 >= remaining[partition]:
                del remaining[partition]
    finally:
        for file in files.values():
            file.close()
    return counts


def _as_line(message) -> dict:
    timestamp_type, timestamp = message.timestamp()
    return {"offset": message.offset(), "timestamp": timestamp, "timestamp_type": timestamp_type,
            "key": as_base64(message.key()), "value": as_base64(message.value()),
            "headers": [[name, as_base64(value)] for name, value in (message.headers() or [])]}


def as_base64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def schema_ids(messages: dict[str, dict[int, list[dict]]]) -> set[int]:
    """The global ids the recorded keys and values name (messages that are not Apicurio-framed name none)."""
    return {global_id for partitions in messages.values() for lines in partitions.values() for line in lines
            for part in (line["key"], line["value"]) if part is not None
            for global_id in named_id(base64.b64decode(part))}


def named_id(payload: bytes | None) -> set[int]:
    """The global id an Apicurio-framed key or value names, as a set of one (of none, for other bytes)."""
    if payload is None:
        return set()
    try:
        return {frame_global_id(payload)}
    except WireFormatError:
        return set()


def write(out: Path, manifest: dict, messages: dict, schemas: dict[int, str], connectors: dict[str, dict]) -> None:
    """An archive of messages held in memory (an edited one, say), as `record` writes one."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for topic, partitions in messages.items():
            folder = root / "messages" / topic
            folder.mkdir(parents=True)
            for partition, lines in partitions.items():
                (folder / f"{partition}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        _write_rest(root, manifest, schemas, connectors)
        _pack(root, out)


def _write_rest(root: Path, manifest: dict, schemas: dict[int, str], connectors: dict[str, dict]) -> None:
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2))
    (root / "schemas").mkdir()
    for global_id, text in schemas.items():
        (root / "schemas" / f"{global_id}.avsc").write_text(text)
    (root / "connectors").mkdir()
    for name, config in connectors.items():
        (root / "connectors" / f"{name}.json").write_text(json.dumps(config, indent=2))


def _pack(root: Path, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with tarfile.open(partial, "w:gz") as tar:
        for path in sorted(root.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(root)), recursive=False)
    partial.replace(out)  # a recording cut short leaves no file that looks whole


def read_archive(path: Path) -> Archive:
    """An archive as `record` wrote it; an unreadable, cut-short or inconsistent one is refused with what is wrong."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            files = {member.name: tar.extractfile(member).read() for member in tar.getmembers() if member.isfile()}
    except (OSError, EOFError, tarfile.TarError) as exc:
        raise SandboxError(f"{path} is not a whole incident archive ({exc})",
                           "record it again with `sandbox record`, or copy the whole file") from exc
    if MANIFEST not in files:
        raise SandboxError(f"{path} has no {MANIFEST}: not an incident archive", "record one with `sandbox record`")
    manifest = json.loads(files[MANIFEST])
    if manifest.get("format") != FORMAT:
        raise SandboxError(f"{path} is an archive of format {manifest.get('format')!r}; this sandbox reads {FORMAT}",
                           "record it again with this sandbox's `sandbox record`")
    messages = {}
    for topic, partitions in manifest["topics"].items():
        messages[topic] = {}
        for partition, described in partitions.items():
            name = f"messages/{topic}/{partition}.jsonl"
            lines = [json.loads(line) for line in files.get(name, b"").decode().splitlines()]
            if len(lines) != described["messages"]:
                raise SandboxError(f"{path}: {name} holds {len(lines)} messages, its manifest says "
                                   f"{described['messages']}", "record the archive again")
            messages[topic][int(partition)] = lines
    schemas = {int(Path(name).stem): text.decode() for name, text in files.items() if name.startswith("schemas/")}
    missing = sorted(schema_ids(messages) - set(schemas))
    if missing:
        raise SandboxError(f"{path}: messages name schema ids {missing} that the archive does not hold",
                           "record the archive again while the registry serves them")
    connectors = {Path(name).stem: json.loads(text) for name, text in files.items() if name.startswith("connectors/")}
    return Archive(manifest, messages, schemas, connectors)


def decoded_events(archive: Archive, topic: str) -> tuple[list[Event], list[tuple[int, int]]]:
    """A recorded topic's messages decoded by the archive's own schemas, as the replay's oracle folds them: keys
    and flattened values, Debezium's dates and times as Python's (`from_epoch`); a tombstone's value is None. Also
    the (partition, offset) of each message that is not Apicurio-framed Avro (a poison message), which a job sets
    aside."""
    parsed = {global_id: fastavro.parse_schema(json.loads(text)) for global_id, text in archive.schemas.items()}
    units = {global_id: epoch_fields(text) for global_id, text in archive.schemas.items()}
    defaults = {global_id: column_defaults(text) for global_id, text in archive.schemas.items()}

    def decoded(part: str | None) -> tuple[int | None, dict | None]:
        return read_framed(None if part is None else base64.b64decode(part), parsed.__getitem__) or (None, None)

    found, undecodable = [], []
    for partition, lines in archive.messages[topic].items():
        for place, line in enumerate(lines):
            try:
                _, key = decoded(line["key"])
                value_id, value = decoded(line["value"])
            except (WireFormatError, ValueError, EOFError, StopIteration):
                undecodable.append((partition, line["offset"]))
                continue
            value = None if value is None else with_epoch_types(flattened(value), units[value_id])
            found.append(Event(topic, partition, line["offset"], key, value, line["timestamp"],
                               {} if value is None else with_epoch_types(defaults[value_id], units[value_id]), place))
    return found, undecodable
