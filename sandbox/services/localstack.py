"""LocalStack with only S3, from its own virtualenv; the lake bucket is created once it answers.

LocalStack's community edition keeps S3 in memory (its persistence is a paid feature), so `stop` saves every
bucket to `<state>/data/localstack/buckets/` and the next start puts the objects back: `sandbox down` keeps the lake.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import boto3
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

from sandbox import process
from sandbox.services.base import NativeService

# LocalStack accepts any credentials; these are the ones its documentation uses.
ACCESS_KEY = "test"
SECRET_KEY = "test"
REGION = "us-east-1"


class LocalStack(NativeService):
    name = "localstack"
    start_timeout = 120

    def prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        return [str(self.settings.localstack_venv / "bin" / "python"), "-m", "localstack.runtime.main"]

    def environment(self) -> dict[str, str]:
        return {
            "GATEWAY_LISTEN": self.endpoint.address,
            "SERVICES": "s3",
            "LOCALSTACK_VOLUME_DIR": str(self.data_dir),
            "PERSISTENCE": "1",
            "SKIP_SSL_CERT_DOWNLOAD": "1",
            "DISABLE_EVENTS": "1",
        }

    def health(self) -> dict:
        return requests.get(f"{self.url}/_localstack/health", timeout=3).json()

    def is_ready(self) -> bool:
        return self.health()["services"].get("s3") in ("available", "running")

    def version(self) -> str:
        return self.health().get("version", "?")

    def s3(self):
        return s3_client(self.url)

    @property
    def snapshot_dir(self) -> Path:
        return self.data_dir / "buckets"

    def post_start(self) -> None:
        _ensure_bucket(self.s3(), self.settings.topology.lake_bucket)

    def start(self) -> str:
        outcome = super().start()
        # Only a freshly started LocalStack is empty; restoring into a running one would resurrect deleted objects.
        if outcome == "started" and self.snapshot_dir.is_dir():
            restore_buckets(self.s3(), self.snapshot_dir)
        return outcome

    def stop(self) -> bool:
        if not self.external and self.pid() is not None and process.quietly(self.is_ready):
            save_buckets(self.s3(), self.snapshot_dir)
        return super().stop()


def _ensure_bucket(client, bucket: str) -> None:
    try:
        client.head_bucket(Bucket=bucket)
    except ClientError:
        client.create_bucket(Bucket=bucket)


def save_buckets(client, snapshot_dir: Path) -> None:
    """Copy every object of every bucket to `snapshot_dir/<bucket>/<key>`, replacing the previous copy whole."""
    staging = snapshot_dir.with_name(snapshot_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for bucket in client.list_buckets()["Buckets"]:
        name = bucket["Name"]
        (staging / name).mkdir()
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=name):
            for obj in page.get("Contents", []):
                target = staging / name / obj["Key"]
                target.parent.mkdir(parents=True, exist_ok=True)
                client.download_file(name, obj["Key"], str(target))
    shutil.rmtree(snapshot_dir, ignore_errors=True)
    staging.rename(snapshot_dir)


def restore_buckets(client, snapshot_dir: Path) -> None:
    for bucket_dir in sorted(p for p in snapshot_dir.iterdir() if p.is_dir()):
        _ensure_bucket(client, bucket_dir.name)
        for path in sorted(p for p in bucket_dir.rglob("*") if p.is_file()):
            client.upload_file(str(path), bucket_dir.name, path.relative_to(bucket_dir).as_posix())


def s3_client(endpoint_url: str):
    return boto3.client(
        "s3", endpoint_url=endpoint_url, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
        region_name=REGION, config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}),
    )
