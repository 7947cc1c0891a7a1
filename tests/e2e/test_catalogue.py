"""The incident catalogue on a team's own tables, run as a team runs it (`sandbox catalogue` in its project's
directory, outside the checkout): the shipped scenarios bound to the team project's and MoMA's tables, each incident
passed or not applicable with what the tables lack, broken variants of the job caught there, and the reports a
person and a CI server read. (The whole catalogue on a project is `sandbox catalogue`; these run a selection.)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.e2e.conftest import stop_connectors
from tests.e2e.test_moma_project import MOMA

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CATALOGUE_TIMEOUT = 1800


def catalogue(directory, sandbox, *args: str) -> tuple[str, dict[str, tuple[str, str]], list]:
    """Run `sandbox catalogue` there; its output, the Markdown report's rows ({incident or variant: (verdict, whole
    row)}) and the JUnit test cases."""
    env = {k: v for k, v in os.environ.items() if k not in ("SANDBOX_PROJECT", "SANDBOX_BROKEN_JOB")}
    env["SANDBOX_STATE_DIR"] = str(sandbox.state_dir)
    done = subprocess.run([sys.executable, "-m", "cdc_sandbox", "catalogue", *args], cwd=directory, env=env,
                          capture_output=True, text=True, timeout=CATALOGUE_TIMEOUT)
    output = done.stdout[-8000:] + done.stderr[-3000:]
    assert done.returncode == 0, output
    report = (directory / "reports" / "catalogue.md").read_text()
    rows = {}
    for line in report.splitlines():
        found = re.match(r"\| (\w[\w ]*) \| (?:`([\w-]+)` by )?.*?\(`([\w-]+)`\) \|", line)
        if found:
            verdict, variant, file = found.groups()
            rows[variant or file] = (verdict, line)
    cases = list(ET.parse(directory / "reports" / "catalogue.xml").iter("testcase"))
    return output, rows, cases


@pytest.fixture(scope="module")
def moma_dir(sandbox, tmp_path_factory):
    """The MoMA project copied outside the checkout, brought up and loaded from there."""
    directory = tmp_path_factory.mktemp("moma") / "moma"
    shutil.copytree(MOMA, directory)
    env = {k: v for k, v in os.environ.items() if k != "SANDBOX_PROJECT"} | {"SANDBOX_STATE_DIR": str(sandbox.state_dir)}
    for command in (["up", "--skip-install"], ["load"]):
        done = subprocess.run([sys.executable, "-m", "cdc_sandbox", *command], cwd=directory, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"sandbox {' '.join(command)}:\n{done.stdout}\n{done.stderr}"
    yield directory
    stop_connectors(sandbox, directory)


def test_the_catalogue_on_the_team_tables_passes_says_what_does_not_apply_and_catches_broken_jobs(team_dir, sandbox):
    """delete-then-reinsert on accounts (venue's columns played by the team's), the two-table transaction on
    accounts and shipments, SQL Server's shared commit LSN not applicable (no SQL Server table); the variants that
    drop deletes or skip a table are caught on accounts as the scenario declares."""
    output, rows, cases = catalogue(team_dir, sandbox, "--teeth", "-k", "reinsert or sqlserver-one or two-table")
    assert rows["delete-then-reinsert"][0] == "passed" and "venue → accounts" in rows["delete-then-reinsert"][1], rows
    assert rows["two-table-transaction"][0] == "passed", rows
    verdict, row = rows["sqlserver-one-commit-lsn"]
    assert verdict == "not applicable" and "needs a table on sqlserver" in row and "accounts: on postgres" in row, row
    assert rows["drop-deletes"][0] == "caught" and rows["skip-table"][0] == "caught", rows
    assert len(cases) == len(rows) == 5, (rows, output)
    skipped = [case for case in cases if case.find("skipped") is not None]
    assert len(skipped) == 1 and "not applicable" in skipped[0].find("skipped").get("message"), output
    assert "incident catalogue: 2 passed, 2 caught, 1 not applicable" in output, output


def test_the_catalogue_on_moma_catches_an_old_event_written_over_a_newer_one(moma_dir, sandbox):
    """old-event-redelivered on MoMA's artworks (Merge-on-Read in the project, Copy-on-Write as the scenario runs
    it), and the job that merges by arrival time caught writing the old title over the new one."""
    output, rows, _ = catalogue(moma_dir, sandbox, "--teeth", "-k", "old-event")
    assert rows["old-event-redelivered"][0] == "passed", (rows, output)
    verdict, row = rows["merge-by-arrival-time"]
    assert verdict == "caught" and "venue → artworks" in row, (rows, output)
