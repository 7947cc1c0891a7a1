"""Reading the change events Debezium wrote to Kafka, decoded through the registry.

Values carry Debezium's semantic types as Avro primitives (a `io.debezium.time.MicroTimestamp` is a long of
microseconds); `typed_row` turns them back into the Python values a database driver returns, so a change event can be
compared with the source row exactly.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, TopicPartition

from cdc_sandbox import kafka_clients
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.sources.registry import RegistryClient, WireFormatError
from cdc_sandbox.spark_jobs.avro_schema import ENVELOPE_FIELDS, epoch_fields

EPOCH = dt.datetime(1970, 1, 1)


@dataclass(frozen=True)
class ChangeEvent:
    topic: str
    partition: int
    offset: int
    key: dict | None
    value: dict | None
    value_schema_id: int | None


def typed_row(event: ChangeEvent, registry: RegistryClient) -> dict:
    """The event's value with Debezium's dates and times (`EPOCH_UNITS`) as Python dates and datetimes."""
    return with_epoch_types(event.value or {}, epoch_fields(registry.schema_by_global_id(event.value_schema_id)))


def with_epoch_types(values: dict, units: dict[str, str]) -> dict:
    """The values with those `units` names (`epoch_fields`) as Python dates and datetimes."""
    return {name: from_epoch(value, units[name]) if name in units else value for name, value in values.items()}


def from_epoch(value, unit: str):
    """A number of `unit`s since 1970-01-01 as a date (days) or a naive UTC datetime; anything else as it is (the Avro
    reader already gave a date or time)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    if unit == "days":
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    microseconds = {"millis": value * 1000, "micros": value, "nanos": value // 1000}[unit]
    return EPOCH + dt.timedelta(microseconds=microseconds)


class ChangeReader:
    """Reads a topic and keeps every decoded event, so tests can wait for the one they expect.

    By default from the beginning; `from_end=True` starts at the current end of an existing topic, for waiting on
    changes about to be made without decoding the whole history; `from_offsets` ({partition: offset}) starts there
    (and at the start of any partition it does not name).
    """

    def __init__(self, bootstrap: str, topic: str, registry: RegistryClient, from_end: bool = False,
                 from_offsets: dict[int, int] | None = None):
        self.topic = topic
        self.registry = registry
        self.events: list[ChangeEvent] = []
        self.undecodable: list[tuple[int, int]] = []  # (partition, offset) of messages that are not Apicurio Avro
        self._consumer = kafka_clients.consumer(bootstrap, "reader", {"auto.offset.reset": "earliest"})
        if from_end:
            self._consumer.assign(self._end_offsets())
        elif from_offsets:  # a partition added since the offsets were taken is read from its start
            self._consumer.assign([TopicPartition(topic, p.partition, from_offsets.get(p.partition, 0))
                                   for p in self._end_offsets()])
        else:
            self._consumer.subscribe([topic])

    def _end_offsets(self) -> list[TopicPartition]:
        metadata = self._consumer.list_topics(self.topic, timeout=10).topics.get(self.topic)
        if metadata is None or metadata.error is not None or not metadata.partitions:
            raise SandboxError(f"topic {self.topic} does not exist yet", "make a change in its table first")
        return [TopicPartition(self.topic, p, self._consumer.get_watermark_offsets(
            TopicPartition(self.topic, p), timeout=10)[1]) for p in metadata.partitions]

    def close(self) -> None:
        close_soon(self._consumer)

    def __enter__(self) -> "ChangeReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def wait_for(self, predicate: Callable[[ChangeEvent], bool], timeout: float, what: str) -> ChangeEvent:
        """Consume until an event satisfies `predicate`; fails after `timeout` saying what it waited for."""
        deadline = time.monotonic() + timeout
        for event in self.events:
            if predicate(event):
                return event
        while time.monotonic() < deadline:
            message = self._consumer.poll(min(1.0, max(0.05, deadline - time.monotonic())))
            if message is None:
                continue
            if message.error():
                if message.error().code() in (KafkaError._PARTITION_EOF, KafkaError.UNKNOWN_TOPIC_OR_PART):
                    continue
                raise SandboxError(f"reading {self.topic}: {message.error()}", "check `sandbox status`")
            try:
                event = self._decode(message)
            except WireFormatError:
                self.undecodable.append((message.partition(), message.offset()))
                continue
            self.events.append(event)
            if predicate(event):
                return event
        raise SandboxError(f"timed out after {timeout:.0f} s waiting on {self.topic} for {what} "
                           f"({len(self.events)} events read)", "check `sandbox status` and `sandbox logs connect`")

    def read_to_end(self, timeout: float, ends: dict[int, int] | None = None) -> list[ChangeEvent]:
        """Every event up to the topic's end as it is now, or up to `ends` ({partition: offset past the last}),
        those read before included."""
        ends = ends if ends is not None else {tp.partition: tp.offset for tp in self._end_offsets()}
        last: dict[int, int] = {}
        for event in self.events:
            last[event.partition] = max(last.get(event.partition, -1), event.offset)

        def at_end(event: ChangeEvent | None = None) -> bool:
            if event is not None:
                last[event.partition] = event.offset
            return all(last.get(partition, -1) >= end - 1 for partition, end in ends.items())

        if not at_end():
            self.wait_for(at_end, timeout, "the end of the topic")
        return self.events

    def wait_for_change(self, change, timeout: float) -> list[ChangeEvent]:
        """Every event a journaled change must cause (a `mutations.Change`), in its operation order."""
        return [self.wait_for(lambda e, op=op: e.value is not None and change.produced_by(e.value, e.key, op),
                              timeout, f"{op!r} of journal entry {change.seq} ({change.kind} {change.key})")
                for op in change.debezium_ops]

    def _decode(self, message) -> ChangeEvent:
        key = self.registry.decode(message.key())
        value = self.registry.decode(message.value())
        return ChangeEvent(message.topic(), message.partition(), message.offset(),
                           key[1] if key else None, flattened(value[1]) if value else None,
                           value[0] if value else None)


def flattened(value: dict) -> dict:
    """An event's value as the connectors flatten row changes (`__op` and the source position as `__` fields); a
    truncate, which they leave as Debezium's envelope, becomes its operation and source fields."""
    if not ENVELOPE_FIELDS <= value.keys():
        return value
    return {"__op": value["op"], **{f"__{name}": field for name, field in (value["source"] or {}).items()}}


def close_soon(consumer: Consumer) -> None:
    """Close a consumer without waiting for it. librdkafka's close can wait a second on the group coordinator's
    lookup even for a consumer that never joined its group (one close in four, measured), and nothing here reads
    the group's state."""
    threading.Thread(target=consumer.close, name="kafka-consumer-close").start()


def watermarks(bootstrap: str, topics: list[str]) -> dict[str, dict[int, tuple[int, int]]]:
    """{topic: {partition: (first offset, end offset)}} now; a topic that does not exist yet is left out."""
    consumer = kafka_clients.consumer(bootstrap, "offsets")
    try:
        found = consumer.list_topics(timeout=10).topics
        return {topic: {p: tuple(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10))
                        for p in found[topic].partitions}
                for topic in topics if topic in found and found[topic].partitions}
    finally:
        close_soon(consumer)


def end_offsets(bootstrap: str, topics: list[str]) -> dict[str, dict[int, int]]:
    """{topic: {partition: end offset}} now; a topic that does not exist yet is left out."""
    return {topic: {p: end for p, (_, end) in parts.items()} for topic, parts in watermarks(bootstrap, topics).items()}
