"""Values as the comparisons see them: one Python value per logical type, whichever way a value arrived (a
database driver, a Debezium event, a silver read through Spark or hudi-rs). MySQL and Debezium carry booleans as
0/1, SQL pads char(n) with spaces, readers may give times with a zone (compared as naive UTC), drivers give JSON
parsed or as text, binary as memoryview, a network address as an object and a time of day as a time or a duration
where Debezium carries a count, and a connector setting may carry a decimal as text or a double (`Column.carried`)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import ipaddress
import json
import re
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal, InvalidOperation

from cdc_sandbox.schema import BOOL, BYTES, DECIMAL, DOUBLE, FLOAT, INTERVAL, JSON, NUMBER, TIME, TIMESTAMP, TIMESTAMPTZ
from cdc_sandbox.schema import DATE, TIMETZ, UUID
from cdc_sandbox.schema import ARRAY, BIT_LAYOUTS, Column
from cdc_sandbox.schema import Table


def normalizer(column: Column) -> Callable[[object], object] | None:
    """The conversion this column's non-null values need, or None."""
    if column.type == ARRAY:
        return functools.partial(_elements, normalizer(column.element))
    if column.type == BOOL:
        return bool
    if column.fixed_length:
        return _unpadded
    if column.form == "set":
        return functools.partial(_set_members, column.labels)
    if column.form in ("inet", "cidr"):
        return _address
    if column.form == "tstzrange":
        return _instant_range
    if column.form:
        return str
    if column.type == TIME and column.carried == "whole millis":
        return lambda value: _micros_of_day(1, value) // 1000 * 1000
    if column.type == TIME:
        return functools.partial(_micros_of_day, 1000 if column.carried == "millis" else 1)
    if column.type == TIMETZ:
        return _utc_micros_of_day
    if column.type == INTERVAL:
        return _interval_parts if column.carried == "string" else _interval_micros
    if column.type == DATE and column.carried == "count":
        return _days
    if column.type == TIMESTAMP and column.carried == "count":
        return _micros_since_epoch
    if column.type == TIMESTAMP and column.carried == "millis count":
        return lambda value: value if isinstance(value, int) else _micros_since_epoch(value) // 1000
    if column.type in (TIMESTAMP, TIMESTAMPTZ):
        return _to_millis if column.carried == "millis" else _naive_utc
    if column.type in (DECIMAL, NUMBER):
        exact = _money if column.sql_type == "money" else _decimal
        return (lambda value: float(exact(value))) if column.carried == "double" else exact
    if column.type == JSON:
        return _json
    if column.type == UUID:
        return str
    if column.carried in BIT_LAYOUTS:
        return functools.partial(_bits, column)
    if column.type == BYTES:
        return functools.partial(_bytes, column.carried)
    if column.type == FLOAT:
        return single_precision
    if column.type == DOUBLE:
        return float
    return None


def _elements(convert, value) -> tuple:
    """An array as a tuple of its elements, each converted as a column of the element type would be."""
    return tuple(_convert(convert, element) for element in value)


def _micros_of_day(unit: int, value) -> int:
    """A time of day as microseconds since midnight: a driver gives a time (MySQL's as a duration, which may be
    negative or pass 24 hours), Debezium and silver a count of `unit` microseconds, the journal its text."""
    if isinstance(value, int):
        return value * unit
    if isinstance(value, dt.timedelta):
        return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    if isinstance(value, str):
        return _micros_of_text(value)
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def _micros_of_text(text: str) -> int:
    """`[-]H:MM:SS[.ffffff]`, hours of any number of digits."""
    sign = -1 if text.startswith("-") else 1
    hours, minutes, seconds = text.lstrip("-").split(":")
    whole, _, fraction = seconds.partition(".")
    return sign * (((int(hours) * 60 + int(minutes)) * 60 + int(whole)) * 1_000_000 + int(fraction.ljust(6, "0")[:6]))


def time_text(value: dt.timedelta) -> str:
    """A MySQL time (a duration) as `_micros_of_text` reads it."""
    micros = _micros_of_day(1, value)
    whole, fraction = divmod(abs(micros), 1_000_000)
    return f"{'-' if micros < 0 else ''}{whole // 3600}:{whole // 60 % 60:02}:{whole % 60:02}.{fraction:06}"


