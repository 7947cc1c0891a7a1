"""Growing a captured table's topic while changes flow, the way an operator raises a partition count; and a key's
earlier event delivered again (`redeliver_earlier`).

Kafka places a keyed message by `murmur2(key bytes) % partitions`, so after a topic grows a key can move to a new,
empty partition: its next change sits at a smaller offset than its earlier ones. A job that orders a key's changes
by Kafka offset keeps the older one; ordering by source position does not care. `movers` finds, among the
keys a topic holds, those that an added partition takes with the smallest growth (Kafka cannot shrink a topic, so
every growth stays), and `grow` raises the count and stops and resumes the connector so that Debezium's new
producer sees the new count at once (the old one keeps the old count until its metadata ages out, five minutes).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

with warnings.catch_warnings():  # kafka-python loads its protocol schemas through importlib.resources' old API
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.partitioner.default import murmur2

from cdc_sandbox import kafka_clients
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.sources.changes import close_soon, end_offsets
from cdc_sandbox.sources.mutations import same_key
from cdc_sandbox.sources.registry import RegistryClient
from cdc_sandbox.stack.connectors import ConnectClient
from cdc_sandbox.wait import wait_until

MOST_ADDED = 64  # partitions one growth may add


@dataclass(frozen=True)
class KeyPlace:
    """A live key's last event in a topic: where it is, and the key's bytes as Debezium wrote them."""

    key: dict
    key_bytes: bytes
    partition: int
    offset: int


def partition_for(key_bytes: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a keyed message (Java's `Utils.toPositive(murmur2(key))`)."""
    return (murmur2(key_bytes) & 0x7FFFFFFF) % partitions


def movers(places: list[KeyPlace], partitions: int) -> Iterator[tuple[int, KeyPlace]]:
    """Partition counts above `partitions`, smallest first, each with the keys it sends to an added partition. A
    key whose last event is at offset 0 is left out: its next one, at offset 0 of an empty partition, would not
    sit below it."""
    candidates = sorted((p for p in places if p.offset > 0), key=lambda p: p.key_bytes)
    for count in range(partitions + 1, partitions + MOST_ADDED + 1):
        for place in candidates:
            if partition_for(place.key_bytes, count) >= partitions:
                yield count, place


def key_places(bootstrap: str, registry: RegistryClient, topic: str) -> tuple[int, list[KeyPlace]]:
    """The topic's partition count, and each key's last event if it lies in the partition the key hashes to now
    and is not a tombstone. Every partition is read to its end; each key is decoded once."""
    ends = end_offsets(bootstrap, [topic]).get(topic) or {}
    if not any(ends.values()):
        raise SandboxError(f"topic {topic} holds no events yet", "load TICKIT first: `sandbox load`")
    last: dict[bytes, tuple[int, int, bool]] = {}  # key bytes -> partition, offset, tombstone
    for message in _messages(bootstrap, topic, ends):
        if message.key() is not None:
            last[message.key()] = (message.partition(), message.offset(), message.value() is None)
    return len(ends), [KeyPlace(registry.decode(raw)[1], raw, partition, offset)
                       for raw, (partition, offset, tombstone) in last.items()
                       if not tombstone and partition == partition_for(raw, len(ends))]


def redeliver_earlier(bootstrap: str, registry: RegistryClient, topic: str, key: dict) -> tuple[int, int]:
    """Write the key's last-but-one event again at the end of its partition, bytes and headers as they are: an older
    change arriving after a newer one, as when Debezium re-sends after a crash or reads again from reset offsets.
    Returns the partition and offset of the copy."""
    ends = end_offsets(bootstrap, [topic]).get(topic) or {}
    events = [message for message in _messages(bootstrap, topic, ends)
              if message.key() is not None and message.value() is not None
              and same_key(registry.decode(message.key())[1], key)]
    if len(events) < 2:
        raise SandboxError(f"{topic} holds {len(events)} change of {key}; re-delivering an earlier one needs two",
                           "change the row twice before this step")
    earlier = last_but_one(events)
    return _produce(bootstrap, topic, earlier.partition(), earlier.key(), earlier.value(), earlier.headers())


def last_but_one(events: list):
    """The key's event before its latest. A topic that gained partitions holds the key's older history in another
    partition than its latest events, so partition order says nothing across them: the time Kafka stamped on each
    does (within a partition, the offset)."""
    return sorted(events, key=lambda message: (message.timestamp()[1], message.offset()))[-2]


def _produce(bootstrap: str, topic: str, partition: int, key: bytes, value: bytes, headers) -> tuple[int, int]:
    producer = kafka_clients.producer(bootstrap)
    written = []
    producer.produce(topic, value=value, key=key, partition=partition, headers=headers or None,
                     on_delivery=lambda error, message: written.append((error, message)))
    producer.flush(30)
    if not written or written[0][0] is not None:
        raise SandboxError(f"writing to {topic} failed: {written[0][0] if written else 'no delivery report'}",
                           "see `sandbox logs kafka`")
    return written[0][1].partition(), written[0][1].offset()


def _messages(bootstrap: str, topic: str, ends: dict[int, int]) -> Iterator:
    """Every message of the topic up to `ends` ({partition: end offset}), each partition in its order."""
    consumer = kafka_clients.consumer(bootstrap, "topics")
    try:
        remaining = {p: end for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in remaining])
        while remaining:
            message = consumer.poll(5.0)
            if message is None:
                raise SandboxError(f"reading {topic} stalled before its end", "check `sandbox status`")
            if message.error():
                continue
            yield message
            if message.offset() + 1 >= remaining.get(message.partition(), 0):
                remaining.pop(message.partition(), None)
    finally:
        close_soon(consumer)


def grow(bootstrap: str, connect_url: str, connector: str, topic: str, count: int) -> None:
    """Raise the topic to `count` partitions, then stop and resume the connector so that its new producer uses
    them."""
    admin = kafka_clients.admin(bootstrap)
    admin.create_partitions([NewPartitions(topic, count)], request_timeout=30)[topic].result(timeout=60)
    wait_until(lambda: len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == count, 30,
               f"{topic} to show {count} partitions", "see `sandbox logs kafka`")
    ConnectClient(connect_url).cycle(connector)


def ensure_topic(bootstrap: str, topic: str) -> None:
    """The topic, created with one partition if it does not exist yet (so that a reader can start at its end)."""
    admin = kafka_clients.admin(bootstrap)
    if topic in admin.list_topics(timeout=10).topics:
        return
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=60)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise SandboxError(f"creating topic {topic} failed: {exc}", "see `sandbox logs kafka`") from None


TOPICS_TIMEOUT = 120  # Debezium creates a table's topic with the first event of its snapshot


def unready(admin: AdminClient, topics: list[str]) -> list[str]:
    """Those of `topics` that do not exist yet, or have a partition without a leader (being created)."""
    known = admin.list_topics(timeout=10).topics
    return [topic for topic in topics if topic not in known or known[topic].error is not None
            or not known[topic].partitions or any(p.leader < 0 for p in known[topic].partitions.values())]


def wait_for_topics(bootstrap: str, topics: list[str], timeout: float = TOPICS_TIMEOUT) -> None:
    """Wait until every topic a job is about to read exists (Spark's Kafka source fails on one that does not)."""
    admin = kafka_clients.admin(bootstrap)
    missing = unready(admin, topics)
    if missing:
        wait_until(lambda: not unready(admin, missing), timeout, f"Debezium to create {', '.join(missing)}",
                   "see the connectors in `sandbox status` and `sandbox logs connect`", interval=0.5)
