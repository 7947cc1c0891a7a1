"""The package as a team installs it: the wheel built from this tree goes into a virtualenv outside the checkout that
already holds the newest pytest and boto3. There, `sandbox init` writes the starter into an empty directory;
`sandbox --version` answers; `sandbox up` and `sandbox load` create the starter's table on the session's running
sandbox, which `sandbox status --json` then shows running with the starter's connector; and `pytest` in that directory passes the starter's
oracle round. Nothing is written into the installed package or beside the project's own files but its state directory
and reports, and no DeprecationWarning of a dependency shows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import PROJECT_ROOT
from tests.e2e.conftest import stop_connectors

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

UV = Path(sys.executable).parent / "uv"  # the checkout's own (make venv installs it)
WRITTEN_BY_INIT = {"cdc-sandbox.yaml", "ddl", "tests", ".github", ".gitignore"}
WRITTEN_BY_RUNS = {".sandbox", "reports", ".pytest_cache"}  # state, the plugin's reports, pytest's own cache


def run(command: list, **options) -> str:
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=900, **options)
    assert done.returncode == 0, f"{' '.join(map(str, command))}:\n{done.stdout[-6000:]}\n{done.stderr[-4000:]}"
    return done.stdout + done.stderr


def installed_versions(python: Path, *names: str) -> dict[str, str]:
    probe = ("import json, sys; from importlib.metadata import version; "
             "print(json.dumps({name: version(name) for name in sys.argv[1:]}))")
    return json.loads(run([python, "-c", probe, *names]).strip().splitlines()[-1])


def files_under(root: Path) -> dict[str, int]:
    """Every file below `root` with its modification time (Python's bytecode caches aside)."""
    return {str(path.relative_to(root)): path.stat().st_mtime_ns for path in root.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts}


@pytest.fixture(scope="module")
def team_venv(tmp_path_factory) -> Path:
    """A virtualenv outside the checkout with the newest pytest and boto3, then the wheel built from this tree."""
    root = tmp_path_factory.mktemp("team")
    run([UV, "build", "-q", "-o", root / "dist", PROJECT_ROOT])  # the wheel from the source archive, as PyPI would
    venv = root / "venv"
    run([UV, "venv", "-q", "--seed", "--python", sys.executable, venv])
    python = venv / "bin" / "python"
    run([UV, "pip", "install", "-q", "--python", python, "pytest", "boto3"])
    newest = installed_versions(python, "pytest", "boto3")
    run([UV, "pip", "install", "-q", "--python", python, *(root / "dist").glob("*.whl")])
    assert installed_versions(python, "pytest", "boto3") == newest, "the package's ranges replaced the team's versions"
    run([python, "-m", "pip", "check"])
    return venv


def test_the_installed_package_runs_the_starter_project(sandbox, team_venv, tmp_path):
    project = tmp_path / "orders-service"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SANDBOX_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(SANDBOX_STATE_DIR=str(sandbox.state_dir), PATH=f"{team_venv / 'bin'}:{env['PATH']}")
    command = team_venv / "bin" / "sandbox"
    installed = files_under(team_venv)

    assert "written" in run([command, "init", project], env=env, cwd=tmp_path)
    assert run([command, "--version"], env=env, cwd=project).startswith("cdc-sandbox ")
    for step in (["up", "--skip-install"], ["load"]):
        run([command, *step], env=env, cwd=project)
    status = json.loads(run([command, "status", "--json"], env=env, cwd=project))
    down = [service for service in status["services"] if service["state"] != "running"]
    assert status["services"] and not down and status["connectors"][0]["state"] == "RUNNING", status
    try:
        output = run([team_venv / "bin" / "pytest", "tests"], env=env, cwd=project)
        catalogue = run([command, "catalogue", "-k", "same-transaction or sqlserver-one"], env=env, cwd=project)
    finally:
        stop_connectors(sandbox, project)

    report = (project / "reports" / "catalogue.md").read_text()  # the starter's one table plays the incidents'
    assert "| passed | three updates to one key in one transaction" in report and "category → orders" in report, \
        catalogue
    assert "| not applicable | SQL Server changes that share one commit LSN" in report, report

    assert "1 passed" in output and "tables checked: orders" in output, output
    assert "DeprecationWarning" not in output, output
    assert files_under(team_venv) == installed, "the run wrote into the virtualenv"
    assert {path.name for path in project.iterdir()} <= WRITTEN_BY_INIT | WRITTEN_BY_RUNS
    assert sorted(path.name for path in tmp_path.iterdir()) == [project.name]
