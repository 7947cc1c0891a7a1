"""The replay's oracle on its own: recorded change events folded by key in source-position order, whatever order
Kafka holds them in, with deletes, key updates, truncates and the event behind each key."""

from __future__ import annotations

import pytest

from cdc_sandbox.replay.fold import Event, fold, states_at

KEY = ("catid",)


def event(offset: int, lsn: int | None, op: str, catid: int | None = None, name: str | None = None,
          deleted: bool = False, partition: int = 0) -> Event:
    value = {"__op": op, "__lsn": lsn}
    if catid is not None:
        value |= {"catid": catid, "catname": name, "__deleted": "true" if deleted else "false"}
    return Event("tickit.ems.category", partition, offset, None if catid is None else {"catid": catid}, value)


HISTORY = [event(0, 100, "c", 1, "first"), event(1, 110, "c", 2, "two"), event(2, 130, "u", 1, "third"),
           event(3, 120, "u", 1, "second"),  # re-sent late: an older change at a later offset
           event(4, 140, "d", 2, "two", deleted=True), event(5, 150, "c", 2, "back")]


def test_the_latest_change_by_source_position_wins_not_the_latest_in_kafka():
    state = fold(HISTORY, "lsn", KEY)
    assert state.live == {(1,): {"catid": 1, "catname": "third"}, (2,): {"catid": 2, "catname": "back"}}
    assert state.deleted == {} and state.position == 150


def test_a_position_in_between_shows_the_delete_with_the_values_it_carried():
    state = fold(HISTORY, "lsn", KEY, until=145)
    assert state.live == {(1,): {"catid": 1, "catname": "third"}}
    assert state.deleted == {(2,): {"catid": 2, "catname": "two"}}


def test_a_key_update_is_a_delete_of_the_old_key_and_a_create_of_the_new_one():
    moved = [event(0, 100, "c", 1, "a"), event(1, 110, "d", 1, "a", deleted=True), event(2, 110, "c", 9, "a")]
    state = fold(moved, "lsn", KEY)
    assert state.live == {(9,): {"catid": 9, "catname": "a"}} and (1,) in state.deleted


def test_a_truncate_deletes_every_live_row_with_its_last_values_and_later_inserts_stay():
    events = [*HISTORY, event(6, 160, "t"), event(7, 170, "c", 3, "after")]
    state = fold(events, "lsn", KEY)
    assert state.live == {(3,): {"catid": 3, "catname": "after"}}
    assert state.deleted == {(1,): {"catid": 1, "catname": "third"}, (2,): {"catid": 2, "catname": "back"}}
    assert "offset 6" in state.culprit((1,))


def test_tombstones_change_nothing():
    tombstone = Event("tickit.ems.category", 0, 9, {"catid": 1}, None)
    assert fold([*HISTORY, tombstone], "lsn", KEY).live == fold(HISTORY, "lsn", KEY).live


def test_the_states_at_several_positions_are_the_folds_until_each():
    found = states_at(HISTORY, "lsn", KEY, [105, 125, 145, 150])
    for position, state in found.items():
        expected = fold(HISTORY, "lsn", KEY, until=position)
        assert (state.live, state.deleted) == (expected.live, expected.deleted), position


def test_a_wrong_row_is_named_by_the_event_that_decided_it():
    state = fold(HISTORY, "lsn", KEY)
    assert state.culprit((1,)) == "tickit.ems.category partition 0 offset 2, key (1,), source position 130"
    assert state.culprit((7,)) == "no event of key (7,)"


def test_binlog_positions_order_by_file_then_offset_then_row():
    def binlog(offset, file, pos, row, name):
        return Event("tickit.tickit.date", 0, offset, {"dateid": 1},
                     {"dateid": 1, "day": name, "__op": "u", "__deleted": "false", "__file": file, "__pos": pos,
                      "__row": row})
    events = [binlog(0, "mysql-bin.000002", 4, 0, "rotated"), binlog(1, "mysql-bin.000001", 900, 1, "row 1"),
              binlog(2, "mysql-bin.000001", 900, 0, "row 0")]
    assert fold(events, "binlog", ("dateid",)).live[(1,)]["day"] == "rotated"
    assert fold(events[1:], "binlog", ("dateid",)).live[(1,)]["day"] == "row 1"


def test_an_unknown_position_kind_is_refused():
    with pytest.raises(ValueError, match="unknown source position kind"):
        fold(HISTORY, "scn", KEY)


def test_a_column_added_gives_every_live_row_its_default_and_rows_written_after_keep_their_own():
    def with_region(offset, lsn, catid, region):
        value = {"catid": catid, "catname": "x", "region": region, "__op": "u", "__deleted": "false", "__lsn": lsn}
        return Event("tickit.ems.category", 0, offset, {"catid": catid}, value, defaults={"region": "EMEA"})
    events = [*HISTORY, with_region(6, 160, 1, "APAC")]
    state = fold(events, "lsn", KEY)
    assert state.live[(1,)]["region"] == "APAC" and state.live[(2,)]["region"] == "EMEA"
    assert "region" not in fold(events, "lsn", KEY, until=155).live[(2,)], "the column is not there before"
    found = states_at(events, "lsn", KEY, [150, 160])
    assert "region" not in found[150].live[(2,)] and found[160].live[(2,)]["region"] == "EMEA"


def test_what_an_event_leaves_out_is_the_keys_previous_value():
    placeholder = "__debezium_unavailable_value"
    events = [event(0, 100, "c", 1, "long text"), event(1, 110, "u", 1, placeholder),
              Event("tickit.ems.category", 0, 2, {"catid": 1},
                    {"catid": 1, "catname": None, "__op": "d", "__deleted": "true", "__lsn": 120})]
    assert fold(events[:2], "lsn", KEY).live[(1,)]["catname"] == "long text"
    assert fold(events, "lsn", KEY).deleted[(1,)] == {"catid": 1, "catname": "long text"}


def test_an_incremental_snapshots_read_without_an_lsn_lands_between_the_changes_sent_around_it():
    """Debezium sent the read of key 1 after the change at 120 and before the one at 160: it wins over the first and
    loses to the second, whatever their keys."""
    read = event(2, None, "r", 1, "read")
    sent = [event(0, 100, "c", 1, "first"), event(1, 120, "c", 2, "two"), read, event(3, 160, "u", 1, "later")]
    assert fold(sent[:3], "lsn", KEY).live[(1,)]["catname"] == "read"
    assert fold(sent, "lsn", KEY).live[(1,)]["catname"] == "later"
    assert fold([event(0, None, "r", 1, "only")], "lsn", KEY).live[(1,)]["catname"] == "only"
