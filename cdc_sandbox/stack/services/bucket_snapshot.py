"""S3 buckets saved to local disk and put back object for object (LocalStack's community S3 lives in memory).

A snapshot directory holds
  manifest.json          every bucket, and per object: bucket, key (a trailing `/` included), size, ETag, the
                         content headers and user metadata
  blobs/<etag>-<size>    the bytes, one file per distinct content

Keys are never mapped to file paths, so `a/` (an S3A directory marker) and `a/b` both survive as they were. A save
downloads only the objects whose ETag is not in the previous snapshot and hard-links the rest, so saving a lake
that barely changed costs a listing, not a copy. The new snapshot replaces the old one only once complete.

Between two saves, LocalStack's S3 journal hook (cdc_sandbox/stack/services/s3_journal) writes every acknowledged change to a
journal directory: `changes.jsonl` (one JSON line per put, delete, bucket created or deleted) and `blobs/`. A
restore applies the journal on top of the snapshot, so a LocalStack that was killed comes back as of its last
acknowledged write, with nothing deleted since brought back. A clean stop sets the journal file aside before it
saves (`set_journal_aside`) and drops it once the save is complete (`settle_journal`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from botocore.exceptions import ClientError

from cdc_sandbox.errors import SandboxError

MANIFEST = "manifest.json"
BLOBS = "blobs"
JOURNAL = "changes.jsonl"
RESTORE_HEADER = "x-sandbox-restore"  # the journal hook leaves requests with it out
WORKERS = 8
CONTENT_HEADERS = ("ContentType", "ContentEncoding", "ContentDisposition", "ContentLanguage", "CacheControl")
CHUNK = 1 << 20


@dataclass(frozen=True)
class SavedObject:
    bucket: str
    key: str
    size: int
    etag: str  # without quotes
    headers: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)

    @property
    def blob(self) -> str:
        return f"{self.etag}-{self.size}"

    @property
    def identity(self) -> tuple:
        return self.bucket, self.key, self.etag, self.size


@dataclass(frozen=True)
class Outcome:
    objects: int
    bytes: int
    transferred: int  # objects downloaded (save) or uploaded (restore)
    replayed: int = 0  # journaled changes a restore applied on top of the snapshot

    def describe(self, verb: str) -> str:
        journal = f", {self.replayed} journaled changes since the last save applied" if self.replayed else ""
        return f"{self.objects} objects, {self.bytes / 1e6:.1f} MB, {self.transferred} {verb}{journal}"


def save(client, snapshot_dir: Path, buckets: list[str] | None = None) -> Outcome:
    """Copy every bucket (or the named ones) to `snapshot_dir`; the previous snapshot stays whole until the new
    one is complete."""
    previous_dir = readable_snapshot(snapshot_dir)
    previous = {o.identity: o for o in read_manifest(previous_dir)[1]} if previous_dir else {}
    staging = snapshot_dir.with_name(snapshot_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / BLOBS).mkdir(parents=True)
    buckets = sorted(buckets or (b["Name"] for b in client.list_buckets()["Buckets"]))
    listed = [(bucket, obj) for bucket in buckets for obj in _list(client, bucket)]

    def keep(item) -> tuple[SavedObject, bool]:
        bucket, obj = item
        old = previous.get((bucket, obj["Key"], obj["ETag"].strip('"'), obj["Size"]))
        if old is not None and _link(previous_dir / BLOBS / old.blob, staging / BLOBS / old.blob):
            return old, False
        try:
            return _download(client, bucket, obj["Key"], staging / BLOBS), True
        except client.exceptions.NoSuchKey:  # a writer (a job still running) deleted it since the listing: the
            return None, False               # journal started before this save holds the delete, and replays it

    with ThreadPoolExecutor(WORKERS) as pool:
        kept = [(saved, downloaded) for saved, downloaded in pool.map(keep, listed) if saved is not None]
    objects = [saved for saved, _ in kept]
    _write_manifest(staging, buckets, objects)
    _swap_in(staging, snapshot_dir)
    return Outcome(len(objects), sum(o.size for o in objects), sum(downloaded for _, downloaded in kept))


def restore(client, snapshot_dir: Path, journal_dir: Path | None = None) -> Outcome:
    """Put every saved bucket and object back into an empty S3, with the changes journaled since that save applied
    on top, then check the listing against the result."""
    source = readable_snapshot(snapshot_dir)
    buckets, objects = read_manifest(source) if source else ([], [])
    state = {(o.bucket, o.key): (o, source / BLOBS) for o in objects}
    buckets = set(buckets)
    changes = journal_changes(journal_dir) if journal_dir else []
    for change in changes:
        _apply(change, state, buckets, journal_dir / BLOBS)
    if not buckets:
        return Outcome(0, 0, 0)

    def upload(item: tuple[SavedObject, Path]) -> None:
        saved, blobs = item
        with open(blobs / saved.blob, "rb") as body:
            client.put_object(Bucket=saved.bucket, Key=saved.key, Body=body, Metadata=saved.metadata,
                              **saved.headers)

    client.meta.events.register("before-sign.s3", _mark_as_restore)
    try:  # the caller's client carries the header only while it puts the copy back
        for bucket in sorted(buckets):
            ensure_bucket(client, bucket)
        with ThreadPoolExecutor(WORKERS) as pool:
            list(pool.map(upload, state.values()))
    finally:
        client.meta.events.unregister("before-sign.s3", _mark_as_restore)
    final = [saved for saved, _ in state.values()]
    _verify(client, sorted(buckets), final)
    return Outcome(len(final), sum(o.size for o in final), len(final), len(changes))


def journal_changes(journal_dir: Path) -> list[dict]:
    """The journal's changes, oldest first: files set aside by stops whose save did not finish, then the current
    one. The hook writes each line with one append, so only a last line can be cut off (by a full disk)."""
    changes = []
    for path in [*_set_aside(journal_dir), journal_dir / JOURNAL]:
        if not path.is_file():
            continue
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            try:
                changes.append(json.loads(line))
            except json.JSONDecodeError as exc:
                if number < len(lines):
                    raise SandboxError(f"{path}:{number} is not a journaled change: {exc}",
                                       "the lake cannot be rebuilt from it; `sandbox reset` starts over") from exc
    return changes


def set_journal_aside(journal_dir: Path) -> list[Path]:
    """Before a save: move the current journal file aside (the hook starts a new one with its next change) and
    return every file set aside, all of which the coming snapshot covers."""
    current = journal_dir / JOURNAL
    if current.exists():
        current.rename(journal_dir / f"changes.{time.time_ns()}.jsonl")
    return _set_aside(journal_dir)


def settle_journal(journal_dir: Path, covered: list[Path]) -> None:
    """After a complete save, with LocalStack stopped: drop the journal files it covers, and every blob that no
    change left in the journal needs."""
    for path in covered:
        path.unlink(missing_ok=True)
    needed = {f"{c['etag']}-{c['size']}" for c in journal_changes(journal_dir) if c["op"] == "put"}
    blobs = journal_dir / BLOBS
    for blob in blobs.iterdir() if blobs.is_dir() else []:
        if blob.name not in needed:
            blob.unlink()


def _set_aside(journal_dir: Path) -> list[Path]:
    return sorted(journal_dir.glob("changes.*.jsonl"), key=lambda p: int(p.name.split(".")[1]))


def _apply(change: dict, state: dict, buckets: set[str], blobs: Path) -> None:
    bucket = change["bucket"]
    if change["op"] == "put":
        buckets.add(bucket)
        state[bucket, change["key"]] = (SavedObject(bucket, change["key"], change["size"], change["etag"],
                                                    change["headers"], change["metadata"]), blobs)
    elif change["op"] == "delete":
        state.pop((bucket, change["key"]), None)
    elif change["op"] == "create_bucket":
        buckets.add(bucket)
    elif change["op"] == "delete_bucket":
        buckets.discard(bucket)
        for key in [k for k in state if k[0] == bucket]:
            del state[key]


def _mark_as_restore(request, **_) -> None:
    request.headers[RESTORE_HEADER] = "1"


def listing(client) -> dict[tuple[str, str], tuple[int, str]]:
    """(bucket, key) -> (size, ETag) of every object in every bucket."""
    return {(bucket, obj["Key"]): (obj["Size"], obj["ETag"].strip('"'))
            for bucket in sorted(b["Name"] for b in client.list_buckets()["Buckets"])
            for obj in _list(client, bucket)}


def readable_snapshot(snapshot_dir: Path) -> Path | None:
    """The complete snapshot: `snapshot_dir`, or the previous one if a save was cut off while swapping."""
    for candidate in (snapshot_dir, snapshot_dir.with_name(snapshot_dir.name + ".old")):
        if (candidate / MANIFEST).is_file():
            return candidate
    if snapshot_dir.is_dir() and any(snapshot_dir.iterdir()):
        raise SandboxError(
            f"{snapshot_dir} holds a bucket copy in the layout of an older sandbox, which loses S3 directory "
            "markers and so breaks Hudi tables",
            f"remove it (`rm -r {snapshot_dir}`) and rebuild the lake with `sandbox job run`",
        )
    return None


def read_manifest(snapshot_dir: Path) -> tuple[list[str], list[SavedObject]]:
    manifest = json.loads((snapshot_dir / MANIFEST).read_text())
    return manifest["buckets"], [SavedObject(**o) for o in manifest["objects"]]


def _write_manifest(directory: Path, buckets: list[str], objects: list[SavedObject]) -> None:
    path = directory / MANIFEST
    path.write_text(json.dumps({"buckets": buckets, "objects": [asdict(o) for o in objects]}))
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _swap_in(staging: Path, snapshot_dir: Path) -> None:
    old = snapshot_dir.with_name(snapshot_dir.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if snapshot_dir.exists():
        snapshot_dir.rename(old)
    staging.rename(snapshot_dir)
    shutil.rmtree(old, ignore_errors=True)


def _list(client, bucket: str):
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        yield from page.get("Contents", [])


def _link(source: Path, target: Path) -> bool:
    if target.exists():
        return True
    if not source.is_file():
        return False
    try:
        os.link(source, target)
    except FileExistsError:
        pass
    return True


def _download(client, bucket: str, key: str, blobs: Path) -> SavedObject:
    response = client.get_object(Bucket=bucket, Key=key)
    etag = response["ETag"].strip('"')
    digest = hashlib.md5()  # noqa: S324 - compared with the ETag, not used for security
    partial = blobs / f".{os.getpid()}-{id(response)}"
    with open(partial, "wb") as out:
        for chunk in iter(lambda: response["Body"].read(CHUNK), b""):
            digest.update(chunk)
            out.write(chunk)
    size = partial.stat().st_size
    if "-" not in etag and digest.hexdigest() != etag:
        raise SandboxError(f"s3://{bucket}/{key} changed while it was being saved (ETag {etag})",
                           "stop the job and anything else writing to the lake, then run `sandbox down` again")
    saved = SavedObject(bucket, key, size, etag,
                        {h: response[h] for h in CONTENT_HEADERS if response.get(h)}, response.get("Metadata", {}))
    os.replace(partial, blobs / saved.blob)
    return saved


def ensure_bucket(client, bucket: str) -> None:
    try:
        client.head_bucket(Bucket=bucket)
    except ClientError:
        client.create_bucket(Bucket=bucket)


def _verify(client, buckets: list[str], objects: list[SavedObject]) -> None:
    expected = {(o.bucket, o.key): (o.size, o.etag) for o in objects}
    actual = {k: v for k, v in listing(client).items() if k[0] in buckets}
    differing = sorted(k for k in expected.keys() | actual.keys() if not _same(expected.get(k), actual.get(k)))
    if differing:
        bucket, key = differing[0]
        raise SandboxError(f"restoring the buckets left {len(differing)} objects different from the snapshot, "
                           f"e.g. s3://{bucket}/{key}: saved {expected.get((bucket, key))}, "
                           f"now {actual.get((bucket, key))}",
                           "the snapshot is kept as it was; see the LocalStack log, then run `sandbox up` again")


def _same(saved: tuple | None, now: tuple | None) -> bool:
    if saved is None or now is None:
        return saved == now
    # An object uploaded in parts has a part-count ETag; put back in one piece, only its size can match.
    return saved == now or ("-" in saved[1] and saved[0] == now[0])
