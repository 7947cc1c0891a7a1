"""Loading an incident archive into a Kafka cluster and its registry, apart from the live topics.

Each recorded topic becomes `replay.<name>.<topic>` with the same partitions; every schema the archive holds is
registered again, under the new topic's artifact (`<topic>-key` or `-value`, as the Apicurio converter names them),
and each message's framing is rewritten to the new global id. Messages keep their partition, their order, their
timestamp and their headers. A replay never writes to a topic that exists already: one holding other data would mix
two streams.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import requests
from confluent_kafka.admin import NewTopic

from cdc_sandbox import kafka_clients
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.replay.archive import Archive, named_id
from cdc_sandbox.sources.registry import HEADER, MAGIC_BYTE

ROLES = ("key", "value")


def replay_topic(name: str, topic: str) -> str:
    return f"replay.{name}.{topic}"


def reframed(payload: bytes | None, new_id: int | None) -> bytes | None:
    """The message bytes with the schema id of their framing replaced (bytes of no schema, as they are)."""
    if payload is None or new_id is None:
        return payload
    return HEADER.pack(MAGIC_BYTE, new_id) + payload[HEADER.size:]


def schema_uses(archive: Archive) -> set[tuple[str, str, int]]:
    """(topic, key or value, global id) for every schema a recorded message names."""
    return {(topic, role, global_id)
            for topic, partitions in archive.messages.items() for lines in partitions.values() for line in lines
            for role in ROLES if line[role] is not None
            for global_id in named_id(base64.b64decode(line[role]))}


def register(registry_url: str, artifact: str, schema: str) -> int:
    """Register a schema under an artifact (a new version of it, or the version holding the same text); its
    global id."""
    response = requests.post(f"{registry_url.rstrip('/')}/groups/default/artifacts",
                             params={"ifExists": "RETURN_OR_UPDATE", "canonical": "true"}, data=schema.encode(),
                             headers={"X-Registry-ArtifactId": artifact, "X-Registry-ArtifactType": "AVRO",
                                      "Content-Type": "application/json"}, timeout=30)
    if response.status_code >= 300:
        raise SandboxError(f"the registry refused schema {artifact}: HTTP {response.status_code} {response.text[:300]}",
                           "check `sandbox logs apicurio`")
    return int(response.json()["globalId"])


@dataclass(frozen=True)
class Loaded:
    topics: dict[str, str]  # recorded topic -> the topic it was loaded into
    schema_ids: dict[tuple[str, str, int], int]  # (topic, role, recorded id) -> id in this registry
    messages: int


def load(archive: Archive, bootstrap: str, registry_url: str, name: str) -> Loaded:
    """Create the replay's topics, register the schemas again and write every message, in order."""
    loaded = prepare(archive, bootstrap, registry_url, name)
    write(archive, loaded, bootstrap, {topic: {p: (0, len(lines)) for p, lines in partitions.items()}
                                       for topic, partitions in archive.messages.items()})
    return loaded


def prepare(archive: Archive, bootstrap: str, registry_url: str, name: str) -> Loaded:
    """Create the replay's topics and register the schemas again; no message is written yet (`write`)."""
    topics = {topic: replay_topic(name, topic) for topic in archive.messages}
    # Partitions keep their numbers: a recording from a time may hold the later partitions of a topic alone.
    _create_topics(bootstrap, {topics[topic]: max(partitions, default=0) + 1
                               for topic, partitions in archive.messages.items()})
    ids = {(topic, role, old): register(registry_url, f"{topics[topic]}-{role}", archive.schemas[old])
           for topic, role, old in sorted(schema_uses(archive))}
    return Loaded(topics, ids, sum(len(lines) for partitions in archive.messages.values()
                                   for lines in partitions.values()))


def write(archive: Archive, loaded: Loaded, bootstrap: str, ranges: dict[str, dict[int, tuple[int, int]]]) -> int:
    """Write the archive's messages of each partition from the first to the last index `ranges` gives (start
    included, end not), in order, into the replay's topics; returns how many."""
    producer = kafka_clients.producer(bootstrap, {"enable.idempotence": True, "linger.ms": 20})
    failures, written = [], 0
    for topic, partitions in ranges.items():
        for partition, (start, end) in partitions.items():
            for line in archive.messages[topic][partition][start:end]:
                producer.produce(loaded.topics[topic], partition=partition, timestamp=line["timestamp"],
                                 key=_rewritten(line["key"], topic, "key", loaded.schema_ids),
                                 value=_rewritten(line["value"], topic, "value", loaded.schema_ids),
                                 headers=[(h, None if v is None else base64.b64decode(v)) for h, v in line["headers"]]
                                 or None,
                                 on_delivery=lambda error, _: error and failures.append(error))
                written += 1
                producer.poll(0)
    unsent = producer.flush(120)
    if failures or unsent:
        raise SandboxError(f"writing the replay's messages failed: {failures[0] if failures else f'{unsent} unsent'}",
                           "see `sandbox logs kafka`")
    return written


def _rewritten(part: str | None, topic: str, role: str, ids: dict) -> bytes | None:
    if part is None:
        return None
    payload = base64.b64decode(part)
    old = named_id(payload)
    return reframed(payload, ids[(topic, role, old.pop())] if old else None)


def _create_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    admin = kafka_clients.admin(bootstrap)
    present = set(admin.list_topics(timeout=10).topics)
    taken = sorted(set(partitions) & present)
    if taken:
        raise SandboxError(f"topic {taken[0]} exists already: a replay writes only to topics of its own",
                           "give the replay another name (--name), or delete the topic first")
    futures = admin.create_topics([NewTopic(topic, count, 1) for topic, count in partitions.items()],
                                  request_timeout=30)
    for topic, future in futures.items():
        try:
            future.result(timeout=60)
        except Exception as exc:  # a KafkaException carries the broker's reason
            raise SandboxError(f"creating topic {topic} failed: {exc}", "see `sandbox logs kafka`") from exc
