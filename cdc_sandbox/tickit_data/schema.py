"""Declarative description of the seven TICKIT tables.

Each table records its singular CDC table name, how the published TICKIT file
encodes it (file name, delimiter, timestamp style) and its columns with logical
types. Column order is the order of the fields in the TICKIT file. Where a table
lives (source, database, namespace) is declared once, in `cdc_sandbox/fixtures/topology.yaml`.
"""

from __future__ import annotations

from dataclasses import dataclass

from cdc_sandbox.schema import BOOL, DATE, DECIMAL, INT, SMALLINT, STR, TIMESTAMP, Column, ForeignKey, Table

# How a TICKIT file writes its timestamps.
ISO_TIMESTAMPS = "iso"  # 2008-01-25 14:30:00
US_TIMESTAMPS = "us"  # 2/18/2008 02:36:48 (month and day not zero-padded)

# Table names that need quoting in SQL (the per-engine quoting lives elsewhere).
RESERVED_TABLE_NAMES = frozenset({"user", "date"})


@dataclass(frozen=True, kw_only=True)
class TickitTable(Table):
    """A TICKIT table and how the published TICKIT file encodes it."""

    tickit_name: str  # table name in the original Redshift sample
    tickit_file: str
    delimiter: str
    timestamp_style: str
    original_row_count: int
    scales_with_size: bool  # whether the generator's scale option changes its row count

    @property
    def is_reserved_word(self) -> bool:
        return self.name in RESERVED_TABLE_NAMES


def _int(name: str, nullable: bool = True) -> Column:
    return Column(name, INT, nullable)


def _smallint(name: str, nullable: bool = True) -> Column:
    return Column(name, SMALLINT, nullable)


def _char(name: str, length: int, nullable: bool = True) -> Column:
    return Column(name, STR, nullable, max_length=length, fixed_length=True)


def _varchar(name: str, length: int, nullable: bool = True) -> Column:
    return Column(name, STR, nullable, max_length=length)


def _money(name: str) -> Column:
    return Column(name, DECIMAL, True, precision=8, scale=2)


def _bool(name: str, nullable: bool = True) -> Column:
    return Column(name, BOOL, nullable)


USER_PREFERENCES = (
    "likesports",
    "liketheatre",
    "likeconcerts",
    "likejazz",
    "likeclassical",
    "likeopera",
    "likerock",
    "likevegas",
    "likebroadway",
    "likemusicals",
)

# Nullability follows the original DDL (NOT NULL only where it said so).
CATEGORY = TickitTable(
    name="category",
    tickit_name="category",
    tickit_file="category_pipe.txt",
    delimiter="|",
    timestamp_style=ISO_TIMESTAMPS,
    columns=(
        _smallint("catid", nullable=False),
        _varchar("catgroup", 10),
        _varchar("catname", 10),
        _varchar("catdesc", 50),
    ),
    primary_key=("catid",),
    original_row_count=11,
    scales_with_size=False,
)

VENUE = TickitTable(
    name="venue",
    tickit_name="venue",
    tickit_file="venue_pipe.txt",
    delimiter="|",
    timestamp_style=ISO_TIMESTAMPS,
    columns=(
        _smallint("venueid", nullable=False),
        _varchar("venuename", 100),
        _varchar("venuecity", 30),
        _char("venuestate", 2),
        _int("venueseats"),
    ),
    primary_key=("venueid",),
    original_row_count=202,
    scales_with_size=False,
)

DATE_TABLE = TickitTable(
    name="date",
    tickit_name="date",
    tickit_file="date2008_pipe.txt",
    delimiter="|",
    timestamp_style=ISO_TIMESTAMPS,
    columns=(
        _smallint("dateid", nullable=False),
        Column("caldate", DATE, nullable=False),
        _char("day", 3, nullable=False),
        _smallint("week", nullable=False),
        _char("month", 5, nullable=False),
        _char("qtr", 5, nullable=False),
        _smallint("year", nullable=False),
        _bool("holiday"),
    ),
    primary_key=("dateid",),
    original_row_count=365,
    scales_with_size=False,
)

