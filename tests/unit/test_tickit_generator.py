import random
import re
import time
from collections import defaultdict
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal

import pytest

from cdc_sandbox.tickit_data import (
    ORIGINAL_ROW_COUNTS,
    TABLES,
    TickitGenerator,
    build_manifest,
    canonical_row_text,
    generate_rows,
    get_table,
    read_tickit_directory,
    scaled_row_counts,
    table_checksum,
    write_tickit_files,
)

SMALL_SCALE = 0.01
CENT = Decimal("0.01")
SCALED_TABLES = {"user", "event", "listing", "sale"}


def _is_money(value) -> bool:
    return isinstance(value, Decimal) and value > 0 and value.as_tuple().exponent == -2


# ---------------------------------------------------------------------------
# Schema


def test_tables_are_found_by_cdc_or_tickit_name():
    assert get_table("sales") is get_table("sale")
    assert get_table("users").primary_key == ("userid",)
    assert {table.name: table.primary_key for table in TABLES} == {
        "category": ("catid",),
        "venue": ("venueid",),
        "date": ("dateid",),
        "user": ("userid",),
        "event": ("eventid",),
        "listing": ("listid",),
        "sale": ("salesid",),
    }
    assert [table.name for table in TABLES if table.is_reserved_word] == ["date", "user"]
    with pytest.raises(KeyError, match="unknown TICKIT table"):
        get_table("orders")


def test_schema_keeps_original_types_and_file_formats():
    assert get_table("listing").column("priceperticket").original_sql_type == "decimal(8,2)"
    assert get_table("user").column("username").original_sql_type == "char(8)"
    assert get_table("venue").column("venueseats").nullable
    assert not get_table("date").column("caldate").nullable
    assert get_table("sale").delimiter == "\t"
    assert {table.delimiter for table in TABLES if table.name != "sale"} == {"|"}
    assert sum(ORIGINAL_ROW_COUNTS.values()) == 424_319


# ---------------------------------------------------------------------------
# Row counts and parameters


def test_scale_changes_only_the_growing_tables():
    counts = scaled_row_counts(SMALL_SCALE)
    for table in TABLES:
        expected = round(table.original_row_count * SMALL_SCALE) if table.name in SCALED_TABLES else table.original_row_count
        assert counts[table.name] == expected
    assert min(scaled_row_counts(1e-9).values()) == 1


@pytest.mark.parametrize("scale", [0, -1.0, float("nan"), float("inf")])
def test_scale_must_be_positive_and_finite(scale):
    with pytest.raises(ValueError, match="scale"):
        TickitGenerator(seed=1, scale=scale)


def test_small_scale_writes_scaled_row_counts(tmp_path):
    counts = write_tickit_files(tmp_path, seed=3, scale=SMALL_SCALE)
    assert counts == scaled_row_counts(SMALL_SCALE)
    for table in TABLES:
        assert (tmp_path / table.tickit_file).read_bytes().count(b"\r\n") == counts[table.name]


# ---------------------------------------------------------------------------
# Determinism


def _file_bytes(directory):
    return {table.tickit_file: (directory / table.tickit_file).read_bytes() for table in TABLES}


def test_same_seed_writes_identical_bytes(tmp_path):
    write_tickit_files(tmp_path / "a", seed=42, scale=SMALL_SCALE)
    write_tickit_files(tmp_path / "b", seed=42, scale=SMALL_SCALE)
    assert _file_bytes(tmp_path / "a") == _file_bytes(tmp_path / "b")


def test_different_seed_writes_different_data(tmp_path):
    write_tickit_files(tmp_path / "a", seed=42, scale=SMALL_SCALE)
    write_tickit_files(tmp_path / "b", seed=43, scale=SMALL_SCALE)
    first, second = _file_bytes(tmp_path / "a"), _file_bytes(tmp_path / "b")
    for table in TABLES:
        if table.name in SCALED_TABLES or table.name == "venue":
            assert first[table.tickit_file] != second[table.tickit_file], table.name


def test_table_content_does_not_depend_on_generation_order():
    listings_first = TickitGenerator(seed=5, scale=SMALL_SCALE)
    listing_rows = list(listings_first.iter_rows("listing"))
    sales_first = TickitGenerator(seed=5, scale=SMALL_SCALE)
    sale_rows = list(sales_first.iter_rows("sale"))
    assert list(sales_first.iter_rows("listing")) == listing_rows
    assert list(generate_rows("sale", seed=5, scale=SMALL_SCALE)) == sale_rows


# ---------------------------------------------------------------------------
# Formats


def _lines(directory, table_name):
    data = (directory / get_table(table_name).tickit_file).read_bytes()
    assert data.endswith(b"\r\n")
    assert data.count(b"\n") == data.count(b"\r\n"), "every line ends with CRLF"
    return data.decode("utf-8").split("\r\n")[:-1]


