"""`up` twice reuses what runs; a bucket snapshot keeps keys, bytes and headers and saves only what changed. (A
`sandbox down` in the middle of a batch and a power cut, each followed by `up`, with the lake's listing and the
oracle: test_faults.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from cdc_sandbox.stack import backends
from cdc_sandbox.stack.services import bucket_snapshot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def sandbox_cli(*args: str, timeout: float = 600) -> str:
    result = subprocess.run([sys.executable, "-m", "cdc_sandbox", *args], capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"sandbox {' '.join(args)}: exit {result.returncode}\n" \
                                   + result.stdout[-3000:] + result.stderr[-3000:]
    return " ".join(result.stdout.split())


def described(s3, bucket: str) -> dict[str, tuple]:
    """key -> (size, ETag, content type, user metadata, bytes) of every object in the bucket."""
    objects = {}
    for (_, key), (size, etag) in bucket_snapshot.listing(s3).items():
        if _ != bucket:
            continue
        got = s3.get_object(Bucket=bucket, Key=key)
        objects[key] = (size, etag, got["ContentType"], got["Metadata"], got["Body"].read())
    return objects


def test_up_twice_reuses_installs_and_running_services(sandbox):
    backend = backends.of(sandbox)
    before = backend.instances(sandbox)
    assert all(before.values()), f"every service runs: {before}"
    output = sandbox_cli("up")
    for service in before:
        assert f"{service} already running" in output
    assert "installed" not in output and "resolved with Maven" not in output, output
    assert backend.instances(sandbox) == before, "no service was restarted"


@pytest.mark.restarts_services
def test_restart_starts_one_service_again_and_status_json_then_shows_everything_running(sandbox):
    backend = backends.of(sandbox)
    before = backend.instances(sandbox)
    sandbox_cli("restart", "metastore")
    after = backend.instances(sandbox)
    assert after["metastore"] not in (None, before["metastore"]), "the metastore runs as a new instance"
    assert {name: i for name, i in after.items() if name != "metastore"} == \
        {name: i for name, i in before.items() if name != "metastore"}, "the others were left running"
    shown = subprocess.run([sys.executable, "-m", "cdc_sandbox", "status", "--json"], capture_output=True, text=True,
                           timeout=120)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    status = json.loads(shown.stdout)
    assert {s["service"] for s in status["services"] if s["state"] == "running"} == set(before)
    assert {c["state"] for c in status["connectors"]} == {"RUNNING"}


def test_bucket_snapshot_keeps_keys_bytes_and_headers_and_saves_only_what_changed(sandbox, s3, tmp_path):
    bucket = f"snapshot-test-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    objects = {
        "silver/category/.hoodie/.temp/": (b"", "application/x-directory"),  # an S3A directory marker
        "silver/category/.hoodie/.temp/20261122.marker": (b"marker", "application/octet-stream"),
        "a": (b"an object named like a folder", "text/plain"),
        "a/b": (b"an object under it", "text/plain; charset=utf-8"),
        "empty": (b"", "binary/octet-stream"),
        "part-0001.parquet": (os.urandom(3 << 20), "application/octet-stream"),
        "copy-of-part.parquet": (None, "application/vnd.apache.parquet"),  # same bytes as the one above
    }
    try:
        for key, (body, content_type) in objects.items():
            body = objects["part-0001.parquet"][0] if body is None else body
            s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType=content_type, Metadata={"written-as": key})
        before = described(s3, bucket)
        assert len(before) == len(objects)

        first = bucket_snapshot.save(s3, tmp_path / "snapshot", buckets=[bucket])
        assert (first.objects, first.transferred) == (len(objects), len(objects))
        for key in before:
            s3.delete_object(Bucket=bucket, Key=key)
        restored = bucket_snapshot.restore(s3, tmp_path / "snapshot")
        assert restored.objects == len(objects)
        assert described(s3, bucket) == before

        s3.put_object(Bucket=bucket, Key="a", Body=b"changed", ContentType="text/plain")
        second = bucket_snapshot.save(s3, tmp_path / "snapshot", buckets=[bucket])
        assert (second.objects, second.transferred) == (len(objects), 1), "only the changed object is downloaded"
        _, saved = bucket_snapshot.read_manifest(tmp_path / "snapshot")
        assert {o.key: o.size for o in saved}["a"] == len(b"changed")
    finally:
        for key in described(s3, bucket):
            s3.delete_object(Bucket=bucket, Key=key)
        s3.delete_bucket(Bucket=bucket)
