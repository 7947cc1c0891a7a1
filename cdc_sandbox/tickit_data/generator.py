"""Deterministic generator for TICKIT-shaped data.

One code path: each table is produced as typed rows (int, str, Decimal,
datetime.date, datetime.datetime, bool, None) in schema column order, and the
file writer only formats those rows in the published TICKIT file format.

Every table draws from its own `random.Random` seeded from (seed, table name),
so a table's content does not depend on which other tables were produced first.
"""

from __future__ import annotations

import hashlib
import math
import random
import unicodedata
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from cdc_sandbox.schema import BOOL, DATE, DECIMAL, INT, SMALLINT, STR, TIMESTAMP, Column

from .schema import TABLES, US_TIMESTAMPS, TickitTable as Table, get_table

YEAR = 2008
YEAR_START = datetime(YEAR, 1, 1)
FIRST_DATEID = 1827  # dateid of 2008-01-01 in the published date table
CALENDAR_DAYS = 365  # 2008 is a leap year but the published date table stops at Dec 30
SECONDS_PER_DAY = 86_400

NULL_TEXT = "\\N"
# The published users file leaves unknown preferences empty rather than writing \N.
NULL_BOOL_TEXT = ""
LINE_END = "\r\n"

MAX_SALES_PER_LISTING = 4
COMMISSION_PERCENT = 15
LISTING_WINDOW_DAYS = 90  # a listing goes up at most this long before its event


def scaled_row_counts(scale: float = 1.0) -> dict[str, int]:
    """Row count per CDC table name; only tables marked `scales_with_size` change."""
    _check_scale(scale)
    return {
        table.name: max(1, round(table.original_row_count * scale)) if table.scales_with_size
        else table.original_row_count
        for table in TABLES
    }


def _check_scale(scale: float) -> None:
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")


# ---------------------------------------------------------------------------
# Vocabulary (hand-picked, plausible rather than realistic)

CATEGORIES = (
    (1, "Sports", "MLB", "Major League Baseball"),
    (2, "Sports", "NHL", "National Hockey League"),
    (3, "Sports", "NFL", "National Football League"),
    (4, "Sports", "NBA", "National Basketball Association"),
    (5, "Sports", "MLS", "Major League Soccer"),
    (6, "Shows", "Musicals", "Musical theatre"),
    (7, "Shows", "Plays", "All non-musical theatre"),
    (8, "Shows", "Opera", "All opera and light opera"),
    (9, "Concerts", "Pop", "All rock and pop music concerts"),
    (10, "Concerts", "Jazz", "All jazz singers and bands"),
    (11, "Concerts", "Classical", "All symphony, concerto, and choir concerts"),
)
# Events lean towards shows and concerts, as in the published sample.
CATEGORY_WEIGHTS = (1, 1, 1, 1, 1, 24, 20, 12, 28, 6, 5)

CITIES = (
    ("New York", "NY"), ("Los Angeles", "CA"), ("Chicago", "IL"), ("Houston", "TX"),
    ("Phoenix", "AZ"), ("Philadelphia", "PA"), ("San Antonio", "TX"), ("San Diego", "CA"),
    ("Dallas", "TX"), ("San Jose", "CA"), ("Austin", "TX"), ("Jacksonville", "FL"),
    ("Columbus", "OH"), ("Indianapolis", "IN"), ("Charlotte", "NC"), ("San Francisco", "CA"),
    ("Seattle", "WA"), ("Denver", "CO"), ("Washington", "DC"), ("Boston", "MA"),
    ("Nashville", "TN"), ("Baltimore", "MD"), ("Portland", "OR"), ("Las Vegas", "NV"),
    ("Milwaukee", "WI"), ("Albuquerque", "NM"), ("Tucson", "AZ"), ("Fresno", "CA"),
    ("Sacramento", "CA"), ("Kansas City", "MO"), ("Atlanta", "GA"), ("Miami", "FL"),
    ("Raleigh", "NC"), ("Omaha", "NE"), ("Minneapolis", "MN"), ("Cleveland", "OH"),
    ("Tulsa", "OK"), ("New Orleans", "LA"), ("Tampa", "FL"), ("Pittsburgh", "PA"),
    ("Cincinnati", "OH"), ("St. Louis", "MO"), ("Orlando", "FL"), ("Salt Lake City", "UT"),
    ("Detroit", "MI"), ("Buffalo", "NY"), ("Anchorage", "AK"), ("Honolulu", "HI"),
    ("Española", "NM"), ("Cañon City", "CO"), ("Coeur d'Alene", "ID"), ("Bridgeview", "IL"),
)

