"""Bad input fails fast with a message that names the cause, and touches no existing data."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import port_for
import pytest

from sandbox import jvm
from sandbox.backends import native
from sandbox.config import DEFAULT_PORTS
from sandbox.errors import SandboxError

pytestmark = pytest.mark.e2e


def scratch_sandbox_env(tmp_path, sandbox, **overrides) -> dict[str, str]:
    """Environment for a second sandbox in `tmp_path` on free ports, sharing the installed tools."""
    env = dict(os.environ, SANDBOX_STATE_DIR=str(tmp_path / "state"), SANDBOX_TOOLS_DIR=str(sandbox.tools_dir))
    for service in DEFAULT_PORTS:
        env[f"SANDBOX_{service.upper()}_PORT"] = str(port_for.select_random())
    env.update(overrides)
    return env


def run_up(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sandbox", "up", "--skip-install"], env=env,
                          capture_output=True, text=True, timeout=300)


def test_port_in_use_fails_fast_naming_port_and_process(tmp_path, sandbox):
    keep = tmp_path / "state" / "data" / "postgres" / "precious.txt"
    keep.parent.mkdir(parents=True)
    keep.write_text("loaded data")
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        result = run_up(scratch_sandbox_env(tmp_path, sandbox, SANDBOX_POSTGRES_PORT=str(port)))
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 1
    assert f"port {port} (postgres) is in use by pid {os.getpid()}" in output
    assert "SANDBOX_POSTGRES_PORT" in output, "the message says how to pick another port"
    assert keep.read_text() == "loaded data"
    assert not list((tmp_path / "state").glob("run/*.pid")), "nothing was started"


def test_port_held_by_the_running_sandbox_names_that_service(tmp_path, sandbox):
    kafka_pid = native.service(sandbox, "kafka").pid()
    env = scratch_sandbox_env(tmp_path, sandbox, SANDBOX_KAFKA_PORT=str(sandbox.ports["kafka"]))
    result = run_up(env)
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 1
    assert f"port {sandbox.ports['kafka']} (kafka) is in use by pid {kafka_pid}" in output
    assert native.service(sandbox, "kafka").is_ready(), "the running sandbox is untouched"


def test_missing_java_is_named(tmp_path, sandbox):
    env = scratch_sandbox_env(tmp_path, sandbox, PATH=os.path.dirname(sys.executable))
    env.pop("JAVA_HOME", None)
    result = run_up(env)
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 1
    assert "Java was not found" in output and "openjdk-17" in output
    assert not list((tmp_path / "state").glob("run/*.pid"))


def test_unresolvable_maven_artifact_is_named(tmp_path):
    with pytest.raises(SandboxError) as failure:
        jvm.resolve_jvm_artifacts(tmp_path / "jvm", overrides={"debezium.version": "0.0.0.NoSuchRelease"})
    message = str(failure.value)
    assert "io.debezium:debezium-connector-postgres:tar.gz:plugin:0.0.0.NoSuchRelease" in message
    assert not (tmp_path / "jvm").exists(), "a failed resolution leaves no half-filled layout"


def test_job_run_on_a_bucket_that_does_not_exist_says_so(sandbox):
    result = subprocess.run([sys.executable, "-m", "sandbox", "job", "run", "--lake", "s3a://no-such-bucket/x",
                             "--table", "category"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "no-such-bucket" in result.stdout and "does not have" in result.stdout, result.stdout
    assert f"s3a://{sandbox.topology.lake_bucket}/<prefix>" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
