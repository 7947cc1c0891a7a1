"""The journal hands new entries to a reader in the writing process from memory; the file stays the audit log."""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from decimal import Decimal

from cdc_sandbox.sources.mutations import Change, Journal


def change(seq: int, **values) -> Change:
    return Change(seq=seq, kind="update", table="sale", topic="tickit.ecomm.sale", key={"salesid": seq},
                  values=values or {"pricepaid": Decimal("12.50"), "saletime": dt.datetime(2008, 2, 18, 2, 36, 48)})


def test_entries_come_from_memory_as_journaled(tmp_path, monkeypatch):
    journal = Journal(tmp_path / "journal.jsonl")
    journal.append(change(journal.next_seq()))
    reads = []
    monkeypatch.setattr(journal, "entries", lambda: reads.append(1) or [])
    journal.append(change(journal.next_seq()))
    journal.append(change(journal.next_seq()))
    assert [c.seq for c in journal.since(2)] == [2, 3] and journal.next_seq() == 4
    assert journal.since(1)[0].values == {"pricepaid": "12.50", "saletime": "2008-02-18T02:36:48"}, \
        "the same JSON types as a reader of the file gets"
    assert not reads, "the file is not read again"


def test_what_another_writer_appends_is_read_from_where_this_one_stopped(tmp_path):
    mine, theirs = Journal(tmp_path / "journal.jsonl"), Journal(tmp_path / "journal.jsonl")
    mine.append(change(mine.next_seq()))
    theirs.append(change(theirs.next_seq()))
    mine.append(change(mine.next_seq()))
    assert [c.seq for c in mine.since(1)] == [1, 2, 3]
    assert [c.seq for c in theirs.since(1)] == [1, 2, 3]
    assert [c.seq for c in Journal(tmp_path / "journal.jsonl").entries()] == [1, 2, 3]


def test_a_later_reader_goes_on_from_the_file_and_sees_older_entries_there(tmp_path):
    first = Journal(tmp_path / "journal.jsonl")
    for _ in range(3):
        first.append(change(first.next_seq()))
    later = Journal(tmp_path / "journal.jsonl")
    assert later.next_seq() == 4 and later.since(4) == []
    assert [c.seq for c in later.since(2)] == [2, 3], "entries before it first looked come from the file"


def test_a_replaced_file_starts_over(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl")
    for _ in range(3):
        journal.append(change(journal.next_seq()))
    (tmp_path / "journal.jsonl").unlink()  # `sandbox reset`
    assert journal.next_seq() == 1
    journal.append(change(1))
    assert [c.seq for c in journal.since(1)] == [1]


def test_a_line_another_writer_has_not_finished_is_read_once_it_is_whole(tmp_path):
    path = tmp_path / "journal.jsonl"
    reader, writer = Journal(path), Journal(path)
    writer.append(change(writer.next_seq()))
    assert reader.next_seq() == 2
    line = path.read_text().replace('"seq": 1', '"seq": 2')
    with path.open("a") as handle:  # the first half of a second writer's line
        handle.write(line[:20])
    assert reader.since(2) == [] and reader.next_seq() == 2
    with path.open("a") as handle:
        handle.write(line[20:])
    assert [c.seq for c in reader.since(2)] == [2]


def test_threads_appending_and_reading_at_once_see_every_entry_once(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl")
    start = journal.next_seq()

    def append_and_read(n: int) -> None:
        journal.append(change(start + n))
        journal.since(start)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(append_and_read, range(200)))
    assert sorted(c.seq for c in journal.since(start)) == list(range(start, start + 200))
    assert sorted(c.seq for c in Journal(journal.path).entries()) == list(range(start, start + 200))


def test_writers_in_other_processes_never_share_a_number(tmp_path):
    path = tmp_path / "journal.jsonl"
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_append_many, [path] * 4, [25] * 4))
    assert sorted(c.seq for c in Journal(path).entries()) == list(range(1, 101))


def _append_many(path, count: int) -> None:
    journal = Journal(path)
    for _ in range(count):
        journal.append(change(0))


def test_a_project_reads_its_own_tables_entries_though_another_names_a_table_alike(tmp_path):
    """Projects on one stack share the journal: TICKIT's `category` and Pagila's are two tables."""
    journal = Journal(tmp_path / "journal.jsonl")
    journal.append(Change(seq=journal.next_seq(), kind="update", table="category", topic="tickit.ecomm.category",
                          key={"catid": 9801}, values={}))
    journal.append(Change(seq=journal.next_seq(), kind="update", table="category", topic="pagila.public.category",
                          key={"category_id": 1}, values={}))
    assert [c.key for c in journal.since(1, {"pagila.public.category"})] == [{"category_id": 1}]
    assert len(journal.since(1)) == 2
    assert [c.seq for c in Journal(tmp_path / "journal.jsonl").since(1, {"tickit.ecomm.category"})] == [1]