VENUE_PREFIXES = (
    "Liberty", "Union", "Summit", "Harbor", "Pioneer", "Memorial", "Riverside", "Lakeside",
    "Heritage", "Civic", "Grand", "Majestic", "Orpheum", "Paramount", "Shubert", "Belasco",
    "Eastside", "Westgate", "Northfield", "Crescent", "Meridian", "Beacon", "Sterling", "Coronado",
)
# (kind, smallest, largest seat count)
VENUE_KINDS = (
    ("Stadium", 30_000, 80_000), ("Arena", 12_000, 22_000), ("Field", 25_000, 50_000),
    ("Park", 20_000, 45_000), ("Coliseum", 15_000, 65_000), ("Center", 2_000, 20_000),
    ("Theatre", 400, 2_500), ("Hall", 800, 3_000), ("Opera House", 1_500, 4_000),
    ("Amphitheatre", 5_000, 25_000), ("Playhouse", 200, 1_200),
)

EVENT_NAMES_BY_CATEGORY = {
    "Musicals": (
        "Mamma Mia!", "Wicked", "Jersey Boys", "The Lion King", "Chicago", "Hairspray",
        "Les Misérables", "The Phantom of the Opera", "Rent", "Grease", "Spamalot",
        "Legally Blonde", "Avenue Q", "Mary Poppins", "Spring Awakening", "Xanadu",
        "In the Heights", "Young Frankenstein", "The Little Mermaid", "A Chorus Line",
    ),
    "Plays": (
        "Hamlet", "Macbeth", "King Lear", "The Seagull", "Our Town", "Death of a Salesman",
        "Doubt", "August: Osage County", "The Glass Menagerie", "Equus", "A Doll's House",
        "Uncle Vanya", "Boeing-Boeing", "The 39 Steps", "Cyrano de Bergerac", "Pygmalion",
        "Noises Off", "Waiting for Godot",
    ),
    "Opera": (
        "La Bohème", "Tosca", "Carmen", "Aida", "Rigoletto", "La Traviata", "Die Walküre",
        "Götterdämmerung", "Madama Butterfly", "The Magic Flute", "Don Giovanni", "Turandot",
        "Fidelio", "Salome", "Otello", "Norma",
    ),
    "Pop": (
        "Shakira", "Coldplay", "Beyoncé", "Radiohead", "Mötley Crüe", "Björk", "Bon Jovi",
        "Maroon 5", "Alicia Keys", "Foo Fighters", "Kanye West", "Rihanna", "The Police",
        "Bruce Springsteen", "Linkin Park", "Kings of Leon", "Duffy", "Gnarls Barkley",
        "Sigur Rós", "Café Tacvba",
    ),
    "Jazz": (
        "Diana Krall", "Wynton Marsalis", "Herbie Hancock", "Pat Metheny", "Chick Corea",
        "Dave Brubeck", "Sonny Rollins", "Cassandra Wilson", "Esperanza Spalding",
        "Brad Mehldau", "Norah Jones", "Jamie Cullum",
    ),
    "Classical": (
        "Beethoven Symphony No. 9", "Mahler Symphony No. 2", "Brahms Requiem",
        "Dvořák New World Symphony", "Handel Messiah", "Bach Mass in B minor", "Mozart Requiem",
        "Tchaikovsky Violin Concerto", "Rachmaninoff Piano Concerto No. 3", "Verdi Requiem",
        "Sibelius Symphony No. 5", "Stravinsky Rite of Spring",
    ),
}
SPORTS_CATEGORIES = frozenset({"MLB", "NHL", "NFL", "NBA", "MLS"})
EVENT_START_TIMES = ((12, 30), (13, 0), (14, 0), (14, 30), (15, 0), (19, 0), (19, 30), (20, 0), (20, 30))

