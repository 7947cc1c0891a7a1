"""The oracle's expected state around a column added with a DEFAULT, without services: the source is a dict, and
the journal's changes are built by hand."""

from __future__ import annotations

from dataclasses import replace

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


def test_a_table_the_sources_triggers_write_takes_the_sources_rows_after_each_round():
    """Rows a trigger inserted, changed and deleted (nobody journaled them) become the expected state; a deleted
    one keeps the values it held; a round that changed nothing there leaves it out of the trigger wait."""
    source = Source()
    state = ExpectedState(source.read)
    audited = Shape(replace(get_table("category"), written_by_triggers=True))
    state.follow("category", audited)
    source.rows[2] = {"catid": 2, "catgroup": "Plays", "catname": "By a trigger", "catdesc": "audit"}
    source.rows[1]["catname"] = "Changed by a trigger"
    state.apply([replace(change(1, "update", key={"catid": 9}), table="event")])
    assert state.changed_by_triggers == {"category"} and state.pending["category"] == {(1,), (2,)}
    assert state.states["category"][(1,)][2] == "Changed by a trigger"
    gone = source.rows.pop(2)
    state.apply([replace(change(2, "update", key={"catid": 9}), table="event")])
    assert state.deleted["category"] == {(2,): tuple(gone.values())} and (2,) not in state.states["category"]
    state.apply([replace(change(3, "update", key={"catid": 9}), table="event")])
    assert state.changed_by_triggers == set()


def test_a_trigger_body_that_writes_a_table_marks_it_whatever_its_quoting():
    from cdc_sandbox.stack.catalog import _written_by

    bodies = ["BEGIN INSERT INTO film_text (film_id) VALUES (new.film_id); END",
              "BEGIN UPDATE `sakila`.`film_text` SET title = new.title; END", 'DELETE FROM ONLY public."audit" x']
    assert _written_by("film_text", bodies[:1]) and _written_by("film_text", bodies[1:2])
    assert _written_by("audit", bodies[2:]) and not _written_by("film", bodies[:2])
    assert not _written_by("film_text", ["SET NEW.last_update = now(); -- film_text_log"])


def test_a_trigger_written_tables_added_column_is_not_taken_for_a_trigger_write():
    """The state holds NULL in a column added with a DEFAULT until an event carries it, where the source shows the
    default: that difference is no write of a trigger's."""
    source = Source()
    state = ExpectedState(source.read)
    state.follow("category", Shape(replace(get_table("category"), written_by_triggers=True)))
    for row in source.rows.values():
        row["visits"] = 0
    state.apply([change(1, "add_column", values={"column": "visits", "type": "bigint", "default": 0})])
    state.apply([replace(change(2, "update", key={"catid": 9}), table="event")])
    assert state.changed_by_triggers == set() and state.states["category"][(1,)][-1] is None
