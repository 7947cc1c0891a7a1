"""Kafka clients (confluent-kafka), built one way wherever the sandbox talks to Kafka.

Every client logs nothing of librdkafka's own (the sandbox reports what matters, in its own words); a consumer reads
without joining a group that any other reader shares and commits nothing, since each reader here keeps its own
positions.
"""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

QUIET = {"log_level": 0}


def admin(bootstrap: str, settings: dict | None = None) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, **QUIET, **(settings or {})})


def producer(bootstrap: str, settings: dict | None = None) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, **QUIET, **(settings or {})})


def consumer(bootstrap: str, purpose: str, settings: dict | None = None) -> Consumer:
    """A consumer in a group of its own, named after what it is for (`sandbox-<purpose>-<uuid>`)."""
    return Consumer({"bootstrap.servers": bootstrap, "group.id": f"sandbox-{purpose}-{uuid.uuid4()}",
                     "enable.auto.commit": False, **QUIET, **(settings or {})})
