"""`python -m cdc_sandbox.bench catalogue`: the whole incident catalogue on a team's project, as the team runs it
(`sandbox catalogue` in the project's directory): its verdicts, wall time and core-seconds. The example team project
(three tables on Postgres and MariaDB) is copied out of the checkout, brought up beside the running sandbox's own
tables and loaded first; its connectors are stopped after."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cdc_sandbox.bench.results import Results
from cdc_sandbox.config import Settings
from cdc_sandbox.stack import connectors
from cdc_sandbox.stack.cpu_account import measure

SECTION = "The incident catalogue on a team's tables"
TEAM_PROJECT = Path(__file__).resolve().parents[2] / "examples" / "team_project"


def report(settings: Settings, results: Results) -> None:
    if not TEAM_PROJECT.is_dir():
        results.say(f"{SECTION}: the example team project is in a checkout of the sandbox (examples/)")
        return
    results.say(f"[bold]{SECTION}[/bold] (examples/team_project, every shipped scenario, the built-in job)")
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch) / "shop"
        shutil.copytree(TEAM_PROJECT, project)
        env = {k: v for k, v in os.environ.items() if k != "SANDBOX_PROJECT"} | {
            "SANDBOX_STATE_DIR": str(settings.state_dir)}
        try:
            for command in (["up", "--skip-install"], ["load"]):
                subprocess.run([sys.executable, "-m", "cdc_sandbox", *command], cwd=project, env=env, check=True,
                               capture_output=True)
            done, cost = measure(lambda: subprocess.run([sys.executable, "-m", "cdc_sandbox", "catalogue"],
                                                        cwd=project, env=env, capture_output=True, text=True))
        finally:
            connectors.stop_all(Settings.load(env | {"SANDBOX_PROJECT": str(project)}))
        summary = re.search(r"incident catalogue: (.*?); report", done.stdout)
        verdicts = summary.group(1) if summary else f"no summary (exit {done.returncode})"
        results.add(SECTION, "catalogue.team.core_seconds", "the catalogue on the team project: core-seconds",
                    cost.busy, "core-s")
        results.add(SECTION, "catalogue.team.seconds", "the catalogue on the team project: wall time", cost.wall, "s",
                    f"  the catalogue on the team project ({verdicts}): {cost}")