def test_files_use_the_published_formats(tmp_path):
    write_tickit_files(tmp_path, seed=11, scale=SMALL_SCALE)

    sales = [line.split("\t") for line in _lines(tmp_path, "sale")]
    assert all(len(fields) == 10 for fields in sales)
    assert not any("|" in field for fields in sales for field in fields)
    sale_time = re.compile(r"^(?:[1-9]|1[0-2])/(?:[1-9]|[12][0-9]|3[01])/2008 \d\d:\d\d:\d\d$")
    assert all(sale_time.match(fields[9]) for fields in sales)
    assert any(re.match(r"^\d/\d/", fields[9]) for fields in sales), "some month and day are single digits"

    iso_timestamp = re.compile(r"^2008-\d\d-\d\d \d\d:\d\d:\d\d$")
    assert all(iso_timestamp.match(line.split("|")[5]) for line in _lines(tmp_path, "event"))
    assert all(iso_timestamp.match(line.split("|")[7]) for line in _lines(tmp_path, "listing"))
    assert all(re.match(r"^\d+\.\d\d$", line.split("|")[5]) for line in _lines(tmp_path, "listing"))

    dates = [line.split("|") for line in _lines(tmp_path, "date")]
    assert dates[0][:2] == ["1827", "2008-01-01"], "no header line"
    assert {fields[7] for fields in dates} == {"TRUE", "FALSE"}

    assert any(line.endswith("|\\N") for line in _lines(tmp_path, "venue"))
    preferences = {value for line in _lines(tmp_path, "user") for value in line.split("|")[8:]}
    assert preferences == {"TRUE", "FALSE", ""}


def test_typed_rows_use_python_types():
    generator = TickitGenerator(seed=2, scale=SMALL_SCALE)
    first_listing = next(generator.iter_rows("listing"))
    assert [type(value) for value in first_listing] == [int, int, int, int, int, Decimal, Decimal, datetime]
    first_date = next(generator.iter_rows("date"))
    assert first_date == (1827, date(2008, 1, 1), "TU", 1, "JAN", "1", 2008, True)
    user = next(generator.iter_rows("user"))
    assert all(value is None or isinstance(value, bool) for value in user[8:])


# ---------------------------------------------------------------------------
# Referential integrity and plausible values


def assert_consistent_dataset(generator: TickitGenerator) -> None:
    """Streams every table once (parents first) and checks keys and values."""
    caldate_by_dateid = {}
    for dateid, caldate, day, week, month, qtr, year, holiday in generator.iter_rows("date"):
        assert caldate.year == year == 2008 and 1 <= week <= 53 and isinstance(holiday, bool)
        assert day == ("MO", "TU", "WE", "TH", "FR", "SA", "SU")[caldate.weekday()]
        caldate_by_dateid[dateid] = caldate
    assert len(caldate_by_dateid) == 365

    catids = {row[0] for row in generator.iter_rows("category")}
    venues = list(generator.iter_rows("venue"))
    venueids = {row[0] for row in venues}
    assert len(venueids) == len(venues) == 202
    assert any(row[4] is None for row in venues)

    userids = set()
    for row in generator.iter_rows("user"):
        assert row[0] not in userids
        userids.add(row[0])
    assert userids == set(range(1, len(userids) + 1))

    def assert_date_matches(dateid, moment):
        assert caldate_by_dateid[dateid] == moment.date()

    event_start = {}
    for eventid, venueid, catid, dateid, name, starttime in generator.iter_rows("event"):
        assert venueid in venueids and catid in catids and name
        assert_date_matches(dateid, starttime)
        event_start[eventid] = starttime

    listings = {}
    for listid, sellerid, eventid, dateid, numtickets, price, total, listtime in generator.iter_rows("listing"):
        assert listid not in listings
        assert sellerid in userids and eventid in event_start
        assert_date_matches(dateid, listtime)
        assert numtickets >= 1 and _is_money(price) and _is_money(total)
        assert total == numtickets * price
        assert listtime < event_start[eventid]
        listings[listid] = (sellerid, eventid, numtickets, price, listtime)

    tickets_sold = defaultdict(int)
    salesids = set()
    for row in generator.iter_rows("sale"):
        salesid, listid, sellerid, buyerid, eventid, dateid, qtysold, pricepaid, commission, saletime = row
        assert salesid not in salesids
        salesids.add(salesid)
        listing_seller, listing_event, numtickets, price, listtime = listings[listid]
        assert (sellerid, eventid) == (listing_seller, listing_event)
        assert buyerid in userids
        assert_date_matches(dateid, saletime)
        assert 1 <= qtysold <= numtickets
        assert _is_money(pricepaid) and pricepaid == qtysold * price
        assert commission == (pricepaid * Decimal("0.15")).quantize(CENT, ROUND_HALF_UP)
        assert listtime < saletime < event_start[eventid]
        tickets_sold[listid] += qtysold
    assert all(tickets_sold[listid] <= listings[listid][2] for listid in tickets_sold)
    assert len(salesids) == generator.row_counts["sale"]


