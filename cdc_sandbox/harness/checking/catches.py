"""The failure a deliberately broken job must cause, to show the harness catches it: the check, the table, the
column or the rows by key (`verdict.Finding`'s terms)."""

from __future__ import annotations

from dataclasses import dataclass


from decimal import Decimal, InvalidOperation

from cdc_sandbox.harness.checking.verdict import READ_CHECKS

ANY_COLUMN = "*"
ANY_READ = "read"  # any of the oracle's reads of silver (snapshot, time travel, incremental), on any column or row
CHECKS = (*READ_CHECKS, ANY_READ, "types", "duplicates", "deletes", "behind", "expectation", "unreadable")


def _text(key: tuple) -> tuple[str, ...]:
    """A key's values as text, a number's without its scale (a file's '7' and a reader's Decimal('7.00') agree)."""
    return tuple(_plain_number(value) for value in key)


def _plain_number(value) -> str:
    if isinstance(value, (int, float, Decimal, str)) and not isinstance(value, bool):
        try:
            number = Decimal(str(value))
        except InvalidOperation:
            return str(value)
        return str(number.normalize()) if number.is_finite() else str(value)
    return str(value)


@dataclass(frozen=True)
class Catch:
    """The failure a variant must cause, and no other: the check that finds it (a `verdict.Finding`'s), the table,
    and the column it names; without a column, the keys whose rows are missing, extra or held twice (or, for
    "behind", the table alone); `ANY_COLUMN`, some column. With `key`, the finding must name that row too: the
    scenario's own (compared as text: a scenario names a decimal key as the reader does not)."""

    check: str
    table: str
    column: str | None = None
    key: tuple | None = None

    def matches(self, finding) -> bool:
        if finding is not None and self.check == ANY_READ:
            return finding.table == self.table and finding.check in READ_CHECKS and bool(
                finding.columns or finding.keys or finding.differing_keys)
        if finding is None or (finding.check, finding.table) != (self.check, self.table):
            return False
        if self.key is not None and _text(self.key) not in {_text(k) for k in finding.keys | finding.differing_keys}:
            return False
        if self.column == ANY_COLUMN:
            return bool(finding.columns)
        return self.column in finding.columns if self.column else bool(finding.keys) or self.check == "behind"

    def __str__(self) -> str:
        if self.check == ANY_READ:
            return f"a read of {self.table} (snapshot, time travel or incremental)"
        shown = "(rows by key)" if self.column is None else "(a column)" if self.column == ANY_COLUMN \
            else f"(column {self.column})"
        return f"{self.check} of {self.table} {shown}" + (f" at key {', '.join(map(str, self.key))}" if self.key else "")


def caught_as(error: BaseException, catches: tuple[Catch, ...]) -> str:
    """"" when `error` is one of `catches`, else what it is instead (for the assertion's message)."""
    finding = getattr(error, "finding", None)
    if any(catch.matches(finding) for catch in catches):
        return ""
    expected = " or ".join(map(str, catches))
    return f"expected {expected}; caught as {finding or type(error).__name__}:\n{error}"
