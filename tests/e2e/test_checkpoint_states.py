"""What the harness reads from a job's Structured Streaming checkpoint on S3, in each state a checkpoint can be in:
absent, its first micro-batch in flight, committed, a committed batch whose offsets file is gone (purged, or the lake
deleted while it was read), and a partition added to a topic. The files are laid out as Spark 3.5 writes them, in
the sandbox's S3."""

from __future__ import annotations

import json
import uuid

import pytest

from cdc_sandbox.harness.running.checkpoint import (
    batch_start_offsets,
    committed_offsets,
    planned_offsets,
    settled_offsets,
    unvouched_batch,
)
from cdc_sandbox.spark_jobs.lake_layout import delete_prefix

pytestmark = [pytest.mark.e2e]

TOPIC = "tickit.ems.category"


@pytest.fixture
def lake(s3, lake_bucket):
    uri = f"s3a://{lake_bucket}/checkpoint-states-{uuid.uuid4().hex[:8]}"
    yield uri
    delete_prefix(s3, uri)


def put(s3, lake: str, name: str, body: bytes) -> None:
    bucket, _, prefix = lake.removeprefix("s3a://").partition("/")
    s3.put_object(Bucket=bucket, Key=f"{prefix}/{name}", Body=body)


def plan(s3, lake: str, batch: int, offsets: dict) -> None:
    """`offsets/<batch>`: version, the batch's metadata, then the source's end offsets."""
    metadata = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
    put(s3, lake, f"checkpoints/offsets/{batch}", f"v1\n{json.dumps(metadata)}\n{json.dumps(offsets)}".encode())


def commit(s3, lake: str, batch: int) -> None:
    put(s3, lake, f"checkpoints/commits/{batch}", b'v1\n{"nextBatchWatermarkMs":0}')


def resolve_start(s3, lake: str, offsets: dict) -> None:
    """`sources/0/0`: where the Kafka source resolved the first batch's start (a zero byte, then version and JSON)."""
    put(s3, lake, "checkpoints/sources/0/0", b"\0v1\n" + json.dumps(offsets).encode())


def test_an_absent_checkpoint_has_consumed_nothing(s3, lake):
    checkpoint = f"{lake}/checkpoints"
    assert committed_offsets(s3, checkpoint) == settled_offsets(s3, checkpoint) == planned_offsets(s3, checkpoint) == {}
    assert batch_start_offsets(s3, checkpoint, 0) == {}
    assert unvouched_batch(s3, lake) is None


def test_a_first_batch_in_flight_has_consumed_nothing_and_starts_where_spark_resolved(s3, lake):
    checkpoint = f"{lake}/checkpoints"
    plan(s3, lake, 0, {TOPIC: {"0": 203}})
    assert batch_start_offsets(s3, checkpoint, 0) == {TOPIC: {"0": 0}}, "before Spark records it: the topic's start"
    assert batch_start_offsets(s3, checkpoint, 0, {TOPIC: {"0": 120}}) == {TOPIC: {"0": 120}}
    resolve_start(s3, lake, {TOPIC: {"0": 17}})
    assert committed_offsets(s3, checkpoint) == {}
    assert settled_offsets(s3, checkpoint) is None, "a batch runs"
    assert planned_offsets(s3, checkpoint) == {TOPIC: {"0": 203}}
    assert batch_start_offsets(s3, checkpoint, 0) == {TOPIC: {"0": 17}}
    assert batch_start_offsets(s3, checkpoint, 0, {TOPIC: {"0": -2}}) == {TOPIC: {"0": 17}}


def test_a_committed_batch_is_consumed_and_settled(s3, lake):
    checkpoint = f"{lake}/checkpoints"
    plan(s3, lake, 0, {TOPIC: {"0": 203}})
    commit(s3, lake, 0)
    plan(s3, lake, 1, {TOPIC: {"0": 210}})
    assert committed_offsets(s3, checkpoint) == {TOPIC: {"0": 203}}
    assert settled_offsets(s3, checkpoint) is None
    commit(s3, lake, 1)
    assert committed_offsets(s3, checkpoint) == settled_offsets(s3, checkpoint) == {TOPIC: {"0": 210}}
    assert batch_start_offsets(s3, checkpoint, 1) == {TOPIC: {"0": 203}}


def test_a_committed_batch_whose_offsets_are_gone_counts_as_nothing_consumed(s3, lake):
    checkpoint = f"{lake}/checkpoints"
    commit(s3, lake, 4)  # its offsets file purged, or deleted with the lake between the listing and the read
    assert committed_offsets(s3, checkpoint) == {}
    assert settled_offsets(s3, checkpoint) is None, "not settled: a wait reads it again"
    assert batch_start_offsets(s3, checkpoint, 4) == {}
    assert unvouched_batch(s3, lake) is None, "no claim of data the lake lacks"


def test_a_partition_added_to_the_topic_appears_from_the_batch_that_reads_it(s3, lake):
    checkpoint = f"{lake}/checkpoints"
    plan(s3, lake, 0, {TOPIC: {"0": 203}})
    commit(s3, lake, 0)
    plan(s3, lake, 1, {TOPIC: {"0": 210, "1": 4}})
    commit(s3, lake, 1)
    assert committed_offsets(s3, checkpoint) == {TOPIC: {"0": 210, "1": 4}}
    assert batch_start_offsets(s3, checkpoint, 1) == {TOPIC: {"0": 203}}, "partition 1 is read from its start"
