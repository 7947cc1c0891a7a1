"""A lake's objects and its Structured Streaming checkpoint on S3, read from outside the job: which Kafka offsets the
job's last committed micro-batch reached. Any job that checkpoints to the lake can be read this way."""

from __future__ import annotations

import json
from urllib.parse import urlparse


def committed_offsets(s3, checkpoint: str) -> dict[str, dict[str, int]]:
    """{topic: {partition: next offset}} of the last micro-batch a Structured Streaming checkpoint committed
    (its offset log: `offsets/<batch>` holds a version line, the batch's metadata, then one line per source)."""
    bucket, prefix = split_uri(checkpoint)
    batches = [int(key.rsplit("/", 1)[1]) for key in object_keys(s3, bucket, f"{prefix}/commits/")
               if key.rsplit("/", 1)[1].isdigit()]
    if not batches:
        return {}
    body = s3.get_object(Bucket=bucket, Key=f"{prefix}/offsets/{max(batches)}")["Body"].read().decode()
    return json.loads(body.splitlines()[2])


def split_uri(uri: str) -> tuple[str, str]:
    """s3a://bucket/some/prefix -> (bucket, some/prefix)."""
    parsed = urlparse(uri)
    return parsed.netloc, parsed.path.strip("/")


def object_keys(s3, bucket: str, prefix: str):
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            yield obj["Key"]


def delete_prefix(s3, uri: str, whole_names: bool = True) -> int:
    """Remove every object under `uri`; `whole_names=False` also those of siblings whose names begin with its
    last part (`<lake>-mor` beside `<lake>`)."""
    bucket, prefix = split_uri(uri)
    keys = list(object_keys(s3, bucket, prefix + ("/" if whole_names else "")))
    for start in range(0, len(keys), 1000):
        s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[start:start + 1000]],
                                                 "Quiet": True})
    return len(keys)
