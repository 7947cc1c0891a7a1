"""`make test`'s suite: the end-to-end tests, with the unit tests in a pytest of their own beside them.

The end-to-end run is paced by the pipeline's waits and the Spark driver; the unit tests need no service and run
meanwhile (alone they take about 45 s, half of it waiting on their subprocesses) at a lower CPU priority
(`UNIT_NICENESS`): the end-to-end run is bound by the CPU, and the unit tests take what it leaves. Their output goes
to `reports/unit-tests.log` and is shown after the end-to-end run: the outcome line, or the whole log if they failed.
Both runs must pass. `python -m tests.full_suite [pytest args]` passes the arguments to the end-to-end run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

from sandbox.config import PROJECT_ROOT

REPORTS = PROJECT_ROOT / "reports"
UNIT_LOG = REPORTS / "unit-tests.log"
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
            "--durations=20"]


def pytest(args: list[str], **popen_options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pytest", *args], **popen_options)


def main(extra: list[str]) -> int:
    REPORTS.mkdir(exist_ok=True)
    with UNIT_LOG.open("w") as log:
        unit = pytest(UNIT_RUN, stdout=log, stderr=subprocess.STDOUT, preexec_fn=lambda: os.nice(UNIT_NICENESS))
        end_to_end = pytest([*end_to_end_run(), *extra]).wait()
        unit_exit = unit.wait()
    lines = UNIT_LOG.read_text().splitlines()
    print(f"\nunit tests, run beside the end-to-end ones ({UNIT_LOG.relative_to(PROJECT_ROOT)}):")
    print("\n".join(lines if unit_exit else lines[-1:]))
    return end_to_end or unit_exit


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
