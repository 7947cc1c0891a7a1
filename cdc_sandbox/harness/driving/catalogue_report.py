"""The incident catalogue's report: each shipped scenario on a project's tables as passed, failed (the oracle's
finding: table, key, column, commit and reader) or not applicable (what the tables lack), in Markdown a person reads
in CI."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

VERDICTS = ("failed", "missed", "passed", "caught", "not applicable", "skipped", "not run")  # the report's order
AS_VARIANT = {"failed": "missed", "passed": "caught"}  # a broken variant's test passes when the scenario caught it


def verdict_of(report, not_applicable_prefix: str, variant: str | None = None) -> tuple[str, str]:
    """(verdict, detail) of a test's pytest report; a broken variant's is "caught" or "missed"."""
    verdict, detail = _verdict(report, not_applicable_prefix)
    return (AS_VARIANT.get(verdict, verdict) if variant else verdict), detail


def _verdict(report, not_applicable_prefix: str) -> tuple[str, str]:
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
    incidents = [e for e in entries if not e.variant]
    variants = [e for e in entries if e.variant]
    lines = [f"# The incident catalogue on {project}", "",
             f"Job under test: {job}. {summary(incidents)} (of {len(incidents)} scenario runs).", "",
             *_table(incidents, "incident")]
    if variants:
        lines += ["", "## Broken variants of the job, each against the scenario that must catch it", "",
                  f"{summary(variants)} (of {len(variants)} runs).", "", *_table(variants, "variant")]
    return "\n".join(lines) + "\n"


def _table(entries, what: str) -> list[str]:
    lines = [f"| verdict | {what} | job | tables (scenario's → project's) | detail |", "|---|---|---|---|---|"]
    for entry in sorted(entries, key=lambda e: (VERDICTS.index(e.verdict), e.file, e.job)):
        tables = ", ".join(f"{home} → {own}" if home != own else own for home, own in entry.tables.items())
        named = f"`{entry.variant}` by {_cell(entry.incident)}" if entry.variant else _cell(entry.incident)
        lines.append(f"| {entry.verdict} | {named} (`{entry.file}`) | {entry.job} | {tables} | {_cell(entry.detail)} |")
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def write(path: Path, entries, project: str, job: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(entries, project, job), encoding="utf-8")
