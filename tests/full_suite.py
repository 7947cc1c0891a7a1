"""`make test`'s suite: the end-to-end tests, with the unit tests in a pytest of their own beside them.

The end-to-end run is paced by the pipeline's waits and the Spark driver; the unit tests need no service and run
meanwhile (alone they take about 45 s, half of it waiting on their subprocesses) at a lower CPU priority
(`UNIT_NICENESS`): the end-to-end run is bound by the CPU, and the unit tests take what it leaves. Their output goes
to `reports/unit-tests.log` and is shown after the end-to-end run: the outcome line, or the whole log if they failed.
Both runs must pass. `python -m tests.full_suite [pytest args]` passes the arguments to the end-to-end run.
Once both are over, a fixed pure-Python loop is timed a few times and the median added to the summary: this
machine's speed changes within minutes, and a run's time is read beside it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import tomllib

from tests import PROJECT_ROOT

REPORTS = PROJECT_ROOT / "reports"
UNIT_LOG = REPORTS / "unit-tests.log"
SUMMARY = REPORTS / "summary.txt"
SPEED_LOOP = 5_000_000
SPEED_SAMPLES = 7  # one timing of the loop varies by a third from the next here; their median by about a tenth
JUNIT_FILES = {"end-to-end": REPORTS / "junit.xml", "unit": REPORTS / "junit-unit.xml"}
UNIT_TESTS = "tests/unit"
UNIT_NICENESS = 10
UNIT_RUN = [UNIT_TESTS, "-p", "no:cacheprovider", f"--junitxml={JUNIT_FILES['unit']}",
            f"--sandbox-summary={REPORTS / 'unit-summary.txt'}"]


def end_to_end_run() -> list[str]:
    """pytest's arguments for the configured test paths but the unit tests' (paths given as arguments replace
    them, as with pytest alone)."""
    configured = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["testpaths"]
    paths = " ".join(path for path in configured if path != UNIT_TESTS)
    return ["-o", f"testpaths={paths}", "-m", "not smoke", f"--junitxml={JUNIT_FILES['end-to-end']}",
            f"--sandbox-summary={SUMMARY}", "--durations=20"]


def pytest(args: list[str], **popen_options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pytest", *args], **popen_options)


def loop_seconds() -> float:
    """Seconds this interpreter takes to add up the numbers below `SPEED_LOOP` one at a time."""
    started = time.perf_counter()
    total = 0
    for number in range(SPEED_LOOP):
        total += number
    return time.perf_counter() - started


def machine_speed() -> list[float]:
    return [loop_seconds() for _ in range(SPEED_SAMPLES)]


def note_machine_speed(summary: Path, samples: list[float]) -> str:
    line = (f"machine speed: a Python loop of {SPEED_LOOP:,} additions took {statistics.median(samples):.3f} s "
            f"after the runs (median of {len(samples)}: {min(samples):.3f}-{max(samples):.3f} s)")
    with summary.open("a") as out:
        out.write(line + "\n")
    return line


def main(extra: list[str]) -> int:
    REPORTS.mkdir(exist_ok=True)
    with UNIT_LOG.open("w") as log:
        unit = pytest(UNIT_RUN, stdout=log, stderr=subprocess.STDOUT, preexec_fn=lambda: os.nice(UNIT_NICENESS))
        end_to_end = pytest([*end_to_end_run(), *extra]).wait()
        unit_exit = unit.wait()
    lines = UNIT_LOG.read_text().splitlines()
    print(f"\nunit tests, run beside the end-to-end ones ({UNIT_LOG.relative_to(PROJECT_ROOT)}):")
    print("\n".join(lines if unit_exit else lines[-1:]))
    print(note_machine_speed(SUMMARY, machine_speed()))
    return end_to_end or unit_exit


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
