"""`make test`'s suite: the end-to-end tests against the project's sandbox, with the tests that need none of its
services in a pytest of their own beside them.

The end-to-end run is paced by the pipeline's waits and the Spark driver. Beside it run the unit tests (alone about
45 s, half of it waiting on their subprocesses) and the ephemeral-sandbox tests, which start stacks of their own on
free ports and would otherwise hold up the end-to-end run for about 35 s. That run's output goes to
`reports/unit-tests.log` and is shown after the end-to-end run: the outcome line, or the whole log if a test failed.
Both runs must pass. `python -m tests.full_suite [pytest args]` passes the arguments to the end-to-end run.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib

from sandbox.config import PROJECT_ROOT

REPORTS = PROJECT_ROOT / "reports"
UNIT_LOG = REPORTS / "unit-tests.log"
JUNIT_FILES = {"end-to-end": REPORTS / "junit.xml", "unit": REPORTS / "junit-unit.xml"}
UNIT_TESTS = "tests/unit"
OWN_STACK_TESTS = "tests/e2e/test_ephemeral_sandbox.py"  # their own sandboxes: none of the shared one's services
BESIDE_RUN = [UNIT_TESTS, OWN_STACK_TESTS, "-p", "no:cacheprovider", f"--junitxml={JUNIT_FILES['unit']}",
              f"--sandbox-summary={REPORTS / 'unit-summary.txt'}"]


def end_to_end_run() -> list[str]:
    """pytest's arguments for the configured test paths but the unit tests' and the own-stack tests (paths given
    as arguments replace them, as with pytest alone)."""
    configured = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["testpaths"]
    paths = " ".join(path for path in configured if path != UNIT_TESTS)
    return ["-o", f"testpaths={paths}", f"--ignore={OWN_STACK_TESTS}", "-m", "not smoke",
            f"--junitxml={JUNIT_FILES['end-to-end']}", "--durations=20"]


def pytest(args: list[str], **streams) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=PROJECT_ROOT, **streams)


def main(extra: list[str]) -> int:
    REPORTS.mkdir(exist_ok=True)
    with UNIT_LOG.open("w") as log:
        beside = pytest(BESIDE_RUN, stdout=log, stderr=subprocess.STDOUT)
        end_to_end = pytest([*end_to_end_run(), *extra]).wait()
        beside_exit = beside.wait()
    lines = UNIT_LOG.read_text().splitlines()
    print(f"\nunit and ephemeral-sandbox tests, run beside the end-to-end ones ({UNIT_LOG.relative_to(PROJECT_ROOT)}):")
    print("\n".join(lines if beside_exit else lines[-1:]))
    return end_to_end or beside_exit


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
