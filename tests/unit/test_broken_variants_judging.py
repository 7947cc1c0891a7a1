"""Judging a broken variant's run (tests/broken_variants.py): a test catches a variant only by failing with one of
the oracle's verdicts, having passed with the unbroken job; an error of the harness or a run pytest did not finish
judges nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_sandbox.harness.running.pipeline import SilverBehind
from cdc_sandbox.harness.driving.scenario import ExpectationUnmet
from cdc_sandbox.harness.checking.verdict import Finding, OracleMismatch
from tests.broken_variants import (Catch, Judgement, catch_matrix, caught_as, is_verdict, judge, matrix,
                                   outcomes, verdict_line)

JUNIT = Path(__file__).parent / "fixtures" / "junit"
SCENARIO = "fixtures.scenarios.binlog-column-added.yaml::a decimal column is added to a MariaDB table"


def junit(name: str) -> str:
    return (JUNIT / f"{name}.xml").read_text()


@pytest.fixture
def baseline():
    return outcomes(junit("passed"))


def test_a_failure_with_an_oracle_verdict_is_a_catch(baseline):
    judgement = judge(1, junit("oracle_failure"), baseline)
    assert judgement == Judgement(caught_by=(SCENARIO,))
    assert verdict_line("money-as-double", judgement) == "money-as-double: caught by binlog-column-added"


def test_a_run_where_every_test_passes_is_not_caught(baseline):
    judgement = judge(0, junit("passed"), baseline)
    assert judgement == Judgement()
    assert verdict_line("money-as-double", judgement) == "money-as-double: NOT CAUGHT"


@pytest.mark.parametrize("report, reason", [
    ("setup_error", "1 test(s) failed for another reason, e.g. binlog-column-added (error: failed on setup with "
                    "\"cdc_sandbox.errors.SandboxError: the baseline lake could not catch up"),
    ("sandbox_down", "2 test(s) failed for another reason"),
    ("timeout", "(failed: cdc_sandbox.harness.driving.scenario.ScenarioError: cdc_sandbox/fixtures/scenarios/binlog-column-added.yaml:12: check "
                "failed: timed out after 120 s"),
], ids=["setup error", "sandbox down", "time-out"])
def test_an_error_of_the_harness_is_not_judged(baseline, report, reason):
    judgement = judge(1, junit(report), baseline)
    assert not judgement.caught_by
    assert reason in judgement.not_judged
    assert verdict_line("v", judgement).startswith("v: not judged (")


def test_a_run_pytest_did_not_finish_is_not_judged_whatever_its_report_says(baseline):
    assert judge(2, junit("collection_error"), baseline).not_judged == \
        "pytest exited 2: interrupted (Ctrl-C, or errors during collection)"
    assert judge(2, junit("oracle_failure"), baseline).not_judged.startswith("pytest exited 2")
    assert judge(1, None, baseline).not_judged == "pytest wrote no junit report"
    assert judge(-9, None, baseline).not_judged == "pytest exited -9: killed or crashed"


def test_a_test_that_fails_with_the_unbroken_job_cannot_catch():
    baseline = outcomes(junit("oracle_failure"))
    judgement = judge(1, junit("oracle_failure"), baseline)
    assert judgement.not_judged == "caught only by tests that fail with the unbroken job: binlog-column-added"


def test_outcomes_tell_verdicts_from_other_failures_and_errors():
    assert {test: o.status for test, o in outcomes(junit("oracle_failure")).items()} == {
        SCENARIO: "caught", "tests.e2e.test_oracle_suites::test_rounds_of_changes": "passed",
        "tests.e2e.test_mssql::test_capture": "skipped"}
    assert outcomes(junit("timeout"))[SCENARIO].status == "failed"
    assert outcomes(junit("sandbox_down"))[SCENARIO].status == "error"


@pytest.mark.parametrize("kind, verdict", [
    ("cdc_sandbox.harness.checking.verdict.OracleMismatch", True), ("cdc_sandbox.harness.checking.verdict.WrongTypes", True),
    ("cdc_sandbox.harness.checking.landing.NotOneBatch", True),
    ("cdc_sandbox.harness.running.pipeline.SilverBehind", True), (f"cdc_sandbox.harness.driving.scenario.{ExpectationUnmet.__name__}", True),
    ("AssertionError", False), ("Failed", False), ("cdc_sandbox.errors.SandboxError", False),
    ("pyspark.errors.exceptions.captured.StreamingQueryException", False), ("no.such.module.Error", False),
])
def test_only_the_oracles_findings_are_verdicts(kind, verdict):
    assert is_verdict(kind) is verdict


def test_the_matrix_marks_each_catch_and_numbers_the_catching_tests():
    judgements = {"drop-deletes": Judgement(caught_by=("a.b.delete-then-reinsert.yaml::x", "t::test_rounds")),
                  "skip-table": Judgement(caught_by=("a.b.delete-then-reinsert.yaml::x",)),
                  "money-as-double": Judgement(),
                  "registry-quarantine": Judgement(not_judged="pytest exited 2")}
    assert matrix(judgements) == [
        "                      1   2",
        "drop-deletes          x   x",
        "skip-table            x   .",
        "money-as-double       .   .",
        "registry-quarantine   ?   ?",
        "   1  delete-then-reinsert",
        "   2  test_rounds",
    ]
    assert matrix({"money-as-double": Judgement()}) == ["(no test caught any variant)"]


def test_a_variant_that_needs_a_column_kind_the_project_lacks_says_so(tmp_path):
    from cdc_sandbox.config import Settings
    from cdc_sandbox.schema import BIGINT, STR, Column, Table
    from cdc_sandbox.tickit_data import TABLES
    from tests.broken_variants import unmet_need

    tickit = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path), "SANDBOX_BACKEND": "native"})
    assert all(unmet_need(variant, tickit, list(TABLES)) == "" for variant in
               ("money-as-double", "widened-integers", "zone-shifted-times", "dropped-added-column", "skip-table"))
    assert unmet_need("partition-change-kept-twice", tickit, list(TABLES)) == \
        "the project's tables have no partitioned table"
    plain = [Table("notes", (Column("id", BIGINT), Column("body", STR)), ("id",))]
    assert unmet_need("money-as-double", tickit, plain) == "the project's tables have no decimal column"
    line = verdict_line("money-as-double", Judgement(not_applicable="the project's tables have no decimal column"))
    assert line.startswith("money-as-double: does not apply")


def test_a_catch_names_the_check_the_table_and_the_column_or_the_keys():
    stale = OracleMismatch("...", Finding("snapshot", "date", frozenset({"day", "holiday"})))
    assert caught_as(stale, (Catch("snapshot", "date", "day"),)) == ""
    assert caught_as(stale, (Catch("time travel", "date", "day"), Catch("snapshot", "date", "holiday"))) == ""
    for other in (Catch("snapshot", "date", "caldate"), Catch("snapshot", "venue", "day"),
                  Catch("deletes", "date", "day"), Catch("snapshot", "date")):  # no key's row is named
        assert "caught as snapshot of date (columns day, holiday)" in caught_as(stale, (other,)), other
    lost = OracleMismatch("...", Finding("snapshot", "venue", keys=frozenset({(9001,)})))
    assert caught_as(lost, (Catch("snapshot", "venue"),)) == ""
    assert caught_as(SilverBehind("...", Finding("behind", "venue")), (Catch("behind", "venue"),)) == ""
    assert "caught as AssertionError" in caught_as(AssertionError("a plain assert"), (Catch("behind", "venue"),))


def test_a_catch_with_a_key_needs_the_scenarios_own_row_named():
    """A leftover of an earlier test, at another key, is not the scenario's catch."""
    stale = OracleMismatch("...", Finding("snapshot", "date", frozenset({"day"}), differing_keys=frozenset({(9001,)})))
    assert caught_as(stale, (Catch("snapshot", "date", "day", key=(9001,)),)) == ""
    leftover = OracleMismatch("...", Finding("snapshot", "date", frozenset({"day"}), differing_keys=frozenset({(17,)})))
    assert "expected snapshot of date (column day) at key 9001" in caught_as(
        leftover, (Catch("snapshot", "date", "day", key=(9001,)),))
    lost = OracleMismatch("...", Finding("deletes", "venue", keys=frozenset({(9601,)})))
    assert caught_as(lost, (Catch("deletes", "venue", key=(9601,)),)) == ""


