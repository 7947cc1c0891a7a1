"""A user's own suite, outside this project, gets the plugin's fixtures through the entry point; with
`--sandbox=ephemeral` it runs against a sandbox of its own on free ports in a temporary directory, removed after,
and removed later by `sandbox status` (or the next ephemeral session) when the session was killed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_sandbox.config import DEFAULT_PORTS
from cdc_sandbox.stack import orphans
from cdc_sandbox.wait import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

pytest_plugins = ["pytester"]

USER_SUITE = '''
import json
from pathlib import Path

from cdc_sandbox.tickit_data import scaled_row_counts

LOADED = scaled_row_counts(0.01)  # --sandbox-tickit-scale=0.01


def test_a_users_suite_on_an_ephemeral_sandbox(sandbox, postgres_client, mysql_client, connect_client):
    Path("seen.json").write_text(json.dumps({"state_dir": str(sandbox.state_dir), "ports": sandbox.ports}))
    with postgres_client.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM ems.category")
        assert cur.fetchone()[0] == LOADED["category"] > 0
    with mysql_client.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM ecomm.sale")
        assert cur.fetchone()[0] == LOADED["sale"] > 0
    for name in connect_client.connectors():
        assert connect_client.status(name)["connector"]["state"] == "RUNNING"


def test_its_lake_is_its_own(s3, lake_bucket):
    """Beside the project's sandbox, with the same bucket name: it sees none of that lake's objects."""
    s3.put_object(Bucket=lake_bucket, Key="_isolation/ephemeral", Body=b"e" * 600 * 1024)  # beyond LocalStack's memory
    seen = [o["Key"] for o in s3.list_objects_v2(Bucket=lake_bucket, Prefix="_isolation/").get("Contents", [])]
    Path("lake.json").write_text(json.dumps(seen))
'''


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def pytester(pytester, sandbox_settings, monkeypatch):
    """pytester gives its sessions a HOME of their own: the installed tools are found through the variable."""
    monkeypatch.setenv("SANDBOX_TOOLS_DIR", str(sandbox_settings.tools_dir))
    return pytester


# Where every LocalStack kept S3's objects before each sandbox had its own: a file there makes that path unusable,
# also for root, as another account's directory was for an ordinary user.
SHARED_S3_STORAGE = Path("/tmp/localstack-s3-storage")


@pytest.fixture
def shared_s3_storage_unusable():
    if SHARED_S3_STORAGE.exists():
        yield
        return
    SHARED_S3_STORAGE.write_text("not a directory: no sandbox may keep its lake here\n")
    try:
        yield
    finally:
        SHARED_S3_STORAGE.unlink()


def clear_isolation_marks(s3, bucket: str) -> None:
    for found in s3.list_objects_v2(Bucket=bucket, Prefix="_isolation/").get("Contents", []):
        s3.delete_object(Bucket=bucket, Key=found["Key"])


def test_ephemeral_sandbox_for_a_users_suite(pytester, sandbox_settings, s3, lake_bucket, shared_s3_storage_unusable):
    clear_isolation_marks(s3, lake_bucket)  # an earlier run on this stack that was cut short may have left one
    s3.put_object(Bucket=lake_bucket, Key="_isolation/project", Body=b"p")
    try:
        pytester.makepyfile(test_users_suite=USER_SUITE)
        result = pytester.runpytest_subprocess("--sandbox=ephemeral", "--sandbox-tickit-scale=0.01", "-p",
                                               "no:cacheprovider", "-q", "--sandbox-summary=summary.txt", timeout=900)
        assert result.ret == 0, result.stdout.str()[-3000:]
        mine = [o["Key"] for o in s3.list_objects_v2(Bucket=lake_bucket, Prefix="_isolation/").get("Contents", [])]
    finally:
        clear_isolation_marks(s3, lake_bucket)
    assert json.loads((pytester.path / "lake.json").read_text()) == ["_isolation/ephemeral"]
    assert mine == ["_isolation/project"]
    seen = json.loads((pytester.path / "seen.json").read_text())
    assert seen["state_dir"] != str(sandbox_settings.state_dir)
    assert not set(seen["ports"].values()) & set(DEFAULT_PORTS.values()), "free ports, not the defaults"
    assert [port for port in seen["ports"].values() if listening(port)] == [], "stopped after the session"


LOADING_SUITE = '''
def test_needs_tickit(tickit_loaded):
    pass
'''


def test_a_tickit_scale_is_refused_for_the_sandbox_a_session_attaches_to(pytester):
    """It would shrink the project's tables: the session stops before loading anything."""
    pytester.makepyfile(test_users_suite=LOADING_SUITE)
    result = pytester.runpytest_subprocess("--sandbox-tickit-scale=0.01", "-p", "no:cacheprovider", "-q",
                                           "--sandbox-summary=summary.txt", timeout=300)
    assert result.ret != 0
    assert "use it with --sandbox=ephemeral" in result.stdout.str() + result.stderr.str()


HOLDING_SUITE = '''
import json
import threading
from pathlib import Path


def test_holds_its_ephemeral_sandbox_until_killed(sandbox):
    Path("seen.json").write_text(json.dumps({"ports": sandbox.ports}))
    threading.Event().wait()  # never set: the outer test kills this session here
'''


def test_a_session_killed_during_up_leaves_no_sandbox_running(pytester):
    """Killed as soon as its first service answers, while the others still start: nothing of it runs on."""
    pytester.makepyfile(test_holding=HOLDING_SUITE)
    session = subprocess.Popen([sys.executable, "-m", "pytest", "--sandbox=ephemeral", "-p", "no:cacheprovider",
                                "-q", "test_holding.py"], cwd=pytester.path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        state_dir = wait_until(lambda: first_service_up(session.pid) or session.poll() is not None, 600,
                               "the session's first ephemeral service to answer")
        assert session.poll() is None, "the session ended before it could be killed"
    finally:
        session.kill()
        session.wait()
    assert not (pytester.path / "seen.json").exists(), "killed during `up`, not after it"
    assert orphans.servers_in(state_dir), "the dead session's services run on"
    shown = subprocess.run([sys.executable, "-m", "cdc_sandbox", "status"], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "COLUMNS": "400"})
    assert f"stopped an ephemeral sandbox left by dead pytest session {session.pid}" in shown.stdout, shown.stdout
    assert orphans.servers_in(state_dir) == [], "nothing of it runs after `sandbox status`"
    ports = json.loads((state_dir / "ports.json").read_text())
    assert [port for port in ports.values() if listening(port)] == []


def first_service_up(owner_pid: int) -> Path | None:
    """The state directory of the ephemeral sandbox `owner_pid` registered, once one of its services has a pid
    file (it answered its readiness check)."""
    for entry in orphans.registry().glob("*.json"):
        recorded = json.loads(entry.read_text())
        state_dir = Path(recorded["state_dir"])
        if recorded["owner"]["pid"] == owner_pid and any((state_dir / "run").glob("*.pid")):
            return state_dir
    return None
