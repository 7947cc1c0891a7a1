from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from cdc_sandbox.tickit_data import (
    TABLES,
    TickitFormatError,
    get_table,
    iter_file_rows,
    iter_normalized_fields,
    iter_table_rows,
    read_tickit_directory,
)

FIXTURE = Path(__file__).parent / "fixtures" / "tickit_real_format"

# Hand-checked typed values of the fixture, which is written in the published formats.
EXPECTED_FIXTURE_ROWS = {
    "category": [
        (1, "Sports", "MLB", "Major League Baseball"),
        (6, "Shows", "Musicals", "Musical theatre"),
        (9, "Concerts", "Pop", "All rock and pop music concerts"),
    ],
    "venue": [
        (1, "Toyota Park", "Bridgeview", "IL", 0),
        (15, "McAfee Coliseum", "Oakland", "CA", 63026),
        (76, "Théâtre St-Denis", "Montréal", "QC", None),
    ],
    "date": [
        (1827, date(2008, 1, 1), "TU", 1, "JAN", "1", 2008, True),
        (1850, date(2008, 1, 24), "TH", 4, "JAN", "1", 2008, False),
        (1875, date(2008, 2, 18), "MO", 8, "FEB", "1", 2008, True),
    ],
    "user": [
        (1, "JSG99FHE", "Rafael", "Taylor", "Kent", "WA", "Etiam.laoreet.libero@sodalesMaurisblandit.edu",
         "(664) 602-4412", True, False, None, None, True, False, None, True, False, True),
        (2, "PGL08LJI", "Vladimir", "Humphrey", "Murfreesboro", "SK", "Suspendisse.tristique@nonnisiAenean.edu",
         "(783) 492-1886", None, None, None, True, True, None, None, False, None, None),
        (3, "ZOE01BXK", "Zoë", "O'Brien", "Coeur d'Alene", "ID", "zoe.obrien@example.com",
         "(208) 555-0199", False, False, False, False, False, False, False, False, False, False),
    ],
    "event": [
        (1, 1, 1, 1850, "Chicago Fire at Toyota Park", datetime(2008, 1, 24, 14, 30)),
        (2, 15, 9, 1850, "Shakira", datetime(2008, 1, 24, 20, 0)),
        (3, 76, 6, 1875, "Mamma Mia!", datetime(2008, 2, 18, 19, 30)),
    ],
    "listing": [
        (1, 1, 2, 1850, 10, Decimal("52.00"), Decimal("520.00"), datetime(2008, 1, 24, 6, 43, 29)),
        (2, 2, 3, 1827, 4, Decimal("175.50"), Decimal("702.00"), datetime(2008, 1, 1, 10, 20)),
        (3, 1, 2, 1850, 2, Decimal("99.00"), Decimal("198.00"), datetime(2008, 1, 24, 7, 0)),
    ],
    "sale": [
        (1, 1, 1, 2, 2, 1850, 4, Decimal("208.00"), Decimal("31.20"), datetime(2008, 1, 24, 9, 5, 7)),
        (2, 2, 2, 1, 3, 1875, 2, Decimal("351.00"), Decimal("52.65"), datetime(2008, 2, 18, 2, 36, 48)),
        (3, 3, 1, 3, 2, 1850, 1, Decimal("99.00"), Decimal("14.85"), datetime(2008, 1, 24, 18, 0)),
    ],
}


def _assert_exactly(actual, expected):
    """Equal and of the same types (so Decimal('1') never passes for 1, nor 1 for True)."""
    assert actual == expected
    for actual_row, expected_row in zip(actual, expected):
        assert [type(value) for value in actual_row] == [type(value) for value in expected_row]


# ---------------------------------------------------------------------------
# The published format


def test_fixture_really_has_the_published_quirks():
    listings = (FIXTURE / "listings_pipe.txt").read_bytes()
    sales = (FIXTURE / "sales_tab.txt").read_bytes()
    for data in (listings, sales):
        assert data.count(b"\r\n") == 3
        assert len(data.splitlines()) > 3, "a stray CR makes naive line splitting miscount"
    assert b"\t" in sales and b"|" not in sales
    assert b"\\N" in (FIXTURE / "venue_pipe.txt").read_bytes()


def test_fixture_reads_as_exact_typed_values():
    rows = {name: list(rows) for name, rows in read_tickit_directory(FIXTURE).items()}
    assert set(rows) == set(EXPECTED_FIXTURE_ROWS)
    for name, expected in EXPECTED_FIXTURE_ROWS.items():
        _assert_exactly(rows[name], expected)


def test_rows_of_one_table_by_either_name():
    assert list(iter_table_rows(FIXTURE, "sales")) == EXPECTED_FIXTURE_ROWS["sale"]
    assert list(iter_file_rows("listing", FIXTURE / "listings_pipe.txt")) == EXPECTED_FIXTURE_ROWS["listing"]


def test_normalized_fields_for_bulk_loading():
    sales = list(iter_normalized_fields("sale", FIXTURE / "sales_tab.txt"))
    assert sales[1] == ["2", "2", "2", "1", "3", "1875", "2", "351.00", "52.65", "2008-02-18 02:36:48"]
    venues = list(iter_normalized_fields("venue", FIXTURE / "venue_pipe.txt"))
    assert venues[2] == ["76", "Théâtre St-Denis", "Montréal", "QC", None]
    dates = list(iter_normalized_fields("date", FIXTURE / "date2008_pipe.txt"))
    assert dates[0] == ["1827", "2008-01-01", "TU", "1", "JAN", "1", "2008", True]
    users = list(iter_normalized_fields("user", FIXTURE / "allusers_pipe.txt"))
    assert users[1][8:] == [None, None, None, True, True, None, None, False, None, None]


