"""A LocalStack start hook that writes every acknowledged S3 change through to a journal on disk.

LocalStack's community S3 keeps objects in memory, so a LocalStack killed without `sandbox down` would lose the
lake. With `SANDBOX_S3_JOURNAL=<dir>` in its environment, this hook appends one JSON line per change to
`<dir>/changes.jsonl` before the response leaves LocalStack, and keeps each object's bytes once in
`<dir>/blobs/<etag>-<size>`:

  {"op": "put", "bucket": ..., "key": ..., "size": ..., "etag": ..., "headers": {...}, "metadata": {...}}
  {"op": "delete", "bucket": ..., "key": ...}
  {"op": "create_bucket", "bucket": ...}      {"op": "delete_bucket", "bucket": ...}

The sandbox replays the journal over its last bucket snapshot after a crash (cdc_sandbox/stack/services/bucket_snapshot.py),
and empties it once a clean stop has saved a snapshot. Requests with the `x-sandbox-restore` header (the sandbox
putting a snapshot back) are not journaled. This runs inside LocalStack's own interpreter: it imports LocalStack,
never the sandbox.
"""

from __future__ import annotations

import json
import os
import threading

from localstack.runtime import hooks

RESTORE_HEADER = "x-sandbox-restore"
OBJECT_WRITES = ("PutObject", "CopyObject", "CompleteMultipartUpload")
CONTENT_HEADERS = ("ContentType", "ContentEncoding", "ContentDisposition", "ContentLanguage", "CacheControl")
CHUNK = 1 << 20


class Journal:
    """`owner` ("uid:gid"): who must own what the journal writes. LocalStack's image runs as root, and a rootful
    Docker engine on Linux leaves root's files root-owned on the host, where the sandbox reads and settles them."""

    def __init__(self, directory: str, owner: str | None = None):
        self.changes = os.path.join(directory, "changes.jsonl")
        self.blobs = os.path.join(directory, "blobs")
        self.owner = tuple(int(part) for part in owner.split(":")) if owner else None
        os.makedirs(self.blobs, exist_ok=True)
        self._hand_over(self.blobs)
        self._lock = threading.Lock()

    def _hand_over(self, path: str, fd: int | None = None) -> None:
        if self.owner is not None:
            os.chown(fd if fd is not None else path, *self.owner)

    def append(self, record: dict) -> None:
        line = (json.dumps(record) + "\n").encode()
        with self._lock:  # opened per record: the sandbox may move a full journal aside between two records
            fd = os.open(self.changes, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                self._hand_over(self.changes, fd)
                os.write(fd, line)
            finally:
                os.close(fd)

    def keep_bytes(self, name: str, chunks) -> None:
        path = os.path.join(self.blobs, name)
        if os.path.exists(path):
            return
        partial = f"{path}.{threading.get_ident()}.partial"
        with open(partial, "wb") as out:
            self._hand_over(partial, out.fileno())
            for chunk in chunks:
                out.write(chunk)
        os.replace(partial, path)


def _stored_object(context, bucket: str, key: str):
    from localstack.services.plugins import SERVICE_PLUGINS

    provider = SERVICE_PLUGINS.get_service("s3")._provider
    _, s3_bucket = provider._get_cross_account_bucket(context, bucket)
    return provider, s3_bucket.get_object(key=key)


def _record_object(journal: Journal, context, bucket: str, key: str) -> None:
    provider, s3_object = _stored_object(context, bucket, key)
    etag = s3_object.etag.strip('"')
    with provider._storage_backend.open(bucket, s3_object, mode="r") as stored:
        journal.keep_bytes(f"{etag}-{s3_object.size}", iter(lambda: stored.read(CHUNK), b""))
    headers = {h: s3_object.system_metadata[h] for h in CONTENT_HEADERS if s3_object.system_metadata.get(h)}
    journal.append({"op": "put", "bucket": bucket, "key": key, "size": s3_object.size, "etag": etag,
                    "headers": headers, "metadata": dict(s3_object.user_metadata)})


def _journal_change(journal: Journal, context, response) -> None:
    if context.service is None or context.service.service_name != "s3" or context.operation is None:
        return
    if response.status_code >= 300 or context.request.headers.get(RESTORE_HEADER):
        return
    operation, request = context.operation.name, context.service_request or {}
    if operation in OBJECT_WRITES:
        _record_object(journal, context, request["Bucket"], request["Key"])
    elif operation == "DeleteObject":
        journal.append({"op": "delete", "bucket": request["Bucket"], "key": request["Key"]})
    elif operation == "DeleteObjects":  # a quiet request's response lists only the failures
        failed = {error["Key"] for error in (context.service_response or {}).get("Errors", [])}
        for item in request["Delete"]["Objects"]:
            if item["Key"] not in failed:
                journal.append({"op": "delete", "bucket": request["Bucket"], "key": item["Key"]})
    elif operation == "CreateBucket":
        journal.append({"op": "create_bucket", "bucket": request["Bucket"]})
    elif operation == "DeleteBucket":
        journal.append({"op": "delete_bucket", "bucket": request["Bucket"]})


def install_journal() -> None:
    """Journal into `$SANDBOX_S3_JOURNAL`, if set: called by the start hook below (native backend, installed into
    LocalStack's virtualenv) or by a start.d init script (cdc_sandbox/compose/localstack/s3-journal.py)."""
    directory = os.environ.get("SANDBOX_S3_JOURNAL")
    if not directory:
        return
    from localstack.aws import handlers

    journal = Journal(directory, os.environ.get("SANDBOX_S3_JOURNAL_OWNER"))
    handlers.run_custom_response_handlers.append(
        lambda chain, context, response: _journal_change(journal, context, response))


@hooks.on_infra_start()
def journal_s3_writes():
    install_journal()
