"""The CI files a team copies (.github/workflows/ and .gitlab-ci.yml), checked here without GitHub or GitLab:
by actionlint and gitlab-ci-local (tests/ci_linters.py), and for what each run must do."""

from __future__ import annotations

import shutil
import subprocess
from fnmatch import fnmatch
from pathlib import Path

import pytest
import yaml

from cdc_sandbox import starter
from cdc_sandbox.config import PACKAGE_DIR, user_cache_dir
from tests import PROJECT_ROOT, ci_linters, full_suite

WORKFLOWS = PROJECT_ROOT / ".github" / "workflows"


@pytest.fixture(scope="session")
def actionlint() -> Path:
    return ci_linters.actionlint()


@pytest.fixture(scope="session")
def gitlab_ci_local() -> Path:
    return ci_linters.gitlab_ci_local()


def workflow(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def test_actionlint_finds_nothing_in_the_workflows(actionlint, tmp_path):
    starter.init(tmp_path)  # the workflow `sandbox init` gives a team
    result = subprocess.run([str(actionlint), *sorted(str(p) for p in WORKFLOWS.glob("*.yml")),
                             str(tmp_path / ".github" / "workflows" / "cdc-sandbox.yml")],
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
    assert any(step.get("with", {}).get("path") == "~/.cache/uv" for step in steps), "make venv installs with uv"


def test_the_compose_workflow_saves_every_image_the_compose_file_names():
    steps = workflow("compose.yml")["jobs"]["test"]["steps"]
    cache = next(step for step in steps if step.get("id") == "images")
    assert "hashFiles('cdc_sandbox/compose/docker-compose.yml')" in cache["with"]["key"]
    pull = next(step for step in steps if "docker save" in step.get("run", ""))
    listed = subprocess.run(["bash", "-c", "awk '$1 == \"image:\" {print $2}' cdc_sandbox/compose/docker-compose.yml"],
                            capture_output=True, text=True, cwd=PROJECT_ROOT, check=True).stdout.split()
    compose = yaml.safe_load((PACKAGE_DIR / "compose" / "docker-compose.yml").read_text())
    assert sorted(listed) == sorted(s["image"] for s in compose["services"].values() if "image" in s)
    assert "awk '$1 == \"image:\" {print $2}' cdc_sandbox/compose/docker-compose.yml" in pull["run"]


def test_gitlab_ci_local_validates_the_gitlab_file_and_lists_both_jobs(gitlab_ci_local, tmp_path):
    shutil.copy(PROJECT_ROOT / ".gitlab-ci.yml", tmp_path)  # it keeps state in the directory it runs in
    result = subprocess.run([str(gitlab_ci_local), "--list"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "json schema validated" in result.stderr, result.stdout + result.stderr
    listed = [line.split()[0] for line in result.stdout.splitlines()[-2:]]
    assert listed == ["native", "compose"]


def gitlab_jobs() -> dict[str, dict]:
    """The GitLab jobs with what they extend merged in (GitLab's `extends`, one level deep as used here)."""
    config = yaml.safe_load((PROJECT_ROOT / ".gitlab-ci.yml").read_text())
    jobs = {}
    for name, job in config.items():
        if name.startswith(".") or not isinstance(job, dict) or name in ("workflow", "variables"):
            continue
        jobs[name] = {**config[job["extends"]], **job} if "extends" in job else job
    return jobs


@pytest.mark.parametrize("backend", ["native", "compose"])
def test_the_gitlab_file_runs_the_ci_entry_point_on_each_backend_and_keeps_the_reports(backend):
    job = gitlab_jobs()[backend]
    assert job["variables"]["SANDBOX_BACKEND"] == backend
    assert job["script"] == ["bash .ci/run"]
    assert job["artifacts"]["when"] == "always" and job["artifacts"]["paths"] == ["reports/"]
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert "python -m tests.full_suite" in makefile
    read_by_gitlab = job["artifacts"]["reports"]["junit"]
    written = [str(path.relative_to(PROJECT_ROOT)) for path in full_suite.JUNIT_FILES.values()]
    assert all(fnmatch(path, read_by_gitlab) for path in written), "GitLab reads every JUnit file make test writes"
    assert {".cache/pip", ".cache/uv", ".cache/m2", ".cache/cdc-sandbox"} <= set(job["cache"]["paths"])


def test_the_gitlab_caches_are_where_pip_maven_and_the_sandbox_write():
    variables = yaml.safe_load((PROJECT_ROOT / ".gitlab-ci.yml").read_text())["variables"]
    env = {"XDG_CACHE_HOME": variables["XDG_CACHE_HOME"].replace("$CI_PROJECT_DIR", "/builds/p")}
    assert user_cache_dir(env) == Path("/builds/p/.cache/cdc-sandbox")
    assert variables["MAVEN_OPTS"] == "-Dmaven.repo.local=$CI_PROJECT_DIR/.cache/m2"
    native = gitlab_jobs()["native"]
    assert any("openjdk-17" in line and "maven" in line for line in native["before_script"])


def test_the_nightly_workflow_fuzzes_an_hour_then_checks_every_broken_variant_and_keeps_what_it_found():
    nightly = workflow("nightly.yml")
    assert nightly[True]["schedule"], "on a schedule"  # YAML 1.1 reads the key `on` as True
    job = nightly["jobs"]["fuzz-and-broken-variants"]
    assert job["env"]["SANDBOX_BACKEND"] == "native" and "'60'" in job["env"]["FUZZ_MINUTES"]
    runs = [step.get("run", "") for step in job["steps"]]
    fuzz = next(i for i, run in enumerate(runs) if "make fuzz" in run)
    variants = next(i for i, run in enumerate(runs) if "make broken-variants" in run)
    assert fuzz < variants and job["steps"][variants]["if"] == "success() || failure()"
    assert '"FUZZ_MINUTES=$FUZZ_MINUTES"' in runs[fuzz] and "FUZZ_SEED=$seed" in runs[fuzz]
    upload = next(step for step in job["steps"] if step.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "always()"
    assert set(upload["with"]["path"].split()) == {"reports/fuzz/", "reports/broken-variants/"}
