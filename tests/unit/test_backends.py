"""Both backends implement the one `Backend` protocol the CLI, the plugin and the tests use; a taken port is named
before anything starts."""

from __future__ import annotations

import inspect
import os
import socket

import pytest

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import backends
from cdc_sandbox.stack.backends import Backend, compose, native

PROTOCOL = [name for name, member in vars(Backend).items() if inspect.isfunction(member) and not name.startswith("_")]


@pytest.mark.parametrize("module", [native, compose], ids=["native", "compose"])
def test_each_backend_implements_every_protocol_method_with_its_signature(module):
    assert set(PROTOCOL) >= {"up", "down", "reset", "status", "logs", "instances", "kill"}
    for name in PROTOCOL:
        wanted = [p for p in inspect.signature(getattr(Backend, name)).parameters if p != "self"]
        assert list(inspect.signature(getattr(module, name)).parameters) == wanted, f"{module.__name__}.{name}"


@pytest.mark.parametrize("backend", ["native", "compose"])
def test_the_recorded_backend_picks_its_module(tmp_path, backend):
    settings = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path), "SANDBOX_BACKEND": backend})
    assert backends.of(settings) is {"native": native, "compose": compose}[backend]


def test_a_taken_port_is_named_with_its_process_and_the_variable_to_change():
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        with pytest.raises(SandboxError) as raised:
            native.check_free({"kafka": [port], "postgres": []})
    assert f"port {port} (kafka) is in use by pid {os.getpid()}" in raised.value.message
    assert "SANDBOX_KAFKA_PORT=<free port>" in raised.value.hint


def test_free_ports_pass():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    native.check_free({"kafka": [port]})


def test_the_compose_process_user_is_the_uid_column_of_the_first_process():
    top = ("sandbox-mysql-1\nUID   PID    PPID   C  STIME  TTY  TIME      CMD\n"
           "999   41230  41208  1  15:02  ?    00:00:03  mysqld\n")
    assert compose.first_process_user(top) == "999"
    with pytest.raises(SandboxError, match="listed no process"):
        compose.first_process_user("sandbox-mysql-1\n")
