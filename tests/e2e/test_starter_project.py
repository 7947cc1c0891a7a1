"""`sandbox init` in an empty directory, then the starter runs as a team would run it: `sandbox up`, `sandbox load`
and `pytest tests` from that directory (on the session's stack), the starter's oracle round passing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_starter_project_passes_its_own_test(sandbox, tmp_path):
    directory = tmp_path / "orders-service"
    env = {k: v for k, v in os.environ.items() if k not in ("SANDBOX_PROJECT", "SANDBOX_BROKEN_JOB")}
    env["SANDBOX_STATE_DIR"] = str(sandbox.state_dir)  # the session's stack, not one of the project's own
    for command in (["init", str(directory)], ["up", "--skip-install"], ["load"]):
        done = subprocess.run([sys.executable, "-m", "sandbox", *command], cwd=directory if command[0] != "init"
                              else tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"sandbox {' '.join(command)}:\n{done.stdout}\n{done.stderr}"
    done = subprocess.run([sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider"], cwd=directory,
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "1 passed" in done.stdout and "tables checked: orders" in done.stdout
    assert "DeprecationWarning" not in done.stdout
