"""A lake's Structured Streaming checkpoint on S3, read from outside the job: which Kafka offsets the job's last
committed micro-batch reached, and whether bronze holds what it vouches for. Any job that checkpoints to the lake can
be read this way (the lake's layout and its S3 helpers: `cdc_sandbox.spark_jobs.lake_layout`)."""

from __future__ import annotations

import functools
import json
import re

from cdc_sandbox.spark_jobs import lake_layout
from cdc_sandbox.spark_jobs.lake_layout import object_keys, split_uri


def committed_offsets(s3, checkpoint: str) -> dict[str, dict[str, int]]:
    """{topic: {partition: next offset}} of the last micro-batch a Structured Streaming checkpoint committed
    (its offset log: `offsets/<batch>` holds a version line, the batch's metadata, then one line per source).

    {} while nothing is known to be consumed: no checkpoint yet, the first batch still running, or a committed batch
    whose offsets file is gone by the time it is read (Spark purging old batches, a lake deleted meanwhile). A
    partition the batch did not know yet is absent from its topic's offsets."""
    bucket, prefix = split_uri(checkpoint)
    batches = committed_batches(s3, bucket, prefix)
    return (_offsets(s3, bucket, prefix, batches[-1]) or {}) if batches else {}


def settled_offsets(s3, checkpoint: str) -> dict[str, dict[str, int]] | None:
    """The committed offsets when the latest micro-batch planned is committed too; None while one runs."""
    bucket, prefix = split_uri(checkpoint)
    planned, committed = _batch_ids(s3, bucket, f"{prefix}/offsets/"), committed_batches(s3, bucket, prefix)
    if planned[-1:] != committed[-1:]:
        return None
    if not committed:
        return {}
    return _offsets(s3, bucket, prefix, committed[-1]) or {}


def planned_offsets(s3, checkpoint: str) -> dict[str, dict[str, int]]:
    """{topic: {partition: next offset}} the checkpoint's latest micro-batch reads up to, committed or still
    running (its offset log is written before the batch starts)."""
    bucket, prefix = split_uri(checkpoint)
    batches = _batch_ids(s3, bucket, f"{prefix}/offsets/")
    return (_offsets(s3, bucket, prefix, batches[-1]) or {}) if batches else {}


def batch_start_offsets(s3, checkpoint: str, batch: int, first: dict | None = None) -> dict[str, dict[str, int]]:
    """{topic: {partition: offset}} micro-batch `batch` started reading from: the previous batch's end, or {} where
    the log no longer holds the previous batch. The first batch starts where Spark resolved the job's starting
    offsets (`first`, a branched lake's; the topics' earliest offsets otherwise), which it records before it plans
    the batch; before that record exists, at `first` (Kafka's earliest read as 0) or, for the earliest, at 0 of
    every partition the batch reads. Spark runs the first batch again too if stopped before its commit, and then
    the whole of it counts as read again."""
    bucket, prefix = split_uri(checkpoint)
    if batch > 0:
        return _offsets(s3, bucket, prefix, batch - 1) or {}
    resolved = initial_offsets(s3, checkpoint) if s3 is not None else None
    if resolved:
        return resolved
    if first:
        return {topic: {str(p): max(0, int(o)) for p, o in parts.items()} for topic, parts in first.items()}
    planned = _offsets(s3, bucket, prefix, 0) if s3 is not None else None
    return {topic: {p: 0 for p in parts} for topic, parts in (planned or {}).items()}


def initial_offsets(s3, checkpoint: str) -> dict[str, dict[str, int]] | None:
    """The offsets Spark's Kafka source resolved for the first batch (`sources/0/0`: a zero byte, a version line,
    then {topic: {partition: offset}}), or None before it wrote them."""
    bucket, prefix = split_uri(checkpoint)
    try:
        body = s3.get_object(Bucket=bucket, Key=f"{prefix}/sources/0/0")["Body"].read()
    except s3.exceptions.NoSuchKey:
        return None
    _version, _, offsets = body.lstrip(b"\0").decode().partition("\n")
    return json.loads(offsets)


def committed_batches(s3, bucket: str, prefix: str) -> list[int]:
    """The ids of the micro-batches the checkpoint under `prefix` committed, in order."""
    return _batch_ids(s3, bucket, f"{prefix}/commits/")


def _batch_ids(s3, bucket: str, log: str) -> list[int]:
    """The micro-batch ids a checkpoint log (`offsets/` or `commits/`) holds a file for, in order."""
    return sorted(int(key.rsplit("/", 1)[1]) for key in object_keys(s3, bucket, log) if key.rsplit("/", 1)[1].isdigit())


def unvouched_batch(s3, lake: str) -> str | None:
    """Why the lake's checkpoint vouches for data the lake does not hold, or None.

    The checkpoint's last committed micro-batch that read events must have left them in bronze
    (`<lake>/bronze/table=<t>/batch_id=<n>/`): if it did not, the lake lost data (a crash, a restore of an older
    copy, objects deleted by hand) and the job would go on from past it without ever writing it again."""
    bucket, prefix = split_uri(lake_layout.checkpoints(lake))
    batches = committed_batches(s3, bucket, prefix)
    offsets = functools.cache(lambda batch: _offsets(s3, bucket, prefix, batch))  # each file read once
    # A batch whose offsets file is gone (purged, or deleted as it was listed) says nothing either way.
    reading = next((n for n in reversed(batches) if offsets(n) is not None and offsets(n) != _start_of(n, offsets)),
                   None)
    if reading is None:
        return None
    _, bronze = split_uri(lake_layout.bronze_root(lake))
    found = {int(match) for key in object_keys(s3, bucket, f"{bronze}/")
             for match in re.findall(r"/batch_id=(\d+)/", key)}
    if reading in found:
        return None
    latest = f"batch {max(found)}" if found else "no batch at all"
    return (f"the checkpoint of {lake} says micro-batch {reading} is committed, but bronze holds no data of it "
            f"(its latest: {latest}): the lake lost data that the job will not read again")


def _offsets(s3, bucket: str, prefix: str, batch: int) -> dict | None:
    try:
        body = s3.get_object(Bucket=bucket, Key=f"{prefix}/offsets/{batch}")["Body"].read().decode()
    except s3.exceptions.NoSuchKey:
        return None
    return json.loads(body.splitlines()[2])


def _start_of(batch: int, offsets) -> dict:
    """The offsets the batch started from: the previous batch's end, or nothing read yet for the first batch."""
    previous = offsets(batch - 1) if batch > 0 else None
    if previous is not None:
        return previous
    return {topic: {p: 0 for p in partitions} for topic, partitions in (offsets(batch) or {}).items()}
