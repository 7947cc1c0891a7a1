"""The oracle's verdict on one read, without services: the reads are Arrow batches as Spark and hudi-rs give them.
Each plausible bug of a job (a row lost, a key twice, a wrong type, readers that disagree, a delete dropped, a row
rewritten with other values) fails, and only what the source allows passes."""

from __future__ import annotations

import pyarrow as pa
import pytest

from cdc_sandbox.harness.checking.silver import Shape, arrow_type
from cdc_sandbox.harness.checking.verdict import DuplicateKeys, Expectation, Finding, OracleMismatch, WrongTypes, judge
from cdc_sandbox.tickit_data.ddl import POSTGRES
from cdc_sandbox.tickit_data.schema import get_table

CATEGORY = Shape(get_table("category"))
ROWS = {(1,): (1, "Sports", "MLB", "Major League Baseball"), (2,): (2, "Shows", "Opera", "All opera")}
WHERE = "silver category, snapshot:\n"


def read(rows: list[tuple], deleted: list[str] | None = None, commits: list[str] | None = None,
         ops: list[str] | None = None, catid_type: pa.DataType | None = None) -> list:
    """A reader's batches: the compared columns in the types the job must write, and the meta columns."""
    n = len(rows)
    columns = list(zip(*rows)) if rows else [[] for _ in CATEGORY.columns]
    types = [arrow_type(c, POSTGRES) for c in CATEGORY.table.columns]
    if catid_type is not None:
        types[0] = catid_type
    arrays = [pa.array(list(values), kind) for values, kind in zip(columns, types)]
    arrays += [pa.array(deleted or ["false"] * n, pa.string()), pa.array(commits or ["c1"] * n, pa.string()),
               pa.array(ops or ["u"] * n, pa.string())]
    return pa.table(arrays, names=[*CATEGORY.columns, "__deleted", "_hoodie_commit_time", "__op"]).to_batches()


def both(batches) -> dict:
    return {"spark": batches, "hudi-rs": batches}


def snapshot(rows=ROWS, **options) -> Expectation:
    return Expectation(CATEGORY, rows, POSTGRES, live_keys=set(rows), **options)


def test_a_read_that_holds_the_source_passes():
    judge(WHERE, snapshot(), both(read(list(ROWS.values()))))


def test_judgements_of_one_state_share_its_arrow_table_and_each_read_is_still_judged():
    """The oracle judges several reads against one recorded state (the round's snapshot, time travel to the commit,
    the comparison with the source): the expected rows become an Arrow table once."""
    tables: dict = {}
    judge(WHERE, snapshot(arrow_tables=tables), both(read(list(ROWS.values()))))
    assert len(tables) == 1
    built = next(iter(tables.values()))
    judge(WHERE, snapshot(arrow_tables=tables), {"hudi-rs": read(list(reversed(ROWS.values())))})
    assert next(iter(tables.values())) is built
    with pytest.raises(OracleMismatch, match=r"key catid=2: expected row .*, actual no row"):
        judge(WHERE, snapshot(arrow_tables=tables), both(read([ROWS[1,]])))


def test_a_lost_row_is_named_by_its_key():
    with pytest.raises(OracleMismatch, match=r"key catid=2: expected row .*, actual no row") as lost:
        judge(WHERE, snapshot(), both(read([ROWS[1,]])))
    assert lost.value.finding == Finding("snapshot", "category", keys=frozenset({(2,)}))


def test_one_reader_alone_is_judged_on_its_own():
    judge(WHERE, snapshot(), {"hudi-rs": read(list(ROWS.values()))})
    with pytest.raises(OracleMismatch, match=r"hudi-rs:\n  key catid=2: expected row .*, actual no row"):
        judge(WHERE, snapshot(), {"hudi-rs": read([ROWS[1,]])})


def test_a_stale_value_is_named_by_its_column():
    stale = (2, "Shows", "Opera", "old text")
    with pytest.raises(OracleMismatch, match="key catid=2: column catdesc: expected 'All opera', actual 'old text'") \
            as caught:
        judge(WHERE, snapshot(), both(read([ROWS[1,], stale])), check="time travel")
    assert caught.value.finding == Finding("time travel", "category", columns=frozenset({"catdesc"}),
                                                differing_keys=frozenset({(2,)}))
    assert str(caught.value.finding) == "time travel of category (columns catdesc)"