USER = TickitTable(
    name="user",
    tickit_name="users",
    tickit_file="allusers_pipe.txt",
    delimiter="|",
    timestamp_style=ISO_TIMESTAMPS,
    columns=(
        _int("userid", nullable=False),
        _char("username", 8),
        _varchar("firstname", 30),
        _varchar("lastname", 30),
        _varchar("city", 30),
        _char("state", 2),
        _varchar("email", 100),
        _char("phone", 14),
        *(_bool(name) for name in USER_PREFERENCES),
    ),
    primary_key=("userid",),
    original_row_count=49_990,
    scales_with_size=True,
)

EVENT = TickitTable(
    name="event",
    tickit_name="event",
    tickit_file="allevents_pipe.txt",
    delimiter="|",
    timestamp_style=ISO_TIMESTAMPS,
    columns=(
        _int("eventid", nullable=False),
        _smallint("venueid", nullable=False),
        _smallint("catid", nullable=False),
        _smallint("dateid", nullable=False),
        _varchar("eventname", 200),
        Column("starttime", TIMESTAMP),
    ),
    primary_key=("eventid",),
    original_row_count=8_798,
    scales_with_size=True,
    foreign_keys=(
        ForeignKey("venueid", "venue", "venueid"),
        ForeignKey("catid", "category", "catid"),
        ForeignKey("dateid", "date", "dateid"),
    ),
)

LISTING = TickitTable(
    name="listing",
    tickit_name="listing",
    tickit_file="listings_pipe.txt",
    delimiter="|",
    timestamp_style=ISO_TIMESTAMPS,
    columns=(
        _int("listid", nullable=False),
        _int("sellerid", nullable=False),
        _int("eventid", nullable=False),
        _smallint("dateid", nullable=False),
        _smallint("numtickets", nullable=False),
        _money("priceperticket"),
        _money("totalprice"),
        Column("listtime", TIMESTAMP),
    ),
    primary_key=("listid",),
    original_row_count=192_497,
    scales_with_size=True,
    foreign_keys=(
        ForeignKey("sellerid", "user", "userid"),
        ForeignKey("eventid", "event", "eventid"),
        ForeignKey("dateid", "date", "dateid"),
    ),
)

SALE = TickitTable(
    name="sale",
    tickit_name="sales",
    tickit_file="sales_tab.txt",
    delimiter="\t",
    timestamp_style=US_TIMESTAMPS,
    columns=(
        _int("salesid", nullable=False),
        _int("listid", nullable=False),
        _int("sellerid", nullable=False),
        _int("buyerid", nullable=False),
        _int("eventid", nullable=False),
        _smallint("dateid", nullable=False),
        _smallint("qtysold", nullable=False),
        _money("pricepaid"),
        _money("commission"),
        Column("saletime", TIMESTAMP),
    ),
    primary_key=("salesid",),
    original_row_count=172_456,
    scales_with_size=True,
    foreign_keys=(
        ForeignKey("listid", "listing", "listid"),
        ForeignKey("sellerid", "user", "userid"),
        ForeignKey("buyerid", "user", "userid"),
        ForeignKey("eventid", "event", "eventid"),
        ForeignKey("dateid", "date", "dateid"),
    ),
)

# Parents before children, so loading in this order never breaks a reference.
TABLES: tuple[TickitTable, ...] = (CATEGORY, VENUE, DATE_TABLE, USER, EVENT, LISTING, SALE)
TABLE_NAMES: tuple[str, ...] = tuple(table.name for table in TABLES)
ORIGINAL_ROW_COUNTS: dict[str, int] = {table.name: table.original_row_count for table in TABLES}

_TABLES_BY_ANY_NAME: dict[str, TickitTable] = {
    **{table.tickit_name: table for table in TABLES},
    **{table.name: table for table in TABLES},
}


def get_table(table: str | Table) -> TickitTable:
    """Look a table up by CDC name (`sale`) or original TICKIT name (`sales`)."""
    if isinstance(table, Table):
        return table
    try:
        return _TABLES_BY_ANY_NAME[table]
    except KeyError:
        raise KeyError(f"unknown TICKIT table {table!r}; known: {', '.join(TABLE_NAMES)}") from None


def table_for_file(file_name: str) -> TickitTable:
    for table in TABLES:
        if table.tickit_file == file_name:
            return table
    raise KeyError(f"{file_name!r} is not a TICKIT file")
