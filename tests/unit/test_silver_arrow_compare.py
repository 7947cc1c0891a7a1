"""The oracle's Arrow comparison: equal only when every live row equals the expected one; anything it cannot decide
(a key held twice, a type it does not normalize) goes to the row-by-row comparison, which words the failure."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from cdc_sandbox.harness.checking.silver import NotComparableAsArrow, Shape, arrow_rows, live_table
from cdc_sandbox.harness.checking.verdict import equal_as_arrow
from cdc_sandbox.tickit_data.schema import get_table

DATE = Shape(get_table("date"))
SALE = Shape(get_table("sale"))


def date_batches(rows: list[tuple], deleted: list[str | None] | None = None, holiday=pa.bool_()) -> list:
    """Rows of `date` as a reader gives them: char columns padded, plus the meta columns."""
    columns = list(zip(*rows))
    deleted = deleted or [None] * len(rows)
    arrays = [pa.array(columns[0], pa.int16()), pa.array(columns[1], pa.date32()),
              pa.array([f"{v:<3}" for v in columns[2]]), pa.array(columns[3], pa.int16()),
              pa.array([f"{v:<5}" for v in columns[4]]), pa.array([f"{v:<5}" for v in columns[5]]),
              pa.array(columns[6], pa.int16()), pa.array(columns[7], holiday),
              pa.array(deleted, pa.string()), pa.array(["20261123000000000"] * len(rows))]
    names = [*DATE.columns, "__deleted", "_hoodie_commit_time"]
    return pa.table(arrays, names=names).to_batches()


ROWS = [(1, dt.date(2008, 1, 1), "TU", 1, "JAN", "1", 2008, True),
        (2, dt.date(2008, 1, 2), "WE", 1, "JAN", "1", 2008, False),
        (3, dt.date(2008, 1, 3), "TH", 1, "JAN", "1", 2008, None)]
STATE = {(row[0],): row for row in ROWS}


def equal(shape: Shape, batches, expected) -> bool:
    return equal_as_arrow(shape, batches, expected, {})


def test_equal_read_is_decided_in_arrow_whatever_the_row_order():
    assert equal(DATE, date_batches(list(reversed(ROWS))), STATE)
    assert arrow_rows(DATE, date_batches(ROWS)) == STATE  # the row-by-row view agrees
    assert equal(DATE, date_batches(ROWS), dict(reversed(STATE.items())))  # the expected state in any order too


def test_rows_at_some_keys_are_those_rows_alone():
    assert arrow_rows(DATE, date_batches(ROWS), {(3,), (1,), (9,)}) == {(1,): ROWS[0], (3,): ROWS[2]}
    assert arrow_rows(DATE, date_batches(ROWS, deleted=[None, "true", None]), {(2,)}) == {(2,): None}
    assert arrow_rows(DATE, date_batches(ROWS), {("not a number",)}) == STATE  # what the check then finds unmet


def test_a_changed_value_a_missing_row_or_an_extra_row_is_not_equal():
    changed = [ROWS[0], ROWS[1][:5] + ("2",) + ROWS[1][6:], ROWS[2]]
    assert not equal(DATE, date_batches(changed), STATE)
    assert not equal(DATE, date_batches(ROWS[:2]), STATE)
    extra = (4, dt.date(2008, 1, 4), "FR", 1, "JAN", "1", 2008, False)
    assert not equal(DATE, date_batches([*ROWS, extra]), STATE)


def test_soft_deleted_rows_are_not_live():
    assert equal(DATE, date_batches(ROWS, deleted=[None, "false", "true"]), {k: STATE[k] for k in [(1,), (2,)]})
    assert not equal(DATE, date_batches(ROWS, deleted=[None, "false", "true"]), STATE)


def test_booleans_stored_as_integers_compare_as_booleans():
    as_ints = [row[:7] + (None if row[7] is None else int(row[7]),) for row in ROWS]
    assert equal(DATE, date_batches(as_ints, holiday=pa.int8()), STATE)


def test_a_key_held_twice_is_left_to_the_row_by_row_comparison():
    with pytest.raises(NotComparableAsArrow):
        live_table(DATE, date_batches([*ROWS, ROWS[0]]))
    assert not equal(DATE, date_batches([*ROWS, ROWS[0]]), STATE)


def test_decimals_compare_by_value_and_a_value_that_does_not_fit_is_not_equal():
    row = (1, 10, 20, 30, 40, 50, 2, Decimal("12.5"), Decimal("1.85"), dt.datetime(2008, 2, 18, 2, 36, 48))
    arrays = [pa.array([v], pa.int32()) for v in row[:7]] + \
             [pa.array([Decimal("12.50")], pa.decimal128(8, 2)), pa.array([Decimal("1.85")], pa.decimal128(8, 2)),
              pa.array([dt.datetime(2008, 2, 18, 2, 36, 48)], pa.timestamp("us", tz="UTC")),
              pa.array([None], pa.string()), pa.array(["20261123000000000"])]
    batches = pa.table(arrays, names=[*SALE.columns, "__deleted", "_hoodie_commit_time"]).to_batches()
    assert equal(SALE, batches, {(1,): row})
    assert not equal(SALE, batches, {(1,): row[:7] + (Decimal("12.501"),) + row[8:]})
