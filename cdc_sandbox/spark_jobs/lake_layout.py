"""A lake: what lives where under its root, and the S3 object helpers the harness reads, copies and removes it with.

Under a lake's root (`s3a://<bucket>/<name>`):
- `silver/<table>`: each silver Hudi table;
- `bronze/changes/table=<t>/batch_id=<n>/`: every micro-batch's messages as they came (Parquet);
- `quarantine`: the messages that did not decode;
- `checkpoints`: Spark's Structured Streaming checkpoint, the job's progress.

The job writes by these paths (through `JobConfig`); the harness, the CLI and replay read by them. The helpers take
an S3 client (`cdc_sandbox.stack.services.localstack.s3_client`, the one factory), so the job itself, which reaches
S3 through Hadoop's S3A, never imports boto3.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

SILVER = "silver"
BRONZE = "bronze"
BRONZE_CHANGES = f"{BRONZE}/changes"
QUARANTINE = "quarantine"
CHECKPOINTS = "checkpoints"
COPY_WORKERS = 8  # server-side copies are one small request each, so they are sent side by side


def silver_root(lake: str) -> str:
    return f"{lake}/{SILVER}"


def silver_table(lake: str, table: str) -> str:
    return f"{silver_root(lake)}/{table}"


def bronze_root(lake: str) -> str:
    return f"{lake}/{BRONZE}"


def bronze_changes(lake: str) -> str:
    return f"{lake}/{BRONZE_CHANGES}"


def quarantine(lake: str) -> str:
    return f"{lake}/{QUARANTINE}"


def checkpoints(lake: str) -> str:
    return f"{lake}/{CHECKPOINTS}"


def on_s3(uri: str) -> bool:
    return uri.startswith(("s3a://", "s3://", "s3n://"))


def split_uri(uri: str) -> tuple[str, str]:
    """s3a://bucket/some/prefix -> (bucket, some/prefix)."""
    parsed = urlparse(uri)
    return parsed.netloc, parsed.path.strip("/")


def object_keys(s3, bucket: str, prefix: str, delimiter: str = ""):
    """Every object key under `prefix`; with a `delimiter`, those of that level only."""
    listing = {"Bucket": bucket, "Prefix": prefix} | ({"Delimiter": delimiter} if delimiter else {})
    for page in s3.get_paginator("list_objects_v2").paginate(**listing):
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


def copy_prefix(s3, source: str, target: str) -> int:
    """Copy every object under `source` to the same place under `target`, within S3; how many were copied."""
    bucket, source_prefix = split_uri(source)
    target_bucket, target_prefix = split_uri(target)
    keys = list(object_keys(s3, bucket, source_prefix + "/"))

    def copy(key: str) -> None:
        s3.copy_object(Bucket=target_bucket, Key=target_prefix + key[len(source_prefix):],
                       CopySource={"Bucket": bucket, "Key": key})

    with ThreadPoolExecutor(COPY_WORKERS) as pool:
        list(pool.map(copy, keys))
    return len(keys)
