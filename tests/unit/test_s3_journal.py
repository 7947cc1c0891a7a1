"""The S3 journal on the sandbox's side: reading it back in order, what a restore makes of it over a snapshot, and
what a clean stop drops. (tests/e2e/test_lifecycle.py kills a real LocalStack and checks the lake that comes back.)"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from cdc_sandbox.config import PACKAGE_DIR, Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import install
from cdc_sandbox.stack.services import bucket_snapshot
from cdc_sandbox.stack.services.bucket_snapshot import SavedObject

JOURNAL_PACKAGE = PACKAGE_DIR / "stack" / "services" / "s3_journal" / "sandbox_s3_journal"


def put(key: str, etag: str = "e1", size: int = 1) -> dict:
    return {"op": "put", "bucket": "lake", "key": key, "size": size, "etag": etag, "headers": {}, "metadata": {}}


def write(path, changes: list[dict], tail: str = "") -> None:
    path.write_text("".join(json.dumps(c) + "\n" for c in changes) + tail)


def test_changes_come_back_oldest_first_across_files_set_aside(tmp_path):
    write(tmp_path / "changes.20.jsonl", [put("b")])
    write(tmp_path / "changes.3.jsonl", [put("a")])
    write(tmp_path / "changes.jsonl", [put("c")])
    assert [c["key"] for c in bucket_snapshot.journal_changes(tmp_path)] == ["a", "b", "c"]


def test_a_last_line_cut_off_is_left_out_and_one_in_the_middle_is_an_error(tmp_path):
    write(tmp_path / "changes.jsonl", [put("a")], tail='{"op": "put", "buck')
    assert [c["key"] for c in bucket_snapshot.journal_changes(tmp_path)] == ["a"]
    write(tmp_path / "changes.jsonl", [put("a")], tail='{"op": "put", "buck\n' + json.dumps(put("b")) + "\n")
    with pytest.raises(SandboxError, match="changes.jsonl:2 is not a journaled change"):
        bucket_snapshot.journal_changes(tmp_path)


def test_the_journal_over_a_snapshot_gives_the_last_write_of_each_key_and_nothing_deleted(tmp_path):
    saved = {("lake", k): (SavedObject("lake", k, 1, "old"), tmp_path) for k in ("kept", "rewritten", "deleted")}
    buckets = {"lake"}
    for change in [put("rewritten", "new"), {"op": "delete", "bucket": "lake", "key": "deleted"}, put("added"),
                   put("added-then-deleted"), {"op": "delete", "bucket": "lake", "key": "added-then-deleted"},
                   {"op": "create_bucket", "bucket": "gone"}, {**put("x"), "bucket": "gone"},
                   {"op": "delete_bucket", "bucket": "gone"}]:
        bucket_snapshot._apply(change, saved, buckets, tmp_path / "journal-blobs")
    assert {key: obj.etag for (_, key), (obj, _) in saved.items()} == {"kept": "old", "rewritten": "new", "added": "e1"}
    assert buckets == {"lake"}
    assert saved["lake", "added"][1] == tmp_path / "journal-blobs", "a journaled object's bytes are the journal's"


def test_a_clean_stop_drops_what_its_save_covers_and_keeps_what_came_after(tmp_path):
    (tmp_path / "blobs").mkdir()
    for blob in ("e1-1", "e2-1"):
        (tmp_path / "blobs" / blob).write_bytes(b"x")
    write(tmp_path / "changes.jsonl", [put("a", "e1")])
    covered = bucket_snapshot.set_journal_aside(tmp_path)
    assert not (tmp_path / "changes.jsonl").exists() and len(covered) == 1
    write(tmp_path / "changes.jsonl", [put("b", "e2")])  # written by the hook while the save ran
    bucket_snapshot.settle_journal(tmp_path, covered)
    assert [c["key"] for c in bucket_snapshot.journal_changes(tmp_path)] == ["b"]
    assert sorted(p.name for p in (tmp_path / "blobs").iterdir()) == ["e2-1"]


def test_the_journal_hands_what_it_writes_to_the_owner_it_is_given(tmp_path):
    """Under a rootful Docker engine LocalStack writes as root into a directory of the host's: the journal gives
    its directory of blobs, the journal file and each blob to the host account (`SANDBOX_S3_JOURNAL_OWNER`). Run in
    LocalStack's own interpreter, as the hook is."""
    python = install.localstack_venv(Settings.load()) / "bin" / "python"
    assert python.exists(), "LocalStack's virtualenv is installed by `make up` (make test does it first)"
    owner = (65534, 65534) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    script = ("import sys; from sandbox_s3_journal import Journal\n"
              "journal = Journal(sys.argv[1], sys.argv[2])\n"
              "journal.append({'op': 'create_bucket', 'bucket': 'lake'})\n"
              "journal.keep_bytes('e1-5', [b'hello'])\n")
    subprocess.run([str(python), "-c", script, str(tmp_path), f"{owner[0]}:{owner[1]}"], check=True, timeout=60,
                   env={**os.environ, "PYTHONPATH": str(JOURNAL_PACKAGE.parent)})
    for path in (tmp_path / "blobs", tmp_path / "changes.jsonl", tmp_path / "blobs" / "e1-5"):
        assert (path.stat().st_uid, path.stat().st_gid) == owner, path
    assert (tmp_path / "blobs" / "e1-5").read_bytes() == b"hello"
