"""Which backend `sandbox up` uses, and that asking for compose without a Docker engine touches nothing.

An engine is made unreachable for sure by pointing DOCKER_HOST at a socket that does not exist, so these tests
mean the same on a machine with Docker.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack.backends.select import choose, docker_engine

SANDBOX = Path(sys.executable).parent / "sandbox"


@pytest.fixture
def no_engine(tmp_path) -> dict[str, str]:
    return {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock",
            "SANDBOX_STATE_DIR": str(tmp_path / "state")}


def without(env: dict[str, str], *names: str) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in names}


def test_without_an_engine_native_is_chosen_and_the_reason_given(no_engine):
    choice = choose(Settings.load(without(no_engine, "SANDBOX_BACKEND")))
    assert choice.backend == "native"
    assert "no Docker engine reachable" in choice.reason and "no-docker.sock" in choice.reason


def test_the_automatic_choice_follows_this_machines_engine(tmp_path):
    env = without({**os.environ, "SANDBOX_STATE_DIR": str(tmp_path)}, "SANDBOX_BACKEND")
    engine = docker_engine(env)
    choice = choose(Settings.load(env))
    assert choice.backend == ("compose" if engine.reachable else "native")
    assert engine.detail in choice.reason


def test_sandbox_backend_native_needs_no_engine(no_engine):
    choice = choose(Settings.load({**no_engine, "SANDBOX_BACKEND": "native"}))
    assert choice.backend == "native" and choice.reason == "SANDBOX_BACKEND=native"


def test_sandbox_backend_compose_without_an_engine_says_what_to_do(no_engine):
    with pytest.raises(SandboxError, match="needs a Docker engine") as error:
        choose(Settings.load({**no_engine, "SANDBOX_BACKEND": "compose"}))
    assert "SANDBOX_BACKEND=native" in error.value.hint and "start Docker" in error.value.hint


def test_an_unknown_backend_is_refused(no_engine):
    with pytest.raises(SandboxError, match="'docker'"):
        Settings.load({**no_engine, "SANDBOX_BACKEND": "docker"})


def test_the_recorded_backend_is_used_by_later_commands(no_engine):
    settings = Settings.load(without(no_engine, "SANDBOX_BACKEND"), backend="native")
    settings.record_backend()
    again = Settings.load(without(no_engine, "SANDBOX_BACKEND"))
    assert again.backend == "native" and "recorded" in choose(again).reason


def test_the_compose_topology_puts_user_in_sql_server(no_engine):
    native = Settings.load({**no_engine, "SANDBOX_BACKEND": "native"})
    compose = Settings.load({**no_engine, "SANDBOX_BACKEND": "compose"})
    assert native.topology.table("user").stand_in and native.topology.table("user").source == "postgres"
    assert compose.topology.table("user").source == "mssql" and not compose.topology.table("user").stand_in


def snapshot(directory: Path) -> list[tuple[str, int, int]]:
    if not directory.exists():
        return []
    return sorted((str(p.relative_to(directory)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in [directory, *directory.rglob("*")])


def run_sandbox(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SANDBOX), *args], env={**env, "COLUMNS": "200"}, capture_output=True, text=True,
                          timeout=120)


def test_cli_up_with_compose_and_no_engine_fails_and_creates_nothing(no_engine):
    state = Path(no_engine["SANDBOX_STATE_DIR"])
    result = run_sandbox({**no_engine, "SANDBOX_BACKEND": "compose"}, "up")
    assert result.returncode != 0
    assert "the compose backend needs a Docker engine" in result.stderr
    assert "SANDBOX_BACKEND=native" in result.stderr
    assert not state.exists()


def test_cli_up_with_compose_and_no_engine_leaves_an_existing_sandbox_as_it_was(no_engine):
    state = Path(no_engine["SANDBOX_STATE_DIR"])
    Settings.load(no_engine, backend="native").record_ports()
    (state / "journal.jsonl").write_text("{}\n")
    before = snapshot(state)
    result = run_sandbox({**no_engine, "SANDBOX_BACKEND": "compose"}, "up")
    assert result.returncode != 0 and snapshot(state) == before


def test_cli_up_says_it_uses_native_and_why(no_engine):
    """Stopped before it starts anything: a port it needs is held here, which `sandbox up` checks first."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = {**without(no_engine, "SANDBOX_BACKEND"), "SANDBOX_POSTGRES_PORT": str(port)}
        result = run_sandbox(env, "up", "--skip-install")
    assert "native backend (no Docker engine reachable:" in result.stdout
    assert result.returncode != 0 and f"port {port}" in result.stderr
    assert not Path(no_engine["SANDBOX_STATE_DIR"]).exists()


def test_job_run_with_an_unknown_table_names_the_tables_to_choose_from(no_engine):
    result = run_sandbox(no_engine, "job", "run", "--table", "sales")
    assert result.returncode == 1
    assert "unknown table sales" in result.stderr and "category" in result.stderr and "sale" in result.stderr
