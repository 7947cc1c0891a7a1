"""The oracle's expected state around a column added with a DEFAULT, without services: the source is a dict, and
the journal's changes are built by hand."""

from __future__ import annotations

from cdc_sandbox.harness.checking.expected import ExpectedState
from cdc_sandbox.harness.checking.silver import Shape
from cdc_sandbox.sources.mutations import Change
from cdc_sandbox.tickit_data.schema import get_table

CATEGORY = Shape(get_table("category"))


class Source:
    """category's rows by catid, with whatever columns were added; read as the oracle reads them."""

    def __init__(self):
        self.rows = {1: {"catid": 1, "catgroup": "Shows", "catname": "Opera", "catdesc": "All opera"}}

    def read(self, table: str, shape: Shape, keys: set[tuple] | None) -> list[tuple]:
        return [tuple(row.get(column) for column in shape.columns) for catid, row in self.rows.items()
                if keys is None or (catid,) in keys]


def change(seq: int, kind: str, **fields) -> Change:
    ops = {"insert": ["c"], "update": ["u"]}.get(kind, [])
    return Change(seq, kind, "category", "tickit.ems.category", fields.pop("key", {}), debezium_ops=ops,
                  position={"lsn_from": seq}, **fields)


def test_a_row_changed_before_a_column_with_a_default_holds_null_there_until_an_event_carries_it():
    """The source's row takes the default at once; the event that wrote it came before the column, so silver holds
    NULL in it, and the default once the table's next event carries the column (the job backfills then)."""
    source = Source()
    state = ExpectedState(source.read)
    state.follow("category", CATEGORY)
    source.rows[2] = {"catid": 2, "catgroup": "Plays", "catname": "New", "catdesc": "inserted before"}
    inserted = change(1, "insert", key={"catid": 2}, values=source.rows[2])
    for row in source.rows.values():
        row["visits"] = 0
    added = change(2, "add_column", values={"column": "visits", "type": "bigint", "default": 0})
    state.apply([inserted, added])
    assert state.states["category"] == {(1,): (1, "Shows", "Opera", "All opera", None),
                                        (2,): (2, "Plays", "New", "inserted before", None)}

    source.rows[1]["catname"] = "Opera and more"
    state.apply([change(3, "update", key={"catid": 1}, values=source.rows[1])])
    assert state.states["category"] == {(1,): (1, "Shows", "Opera and more", "All opera", 0),
                                        (2,): (2, "Plays", "New", "inserted before", 0)}