FIRST_NAMES = (
    "James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "William",
    "Elizabeth", "David", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah",
    "Charles", "Karen", "Daniel", "Nancy", "Matthew", "Lisa", "Anthony", "Betty", "Mark", "Sandra",
    "Rafael", "Lars", "Ifeoma", "Keiko", "Priya", "Mateo", "Aiyana", "Dmitri", "Ingrid", "Tariq",
    "José", "Zoë", "Renée", "Chloé", "Andrés", "Søren", "Inés", "François", "Noémie", "Björn",
)
LAST_NAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Miller", "Davis", "Wilson", "Anderson",
    "Taylor", "Thomas", "Moore", "Jackson", "Martin", "Lee", "Thompson", "White", "Harris",
    "Clark", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright", "Scott", "Hill",
    "Ratliff", "Nakamura", "Okafor", "Patel", "Kowalski", "O'Brien", "Lindqvist", "Haddad",
    "García", "Müller", "Núñez", "Sørensen", "Lefèvre", "Pérez", "Gómez", "Jiménez",
)
EMAIL_DOMAINS = ("example.com", "example.net", "example.org", "mail.test", "tickit.test")
USERNAME_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
USERNAME_DIGITS = "0123456789"
PREFERENCE_COUNT = 10
NUMTICKETS_CHOICES = (1, 1, 2, 2, 2, 2, 3, 4, 4, 4, 5, 6, 6, 8, 8, 10, 10, 12, 15, 20, 25, 30)

DAY_ABBREVIATIONS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
MONTH_ABBREVIATIONS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
US_FEDERAL_HOLIDAYS_2008 = frozenset(
    date(YEAR, month, day)
    for month, day in ((1, 1), (1, 21), (2, 18), (5, 26), (7, 4), (9, 1), (10, 13), (11, 11), (11, 27), (12, 25))
)


def _ascii_fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if ch.isascii() and ch.isalnum())


# ---------------------------------------------------------------------------
# Typed value helpers


def _money(cents: int) -> Decimal:
    return Decimal(cents).scaleb(-2)


def _timestamp(second_of_year: int) -> datetime:
    return YEAR_START + timedelta(seconds=second_of_year)


def _dateid(second_of_year: int) -> int:
    return FIRST_DATEID + second_of_year // SECONDS_PER_DAY


def _commission_cents(price_paid_cents: int) -> int:
    # 15 % rounded half up to the cent, in integer arithmetic.
    return (price_paid_cents * COMMISSION_PERCENT + 50) // 100


# ---------------------------------------------------------------------------
# Generation


@dataclass(frozen=True)
class _EventPlan:
    venueid: int
    catid: int
    start_second: int  # seconds since 2008-01-01 00:00:00
    name: str


