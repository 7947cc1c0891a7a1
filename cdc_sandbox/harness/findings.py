"""What a failed check names and the failure it raises: shared by the pipeline's waits (`running`), the oracle's
checks (`checking`) and what drives tests (`driving`), so a test can expect one failure and no other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """What a failed check names, so that a test can expect one failure and no other: the check (a read's,
    `checking.verdict.READ_CHECKS`, or "types", "duplicates", "deletes", "unreadable", "behind"), the table, the
    columns whose values differ and the keys of those rows, or the keys whose rows are missing, extra or held twice."""

    check: str
    table: str
    columns: frozenset[str] = frozenset()
    keys: frozenset[tuple] = frozenset()
    differing_keys: frozenset[tuple] = frozenset()  # the rows whose `columns` differ

    def __str__(self) -> str:
        named = [f"columns {', '.join(sorted(self.columns))}"] if self.columns else []
        named += [f"the rows of {len(self.keys)} key{'s' if len(self.keys) > 1 else ''}"] if self.keys else []
        return f"{self.check} of {self.table}" + (f" ({'; '.join(named)})" if named else "")


class Verdict(AssertionError):
    """A check of silver failed; `finding` says which, where (None for a check that names no table)."""

    def __init__(self, message: str, finding: Finding | None = None):
        super().__init__(message)
        self.finding = finding
