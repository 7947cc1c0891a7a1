"""Deliberately broken variants of the Hudi job, to show that the suites fail when the pipeline is wrong.

Each variant (cdc_sandbox/harness/running/broken_jobs.py) patches the in-process job the way a real bug would change
it, and names the failure it must cause (`Catch`: the oracle's check, the table, the column or the rows by key). `python -m tests.broken_variants` (`make
broken-variants`) runs the catch tests (`CATCH_TESTS`, also in `make test`): each variant in every job mode its
scenario declares, and on the team project's tables; it prints the matrix of variant, mode, scenario and what
caught it, and fails on any variant missed or caught by anything else.

With `--every-scenario` it sweeps instead: the suites once with the unbroken job and once per variant
(`SANDBOX_BROKEN_JOB=<variant>` applies one to a whole pytest run; see the project's conftest.py), reporting which
tests caught each: a test catches a variant when it passes with the unbroken job and fails with one of the
oracle's verdicts (`VERDICTS`) with the variant, never by an error of the harness or a time-out.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from cdc_sandbox.config import Settings
from cdc_sandbox.harness.checking.catches import Catch, caught_as
from cdc_sandbox.harness.checking.landing import NotOneBatch
from cdc_sandbox.harness.checking.verdict import OracleMismatch
from cdc_sandbox.harness.running.broken_jobs import (  # noqa: F401 (the tests' names for them)
    ORDERING_FIELDS, VARIANTS, _transform_changes, skip_table, take_over_ordering, unmet_need)
from cdc_sandbox.harness.running.pipeline import SilverBehind
from cdc_sandbox.stack import catalog

SUITES = ["cdc_sandbox/fixtures/scenarios"]
REPORTS = Path("reports/broken-variants")


def expect_catch(request, variant: str, where: str, mode: str, catches: tuple[Catch, ...]):
    """Note the case in the test's junit properties (which `make broken-variants` tabulates); returns the judge of
    the error that caught the variant: "" when it is one of `catches`, else what it is instead."""
    properties = request.node.user_properties
    properties += [("variant", variant), ("where", where), ("mode", mode),
                   ("expected", " or ".join(map(str, catches)))]

    def judged(error: BaseException) -> str:
        finding = getattr(error, "finding", None)
        properties.append(("caught_as", str(finding) if finding else type(error).__name__))
        return caught_as(error, catches)

    return judged


def break_job(name: str) -> pytest.MonkeyPatch:
    if name not in VARIANTS:
        raise SystemExit(f"SANDBOX_BROKEN_JOB={name!r} is not a variant; choose one of: {', '.join(VARIANTS)}")
    patch = pytest.MonkeyPatch()
    VARIANTS[name](patch)
    return patch


# --- judging a run -------------------------------------------------------------------------------------------
VERDICTS = (OracleMismatch, NotOneBatch, SilverBehind)  # what the harness finds wrong in silver (and subclasses)
PYTEST_EXITS = {2: "interrupted (Ctrl-C, or errors during collection)", 3: "internal error", 4: "usage error",
                5: "no tests collected"}
FIRST_NAME = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")


@dataclass(frozen=True)
class Outcome:
    """One test in one run: passed, skipped, caught (failed with a verdict), failed (otherwise) or error."""

    status: str
    detail: str = ""  # the failure's or error's first line


@dataclass(frozen=True)
class Judgement:
    caught_by: tuple[str, ...] = ()
    not_judged: str = ""  # why the run cannot tell whether the variant is caught
    not_applicable: str = ""  # what the project's tables lack for the bug to show


def is_verdict(kind: str) -> bool:
    """Whether an exception's qualified name (as a failure message starts) names one of the oracle's verdicts."""
    module, _, name = kind.rpartition(".")
    try:
        found = getattr(importlib.import_module(module), name, None) if module else None
    except ImportError:
        return False
    return isinstance(found, type) and issubclass(found, VERDICTS)


def outcomes(junit_xml: str) -> dict[str, Outcome]:
    """Each test of a junit report (`classname::name`) with its outcome. An error (in setup, teardown or
    collection) outweighs a failure: the test did not get to judge."""
    results = {}
    for case in ET.fromstring(junit_xml).iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        error, failure = case.find("error"), case.find("failure")
        if error is not None:
            results[test] = Outcome("error", _first_line(error.get("message", "")))
        elif failure is not None:
            message = _first_line(failure.get("message", ""))
            kind = FIRST_NAME.match(message)
            results[test] = Outcome("caught" if kind and is_verdict(kind.group(1)) else "failed", message)
        else:
            results[test] = Outcome("skipped" if case.find("skipped") is not None else "passed")
    return results


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def run_problem(exit_code: int, junit_xml: str | None) -> str:
    """Why a pytest run says nothing about its tests ("" when it does: exit code 0 or 1 and a junit report)."""
    if exit_code not in (0, 1):
        return f"pytest exited {exit_code}: {PYTEST_EXITS.get(exit_code, 'killed or crashed')}"
    if not junit_xml:
        return "pytest wrote no junit report"
    return ""


def judge(exit_code: int, junit_xml: str | None, baseline: dict[str, Outcome]) -> Judgement:
    """Which tests caught the variant, counting only tests that passed with the unbroken job (`baseline`)."""
    problem = run_problem(exit_code, junit_xml)
    if problem:
        return Judgement(not_judged=problem)
    results = outcomes(junit_xml)
    judging = {test: result for test, result in results.items() if test in baseline
               and baseline[test].status == "passed"}
    caught = tuple(test for test, result in judging.items() if result.status == "caught")
    if caught:
        return Judgement(caught_by=caught)
    others = [test for test, result in results.items() if result.status == "caught" and test not in judging]
    if others:
        return Judgement(not_judged=f"caught only by tests that fail with the unbroken job: "
                                    f"{', '.join(map(short_name, others))}")
    unjudged = [(test, result) for test, result in judging.items() if result.status in ("failed", "error")]
    if unjudged:
        test, result = unjudged[0]
        return Judgement(not_judged=f"{len(unjudged)} test(s) failed for another reason, e.g. {short_name(test)} "
                                    f"({result.status}: {result.detail[:160]})")
    if not judging:
        return Judgement(not_judged="no test passed with the unbroken job")
    return Judgement()


def short_name(test: str) -> str:
    """A scenario file's stem, or a test function's name with its parameters."""
    module, _, name = test.partition("::")
    if module.endswith((".yaml", ".yml")):
        return module.rsplit(".", 2)[-2]
    return name


def verdict_line(variant: str, judgement: Judgement) -> str:
    if judgement.not_applicable:
        return f"{variant}: does not apply ({judgement.not_applicable})"
    if judgement.caught_by:
        return f"{variant}: caught by {', '.join(map(short_name, judgement.caught_by))}"
    if judgement.not_judged:
        return f"{variant}: not judged ({judgement.not_judged})"
    return f"{variant}: NOT CAUGHT"


def matrix(judgements: dict[str, Judgement]) -> list[str]:
    """Variants by the tests that caught any of them (numbered, named below the table): `x` where a test caught a
    variant, `?` across a variant the run could not judge."""
    tests = list(dict.fromkeys(test for j in judgements.values() for test in j.caught_by))
    if not tests:
        return ["(no test caught any variant)"]
    width = max(map(len, judgements), default=0)
    header = " " * width + "".join(f"{n:>4}" for n in range(1, len(tests) + 1))
    rows = [variant.ljust(width) + "".join(
        f"{'-' if j.not_applicable else '?' if j.not_judged else 'x' if test in j.caught_by else '.':>4}" for test in tests)
        for variant, j in judgements.items()]
    return [header, *rows, *[f"{n:>4}  {short_name(test)}" for n, test in enumerate(tests, 1)]]


def catch_matrix(junit_xml: str) -> tuple[list[str], bool]:
    """The catch tests' cases (variant, job mode, scenario or tables, what caught it, the outcome) as an aligned
    table, and whether every case was caught by its expected failure."""
    rows = []
    for case in ET.fromstring(junit_xml).iter("testcase"):
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        if "variant" in properties:
            rows.append((properties["variant"], properties["mode"], properties["where"],
                         properties.get("caught_as", "-"), _catch_outcome(case, properties)))
    if not rows:
        return ["(no catch test ran)"], False
    table = [("variant", "job mode", "scenario or tables", "caught as", "outcome"), *rows]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[4] for row in table]
    return lines, all(row[4] == "ok" for row in rows)


def _catch_outcome(case, properties: dict) -> str:
    error, failure, skipped = case.find("error"), case.find("failure"), case.find("skipped")
    if error is not None:
        return f"ERROR: {_first_line(error.get('message', ''))[:120]}"
    if skipped is not None:
        return f"skipped: {_first_line(skipped.get('message', ''))[:120]}"
    if failure is None:
        return "ok"
    if "caught_as" in properties:
        return f"WRONG KIND (expected {properties['expected']})"
    message = _first_line(failure.get("message", ""))
    return "MISSED" if "DID NOT RAISE" in message or "VariantMissed" in message else f"FAILED: {message[:120]}"


# --- running the suites --------------------------------------------------------------------------------------
CATCH_TESTS = ["tests/e2e/test_broken_variants_caught.py::test_broken_job_is_caught",
               "tests/e2e/test_team_project.py::test_a_broken_job_is_caught_on_the_team_tables",
               "tests/e2e/test_spark_cluster.py::test_a_bug_only_a_cluster_shows_passes_in_local_mode_and_is_caught_there"]


def run_catch_check() -> int:
    """Every variant in every job mode its scenario declares (and on the team tables), each of which must be caught
    by the failure it names; prints the matrix of what caught each."""
    junit = REPORTS / "catches.xml"
    junit.unlink(missing_ok=True)
    code = subprocess.run([sys.executable, "-m", "pytest", *CATCH_TESTS, "-q", "-p", "no:cacheprovider",
                           f"--junitxml={junit}", f"--sandbox-summary={REPORTS / 'catches.txt'}"]).returncode
    report = junit.read_text() if junit.exists() else None
    if problem := run_problem(code, report):
        print(f"the catch tests say nothing: {problem}")
        return 1
    lines, every_one_caught = catch_matrix(report)
    (REPORTS / "catch-matrix.txt").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines))
    return 0 if every_one_caught and code == 0 else 1

def run_suites(variant: str | None, suites: list[str]) -> tuple[int, str | None, float]:
    """pytest over the suites with the variant (None: the unbroken job): exit code, junit report, seconds. Every run
    writes its lakes from the first change on, as a broken job's must be (no branches of the shared baseline)."""
    name = variant or "unbroken"
    junit, log = REPORTS / f"{name}.xml", REPORTS / f"{name}.log"
    junit.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "SANDBOX_BROKEN_JOB"} | {"SANDBOX_BRANCH_LAKES": "0"} | (
        {"SANDBOX_BROKEN_JOB": variant} if variant else {})
    started = time.monotonic()
    with open(log, "w") as output:
        code = subprocess.run([sys.executable, "-m", "pytest", *suites, "-q", "-p", "no:cacheprovider",
                               "--oracle-timeout", "120", f"--junitxml={junit}",
                               f"--sandbox-summary={REPORTS / name}.txt"],
                              env=env, stdout=output, stderr=subprocess.STDOUT).returncode
    return code, junit.read_text() if junit.exists() else None, time.monotonic() - started