# Debezium's month when it makes an interval a count of microseconds (MicroDuration.DAYS_PER_MONTH_AVG)
DAYS_PER_MONTH = 365.25 / 12.0
_PG_INTERVAL = re.compile(r"(?:(?P<years>[-+]?\d+) years?)?\s*(?:(?P<months>[-+]?\d+) mons?)?\s*"
                          r"(?:(?P<days>[-+]?\d+) days?)?\s*(?:(?P<sign>[-+])?(?P<hours>\d+):(?P<minutes>\d+):"
                          r"(?P<seconds>\d+(?:\.\d+)?))?")
_ISO_INTERVAL = re.compile(r"P(?P<years>-?\d+)Y(?P<months>-?\d+)M(?P<days>-?\d+)DT(?P<hours>-?\d+)H"
                           r"(?P<minutes>-?\d+)M(?P<seconds>-?[\d.]+)S")


def _interval_fields(text: str) -> tuple[int, int, int, int, int, str]:
    """Years, months, days, hours, minutes and seconds (as text) of an interval as Postgres writes it (`1 year 2
    mons 3 days -04:05:06.5`) or as Debezium's ISO text (`P1Y2M3DT-4H-5M-6.5S`)."""
    iso = _ISO_INTERVAL.fullmatch(text)
    if iso:
        return (*(int(iso[name]) for name in ("years", "months", "days", "hours", "minutes")), iso["seconds"])
    found = _PG_INTERVAL.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"not an interval: {text!r}")
    sign = "-" if found["sign"] == "-" else ""
    return (*(int(found[name] or 0) for name in ("years", "months", "days")),
            int(sign + (found["hours"] or "0")), int(sign + (found["minutes"] or "0")), sign + (found["seconds"] or "0"))


def _interval_micros(value) -> int:
    """An interval as Debezium's MicroDuration counts it, in the same floating-point steps: a month is 30.4375
    days, the sum is truncated to whole microseconds."""
    if isinstance(value, int):
        return value
    years, months, days, hours, minutes, seconds = _interval_fields(value)
    total_days = (years * 12 + months) * DAYS_PER_MONTH + days
    total_seconds = (((total_days * 24 + hours) * 60) + minutes) * 60 + _driver_seconds(seconds)
    return int(total_seconds * 1e6)


def _driver_seconds(text: str) -> float:
    """The seconds as the JDBC driver Debezium reads Postgres with gives them: whole seconds plus microseconds
    divided by a million, in floating point (not the nearest double to the text)."""
    negative = text.startswith("-")
    whole, _, fraction = text.lstrip("+-").partition(".")
    micros = int(fraction.ljust(6, "0")[:6])
    return -int(whole) + -micros / 1_000_000 if negative else int(whole) + micros / 1_000_000


def _interval_parts(value) -> tuple[int, int, Decimal]:
    """An interval as months, days and seconds (interval.handling.mode=string). Debezium's text holds the seconds
    as the decimal text of the driver's double, cut to 9 decimals: the source's seconds are taken the same way (so
    `13.887759` is carried as `13.887758999`)."""
    years, months, days, hours, minutes, seconds = _interval_fields(value)
    if not _ISO_INTERVAL.fullmatch(value):
        seconds = Decimal(repr(_driver_seconds(seconds)))
        if seconds.as_tuple().exponent < -9:
            seconds = seconds.quantize(Decimal("1e-9"), rounding=ROUND_DOWN)
    return years * 12 + months, days, (hours * 60 + minutes) * 60 + Decimal(seconds)


def _utc_micros_of_day(value) -> int:
    """A time with its offset as microseconds since midnight in UTC: a driver gives a time with its zone, Debezium
    its UTC text (`10:15:30.5Z`), the journal its ISO text."""
    if isinstance(value, str):
        value = dt.time.fromisoformat(value)
    offset = value.utcoffset() or dt.timedelta(0)
    return (_micros_of_day(1, value.replace(tzinfo=None)) - _micros_of_day(1, offset)) % 86_400_000_000


_RANGE = re.compile(r'([\[(])"?([^",]*)"?,"?([^",]*)"?([\])])')


def _instant_range(value) -> str:
    """A tstzrange in one text whatever the session's zone wrote its bounds in: each bound as UTC."""
    found = _RANGE.fullmatch(str(value))
    if found is None:  # empty
        return str(value)
    opening, low, high, closing = found.groups()
    bounds = [dt.datetime.fromisoformat(b).astimezone(dt.timezone.utc).isoformat() if b else "" for b in (low, high)]
    return f"{opening}{bounds[0]},{bounds[1]}{closing}"