def catch_case(name: str, outcome: str = "", caught: str | None = "snapshot of venue (columns venuename)") -> str:
    properties = [("variant", name), ("where", "primary-key-update.yaml"), ("mode", "run once, COPY_ON_WRITE"),
                  ("expected", "snapshot of venue (column venuename)")] + ([("caught_as", caught)] if caught else [])
    shown = "".join(f'<property name="{key}" value="{value}"/>' for key, value in properties)
    return f'<testcase classname="tests.e2e.test_broken_variants_caught" name="{name}"><properties>{shown}' \
           f'</properties>{outcome}</testcase>'


def catch_report(*cases: str) -> str:
    return f'<testsuites><testsuite name="pytest">{"".join(cases)}</testsuite></testsuites>'


def test_the_catch_matrix_shows_what_caught_each_variant_and_passes_only_when_each_was_caught_as_named():
    lines, every_one = catch_matrix(catch_report(catch_case("skip-table"), catch_case("drop-deletes")))
    assert every_one and len(lines) == 3 and lines[0].split()[:2] == ["variant", "job"]
    assert "skip-table" in lines[1] and "snapshot of venue (columns venuename)" in lines[1] and lines[1].endswith("ok")


@pytest.mark.parametrize("outcome, caught, shown", [
    ('<failure message="AssertionError: skip-table: expected ..."/>', "deletes of venue", "WRONG KIND (expected"),
    ('<failure message="Failed: DID NOT RAISE &lt;class \'AssertionError\'&gt;"/>', None, "MISSED"),
    ('<failure message="cdc_sandbox.errors.SandboxError: timed out"/>', None, "FAILED: cdc_sandbox.errors"),
    ('<error message="failed on setup with sandbox down"/>', None, "ERROR: failed on setup"),
])
def test_a_variant_missed_or_caught_by_anything_else_fails_the_catch_matrix(outcome, caught, shown):
    lines, every_one = catch_matrix(catch_report(catch_case("skip-table"), catch_case("drop-deletes", outcome, caught)))
    assert not every_one and shown in lines[2]


def test_a_report_without_catch_tests_fails_the_catch_matrix():
    assert catch_matrix(catch_report()) == (["(no catch test ran)"], False)
