"""LocalStack with only S3, from its own virtualenv; the lake bucket is created once it answers.

LocalStack's community edition keeps S3 in memory (its persistence is a paid feature), so `stop` saves every
bucket to `<state>/data/localstack/buckets/` and the next start puts the objects back exactly
(`bucket_snapshot`): `sandbox down` keeps the lake. Between two saves a hook inside LocalStack journals every
acknowledged change to `<state>/data/localstack/journal/` (`s3_journal`), and the next start applies the journal
on top of the snapshot: a LocalStack that was killed comes back as of its last acknowledged write.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import boto3
import requests
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import install, process
from cdc_sandbox.stack.services import bucket_snapshot
from cdc_sandbox.stack.services.base import NativeService

# LocalStack accepts any credentials; these are the ones its documentation uses.
ACCESS_KEY = "test"
SECRET_KEY = "test"
REGION = "us-east-1"


class LocalStack(NativeService):
    name = "localstack"
    start_timeout = 120
    saved: bucket_snapshot.Outcome | None = None  # what the last stop saved
    restored: bucket_snapshot.Outcome | None = None  # what the last start put back (None: not yet)

    def prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.chmod(0o700)  # the saved lake, its journal and S3's storage hold row values
        (self.data_dir / "tmp").mkdir(exist_ok=True)
        # LocalStack's plugin index (plux) is cached under XDG_CACHE_HOME, keyed by file times that a reinstall of
        # the sandbox's hooks can leave unchanged: built afresh at each start, the hooks are never missed.
        shutil.rmtree(self.data_dir / "cache", ignore_errors=True)

    def command(self) -> list[str]:
        return [str(install.localstack_venv(self.settings) / "bin" / "python"), "-m", "localstack.runtime.main"]

    def environment(self) -> dict[str, str]:
        return {
            "GATEWAY_LISTEN": self.endpoint.address,
            "SERVICES": "s3",
            "LOCALSTACK_VOLUME_DIR": str(self.data_dir),
            "PERSISTENCE": "1",
            "SKIP_SSL_CERT_DOWNLOAD": "1",
            "DISABLE_EVENTS": "1",
            # A line per S3 call costs LocalStack a tenth of its CPU while the job runs; LS_LOG=info brings them back.
            "LS_LOG": os.environ.get("LS_LOG", "warn"),
            "SANDBOX_S3_JOURNAL": str(self.journal_dir),
            # Nothing in a directory the machine's other LocalStacks share (sandbox_s3_journal/confine.py).
            "SANDBOX_S3_STORAGE": str(self.data_dir / "s3-storage"),
            "TMPDIR": str(self.data_dir / "tmp"),
            "XDG_CACHE_HOME": str(self.data_dir / "cache"),
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

    @property
    def journal_dir(self) -> Path:
        return self.data_dir / "journal"

    def post_start(self) -> None:
        # Only a freshly started LocalStack is empty; restoring into a running one would resurrect deleted objects.
        # The restore comes first, so that creating the lake bucket is journaled as a change after it.
        if self.restored is None and not self.external:
            self.restored = bucket_snapshot.restore(self.s3(), self.snapshot_dir, self.journal_dir)
        bucket_snapshot.ensure_bucket(self.s3(), self.settings.topology.lake_bucket)
        prove_writable(self.s3(), self.settings.topology.lake_bucket, self.data_dir)

    def skip_restore(self) -> None:
        """This LocalStack already serves its buckets: `post_start` must not put a copy back over them."""
        self.restored = bucket_snapshot.Outcome(0, 0, 0)

    def start(self) -> str:
        self.restored = None
        if self.external or (self.pid() is not None and process.quietly(self.is_ready)):
            self.skip_restore()
        outcome = super().start()
        if outcome == "started" and self.restored.objects:
            outcome += f", buckets restored ({self.restored.describe('uploaded')})"
        return outcome

    def stop(self) -> bool:
        self.saved, covered = None, []
        if not self.external and self.pid() is not None and process.quietly(self.is_ready):
            covered = bucket_snapshot.set_journal_aside(self.journal_dir)
            self.saved = bucket_snapshot.save(self.s3(), self.snapshot_dir)
        stopped = super().stop()
        if self.saved is not None:
            bucket_snapshot.settle_journal(self.journal_dir, covered)
        return stopped

    def shut_down(self) -> str:
        outcome = super().shut_down()
        return f"{outcome}, buckets saved ({self.saved.describe('downloaded')})" if self.saved else outcome


# Larger than what LocalStack keeps in memory (S3_MAX_FILE_SIZE_BYTES, 512 KiB): the probe reaches its storage on disk.
PROBE_BYTES = 600 * 1024
PROBE_KEY = "_sandbox/probe"


def prove_writable(client, bucket: str, data_dir: Path) -> None:
    """A put, a get and a delete of a probe object: a lake that cannot be written fails `sandbox up`, not the job."""
    body = bytes(range(256)) * (PROBE_BYTES // 256)  # the same bytes every time: the journal keeps them once
    try:
        client.put_object(Bucket=bucket, Key=PROBE_KEY, Body=body)
        read = client.get_object(Bucket=bucket, Key=PROBE_KEY)["Body"].read()
        client.delete_object(Bucket=bucket, Key=PROBE_KEY)
    except (BotoCoreError, ClientError) as exc:
        raise SandboxError(f"S3 does not take writes to bucket {bucket}: {exc}",
                           f"LocalStack keeps the lake under {data_dir}: check that this account owns it and the "
                           "disk has room (its log says more), then `sandbox down` and `sandbox up`") from None
    if read != body:
        raise SandboxError(f"S3 gave back other bytes than the probe object it took in bucket {bucket}",
                           "see LocalStack's log; `sandbox down` and `sandbox up` start it afresh")


def s3_client(endpoint_url: str):
    return boto3.client(
        "s3", endpoint_url=endpoint_url, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
        region_name=REGION, config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}),
    )


def sandbox_s3(settings):
    """An S3 client of this sandbox's LocalStack, where its lakes live."""
    return s3_client(settings.url("localstack"))
