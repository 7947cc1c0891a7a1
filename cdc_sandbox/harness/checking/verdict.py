"""What the oracle decides from one read of a silver table: given what the table must hold and what each reader
(Spark, hudi-rs) returned, pass, or fail with the words that say what is wrong. No service is involved: the reads
are Arrow batches, and the unit tests feed them directly.

In order: every key once and every compared column of its expected type (failures of their own, since the value
comparison keeps one version per key and `1.5 == 1.50`); the deleted rows; then the live rows, compared as sorted
Arrow columns first and built as Python rows only when that cannot decide or finds a difference.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass, field

from cdc_sandbox.harness.findings import Finding, Verdict
from cdc_sandbox.harness.checking.silver import (
    NotComparableAsArrow,
    Rows,
    Shape,
    arrow_rows,
    deleted_rows,
    duplicate_keys,
    expected_table,
    live_table,
    wrong_types,
)

MAX_DIFF_LINES = 25
LONGEST_VALUE_SHOWN = 80  # characters of a value's repr in a difference
ABSENT = "absent"  # a key a read or the expectation does not hold
READ_CHECKS = ("snapshot", "time travel", "incremental")  # the reads the oracle compares with the source


class OracleMismatch(Verdict):
    """Silver differs from what the source says it must hold, or the two readers disagree."""


class UnreadableSilver(OracleMismatch):
    """A reader cannot read what the job wrote (a read fails with an error of the reader's own)."""


class DuplicateKeys(OracleMismatch):
    """A read holds a source key more than once."""


class WrongTypes(OracleMismatch):
    """A silver column's type is not the one its source column maps to."""


@dataclass(frozen=True)
class Expectation:
    """What one read of a table must hold."""

    shape: Shape
    rows: Rows  # the live rows by key; with `live_only` False also deleted keys, as None
    dialect: str  # of the source engine: the column types follow from it
    deleted: dict[tuple, tuple] = field(default_factory=dict)  # soft-deleted keys the oracle saw deleted: last values
    truncated: Collection[tuple] = ()  # those of `deleted` that a truncate deleted (`__op='t'`, not 'd')
    live_keys: Collection[tuple] = ()  # keys the source holds now
    live_only: bool = True  # a snapshot (live rows only), or a range of changes (deleted rows too)
    unchanged: Rows = field(default_factory=dict)  # re-delivered keys the read may hold besides `rows`, as they are
    hard_deletes: bool = False
    # `rows` as Arrow tables by reader schema, built on first use: judgements of one state may share it.
    arrow_tables: dict = field(default_factory=dict, compare=False)


def judge(where: str, expected: Expectation, reads: dict[str, list],
          on_rows_built=lambda reader, seconds: None, check: str = "snapshot") -> None:
    """Raise `OracleMismatch` (or `DuplicateKeys`, `WrongTypes`) unless each reader's batches hold what is
    expected; `where` begins the message, `check` names the read (one of `READ_CHECKS`) in its finding.
    `on_rows_built(reader, seconds)` is told the time Python rows took."""
    check_keys_and_types(where, expected, reads)
    check_deleted_rows(where, expected, reads)
    tables = expected.arrow_tables  # built once per schema when the readers agree on it
    if expected.live_only and all(equal_as_arrow(expected.shape, batches, expected.rows, tables)
                                  for batches in reads.values()):
        return
    actual_by_reader = {}
    for name, batches in reads.items():
        started = time.monotonic()
        actual = arrow_rows(expected.shape, batches)
        on_rows_built(name, time.monotonic() - started)
        shown = {k: v for k, v in actual.items() if v is not None} if expected.live_only else dict(actual)
        for key, row in expected.unchanged.items():
            if key not in expected.rows and key in actual and actual[key] == row:
                shown.pop(key, None)
        actual_by_reader[name] = shown
    problems, columns, keys, differing = [], set(), set(), set()
    names = list(actual_by_reader)
    if len(names) == 2 and actual_by_reader[names[0]] != actual_by_reader[names[1]]:
        first, second = (actual_by_reader[n] for n in names)
        problems.append(f"{names[0]} and {names[1]} disagree ({names[0]} = expected, {names[1]} = actual):\n"
                        + "\n".join(diff_rows(expected.shape, first, second)))
    for name, actual in actual_by_reader.items():
        if actual != expected.rows:
            problems.append(f"{name}:\n" + "\n".join(diff_rows(expected.shape, expected.rows, actual)))
            columns |= differing_columns(expected.shape, expected.rows, actual)
            keys |= differing_rows(expected.rows, actual)
            differing |= rows_with_differing_values(expected.rows, actual)
    filled = sorted(set().union(*(nulls_filled(expected.shape, expected.rows, actual)
                                  for actual in actual_by_reader.values())))
    if filled:
        problems.append(NULL_AS_DEFAULT_WHY.format(columns=", ".join(filled)))
    if problems:
        raise OracleMismatch(where + "\n".join(problems), Finding(check, expected.shape.table.name, frozenset(columns),
                                                                 frozenset(keys), frozenset(differing)))


def check_keys_and_types(where: str, expected: Expectation, reads: dict[str, list]) -> None:
    duplicates, types, held_twice, typed_wrong = [], [], set(), set()
    for name, batches in reads.items():
        for key, commits in list(duplicate_keys(expected.shape, batches).items())[:MAX_DIFF_LINES]:
            shown = ", ".join(f"{k}={v!r}" for k, v in zip(expected.shape.table.primary_key, key))
            duplicates.append(f"  {name}: key {shown} held {len(commits)} times, by commits {', '.join(commits)}")
            held_twice.add(key)
        if batches:
            wrong = wrong_types(expected.shape, batches[0].schema, expected.dialect)
            types += [f"  {name}:{line}" for line in wrong.values()]
            typed_wrong |= set(wrong)
    table = expected.shape.table.name
    if duplicates:
        raise DuplicateKeys(where + "a key held more than once:\n" + "\n".join(duplicates),
                            Finding("duplicates", table, keys=frozenset(held_twice)))
    if types:
        raise WrongTypes(where + "columns of the wrong type:\n" + "\n".join(types),
                         Finding("types", table, columns=frozenset(typed_wrong)))


def check_deleted_rows(where: str, expected: Expectation, reads: dict[str, list]) -> None:
    """Soft deletes: each key the oracle saw deleted is held as a deleted row (`__deleted='true'`, `__op='d'`, or
    't' where a truncate deleted it) with the values its delete carried (a key deleted before the oracle began is not known, so not checked).
    Hard deletes: no read holds a deleted row at all. A range of changes is checked on the keys it covers."""
    hard = expected.hard_deletes
    covered = None if expected.live_only else set(expected.rows)
    deleted = {} if hard else {k: row for k, row in expected.deleted.items() if covered is None or k in covered}
    problems, columns, keys, differing = [], set(), set(), set()
    for name, batches in reads.items():
        actual = deleted_rows(expected.shape, batches)
        for key in sorted(set(deleted) | set(actual), key=repr):
            if hard or key in deleted or key in expected.live_keys:
                want, got, op = deleted.get(key), actual.get(key), "t" if key in expected.truncated else "d"
                lines = deleted_row_problems(expected.shape, key, want, got, hard, op)
                problems += [f"  {name}: {line}" for line in lines]
                if lines and want is not None and got is not None and not hard:
                    columns |= {c for c, a, b in zip(expected.shape.columns, want, got[0]) if a != b}
                    columns |= {"__op"} if got[1] != op else set()
                    differing.add(key)
                elif lines:
                    keys.add(key)
    if problems:
        raise OracleMismatch(where + "deleted rows:\n" + "\n".join(problems[:MAX_DIFF_LINES]),
                             Finding("deletes", expected.shape.table.name, frozenset(columns), frozenset(keys),
                                     frozenset(differing)))


def equal_as_arrow(shape: Shape, batches, expected: Rows, expected_tables: dict) -> bool:
    """True when the read's live rows equal `expected` value for value (as sorted Arrow columns of the reader's
    types); False when that is not shown this way."""
    try:
        actual = live_table(shape, batches)
        if actual.schema not in expected_tables:
            expected_tables[actual.schema] = expected_table(shape, expected, actual.schema)
        return actual.equals(expected_tables[actual.schema])
    except NotComparableAsArrow:
        return False


def differing_columns(shape: Shape, expected: Rows, actual: Rows) -> set[str]:
    """The columns whose values differ in a row both hold live."""
    return {column for key, want in expected.items() if _both_live(want, got := actual.get(key, ABSENT))
            for column, a, b in zip(shape.columns, want, got) if a != b}


def differing_rows(expected: Rows, actual: Rows) -> set[tuple]:
    """The keys one side holds and the other does not, or holds deleted."""
    return {key for key in set(expected) | set(actual)
            if expected.get(key, ABSENT) != actual.get(key, ABSENT)
            and not _both_live(expected.get(key, ABSENT), actual.get(key, ABSENT))}


def rows_with_differing_values(expected: Rows, actual: Rows) -> set[tuple]:
    """The keys of rows both hold live, with values that differ."""
    return {key for key, want in expected.items() if _both_live(want, got := actual.get(key, ABSENT)) and want != got}


def _both_live(want, got) -> bool:
    return isinstance(want, tuple) and isinstance(got, tuple) and len(want) == len(got)


NULL_AS_DEFAULT_WHY = (
    "why: silver holds a value where NULL is expected ({columns}). If it is the column's DEFAULT, a converter "
    "or transform wrote the default for NULL (Kafka Connect's Struct.get gives a null field its schema's default, "
    "KAFKA-8713): keep `transforms.unwrap.replace.null.with.default: false` and "
    "`value.converter.ignore.default.for.nullables: true` (the sandbox's own) in the source's debezium settings")


def nulls_filled(shape: Shape, expected: Rows, actual: Rows) -> set[str]:
    """The columns in which a row holds a value where NULL is expected."""
    return {column for key, want in expected.items() if _both_live(want, got := actual.get(key, ABSENT))
            for column, a, b in zip(shape.columns, want, got) if a is None and b is not None}


def diff_rows(shape: Shape, expected: Rows, actual: Rows) -> list[str]:
    """Readable differences: one line per missing or extra key and per differing column."""
    lines = []
    for key in sorted(set(expected) | set(actual), key=repr):
        want, got = expected.get(key, ABSENT), actual.get(key, ABSENT)
        if want == got:
            continue
        shown = ", ".join(f"{k}={v!r}" for k, v in zip(shape.table.primary_key, key))
        if isinstance(want, str) or isinstance(got, str) or want is None or got is None:
            lines.append(f"  key {shown}: expected {_describe(want)}, actual {_describe(got)}")
            continue
        if len(want) != len(got):
            lines.append(f"  key {shown}: expected {len(want)} columns {want!r}, actual {len(got)} columns {got!r}")
            continue
        for column, a, b in zip(shape.columns, want, got):
            if a != b:
                lines.append(f"  key {shown}: column {column}: expected {_value(a)}, actual {_value(b)}")
    total = len(lines)
    if total > MAX_DIFF_LINES:
        lines = lines[:MAX_DIFF_LINES] + [f"  ... and {total - MAX_DIFF_LINES} more differences"]
    return lines


def deleted_row_problems(shape: Shape, key: tuple, want: tuple | None, got: tuple | None, hard: bool,
                         want_op: str = "d") -> list[str]:
    shown = ", ".join(f"{k}={v!r}" for k, v in zip(shape.table.primary_key, key))
    if hard:
        return [f"key {shown}: a soft-deleted row; with hard deletes a deleted key must be absent"]
    if want is None:
        return [f"key {shown}: deleted in silver, live in the source"]
    if got is None:
        return [f"key {shown}: no soft-deleted row (__deleted='true'); the source deleted {want!r}"]
    row, op = got
    lines = [f"key {shown}: deleted row's column {c}: expected {_value(a)}, actual {_value(b)}"
             for c, a, b in zip(shape.columns, want, row) if a != b]
    if op != want_op:
        lines.append(f"key {shown}: deleted row's __op: expected {want_op!r}, actual {op!r}")
    return lines


def _value(value) -> str:
    """A value as a difference shows it: a long one by its beginning and its length."""
    shown = repr(value)
    if len(shown) <= LONGEST_VALUE_SHOWN:
        return shown
    return f"{shown[:LONGEST_VALUE_SHOWN]}... ({len(shown):,} characters)"


def _describe(row) -> str:
    if row == ABSENT:
        return "no row"
    if row is None:
        return "deleted"
    return "row " + repr(row)
