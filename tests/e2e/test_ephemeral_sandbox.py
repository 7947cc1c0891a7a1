"""A user's own suite, outside this project, gets the plugin's fixtures through the entry point; with
`--sandbox=ephemeral` it runs against a sandbox of its own on free ports in a temporary directory, removed after."""

from __future__ import annotations

import json
import socket

import pytest

from sandbox.config import DEFAULT_PORTS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

pytest_plugins = ["pytester"]

USER_SUITE = '''
import json
from pathlib import Path


def test_a_users_suite_on_an_ephemeral_sandbox(sandbox, postgres_client, mysql_client, connect_client):
    Path("seen.json").write_text(json.dumps({"state_dir": str(sandbox.state_dir), "ports": sandbox.ports}))
    with postgres_client.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM ems.category")
        assert cur.fetchone()[0] > 0
    with mysql_client.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM ecomm.sale")
        assert cur.fetchone()[0] > 0
    for name in connect_client.connectors():
        assert connect_client.status(name)["connector"]["state"] == "RUNNING"
'''


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_ephemeral_sandbox_for_a_users_suite(pytester, sandbox_settings):
    pytester.makepyfile(test_users_suite=USER_SUITE)
    result = pytester.runpytest_subprocess("--sandbox=ephemeral", "-p", "no:cacheprovider", "-q",
                                           "--sandbox-summary=summary.txt", timeout=900)
    assert result.ret == 0, result.stdout.str()[-3000:]
    seen = json.loads((pytester.path / "seen.json").read_text())
    assert seen["state_dir"] != str(sandbox_settings.state_dir)
    assert not set(seen["ports"].values()) & set(DEFAULT_PORTS.values()), "free ports, not the defaults"
    assert [port for port in seen["ports"].values() if listening(port)] == [], "stopped after the session"
