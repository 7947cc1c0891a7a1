"""`make test`'s three pytest runs (tests/full_suite.py) together collect every test once; the tests that restart a
shared service run last; the machine's speed ends the summary."""

from __future__ import annotations

import fcntl
import functools
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from cdc_sandbox.wait import wait_until
from tests import PROJECT_ROOT, full_suite


def collected(args: list[str]) -> list[str]:
    return list(_collected(tuple(arg for arg in args if not arg.startswith("--junitxml"))))  # not this test's reports


@functools.cache
def _collected(args: tuple[str, ...]) -> tuple[str, ...]:
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return tuple(line for line in result.stdout.splitlines() if "::" in line)


def test_the_unit_projects_and_end_to_end_runs_together_collect_every_test_once():
    runs = [["-m", "not smoke"], full_suite.UNIT_RUN, full_suite.PROJECTS_RUN, full_suite.end_to_end_run()]
    with ThreadPoolExecutor(len(runs)) as pool:  # each collection a pytest of its own
        everything, unit, projects, end_to_end = pool.map(collected, runs)
    assert unit and projects and end_to_end
    assert not any(test.startswith(full_suite.UNIT_TESTS) for test in end_to_end + projects)
    assert sorted(unit + projects + end_to_end) == sorted(everything)


def test_tests_that_restart_a_service_come_last():
    order = collected(full_suite.end_to_end_run())
    marked = collected([*full_suite.end_to_end_run(), "-m", "restarts_services"])
    assert marked and order[-len(marked):] == marked


def test_arguments_naming_tests_run_them_alone():
    assert full_suite.names_paths(["tests/e2e/test_faults.py::test_each", "-x"])
    assert not full_suite.names_paths(["-x", "-k", "oracle"])


def test_the_machine_speed_is_added_to_the_end_to_end_summary(tmp_path):
    summary = tmp_path / "summary.txt"
    summary.write_text("tests: 3 passed, 0 failed, 0 errors, 0 skipped in 9 s\n")
    line = full_suite.note_machine_speed(summary, [0.31, 0.25, 0.262])
    assert summary.read_text().splitlines() == ["tests: 3 passed, 0 failed, 0 errors, 0 skipped in 9 s", line]
    assert line.endswith("5,000,000 additions took 0.262 s after the runs (median of 3: 0.250-0.310 s)")


def test_the_lane_lock_is_held_until_the_projects_run_ends(tmp_path, monkeypatch):
    monkeypatch.setattr(full_suite, "LANE_LOCK", tmp_path / "projects-lane.lock")
    projects_run = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    env = full_suite.lock_while(projects_run)
    with open(env[full_suite.LANE_LOCK_ENV]) as lock:
        with pytest.raises(BlockingIOError):  # what a `restarts_services` test waits on
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        projects_run.communicate(b"")  # the run ends
        wait_until(lambda: _shared_lock_taken(lock), 10, "the lane lock to be released")


def _shared_lock_taken(lock) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
