"""The `sandbox` command follows the conventions people know from docker compose and the LocalStack CLI: a help line
on every command, `--version`, errors on stderr with a non-zero exit, `status --json` with an exit status that says
whether everything runs, and `env` in the variable names each service's own clients read."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import typer.main

from cdc_sandbox.cli import app
from cdc_sandbox.config import Settings
from cdc_sandbox.stack.connection_env import connection_env


def cli(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SANDBOX_STATE_DIR": str(tmp_path / "state"), "SANDBOX_BACKEND": "native"}
    env.pop("SANDBOX_PROJECT", None)
    return subprocess.run([sys.executable, "-m", "cdc_sandbox", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=tmp_path)


def commands(group: click.Group, prefix: str = ""):
    for name, command in group.commands.items():
        yield f"{prefix}{name}", command
        if isinstance(command, click.Group):
            yield from commands(command, f"{prefix}{name} ")


def test_every_command_has_a_help_line():
    missing = [name for name, command in commands(typer.main.get_command(app)) if not command.get_short_help_str()]
    assert missing == []


def test_version_and_errors_on_stderr(tmp_path):
    version = cli(tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.startswith("cdc-sandbox ")
    wrong = cli(tmp_path, "restart", "nosuch")
    assert wrong.returncode == 1 and wrong.stdout == ""
    assert "no service named nosuch" in wrong.stderr and "choose among: postgres" in wrong.stderr


def test_status_json_of_a_sandbox_not_started_exits_non_zero(tmp_path):
    shown = cli(tmp_path, "status", "--json")
    assert shown.returncode == 1, shown.stderr
    status = json.loads(shown.stdout)
    assert {s["service"]: s["state"] for s in status["services"]}["kafka"] == "stopped"
    assert [c["state"] for c in status["connectors"]] == ["-"] * len(status["connectors"])


def test_env_names_the_clients_own_variables_and_no_sandbox_override(tmp_path):
    settings = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path), "SANDBOX_BACKEND": "native",
                              "SANDBOX_KAFKA_PORT": "19092"})
    values = connection_env(settings)
    assert values["KAFKA_BOOTSTRAP_SERVERS"] == "127.0.0.1:19092"
    assert {"PGHOST", "PGPORT", "PGPASSWORD", "MYSQL_TCP_PORT", "MYSQL_PWD", "AWS_ENDPOINT_URL"} <= values.keys()
    assert not [name for name in values if name.startswith("SANDBOX_")], "the sandbox reads those as overrides"
    printed = cli(tmp_path, "env").stdout.splitlines()
    assert all(line.startswith("export ") for line in printed) and len(printed) == len(values)
