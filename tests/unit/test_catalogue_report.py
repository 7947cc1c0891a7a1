"""The catalogue's Markdown report: each incident's verdict with the tables that played it, failures first, broken
variants apart as caught or missed."""

from __future__ import annotations

from types import SimpleNamespace

from cdc_sandbox.harness.driving import catalogue_report
from cdc_sandbox.harness.driving.scenario_tests import NOT_APPLICABLE, CatalogueEntry


def _entry(incident, file, verdict, detail="", variant=None, tables=None):
    entry = CatalogueEntry(incident, "run once, COPY_ON_WRITE", tables or {"venue": "accounts"}, file, variant)
    entry.verdict, entry.detail = verdict, detail
    return entry


def test_the_report_lists_failures_first_and_variants_apart():
    entries = [_entry("delete then re-insert", "delete-then-reinsert", "passed"),
               _entry("null in a column", "null-in-a-column-with-a-default", "failed",
                      "line 34 | check 'NULL kept'\nkey (1,): column visits"),
               _entry("SQL Server LSN", "sqlserver-one-commit-lsn", "not applicable", "needs a table on sqlserver",
                      tables={"user": "user"}),
               _entry("delete then re-insert", "delete-then-reinsert", "missed", "the scenario passed",
                      variant="drop-deletes")]
    text = catalogue_report.markdown(entries, "shop/cdc-sandbox.yaml", "builtin")
    lines = text.splitlines()
    assert lines[0] == "# The incident catalogue on shop/cdc-sandbox.yaml"
    assert "1 failed, 1 passed, 1 not applicable (of 3 scenario runs)" in text
    incidents = [line for line in lines if line.startswith("| ") and "`" in line and " by " not in line]
    assert [line.split(" | ")[0] for line in incidents] == ["| failed", "| passed", "| not applicable"]
    assert "venue → accounts" in incidents[0] and "| user |" in incidents[2]
    assert "line 34 \\| check 'NULL kept'<br>key (1,): column visits" in incidents[0]
    assert "## Broken variants" in text and "| missed | `drop-deletes` by delete then re-insert" in text


def test_a_skip_that_says_not_applicable_is_reported_so():
    skipped = SimpleNamespace(failed=False, skipped=True,
                              longrepr=("file", 1, f"Skipped: {NOT_APPLICABLE}needs a table on sqlserver"))
    assert catalogue_report.verdict_of(skipped, NOT_APPLICABLE) == ("not applicable", "needs a table on sqlserver")
    passed = SimpleNamespace(failed=False, skipped=False, longrepr=None)
    assert catalogue_report.verdict_of(passed, NOT_APPLICABLE, variant="drop-deletes") == ("caught", "")
