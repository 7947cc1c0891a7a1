"""Fixtures shared by the job suites."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from contextlib import contextmanager

import pytest

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.checking.oracle import Oracle, RunStats
from cdc_sandbox.harness.running.lakes_for_tests import finish, pipeline_on_new_lake
from cdc_sandbox.sources.changes import ChangeReader
from cdc_sandbox.sources.mutations import Mutator
from cdc_sandbox.stack import connectors
from tests import PROJECT_ROOT

EVENT_TIMEOUT = 180
TEAM_PROJECT = PROJECT_ROOT / "examples" / "team_project"


@pytest.fixture(scope="session", autouse=True)
def tickit_loaded_first(request):
    """TICKIT is loaded before the session's first test when any test needs it, not by the first that does:
    Debezium then streams the load (430,000 rows, most of a minute on 2 cores) while the tests that need no data
    run (tests/e2e/test_bad_input.py comes first), instead of while a test waits for its first change."""
    if any("cdc_tickit_loaded" in item.fixturenames for item in request.session.items):
        request.getfixturevalue("cdc_tickit_loaded")


@pytest.fixture
def settle(sandbox, mutator, kafka_bootstrap, registry):
    """Change one row of each table and wait until Debezium has put that change in Kafka: everything before it in
    the table is then in Kafka too (one partition per topic, in source order)."""

    def settle_tables(tables: list[str]) -> list:
        changes = []
        for table in tables:
            captured = sandbox.topology.table(table)
            with ChangeReader(kafka_bootstrap, sandbox.topology.topic(captured.namespace, table), registry,
                              from_end=True) as reader:
                change = mutator.touch(table)
                reader.wait_for(lambda e: e.value is not None and change.produced_by(e.value, e.key, "u"),
                                EVENT_TIMEOUT, f"journal entry {change.seq} in Kafka")
            changes.append(change)
        return changes

    return settle_tables


def project_settings(sandbox: Settings, directory) -> Settings:
    """The settings of the project in `directory` on this session's stack."""
    return Settings.load(dict(os.environ, SANDBOX_STATE_DIR=str(sandbox.state_dir), SANDBOX_PROJECT=str(directory)))


@contextmanager
def job_on_a_new_lake(request, settings: Settings, spark, only: list[str] | None = None, **options):
    """The job (with `options`) on a new lake of the project's tables (`only` some), the history of their topics
    written; with a mutator and an oracle of its own. The lake goes afterwards."""
    pipeline = pipeline_on_new_lake(settings, spark, None, only=only, **options)
    try:
        pipeline.run_once()
        mutator = Mutator(settings)
        yield pipeline, mutator, Oracle(settings, pipeline, mutator,
                                        timeout=request.config.getoption("--oracle-timeout"), stats=RunStats())
    finally:
        finish([pipeline], failed=False)


def stop_connectors(sandbox: Settings, directory) -> None:
    """Stop the connectors of a project a test brought up beside TICKIT, once the test is done with them: an idle
    connector still polls its source many times a second, which the rest of the run would pay for. (A project file
    that does not load, as the bad-input tests write, registered none.)"""
    try:
        settings = project_settings(sandbox, directory)
    except SandboxError:
        return
    connectors.stop_all(settings)


def sandbox_cli(directory, env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc_sandbox", *args], cwd=directory, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def team_dir(sandbox: Settings, tmp_path_factory):
    """The example team project copied outside the checkout, brought up and loaded through the CLI from there (its
    tables and topics its own, beside TICKIT's); its connectors stopped after the module."""
    directory = tmp_path_factory.mktemp("team") / "shop"
    shutil.copytree(TEAM_PROJECT, directory)
    env = {k: v for k, v in os.environ.items() if k != "SANDBOX_PROJECT"}
    env["SANDBOX_STATE_DIR"] = str(sandbox.state_dir)
    for command in (["up", "--skip-install"], ["load"]):
        done = sandbox_cli(directory, env, *command)
        assert done.returncode == 0, f"sandbox {' '.join(command)}:\n{done.stdout}\n{done.stderr}"
    yield directory
    stop_connectors(sandbox, directory)


@pytest.fixture(scope="module")
def team(team_dir, sandbox: Settings) -> Settings:
    """The team project's settings on this session's stack."""
    return project_settings(sandbox, team_dir)
