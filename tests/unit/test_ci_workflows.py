"""The CI workflows a team copies (.github/workflows/), checked here without GitHub: actionlint (built from its Go
module into the user's cache, once per machine) and what each must do."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from sandbox.config import PROJECT_ROOT, user_cache_dir

WORKFLOWS = PROJECT_ROOT / ".github" / "workflows"
ACTIONLINT = "github.com/rhysd/actionlint/cmd/actionlint"
ACTIONLINT_VERSION = "v1.7.12"


@pytest.fixture(scope="session")
def actionlint() -> Path:
    binary = user_cache_dir(dict(os.environ)) / f"actionlint-{ACTIONLINT_VERSION}" / "actionlint"
    if not binary.exists():
        go = shutil.which("go")
        assert go, "Go is needed to build actionlint: install Go 1.21 or later"
        subprocess.run([go, "install", f"{ACTIONLINT}@{ACTIONLINT_VERSION}"], check=True, timeout=600,
                       env={**os.environ, "GOBIN": str(binary.parent)})
    return binary


def workflow(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def test_actionlint_finds_nothing_in_the_workflows(actionlint):
    result = subprocess.run([str(actionlint), *sorted(str(p) for p in WORKFLOWS.glob("*.yml"))],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name, backend", [("native.yml", "native"), ("compose.yml", "compose")])
def test_each_workflow_runs_the_ci_entry_point_on_its_backend_and_keeps_the_reports(name, backend):
    steps = workflow(name)["jobs"]["test"]["steps"]
    job_env = workflow(name)["jobs"]["test"].get("env", {})
    run = next(step for step in steps if "bash .ci/run" in step.get("run", ""))
    assert {**job_env, **run.get("env", {})}["SANDBOX_BACKEND"] == backend
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "always()" and upload["with"]["path"] == "reports/"
    caches = [step["with"] for step in steps if step.get("uses", "").startswith(("actions/setup-python",
                                                                                   "actions/setup-java"))]
    assert {c.get("cache") for c in caches} == {"pip", "maven"}
    assert any(step.get("with", {}).get("path") == "~/.cache/cdc-sandbox" for step in steps)


def test_the_compose_workflow_saves_every_image_the_compose_file_names():
    steps = workflow("compose.yml")["jobs"]["test"]["steps"]
    cache = next(step for step in steps if step.get("id") == "images")
    assert "hashFiles('compose/docker-compose.yml')" in cache["with"]["key"]
    pull = next(step for step in steps if "docker save" in step.get("run", ""))
    listed = subprocess.run(["bash", "-c", "awk '$1 == \"image:\" {print $2}' compose/docker-compose.yml"],
                            capture_output=True, text=True, cwd=PROJECT_ROOT, check=True).stdout.split()
    compose = yaml.safe_load((PROJECT_ROOT / "compose" / "docker-compose.yml").read_text())
    assert sorted(listed) == sorted(s["image"] for s in compose["services"].values() if "image" in s)
    assert "awk '$1 == \"image:\" {print $2}' compose/docker-compose.yml" in pull["run"]
