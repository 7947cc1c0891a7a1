"""Lakes in buckets of their own: a test's, a replay's, the harness's baseline. LocalStack answers a listing by
sorting every object of the bucket, and a commit or a read lists dozens of times, so a lake beside others would pay
for all of their objects on each listing. The project's own lake stays in the project's lake bucket."""

from __future__ import annotations

import re
import uuid

from cdc_sandbox.config import Settings
from cdc_sandbox.spark_jobs.lake_layout import delete_prefix
from cdc_sandbox.stack.services.localstack import sandbox_s3


def own_bucket(settings: Settings, name: str, unique: bool = False) -> str:
    """The bucket `<lake bucket>-<name>` (with a unique ending when asked), created unless it exists; bucket names
    take lowercase letters, digits and hyphens, 63 at most."""
    stem = re.sub(r"[^a-z0-9-]+", "-", f"{settings.topology.lake_bucket}-{name}".lower()).strip("-")[:54]
    bucket = f"{stem}-{uuid.uuid4().hex[:8]}" if unique else stem
    s3 = sandbox_s3(settings)
    if unique or bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        s3.create_bucket(Bucket=bucket)
    return bucket


def remove_lake(settings: Settings, lake: str, whole_names: bool = True) -> int:
    """Remove the lake's objects (`whole_names=False`: and those of lakes named after it, such as `<lake>-mor`);
    returns how many went (none of a lake removed before). The emptied bucket stays: a Spark session's catalog may
    still name the lake, and Hudi reads a catalog table's location, which fails on a bucket that is gone."""
    s3 = sandbox_s3(settings)
    try:
        return delete_prefix(s3, lake, whole_names=whole_names)
    except s3.exceptions.NoSuchBucket:
        return 0