def test_a_value_where_the_source_holds_null_is_named_with_why_and_how_to_keep_null():
    """A converter that writes a column's DEFAULT for NULL: the finding names the column and the message says why."""
    nulled = {(1,): ROWS[1,], (2,): (2, "Shows", "Opera", None)}
    with pytest.raises(OracleMismatch, match=r"(?s)key catid=2: column catdesc: expected None, actual 'All opera'"
                                             r".*why: silver holds a value where NULL is expected \(catdesc\)"
                                             r".*replace\.null\.with\.default: false") as caught:
        judge(WHERE, snapshot(nulled), both(read(list(ROWS.values()))))
    assert caught.value.finding == Finding("snapshot", "category", columns=frozenset({"catdesc"}),
                                           differing_keys=frozenset({(2,)}))
    with pytest.raises(OracleMismatch) as stale:
        judge(WHERE, snapshot(), both(read([ROWS[1,], (2, "Shows", "Opera", "old text")])))
    assert "why:" not in str(stale.value), "the line is only for a value where the source holds NULL"


def test_a_long_value_is_shown_by_its_beginning_and_length():
    long = (2, "Shows", "Opera", "x" * 5000)
    with pytest.raises(OracleMismatch) as caught:
        judge(WHERE, snapshot({**ROWS, (2,): long}), both(read(list(ROWS.values()))))
    assert "column catdesc: expected 'xxxx" in str(caught.value) and "... (5,002 characters), actual 'All opera'" \
        in str(caught.value)
    assert len(str(caught.value)) < 1000


def test_a_key_held_twice_fails_even_with_equal_values():
    twice = read([*ROWS.values(), ROWS[2,]], commits=["c1", "c1", "c2"])
    with pytest.raises(DuplicateKeys, match="key catid=2 held 2 times, by commits c1, c2") as caught:
        judge(WHERE, snapshot(), both(twice))
    assert caught.value.finding == Finding("duplicates", "category", keys=frozenset({(2,)}))


def test_a_widened_column_fails_even_with_equal_values():
    with pytest.raises(WrongTypes, match="column catid .*expected int32, actual int64") as caught:
        judge(WHERE, snapshot(), both(read(list(ROWS.values()), catid_type=pa.int64())))
    assert caught.value.finding == Finding("types", "category", columns=frozenset({"catid"}))


def test_readers_that_disagree_fail_however_each_compares():
    with pytest.raises(OracleMismatch, match="spark and hudi-rs disagree"):
        judge(WHERE, snapshot(), {"spark": read(list(ROWS.values())), "hudi-rs": read([ROWS[1,]])})


def test_a_delete_must_leave_a_soft_deleted_row_with_the_values_it_carried():
    gone = (3, "Concerts", "Pop", "All pop")
    expected = snapshot(deleted={(3,): gone})
    judge(WHERE, expected, both(read([*ROWS.values(), gone], deleted=["false", "false", "true"], ops=["u", "u", "d"])))
    with pytest.raises(OracleMismatch, match="key catid=3: no soft-deleted row") as lost:
        judge(WHERE, expected, both(read(list(ROWS.values()))))
    assert lost.value.finding == Finding("deletes", "category", keys=frozenset({(3,)}))
    emptied = (3, None, None, None)
    with pytest.raises(OracleMismatch, match="deleted row's column catgroup") as emptied_row:
        judge(WHERE, expected, both(read([*ROWS.values(), emptied], deleted=["false", "false", "true"],
                                         ops=["u", "u", "d"])))
    assert emptied_row.value.finding == Finding("deletes", "category", columns=frozenset({"catgroup", "catname",
                                                                                          "catdesc"}),
                                                differing_keys=frozenset({(3,)}))


def test_with_hard_deletes_a_soft_deleted_row_fails():
    gone = (3, "Concerts", "Pop", "All pop")
    with pytest.raises(OracleMismatch, match="with hard deletes a deleted key must be absent"):
        judge(WHERE, snapshot(hard_deletes=True),
              both(read([*ROWS.values(), gone], deleted=["false", "false", "true"], ops=["u", "u", "d"])))


def test_a_range_of_changes_may_hold_a_redelivered_key_only_as_it_was():
    changed = {(2,): ROWS[2,]}
    expected = Expectation(CATEGORY, changed, POSTGRES, live_keys=set(ROWS), live_only=False,
                           unchanged={(1,): ROWS[1,]})
    judge(WHERE, expected, both(read([ROWS[1,], ROWS[2,]])))
    rewritten = (1, "Sports", "MLB", "a value the source never had")
    with pytest.raises(OracleMismatch, match="key catid=1: expected no row"):
        judge(WHERE, expected, both(read([rewritten, ROWS[2,]])))


def test_an_empty_table_that_should_be_empty_passes_and_one_that_should_not_fails():
    judge(WHERE, snapshot(rows={}), both(read([])))
    with pytest.raises(OracleMismatch, match="expected row"):
        judge(WHERE, snapshot(), both(read([])))
