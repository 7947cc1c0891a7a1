"""The second example project, MoMA's collection (examples/moma), beside TICKIT on the session's stack: artists in
MariaDB partitioned by a nationality that is often missing, artworks in Postgres on Merge-on-Read partitioned by
department, with wide decimals, a JSON list and dates as free text. Rounds of every kind of change and the
project's scenario, every commit checked through both readers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cdc_sandbox.config import Settings
from cdc_sandbox.harness.driving import scenario as scenarios
from cdc_sandbox.harness.running.lakes_for_tests import finish, pipeline_on_new_lake
from cdc_sandbox.harness.checking.oracle import Oracle, RunStats
from cdc_sandbox.sources.mutations import Mutator
from tests import PROJECT_ROOT
from tests.e2e.conftest import stop_connectors

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MOMA = PROJECT_ROOT / "examples" / "moma"
TABLES = ["artists", "artworks"]


@pytest.fixture(scope="module")
def moma(sandbox: Settings) -> Settings:
    env = dict(os.environ, SANDBOX_STATE_DIR=str(sandbox.state_dir), SANDBOX_PROJECT=str(MOMA))
    for command in (["up", "--skip-install"], ["load"]):
        done = subprocess.run([sys.executable, "-m", "cdc_sandbox", *command], env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"sandbox {' '.join(command)}:\n{done.stdout}\n{done.stderr}"
    yield Settings.load(env)
    stop_connectors(sandbox, MOMA)


@pytest.fixture(scope="module")
def moma_pipeline(request, moma, spark):
    """One pipeline over both tables for the module (its first run reads the sample's snapshot)."""
    pipeline = pipeline_on_new_lake(moma, spark, None)
    pipeline.run_once()
    yield pipeline
    finish([pipeline], request.session.testsfailed > 0)


@pytest.fixture
def moma_oracle(request, moma, moma_pipeline):
    return Oracle(moma, moma_pipeline, Mutator(moma), timeout=request.config.getoption("--oracle-timeout"),
                  stats=RunStats())


def test_the_collection_in_silver_then_rounds_of_changes(moma_oracle):
    oracle, mutator = moma_oracle, moma_oracle.mutator
    oracle.track(TABLES, label="the sample")
    for seed in (11, 12):
        changes = mutator.random_batch(16, seed=seed, tables=TABLES)
        assert {c.kind for c in changes} == {"insert", "update", "delete"}
        oracle.round(f"seed {seed}")
    oracle.verify_history()


def test_the_projects_scenario(sandbox, moma_oracle, monkeypatch):
    monkeypatch.setenv("SANDBOX_PROJECT", str(MOMA))  # the project scenarios read their tables from
    monkeypatch.setenv("SANDBOX_STATE_DIR", str(sandbox.state_dir))  # on the session's stack
    spec = scenarios.load(MOMA / "scenarios" / "artwork-transferred.yaml")
    scenarios.run(spec, moma_oracle.pipeline, moma_oracle.mutator, moma_oracle)
