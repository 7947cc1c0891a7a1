"""LocalStack with only S3, from its own virtualenv; the lake bucket is created once it answers."""

from __future__ import annotations

import boto3
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

from sandbox.services.base import NativeService

# LocalStack accepts any credentials; these are the ones its documentation uses.
ACCESS_KEY = "test"
SECRET_KEY = "test"
REGION = "us-east-1"


class LocalStack(NativeService):
    name = "localstack"
    start_timeout = 120

    @property
    def url(self) -> str:
        return f"http://{self.endpoint.address}"

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

    def post_start(self) -> None:
        bucket = self.settings.topology.lake_bucket
        client = self.s3()
        try:
            client.head_bucket(Bucket=bucket)
        except ClientError:
            client.create_bucket(Bucket=bucket)


def s3_client(endpoint_url: str):
    return boto3.client(
        "s3", endpoint_url=endpoint_url, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
        region_name=REGION, config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}),
    )