class TickitGenerator:
    """Produces the seven TICKIT tables for one (seed, scale).

    Events and listings are planned once and cached because listings and
    sales refer back to them; every other table is streamed.
    """

    def __init__(self, seed: int = 0, scale: float = 1.0) -> None:
        self.seed = seed
        self.scale = scale
        self.row_counts = scaled_row_counts(scale)
        self._event_plans: list[_EventPlan] | None = None
        self._listing_plans: list[tuple[int, int, int, int, int, int]] | None = None

    def _rng(self, table_name: str) -> random.Random:
        return random.Random(f"tickit/{self.seed}/{table_name}")

    def iter_rows(self, table: str | Table) -> Iterator[tuple]:
        """Typed rows of one table, in primary-key order."""
        producers: dict[str, Callable[[], Iterator[tuple]]] = {
            "category": self._category_rows,
            "venue": self._venue_rows,
            "date": self._date_rows,
            "user": self._user_rows,
            "event": self._event_rows,
            "listing": self._listing_rows,
            "sale": self._sale_rows,
        }
        return producers[get_table(table).name]()

    def write_files(self, out_dir: str | Path) -> dict[str, int]:
        """Write all seven TICKIT files into out_dir; returns rows written per table."""
        out_path = Path(out_dir)
        out_path.mkdir(parents=True, exist_ok=True)
        return {
            table.name: write_table_file(table, self.iter_rows(table), out_path / table.tickit_file)
            for table in TABLES
        }

    def manifest(self) -> dict[str, "TableChecksum"]:
        return {table.name: table_checksum(table, self.iter_rows(table)) for table in TABLES}

    # -- small fixed tables

    def _category_rows(self) -> Iterator[tuple]:
        yield from CATEGORIES

    def _date_rows(self) -> Iterator[tuple]:
        for day_index in range(CALENDAR_DAYS):
            day = date(YEAR, 1, 1) + timedelta(days=day_index)
            # Weeks start on Sunday and Jan 1 is in week 1.
            week = int(day.strftime("%U")) + 1
            yield (
                FIRST_DATEID + day_index,
                day,
                DAY_ABBREVIATIONS[day.weekday()],
                week,
                MONTH_ABBREVIATIONS[day.month - 1],
                str((day.month - 1) // 3 + 1),
                YEAR,
                day in US_FEDERAL_HOLIDAYS_2008,
            )

    def _venue_rows(self) -> Iterator[tuple]:
        rng = self._rng("venue")
        used_names: set[str] = set()
        for venueid in range(1, self.row_counts["venue"] + 1):
            city, state = rng.choice(CITIES)
            kind, fewest_seats, most_seats = rng.choice(VENUE_KINDS)
            name = self._unique_venue_name(rng, city, kind, used_names)
            roll = rng.random()
            if roll < 0.10:
                seats = None
            elif roll < 0.16:
                seats = 0  # the published sample also has venues with 0 seats
            else:
                seats = rng.randint(fewest_seats, most_seats)
            yield (venueid, name, city, state, seats)

    @staticmethod
    def _unique_venue_name(rng: random.Random, city: str, kind: str, used_names: set[str]) -> str:
        candidates = [f"{city} {kind}", f"{rng.choice(VENUE_PREFIXES)} {kind}"]
        while True:
            for name in candidates:
                if name not in used_names:
                    used_names.add(name)
                    return name
            candidates = [f"{rng.choice(VENUE_PREFIXES)} {city} {kind}"]

    # -- users

    def _user_rows(self) -> Iterator[tuple]:
        rng = self._rng("user")
        rand = rng.random
        choices = rng.choices
        first_names = [(name, _ascii_fold(name).lower()) for name in FIRST_NAMES]
        last_names = [(name, _ascii_fold(name).lower()) for name in LAST_NAMES]
        for userid in range(1, self.row_counts["user"] + 1):
            first, first_ascii = first_names[int(rand() * len(first_names))]
            last, last_ascii = last_names[int(rand() * len(last_names))]
            city, state = CITIES[int(rand() * len(CITIES))]
            username = "".join(
                choices(USERNAME_LETTERS, k=3) + choices(USERNAME_DIGITS, k=2) + choices(USERNAME_LETTERS, k=3)
            )
            email = f"{first_ascii}.{last_ascii}{int(rand() * 1000)}@{EMAIL_DOMAINS[int(rand() * len(EMAIL_DOMAINS))]}"
            phone = f"({200 + int(rand() * 800)}) {200 + int(rand() * 800)}-{int(rand() * 10_000):04d}"
            preferences = [_preference(rand()) for _ in range(PREFERENCE_COUNT)]
            yield (userid, username, first, last, city, state, email, phone, *preferences)

    # -- events

    def _plan_events(self) -> list[_EventPlan]:
        if self._event_plans is None:
            rng = self._rng("event")
            venue_count = self.row_counts["venue"]
            catids = [category[0] for category in CATEGORIES]
            catnames = {category[0]: category[2] for category in CATEGORIES}
            plans = []
            for _ in range(self.row_counts["event"]):
                catid = rng.choices(catids, weights=CATEGORY_WEIGHTS)[0]
                hour, minute = rng.choice(EVENT_START_TIMES)
                start_second = rng.randrange(CALENDAR_DAYS) * SECONDS_PER_DAY + hour * 3600 + minute * 60
                plans.append(
                    _EventPlan(
                        venueid=rng.randint(1, venue_count),
                        catid=catid,
                        start_second=start_second,
                        name=_event_name(rng, catnames[catid]),
                    )
                )
            self._event_plans = plans
        return self._event_plans

    def _event_rows(self) -> Iterator[tuple]:
        for eventid, plan in enumerate(self._plan_events(), start=1):
            yield (
                eventid,
                plan.venueid,
                plan.catid,
                _dateid(plan.start_second),
                plan.name,
                _timestamp(plan.start_second),
            )

    # -- listings

    def _plan_listings(self) -> list[tuple[int, int, int, int, int, int]]:
        """(sellerid, eventid, numtickets, price cents, list second, event start second) per listing."""
        if self._listing_plans is None:
            rng = self._rng("listing")
            rand = rng.random
            event_starts = [plan.start_second for plan in self._plan_events()]
            event_count = len(event_starts)
            user_count = self.row_counts["user"]
            window = LISTING_WINDOW_DAYS * SECONDS_PER_DAY
            plans = []
            for _ in range(self.row_counts["listing"]):
                event_index = int(rand() * event_count)
                event_start = event_starts[event_index]
                latest = event_start - 2 * 3600
                earliest = max(0, event_start - window)
                list_second = earliest + int(rand() * (latest - earliest + 1))
                dollars = 20 + int(rand() ** 3 * 1980)
                cents = int(rand() * 100) if rand() < 0.2 else 0
                plans.append((
                    1 + int(rand() * user_count),
                    event_index + 1,
                    NUMTICKETS_CHOICES[int(rand() * len(NUMTICKETS_CHOICES))],
                    dollars * 100 + cents,
                    list_second,
                    event_start,
                ))
            self._listing_plans = plans
        return self._listing_plans

    def _listing_rows(self) -> Iterator[tuple]:
        for listid, (sellerid, eventid, numtickets, price_cents, list_second, _) in enumerate(
            self._plan_listings(), start=1
        ):
            yield (
                listid,
                sellerid,
                eventid,
                _dateid(list_second),
                numtickets,
                _money(price_cents),
                _money(price_cents * numtickets),
                _timestamp(list_second),
            )

    # -- sales

    def _sale_rows(self) -> Iterator[tuple]:
        rng = self._rng("sale")
        rand = rng.random
        listings = self._plan_listings()
        user_count = self.row_counts["user"]
        sales_per_listing = _spread_sales_over_listings(rng, listings, self.row_counts["sale"])
        salesid = 0
        for listing_index, sale_count in sales_per_listing:
            sellerid, eventid, numtickets, price_cents, list_second, event_start = listings[listing_index]
            # A sale happens after the listing went up and before the event starts.
            first_second = list_second + 1
            span = event_start - 3600 - first_second + 1
            sale_seconds = sorted(first_second + int(rand() * span) for _ in range(sale_count))
            quantities = _split_tickets(rand, numtickets, sale_count)
            for sale_second, quantity in zip(sale_seconds, quantities):
                salesid += 1
                price_paid_cents = price_cents * quantity
                yield (
                    salesid,
                    listing_index + 1,
                    sellerid,
                    _buyer(rand, user_count, sellerid),
                    eventid,
                    _dateid(sale_second),
                    quantity,
                    _money(price_paid_cents),
                    _money(_commission_cents(price_paid_cents)),
                    _timestamp(sale_second),
                )


def _preference(roll: float) -> bool | None:
    if roll < 0.45:
        return True
    if roll < 0.8:
        return False
    return None


def _event_name(rng: random.Random, catname: str) -> str:
    if catname in SPORTS_CATEGORIES:
        home, away = rng.sample(CITIES, 2)
        return f"{away[0]} at {home[0]}"
    return rng.choice(EVENT_NAMES_BY_CATEGORY[catname])


def _spread_sales_over_listings(
    rng: random.Random, listings: list[tuple], sale_count: int
) -> Iterator[tuple[int, int]]:
    """Yield (listing index, number of sales) for listings with at least one sale.

    Each listing offers min(numtickets, MAX_SALES_PER_LISTING) sale slots and
    exactly sale_count slots are drawn, so the total is exact and every sale
    of a listing can get at least one ticket.
    """
    slot_ends = []
    total_slots = 0
    for listing in listings:
        total_slots += min(listing[2], MAX_SALES_PER_LISTING)
        slot_ends.append(total_slots)
    chosen_slots = sorted(rng.sample(range(total_slots), sale_count))
    position = 0
    for listing_index, slot_end in enumerate(slot_ends):
        count = 0
        while position < sale_count and chosen_slots[position] < slot_end:
            position += 1
            count += 1
        if count:
            yield listing_index, count


def _split_tickets(rand: Callable[[], float], numtickets: int, sale_count: int) -> list[int]:
    """Quantities for sale_count sales of one listing: each >= 1, total <= numtickets."""
    quantities = []
    remaining = numtickets
    for sales_left in range(sale_count, 0, -1):
        most = min(remaining - (sales_left - 1), 8)
        quantity = 1 + int(rand() * most)
        quantities.append(quantity)
        remaining -= quantity
    return quantities


def _buyer(rand: Callable[[], float], user_count: int, sellerid: int) -> int:
    if user_count == 1:
        return sellerid
    # Draw from the other user_count - 1 users so nobody buys their own listing.
    buyerid = 1 + int(rand() * (user_count - 1))
    return buyerid + 1 if buyerid >= sellerid else buyerid


def generate_rows(table: str | Table, seed: int = 0, scale: float = 1.0) -> Iterator[tuple]:
    """Typed rows of one table (other tables it depends on are planned internally)."""
    return TickitGenerator(seed, scale).iter_rows(table)


def write_tickit_files(out_dir: str | Path, seed: int = 0, scale: float = 1.0) -> dict[str, int]:
    """Generate and write the seven TICKIT files; returns rows written per table."""
    return TickitGenerator(seed, scale).write_files(out_dir)


# ---------------------------------------------------------------------------
# TICKIT file format


def _text_formatter(table: Table, column: Column) -> Callable[[object], str]:
    if column.type in (INT, SMALLINT):
        format_value: Callable = str
    elif column.type == STR:
        format_value = _checked_text(table, column)
    elif column.type == DECIMAL:
        spec = f".{column.scale}f"
        format_value = lambda value: format(value, spec)  # noqa: E731
    elif column.type == DATE:
        format_value = date.isoformat
    elif column.type == TIMESTAMP:
        format_value = _us_timestamp_text if table.timestamp_style == US_TIMESTAMPS else _iso_timestamp_text
    elif column.type == BOOL:
        format_value = _bool_text
    else:  # pragma: no cover - schema validates types
        raise ValueError(column.type)
    if not column.nullable:
        return format_value
    null_text = NULL_BOOL_TEXT if column.type == BOOL else NULL_TEXT
    return lambda value: null_text if value is None else format_value(value)


def _checked_text(table: Table, column: Column) -> Callable[[str], str]:
    delimiter = table.delimiter

    def format_text(value: str) -> str:
        # The TICKIT format has no escaping, so such values cannot be written.
        if delimiter in value or "\n" in value or "\r" in value or value == NULL_TEXT:
            raise ValueError(f"{table.name}.{column.name}: value {value!r} cannot be written to a TICKIT file")
        return value

    return format_text


def _iso_timestamp_text(value: datetime) -> str:
    return value.isoformat(" ", "seconds")


def _us_timestamp_text(value: datetime) -> str:
    return f"{value.month}/{value.day}/{value.year} {value.hour:02d}:{value.minute:02d}:{value.second:02d}"


def _bool_text(value: bool) -> str:
    return "TRUE" if value else "FALSE"


def row_formatter(table: str | Table) -> Callable[[tuple], str]:
    """A function turning one typed row into its TICKIT line (without line ending)."""
    table = get_table(table)
    formatters = [_text_formatter(table, column) for column in table.columns]
    delimiter = table.delimiter
    width = len(formatters)

    def format_row(row: tuple) -> str:
        if len(row) != width:
            raise ValueError(f"{table.name}: expected {width} values, got {len(row)}")
        return delimiter.join([format_value(value) for format_value, value in zip(formatters, row)])

    return format_row


def write_table_file(table: str | Table, rows: Iterable[tuple], path: str | Path, chunk_rows: int = 20_000) -> int:
    """Write typed rows as one TICKIT file (CRLF, no header); returns the row count."""
    format_row = row_formatter(table)
    written = 0
    with open(path, "w", encoding="utf-8", newline="") as out:
        chunk: list[str] = []
        for row in rows:
            chunk.append(format_row(row))
            if len(chunk) >= chunk_rows:
                written += _write_chunk(out, chunk)
                chunk = []
        written += _write_chunk(out, chunk)
    return written


def _write_chunk(out, lines: list[str]) -> int:
    if lines:
        out.write(LINE_END.join(lines))
        out.write(LINE_END)
    return len(lines)


# ---------------------------------------------------------------------------
# Checksums / manifest
#
# A row's canonical form is its fields joined by "|" in column order, each
# field being `\N` for NULL or the canonical text of the value with "\" and
# "|" backslash-escaped. Canonical texts: integers in decimal; decimals with
# exactly the column's scale; dates ISO; timestamps "YYYY-MM-DD HH:MM:SS"
# (plus ".ffffff" only if there are microseconds); booleans "true"/"false";
# strings as is, except that char(n) columns drop trailing blanks because
# databases pad them. Values a database driver returns in another Python type
# (0/1 for booleans, str for dates, float for decimals, datetime for dates) are
# converted first, so checksums compare what the data means, not how a driver
# represents it.


@dataclass(frozen=True)
class TableChecksum:
    table: str
    row_count: int
    checksum: str  # hex; sum of per-row digests modulo 2**128, so row order does not matter

    def to_dict(self) -> dict[str, object]:
        return {"table": self.table, "row_count": self.row_count, "checksum": self.checksum}


_CHECKSUM_MODULUS = 1 << 128
_TRUE_TEXTS = frozenset({"1", "t", "true", "y", "yes"})
_FALSE_TEXTS = frozenset({"0", "f", "false", "n", "no"})


def _canonical_int(value) -> str:
    return str(int(value))


def _canonical_decimal_for(column: Column) -> Callable[[object], str]:
    quantum = Decimal(1).scaleb(-column.scale)

    def canonical(value) -> str:
        number = value if isinstance(value, Decimal) else Decimal(str(value))
        return format(number.quantize(quantum), "f")

    return canonical


def _canonical_date(value) -> str:
    if isinstance(value, datetime):
        value = value.date()
    elif isinstance(value, str):
        value = date.fromisoformat(value)
    return value.isoformat()


def _canonical_timestamp(value) -> str:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.isoformat(" ")


def _canonical_bool(value) -> str:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE_TEXTS:
            return "true"
        if lowered in _FALSE_TEXTS:
            return "false"
        raise ValueError(f"not a boolean: {value!r}")
    return "true" if value else "false"


def _canonical_str_for(column: Column) -> Callable[[object], str]:
    def canonical(value) -> str:
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        if column.fixed_length:
            value = value.rstrip(" ")
        if "\\" in value or "|" in value:
            value = value.replace("\\", "\\\\").replace("|", "\\|")
        return value

    return canonical


def _canonical_formatter(column: Column) -> Callable[[object], str]:
    if column.type == DECIMAL:
        return _canonical_decimal_for(column)
    if column.type == STR:
        return _canonical_str_for(column)
    return {
        INT: _canonical_int,
        SMALLINT: _canonical_int,
        DATE: _canonical_date,
        TIMESTAMP: _canonical_timestamp,
        BOOL: _canonical_bool,
    }[column.type]


def canonical_row_text_formatter(table: str | Table) -> Callable[[tuple], str]:
    """A function giving the canonical text of one row (see the comment above)."""
    table = get_table(table)
    formatters = [_canonical_formatter(column) for column in table.columns]

    def canonical_row(row) -> str:
        return "|".join(
            [NULL_TEXT if value is None else canonical(value) for canonical, value in zip(formatters, row)]
        )

    return canonical_row


def canonical_row_text(table: str | Table, row) -> str:
    return canonical_row_text_formatter(table)(row)


def row_digest(canonical_text: str) -> int:
    return int.from_bytes(hashlib.blake2b(canonical_text.encode("utf-8"), digest_size=16).digest(), "big")


def table_checksum(table: str | Table, rows: Iterable) -> TableChecksum:
    """Order-independent checksum of typed rows (sequences in column order)."""
    table = get_table(table)
    canonical_row = canonical_row_text_formatter(table)
    total = 0
    count = 0
    for row in rows:
        total += row_digest(canonical_row(row))
        count += 1
    return TableChecksum(table.name, count, format(total % _CHECKSUM_MODULUS, "032x"))


def build_manifest(rows_by_table: Mapping[str, Iterable]) -> dict[str, TableChecksum]:
    return {get_table(name).name: table_checksum(name, rows) for name, rows in rows_by_table.items()}