@pytest.mark.parametrize("scale", [1e-9, SMALL_SCALE, 0.05])
def test_small_datasets_are_consistent(scale):
    assert_consistent_dataset(TickitGenerator(seed=8, scale=scale))


# ---------------------------------------------------------------------------
# Full scale: one generation, shared by the checks below


@pytest.fixture(scope="module")
def full_scale(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tickit_full")
    started = time.perf_counter()
    counts = write_tickit_files(directory, seed=2008, scale=1.0)
    elapsed = time.perf_counter() - started
    print(f"\nfull-scale TICKIT generation: {sum(counts.values())} rows in {elapsed:.2f} s")
    return directory, counts


def test_full_scale_has_the_published_row_counts(full_scale):
    directory, counts = full_scale
    assert counts == ORIGINAL_ROW_COUNTS
    for table in TABLES:
        assert (directory / table.tickit_file).read_bytes().count(b"\r\n") == table.original_row_count


def test_full_scale_files_read_back_as_the_generated_rows(full_scale):
    directory, _ = full_scale
    generator = TickitGenerator(seed=2008, scale=1.0)
    for name, rows_from_file in read_tickit_directory(directory).items():
        generated = generator.iter_rows(name)
        compared = 0
        for from_file, expected in zip(rows_from_file, generated, strict=True):
            assert from_file == expected
            compared += 1
        assert compared == ORIGINAL_ROW_COUNTS[name]


def test_full_scale_dataset_is_consistent():
    assert_consistent_dataset(TickitGenerator(seed=2008, scale=1.0))


# ---------------------------------------------------------------------------
# Checksums


def test_checksum_ignores_row_order():
    rows = list(generate_rows("listing", seed=4, scale=SMALL_SCALE))
    shuffled = rows[:]
    random.Random(0).shuffle(shuffled)
    assert table_checksum("listing", rows) == table_checksum("listing", shuffled)
    assert table_checksum("listing", rows).row_count == len(rows)


def test_checksum_detects_a_changed_missing_or_duplicated_row():
    rows = list(generate_rows("sale", seed=4, scale=SMALL_SCALE))
    reference = table_checksum("sale", rows).checksum
    changed = rows[:]
    changed[3] = changed[3][:7] + (changed[3][7] + CENT,) + changed[3][8:]
    assert table_checksum("sale", changed).checksum != reference
    assert table_checksum("sale", rows[:-1]).checksum != reference
    assert table_checksum("sale", rows + rows[:1]).checksum != reference


def test_checksum_accepts_database_representations():
    typed = (1, "JSG99FHE", "Rafael", "Taylor", "Kent", "WA", "r@example.com", "(664) 602-4412",
             True, False, None, True, False, None, True, False, True, None)
    # What a driver might hand back: bit columns as 0/1, char(n) padded, varchar untouched.
    from_database = (1, "JSG99FHE", "Rafael", "Taylor", "Kent", "WA", "r@example.com", "(664) 602-4412",
                     1, 0, None, 1, 0, None, 1, 0, 1, None)
    assert canonical_row_text("user", typed) == canonical_row_text("user", from_database)
    padded_date = (1827, "2008-01-01", "TU ", 1, "JAN  ", "1    ", 2008, "t")
    assert canonical_row_text("date", padded_date) == canonical_row_text(
        "date", (1827, date(2008, 1, 1), "TU", 1, "JAN", "1", 2008, True)
    )
    listing = (1, 2, 3, 1850, 10, Decimal("52.00"), Decimal("520.00"), datetime(2008, 1, 24, 6, 43, 29))
    as_floats = (1, 2, 3, 1850, 10, 52.0, 520, datetime(2008, 1, 24, 6, 43, 29))
    assert canonical_row_text("listing", listing) == canonical_row_text("listing", as_floats)
    assert canonical_row_text("listing", listing) == "1|2|3|1850|10|52.00|520.00|2008-01-24 06:43:29"


def test_canonical_text_keeps_null_and_separators_apart():
    assert canonical_row_text("category", (1, None, "a|b", "\\N")) == "1|\\N|a\\|b|\\\\N"


def test_manifest_of_written_files_matches_generator_manifest(tmp_path):
    generator = TickitGenerator(seed=9, scale=SMALL_SCALE)
    generator.write_files(tmp_path)
    assert build_manifest(read_tickit_directory(tmp_path)) == generator.manifest()
