"""`make test`'s suite: three pytest runs side by side, all of which must pass.

- TICKIT's end-to-end tests, the run that sets the pace (the pipeline's waits and the Spark driver).
- The example projects' end-to-end tests (`PROJECTS_LANE`), the Spark cluster's among them: their tables, topics,
  journal entries and lakes are their own, so they run on the same stack beside TICKIT's, in a Spark driver of their
  own (and the cluster, started for this run alone), at a lower CPU priority:
  they use the CPU the TICKIT run leaves while it waits on the pipeline. A TICKIT test that
  stops or restarts a shared service (marked `restarts_services`) runs last, once this run has ended
  (`LANE_LOCK`, held by this module meanwhile).
- The unit tests, which need no service, at a lower priority still.
The two side runs write to logs under `reports/` shown after TICKIT's run: the outcome line, or the whole log if
they failed. `python -m tests.full_suite [pytest args]` passes the arguments to TICKIT's run; arguments that name
test paths run those alone there, and no projects' run.
Once all are over, the summary notes how busy the machine's cores were meanwhile, and the median of a few timings of
a fixed pure-Python loop: this machine's speed changes within minutes, and a run's time is read beside both.
"""

from __future__ import annotations

import fcntl
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import tomllib

from cdc_sandbox.bench.results import SPEED_LOOP, machine_speed
from cdc_sandbox.stack.cpu_account import SPARK_MAIN_CLASSES, CpuAccount, busy_seconds, by_cost
from tests import PROJECT_ROOT

REPORTS = PROJECT_ROOT / "reports"
SUMMARY = REPORTS / "summary.txt"
JUNIT_FILES = {"end-to-end": REPORTS / "junit.xml", "projects": REPORTS / "junit-projects.xml",
               "unit": REPORTS / "junit-unit.xml"}
UNIT_TESTS = "tests/unit"
PROJECTS_LANE = ["tests/e2e/test_team_project.py", "tests/e2e/test_spark_cluster.py",
                 "tests/e2e/test_moma_project.py", "tests/e2e/test_installed_package.py",
                 "tests/e2e/test_project_files.py", "tests/e2e/test_ephemeral_sandbox.py",
                 "tests/e2e/test_sample_schemas.py", "tests/e2e/test_catalogue.py"]
JVM_KINDS = [*SPARK_MAIN_CLASSES.values(), "other java"]
LANE_LOCK = REPORTS / "projects-lane.lock"
LANE_LOCK_ENV = "SANDBOX_PROJECTS_LANE_LOCK"  # tests/conftest.py waits on it before a `restarts_services` test
UNIT_RUN = [UNIT_TESTS, "-p", "no:cacheprovider", f"--junitxml={JUNIT_FILES['unit']}",
            f"--sandbox-summary={REPORTS / 'unit-summary.txt'}"]
PROJECTS_RUN = [*PROJECTS_LANE, "-p", "no:cacheprovider", f"--junitxml={JUNIT_FILES['projects']}",
                f"--sandbox-summary={REPORTS / 'projects-summary.txt'}", "--durations=5"]


@dataclass(frozen=True)
class SideRun:
    """A pytest beside TICKIT's end-to-end run, its output in a log, at a lower CPU priority."""

    name: str
    args: list[str]
    log: Path
    niceness: int

    def start(self) -> subprocess.Popen:
        with self.log.open("w") as log:
            return pytest(self.args, stdout=log, stderr=subprocess.STDOUT, preexec_fn=lambda: os.nice(self.niceness))

    def report(self, exit_code: int) -> None:
        lines = self.log.read_text().splitlines()
        print(f"\n{self.name}, run beside the end-to-end ones ({self.log.relative_to(PROJECT_ROOT)}):")
        print("\n".join(lines if exit_code else lines[-1:]))


UNIT = SideRun("unit tests", UNIT_RUN, REPORTS / "unit-tests.log", 10)
PROJECTS = SideRun("the example projects' end-to-end tests", PROJECTS_RUN, REPORTS / "projects-tests.log", 5)


def end_to_end_run(lanes: bool = True) -> list[str]:
    """pytest's arguments for the configured test paths but the unit tests' and, with `lanes`, the projects'
    (paths given as arguments replace them, as with pytest alone)."""
    configured = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["testpaths"]
    paths = " ".join(path for path in configured if path != UNIT_TESTS)
    ignored = [f"--ignore={path}" for path in PROJECTS_LANE] if lanes else []
    return ["-o", f"testpaths={paths}", *ignored, "-m", "not smoke", f"--junitxml={JUNIT_FILES['end-to-end']}",
            f"--sandbox-summary={SUMMARY}", "--durations=20"]


def names_paths(args: list[str]) -> bool:
    return any(not arg.startswith("-") and Path(arg.split("::")[0]).exists() for arg in args)


def pytest(args: list[str], **popen_options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pytest", *args], **popen_options)


def lock_while(run: subprocess.Popen) -> dict[str, str]:
    """Hold `LANE_LOCK` until `run` ends; returns the environment that tells the end-to-end run where it is."""
    lock = LANE_LOCK.open("w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # released as the file is closed
    threading.Thread(target=lambda: (run.wait(), lock.close()), daemon=True).start()
    return dict(os.environ, **{LANE_LOCK_ENV: str(LANE_LOCK)})


def note_machine_speed(summary: Path, samples: list[float]) -> str:
    line = (f"machine speed: a Python loop of {SPEED_LOOP:,} additions took {statistics.median(samples):.3f} s "
            f"after the runs (median of {len(samples)}: {min(samples):.3f}-{max(samples):.3f} s)")
    with summary.open("a") as out:
        out.write(line + "\n")
    return line


def note_cpu(summary: Path, busy: float, wall: float, account: CpuAccount) -> str:
    """How much of the machine the runs kept busy (the figure that says whether the suite is bound by its CPU), and
    by which processes."""
    cores = psutil.cpu_count()
    spent = account.stop()
    started = account.started()
    lines = [f"machine CPU while the runs ran: {busy:,.0f} of {wall * cores:,.0f} core-seconds busy "
             f"({busy / (wall * cores):.0%} of {cores} cores over {wall:,.0f} s)",
             f"  by process: {by_cost(spent)}; not read from a process (the kernel's, or a process that lived "
             f"less than a second): {busy - sum(spent.values()):,.0f}",
             "  JVMs started: " + ", ".join(f"{name} {started[name]}" for name in JVM_KINDS if started[name])]
    with summary.open("a") as out:
        out.write("\n".join(lines) + "\n")
    return "\n".join(lines)


def main(extra: list[str]) -> int:
    REPORTS.mkdir(exist_ok=True)
    busy_before, started, account = busy_seconds(), time.monotonic(), CpuAccount().start()
    lanes = not names_paths(extra)
    side = [UNIT, PROJECTS] if lanes else [UNIT]
    runs = [run.start() for run in side]
    env = lock_while(runs[1]) if lanes else None
    end_to_end = pytest([*end_to_end_run(lanes), *extra], env=env).wait()
    exits = [run.wait() for run in runs]
    cpu = note_cpu(SUMMARY, busy_seconds() - busy_before, time.monotonic() - started, account)
    for run, code in zip(side, exits):
        run.report(code)
    print(cpu)
    print(note_machine_speed(SUMMARY, machine_speed()))
    return end_to_end or next((code for code in exits if code), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
