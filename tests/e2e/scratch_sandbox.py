"""A scratch sandbox: its own state directory and free ports, sharing the installed tools, none of its services
running unless a test starts them. The bad-input tests point the CLI at one."""

from __future__ import annotations

import os
import subprocess
import sys

import port_for

from sandbox.config import DEFAULT_PORTS, Settings
from sandbox.stack import backends


def scratch_sandbox_env(tmp_path, settings, **overrides) -> dict[str, str]:
    """Environment for a second sandbox in `tmp_path` on free ports, sharing the installed tools."""
    env = dict(os.environ, SANDBOX_STATE_DIR=str(tmp_path / "state"), SANDBOX_TOOLS_DIR=str(settings.tools_dir))
    for service in DEFAULT_PORTS:
        env[f"SANDBOX_{service.upper()}_PORT"] = str(port_for.select_random())
    env.update(overrides)
    return env


def run_up(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sandbox", "up", "--skip-install"], env=env,
                          capture_output=True, text=True, timeout=300)


def nothing_runs(env: dict[str, str], backend: str) -> bool:
    """No service of the scratch sandbox in `env` was started (asked of its backend)."""
    scratch = Settings.load(env, backend=backend)
    return not any(backends.of(scratch).instances(scratch).values())


def sandbox_command(env: dict[str, str], *args: str) -> tuple[int, str]:
    result = subprocess.run([sys.executable, "-m", "sandbox", *args], env=env, capture_output=True, text=True,
                            timeout=120)
    return result.returncode, " ".join((result.stdout + result.stderr).split())