def test_lf_endings_and_a_missing_final_newline_are_accepted(tmp_path):
    path = tmp_path / "category_pipe.txt"
    path.write_bytes(b"1|Sports|MLB|Major League Baseball\n2|Sports|NHL|National Hockey League")
    assert [row[0] for row in iter_file_rows("category", path)] == [1, 2]


def test_stray_carriage_return_stays_inside_text(tmp_path):
    path = tmp_path / "category_pipe.txt"
    path.write_bytes(b"1|Sports|ML\rB|Major League Baseball\r\n")
    assert list(iter_file_rows("category", path)) == [(1, "Sports", "ML\rB", "Major League Baseball")]


def test_blank_lines_are_skipped_but_still_counted(tmp_path):
    path = tmp_path / "category_pipe.txt"
    path.write_bytes(b"1|Sports|MLB|Baseball\r\n\r\n2|Sports|NHL|Hockey\r\nbad\r\n")
    rows = iter_file_rows("category", path)
    assert [next(rows)[0], next(rows)[0]] == [1, 2]
    with pytest.raises(TickitFormatError) as raised:
        next(rows)
    assert raised.value.line_number == 4


def test_empty_text_is_kept_but_empty_number_is_null(tmp_path):
    path = tmp_path / "venue_pipe.txt"
    path.write_bytes(b"7||Oakland|CA|\r\n")
    assert list(iter_file_rows("venue", path)) == [(7, "", "Oakland", "CA", None)]


def test_missing_files_are_reported_up_front(tmp_path):
    (tmp_path / "category_pipe.txt").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="sales_tab.txt"):
        read_tickit_directory(tmp_path)


# ---------------------------------------------------------------------------
# Malformed lines


GOOD_LINES = {
    "listing": "1|1|2|1850|10|52.00|520.00|2008-01-24 06:43:29",
    "sale": "1\t1\t1\t2\t2\t1850\t4\t208.00\t31.20\t1/24/2008 09:05:07",
    "date": "1827|2008-01-01|TU|1|JAN|1|2008|TRUE",
    "venue": "1|Toyota Park|Bridgeview|IL|0",
}


@pytest.mark.parametrize(
    "table, bad_line, reason",
    [
        ("listing", "2|1|2|1850|10|52.00|520.00", "wrong field count: expected 8, found 7"),
        ("listing", "2|1|2|1850|10|52.00|520.00|2008-01-24 06:43:29|x", "wrong field count: expected 8, found 9"),
        ("listing", "2|one|2|1850|10|52.00|520.00|2008-01-24 06:43:29", "column sellerid: bad integer 'one'"),
        ("listing", "2|1|2|99999|10|52.00|520.00|2008-01-24 06:43:29", "column dateid: integer 99999 out of smallint range"),
        ("listing", "2|1|2|1850|10|52.x|520.00|2008-01-24 06:43:29", "column priceperticket: bad decimal '52.x'"),
        ("listing", "2|1|2|1850|10|52.005|520.00|2008-01-24 06:43:29", "more than 2 decimal places"),
        ("listing", "2|1|2|1850|10|1000000.00|520.00|2008-01-24 06:43:29", "does not fit decimal(8,2)"),
        ("listing", "2|1|2|1850|10|52.00|520.00|2008-13-24 06:43:29", "column listtime: bad timestamp"),
        ("listing", "\\N|1|2|1850|10|52.00|520.00|2008-01-24 06:43:29", "column listid: NULL in a NOT NULL column"),
        ("sale", "2\t1\t1\t2\t2\t1850\t4\t208.00\t31.20\t2/30/2008 09:05:07", "column saletime: bad timestamp '2/30/2008 09:05:07'"),
        ("sale", "2|1|1|2|2|1850|4|208.00|31.20|1/24/2008 09:05:07", "wrong field count: expected 10, found 1"),
        ("date", "1828|2008/01/02|WE|1|JAN|1|2008|FALSE", "column caldate: bad date '2008/01/02'"),
        ("date", "1828|2008-01-02|WE|1|JAN|1|2008|maybe", "column holiday: bad boolean 'maybe'"),
        ("venue", "2|" + "x" * 101 + "|Oakland|CA|1", "column venuename: text of 101 characters exceeds varchar(100)"),
    ],
)
def test_malformed_line_names_file_line_and_reason(tmp_path, table, bad_line, reason):
    good_line = GOOD_LINES[table]
    file_name = get_table(table).tickit_file
    path = tmp_path / file_name
    # The stray CR in the first row must not shift the line count.
    path.write_bytes(f"{good_line}\r\r\n{good_line}\r\n{bad_line}\r\n{good_line}\r\n".encode("utf-8"))

    with pytest.raises(TickitFormatError) as raised:
        list(iter_file_rows(table, path))

    error = raised.value
    assert (error.file_name, error.line_number) == (file_name, 3)
    assert reason in error.reason
    assert str(error).startswith(f"{file_name}, line 3: ")


def test_invalid_utf8_is_a_format_error(tmp_path):
    path = tmp_path / "category_pipe.txt"
    path.write_bytes(b"1|Sports|MLB|Major League Baseball\r\n2|Sports|NHL|Hockey \xff\r\n")
    with pytest.raises(TickitFormatError, match=r"category_pipe.txt, line 2: not valid utf-8"):
        list(iter_file_rows("category", path))


def test_format_error_survives_pickling():
    import pickle

    error = pickle.loads(pickle.dumps(TickitFormatError("sales_tab.txt", 7, "bad integer 'x'")))
    assert (error.file_name, error.line_number, error.reason) == ("sales_tab.txt", 7, "bad integer 'x'")


def test_every_table_has_a_fixture_file():
    assert sorted(path.name for path in FIXTURE.glob("*.txt")) == sorted(table.tickit_file for table in TABLES)
