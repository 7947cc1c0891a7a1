"""The oracle's check of deleted rows: a soft-deleted row holds the values its delete carried and `__op='d'`; with
hard deletes no read holds a deleted row at all."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa

from cdc_sandbox.harness.checking.silver import Shape, deleted_rows
from cdc_sandbox.harness.checking.verdict import deleted_row_problems
from cdc_sandbox.tickit_data.schema import get_table

CATEGORY = Shape(get_table("category"))
SALE = Shape(get_table("sale"))


def category_read(rows: list[tuple], deleted: list[str], ops: list[str]) -> list:
    columns = list(zip(*rows))
    return pa.table([pa.array(columns[0], pa.int32()), *[pa.array(c, pa.string()) for c in columns[1:]],
                     pa.array(deleted), pa.array(["c1"] * len(rows)), pa.array(ops)],
                    names=[*CATEGORY.columns, "__deleted", "_hoodie_commit_time", "__op"]).to_batches()


def test_deleted_rows_are_read_with_their_values_and_op():
    read = category_read([(1, "Shows", "Opera", "a"), (2, None, None, None), (3, "Sports", "NHL", "c")],
                         ["false", "true", "true"], ["c", "d", "d"])
    assert deleted_rows(CATEGORY, read) == {(2,): ((2, None, None, None), "d"), (3,): ((3, "Sports", "NHL", "c"), "d")}


def test_a_deleted_row_with_empty_values_is_named_column_by_column():
    problems = deleted_row_problems(CATEGORY, (2,), (2, "Shows", "Opera", "gone"), ((2, None, None, None), "d"),
                                     hard=False)
    assert problems == ["key catid=2: deleted row's column catgroup: expected 'Shows', actual None",
                        "key catid=2: deleted row's column catname: expected 'Opera', actual None",
                        "key catid=2: deleted row's column catdesc: expected 'gone', actual None"]


def test_a_deleted_row_must_say_d_and_exist_and_hard_deletes_leave_none():
    row = (2, "Shows", "Opera", "gone")
    assert deleted_row_problems(CATEGORY, (2,), row, (row, "d"), hard=False) == []
    assert deleted_row_problems(CATEGORY, (2,), row, (row, "u"), hard=False) == [
        "key catid=2: deleted row's __op: expected 'd', actual 'u'"]
    assert "no soft-deleted row" in deleted_row_problems(CATEGORY, (2,), row, None, hard=False)[0]
    assert "live in the source" in deleted_row_problems(CATEGORY, (2,), None, (row, "d"), hard=False)[0]
    assert "must be absent" in deleted_row_problems(CATEGORY, (2,), None, (row, "d"), hard=True)[0]


def test_a_journaled_row_reads_back_in_the_source_types():
    journaled = {"salesid": 7, "listid": 1, "sellerid": 2, "buyerid": 3, "eventid": 4, "dateid": 1827, "qtysold": 2,
                 "pricepaid": "728.00", "commission": "109.20", "saletime": "2008-02-18T02:36:48"}
    row = SALE.from_journal(journaled)
    assert row[SALE.columns.index("pricepaid")] == Decimal("728.00")
    assert row[SALE.columns.index("saletime")] == dt.datetime(2008, 2, 18, 2, 36, 48)
