"""The `sandbox` command follows the conventions people know from docker compose and the LocalStack CLI: a help line
on every command, `--version`, errors on stderr with a non-zero exit, `status --json` with an exit status that says
whether everything runs, and `env` in the variable names each service's own clients read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

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


# Commands that never read the project file: they write one, or list what the package ships.
NO_PROJECT_FILE = {"init", "scenario list"}


def test_every_command_given_a_project_file_whose_ddl_is_missing_says_so_on_one_line_and_exits_1(tmp_path):
    """Each command, run as a user runs it (a project file in the directory, its `ddl:` path wrong): the error and
    what to do on stderr, exit 1, never a traceback."""
    (tmp_path / "cdc-sandbox.yaml").write_text(
        "topic_prefix: shop\nsources:\n  postgres:\n    engine: postgres\n    database: shop\n"
        "    connector: shop-postgres\n    ddl: ddl/missing.sql\ntables:\n  accounts: {}\n")
    (tmp_path / "archive.tar.gz").write_bytes(b"")
    every = {name: command for name, command in commands(typer.main.get_command(app))
             if not isinstance(command, click.Group)}
    assert NO_PROJECT_FILE <= set(every)
    leaves = {name: command for name, command in every.items() if name not in NO_PROJECT_FILE}
    with ThreadPoolExecutor(4) as pool:  # each a process of its own, most of its time spent starting Python
        runs = dict(zip(leaves, pool.map(lambda item: cli(tmp_path, *item[0].split(), *_required_arguments(item[1])),
                                         leaves.items())))
    wrong = {}
    for name, done in runs.items():
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        if done.returncode != 1 or "Traceback" in done.stderr or len(errors) != 1 or "ddl/missing.sql" not in errors[0]:
            wrong[name] = (done.returncode, done.stderr[-600:])
    assert wrong == {}


def _required_arguments(command: click.Command) -> list[str]:
    """A value for each required argument, of a shape each command accepts before it reads the project file."""
    values = {"values": "{}", "key": "{}", "new_key": "{}", "archive_file": "archive.tar.gz", "file": "edge-values",
              "files": "edge-values"}
    return [values.get(param.name, "accounts") for param in command.params
            if isinstance(param, click.Argument) and param.required]


def test_hints_name_sandbox_commands_not_this_repositorys_makefile():
    """A team installs the package into its own repository, which has no Makefile of the sandbox's."""
    from cdc_sandbox.config import PACKAGE_DIR

    told = [f"{path.relative_to(PACKAGE_DIR)}:{number}" for path in PACKAGE_DIR.rglob("*.py")
            if "bench" not in path.parts
            for number, line in enumerate(path.read_text().splitlines(), 1)
            if re.search(r"`make (up|down|status|check|test|fuzz)`|=\S+ make up", line)]
    assert told == []
