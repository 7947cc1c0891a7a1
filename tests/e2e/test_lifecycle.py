"""`up` twice reuses what runs; `down` and `up` keep every S3 object exactly, and so does a LocalStack killed with
SIGKILL and started again by `up` (its journal applied over the last save); the job goes on writing the same lake
afterwards: the oracle checks silver, time travel to the commits before each restart and incremental reads across
them, for a lake of the harness (the job in-process); a lake written by `sandbox job run` (spark-submit) reads the
same after the clean restart."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import uuid

import psutil
import pytest

from sandbox import job
from sandbox.backends import native
from sandbox.oracle import Oracle
from sandbox.checkpoint import delete_prefix
from sandbox.pipeline import Pipeline
from sandbox.pytest_plugin import new_lake
from sandbox.services import bucket_snapshot

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def sandbox_cli(*args: str, timeout: float = 600) -> str:
    result = subprocess.run([sys.executable, "-m", "sandbox", *args], capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"sandbox {' '.join(args)}: exit {result.returncode}\n" \
                                   + result.stdout[-3000:] + result.stderr[-3000:]
    return " ".join(result.stdout.split())


def pids(settings) -> dict[str, int | None]:
    return {svc.name: svc.pid() for svc in native.all_services(settings)}


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
    before = pids(sandbox)
    output = sandbox_cli("up")
    for service in before:
        assert f"{service} already running" in output
    assert "jvm artifacts present" in output and "localstack present" in output
    assert pids(sandbox) == before


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


@pytest.mark.faults
def test_down_and_up_and_a_killed_localstack_keep_the_lake_and_the_job_goes_on_writing_it(
        request, sandbox, spark, mutator, s3, pipeline_factory):
    timeout = request.config.getoption("--oracle-timeout")
    harness_lake = pipeline_factory(only=["category", "date"])
    # spark-submit's lake holds `category` alone: its whole history is small, and the user's default lake is left alone
    submitted_lake = Pipeline(sandbox, job.job_config(sandbox, lake=new_lake(sandbox, "submitted"), only=["category"]),
                              spark, owns_session=False, drives_job=False)
    job_run = ("job", "run", "--lake", submitted_lake.config.lake, "--table", "category")
    harness = Oracle(sandbox, harness_lake, mutator, timeout=timeout)
    submitted = Oracle(sandbox, submitted_lake, mutator, timeout=timeout)

    harness.track(["category", "date"])
    change_rows(mutator, "before the restart")
    harness.round("before the restart")
    shown = sandbox_cli(*job_run, timeout=1200)
    assert re.search(r"batch \d+: ", shown) and " INFO " not in shown and "WARN" not in shown, "summaries, not Spark's log"
    submitted.track(["category"], "before the restart")
    saved_then_deleted = f"{submitted_lake.config.lake}-scratch/saved-then-deleted"
    put_scratch(s3, saved_then_deleted)

    before = bucket_snapshot.listing(s3)
    sandbox_cli("down")
    assert all(pid is None for pid in pids(sandbox).values())
    sandbox_cli("up", "--skip-install")
    assert bucket_snapshot.listing(s3) == before, "every object comes back with its key, size and ETag"
    submitted.verify_history()  # `sandbox job run`'s lake reads as it did (the source has not changed since)

    delete_scratch(s3, saved_then_deleted)  # in the saved snapshot, deleted since: a restore must not bring it back
    put_scratch(s3, f"{submitted_lake.config.lake}-scratch/written-since")
    change_rows(mutator, "after the restart")
    harness.round("after the restart")

    before = bucket_snapshot.listing(s3)
    kill_localstack(sandbox)
    sandbox_cli("up", "--skip-install")
    # The snapshot saved by `down` lacks what was written since and holds the object deleted since: only the
    # journal makes these equal.
    assert bucket_snapshot.listing(s3) == before, "the lake as of LocalStack's last acknowledged write"

    change_rows(mutator, "after LocalStack was killed")
    harness.round("after LocalStack was killed")
    harness.verify_history()  # the commits written between the restart and the kill came back from the journal
    delete_prefix(s3, submitted_lake.config.lake)
    delete_prefix(s3, f"{submitted_lake.config.lake}-scratch")


def kill_localstack(settings) -> None:
    process = psutil.Process(pids(settings)["localstack"])
    process.send_signal(signal.SIGKILL)
    process.wait(30)


def put_scratch(s3, uri: str) -> None:
    bucket, key = uri.removeprefix("s3a://").split("/", 1)
    s3.put_object(Bucket=bucket, Key=key, Body=b"scratch")


def delete_scratch(s3, uri: str) -> None:
    bucket, key = uri.removeprefix("s3a://").split("/", 1)
    s3.delete_object(Bucket=bucket, Key=key)


def change_rows(mutator, note: str) -> None:
    """An update on each engine and a delete."""
    mutator.update("category", {"catid": 3}, {"catdesc": note})
    mutator.touch("date")
    doomed = mutator.sample_row("date", random.Random())
    mutator.delete("date", {"dateid": doomed["dateid"]})
