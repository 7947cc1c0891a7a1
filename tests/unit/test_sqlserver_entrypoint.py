"""cdc_sandbox/compose/sqlserver/entrypoint.sh run for real, in a mount namespace whose /opt holds the image's layout with a
stand-in sqlservr and sqlcmd: it finds whichever sqlcmd the image ships, and hands `docker stop`'s SIGTERM on."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess

import pytest

from cdc_sandbox.config import PACKAGE_DIR
from cdc_sandbox.wait import wait_until

ENTRYPOINT = PACKAGE_DIR / "compose" / "sqlserver" / "entrypoint.sh"
SERVER = """#!/bin/bash
trap 'echo "stopped by TERM" > "$MARKS/server"; exit 0' TERM
echo started > "$MARKS/server"
while true; do sleep 0.1; done
"""
SQLCMD = """#!/bin/bash
echo "$*" >> "$MARKS/sqlcmd"
echo 1
"""

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                                reason="a private /opt needs root and unshare")


def start(tmp_path, tools: str) -> subprocess.Popen:
    opt = tmp_path / "opt"
    for path, text in (("mssql/bin/sqlservr", SERVER), (f"{tools}/bin/sqlcmd", SQLCMD)):
        (opt / path).parent.mkdir(parents=True, exist_ok=True)
        (opt / path).write_text(text)
        (opt / path).chmod(0o755)
    (tmp_path / "marks").mkdir()
    script = f"mount --bind {opt} /opt && exec bash {ENTRYPOINT}"
    env = {**os.environ, "MARKS": str(tmp_path / "marks"), "MSSQL_SA_PASSWORD": "x"}
    return subprocess.Popen(["unshare", "--mount", "--propagation", "private", "bash", "-c", script], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def wait_for(path, until: str = "", timeout: float = 20) -> str:
    def held() -> str | None:
        text = path.read_text() if path.exists() else ""
        return text if text.strip() and until in text else None

    return wait_until(held, timeout, f"{path} to hold {until!r}", interval=0.1)


@pytest.mark.parametrize("tools", ["mssql-tools18", "mssql-tools"])
def test_the_entrypoint_uses_the_sqlcmd_the_image_has_and_forwards_sigterm_to_the_server(tmp_path, tools):
    entrypoint = start(tmp_path, tools)
    try:
        assert "started" in wait_for(tmp_path / "marks" / "server")
        assert "init.sql" in wait_for(tmp_path / "marks" / "sqlcmd", until="init.sql")  # the trap is set by now
        entrypoint.send_signal(signal.SIGTERM)
        assert entrypoint.wait(timeout=20) == 0, entrypoint.stdout.read()
    finally:
        with contextlib.suppress(ProcessLookupError):  # the stand-in server too, if the test failed half-way
            os.killpg(entrypoint.pid, signal.SIGKILL)
    assert (tmp_path / "marks" / "server").read_text().strip() == "stopped by TERM"


def test_without_sqlcmd_the_entrypoint_says_where_it_looked(tmp_path):
    entrypoint = start(tmp_path, "elsewhere")
    output, _ = entrypoint.communicate(timeout=20)
    assert entrypoint.returncode == 1
    assert "no sqlcmd in /opt/mssql-tools18/bin or /opt/mssql-tools/bin" in output