def main(argv: list[str]) -> int:
    """The catch check (`run_catch_check`); with --every-scenario, the sweep: the suites with the unbroken job, then
    once per variant, printing which tests caught each and failing unless every variant is caught by some test."""
    parser = argparse.ArgumentParser(description="Check that each broken variant of the job is caught as it must be.")
    parser.add_argument("--every-scenario", action="store_true",
                        help="run whole suites under each variant and report which tests catch it")
    parser.add_argument("variants", nargs="*", help=f"with --every-scenario; default: all of {', '.join(VARIANTS)}")
    parser.add_argument("--suite", action="append", help=f"with --every-scenario: test paths (repeatable; default: "
                                                         f"{' '.join(SUITES)})")
    args = parser.parse_args(argv)
    for name in args.variants:
        if name not in VARIANTS:
            parser.error(f"no variant {name!r}; choose from {', '.join(VARIANTS)}")
    if (args.variants or args.suite) and not args.every_scenario:
        parser.error("variants and --suite choose what --every-scenario runs; the catch check runs every variant")
    REPORTS.mkdir(parents=True, exist_ok=True)
    if not args.every_scenario:
        return run_catch_check()
    suites, variants = args.suite or SUITES, args.variants or list(VARIANTS)
    settings = Settings.load()
    tables = [catalog.table_schema(settings, t.name) for t in settings.topology.tables]
    baseline, problem = run_baseline(suites)
    judgements = {}
    for name in variants:
        if unmet := unmet_need(name, settings, tables):
            judgements[name] = Judgement(not_applicable=unmet)
            continue
        if problem:
            judgements[name] = Judgement(not_judged=f"the unbroken job's run: {problem}")
            continue
        print(f"--- {name}: {' '.join(VARIANTS[name].__doc__.split())}", flush=True)
        code, junit, seconds = run_suites(name, suites)
        judgements[name] = judge(code, junit, baseline)
        print(f"    {seconds:.0f} s; {verdict_line(name, judgements[name])}", flush=True)
    report = [*matrix(judgements), "", *(verdict_line(name, j) for name, j in judgements.items())]
    (REPORTS / "matrix.txt").write_text("\n".join(report) + "\n")
    print("\n" + "\n".join(report))
    return 0 if all(j.caught_by or j.not_applicable for j in judgements.values()) else 1


def run_baseline(suites: list[str]) -> tuple[dict[str, Outcome], str]:
    """The unbroken job's outcomes, or why its run says nothing; prints the tests that cannot judge."""
    print("--- the unbroken job", flush=True)
    code, junit, seconds = run_suites(None, suites)
    problem = run_problem(code, junit)
    if problem:
        print(f"    {seconds:.0f} s; {problem}", flush=True)
        return {}, problem
    baseline = outcomes(junit)
    failing = {test: result for test, result in baseline.items() if result.status not in ("passed", "skipped")}
    print(f"    {seconds:.0f} s; {len(baseline) - len(failing)} of {len(baseline)} tests can judge", flush=True)
    for test, result in failing.items():
        print(f"    cannot judge (fails with the unbroken job): {short_name(test)}: {result.detail}", flush=True)
    return baseline, ""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