def _address(value) -> str:
    """A network address in one text: a driver gives Python's ipaddress object, Debezium the server's text (which
    writes an IPv4-mapped IPv6 address its own way)."""
    text = str(value)
    return str(ipaddress.ip_interface(text) if "/" in text else ipaddress.ip_address(text))


def _set_members(labels: tuple[str, ...], value) -> str:
    """A set's members as Debezium joins them: in the order the column declares them (a member it does not
    declare after them, so that it differs)."""
    members = set(value.split(",") if isinstance(value, str) else value) - {""}
    return ",".join([label for label in labels if label in members] + sorted(members - set(labels)))


def single_precision(value) -> float:
    """A real as the 32 bits that hold it (a source driver gives the shortest decimal that reads back as them)."""
    return struct.unpack("f", struct.pack("f", float(value)))[0]


def normalize_row(table: Table, values: Iterable) -> tuple:
    """One row, in column order."""
    return row_normalizer(table)(values)


@functools.cache
def row_normalizer(table: Table) -> Callable[[Iterable], tuple]:
    """`normalize_row` for one table, its conversions looked up once."""
    converters = [normalizer(column) for column in table.columns]
    return lambda values: tuple(_convert(f, value) for f, value in zip(converters, values))


def normalize_column(column: Column, values: list) -> list:
    """One column's values."""
    convert = normalizer(column)
    return values if convert is None else [_convert(convert, value) for value in values]


def _convert(convert, value):
    return value if convert is None or value is None else convert(value)


def _unpadded(value: str) -> str:
    return value.rstrip(" ")


def _naive_utc(value):
    if isinstance(value, str):  # Debezium's ISO text of an instant (inside an array), the journal's of a time
        value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


EPOCH = dt.datetime(1970, 1, 1)


def _days(value) -> int:
    """A date as Debezium counts it inside an array: days since 1970 (the journal gives its ISO text)."""
    if isinstance(value, int):
        return value
    day = dt.date.fromisoformat(value[:10]) if isinstance(value, str) else value
    return (day - EPOCH.date()).days


def _micros_since_epoch(value) -> int:
    """A wall-clock time as Debezium counts it inside an array: microseconds since 1970 (UTC)."""
    if isinstance(value, int):
        return value
    moment = _naive_utc(value)
    return (moment - EPOCH) // dt.timedelta(microseconds=1)


def _to_millis(value):
    value = _naive_utc(value)
    return value.replace(microsecond=value.microsecond // 1000 * 1000) if isinstance(value, dt.datetime) else value


def _decimal(value) -> Decimal:
    """Exact: a decimal carried as text (any scale) equals the source's number of the same value."""
    return value if isinstance(value, Decimal) else Decimal(str(value))


def _money(value) -> Decimal:
    """Money as a decimal: the driver gives it as the server writes it (`-$1,234.50`), Debezium as a number."""
    try:
        return _decimal(value)
    except InvalidOperation:
        return Decimal(re.sub(r"[^\d.\-]", "", str(value)))


@dataclass(frozen=True)
class NotJson:
    """Text in a JSON column that does not parse (e.g. Debezium's placeholder written as the value): it differs
    from every document, also from a JSON string of the same text."""

    text: str


def _json(value):
    """Parsed: jsonb's text is its own canonical form, a driver may give it parsed already."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode()
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return NotJson(value)


def _bits(column: Column, value) -> bytes:
    """A bit string as Debezium carries it (`Column.bit_length`): Postgres gives its text ('0101'), a MySQL read and
    the journal its number (`Placement.select_list`), an event and silver the bytes already."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    number = int(value, 2) if isinstance(value, str) else int(value)
    size = -(-column.bit_length // 8) if column.carried == "padded bits" else -(-number.bit_length() // 8)
    return number.to_bytes(size, "little")


def _bytes(carried: str, value) -> bytes:
    if isinstance(value, str):
        try:
            return bytes.fromhex(value) if carried == "hex" else base64.b64decode(value + "=" * (-len(value) % 4),
                                                                                   altchars=b"-_" if "-" in value
                                                                                   or "_" in value else None)
        except (ValueError, binascii.Error):
            return value.encode()
    return bytes(value)
