"""The incident catalogue's report: each shipped scenario on a project's tables as passed, failed (the oracle's
finding: table, key, column, commit and reader) or not applicable (what the tables lack), in Markdown a person reads
in CI."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

VERDICTS = ("failed", "passed", "not applicable", "skipped", "not run")  # the report's order


def verdict_of(report, not_applicable_prefix: str) -> tuple[str, str]:
    """(verdict, detail) of a test's pytest report."""
    if report.failed:
        return "failed", _first_lines(report.longreprtext)
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith(not_applicable_prefix):
            return "not applicable", reason.removeprefix(not_applicable_prefix)
        return "skipped", reason
    return "passed", ""


def _first_lines(text: str, lines: int = 6) -> str:
    """The failure's own message: the lines pytest marks with `E`, else its last lines."""
    marked = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    return "\n".join((marked or text.splitlines())[-lines:] if not marked else marked[:lines])


def counts(entries) -> Counter:
    return Counter(entry.verdict for entry in entries)


def summary(entries) -> str:
    found = counts(entries)
    return ", ".join(f"{found[v]} {v}" for v in VERDICTS if found[v]) or "no scenarios"


def markdown(entries, project: str, job: str) -> str:
    lines = [f"# The incident catalogue on {project}", "",
             f"Job under test: {job}. {summary(entries)} (of {len(entries)} scenario runs).", "",
             "| verdict | incident | job | tables (scenario's → project's) | detail |", "|---|---|---|---|---|"]
    for entry in sorted(entries, key=lambda e: (VERDICTS.index(e.verdict), e.file, e.job)):
        tables = ", ".join(f"{home} → {own}" if home != own else own for home, own in entry.tables.items())
        lines.append(f"| {entry.verdict} | {_cell(entry.incident)} (`{entry.file}`) | {entry.job} | {tables} | "
                     f"{_cell(entry.detail)} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def write(path: Path, entries, project: str, job: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(entries, project, job), encoding="utf-8")
