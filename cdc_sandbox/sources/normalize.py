"""Values as the comparisons see them: one Python value per logical type, whichever way a value arrived (a
database driver, a Debezium event, a silver read through Spark or hudi-rs). MySQL and Debezium carry booleans as
0/1, SQL pads char(n) with spaces, readers may give times with a zone (compared as naive UTC), drivers give JSON
parsed or as text and binary as memoryview, and a connector setting may carry a decimal as text or a double
(`Column.carried`)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import json
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal

from cdc_sandbox.schema import BOOL, BYTES, DECIMAL, DOUBLE, FLOAT, JSON, NUMBER, TIMESTAMP, TIMESTAMPTZ, UUID, Column
from cdc_sandbox.schema import Table


def normalizer(column: Column) -> Callable[[object], object] | None:
    """The conversion this column's non-null values need, or None."""
    if column.type == BOOL:
        return bool
    if column.fixed_length:
        return _unpadded
    if column.type in (TIMESTAMP, TIMESTAMPTZ):
        return _to_millis if column.carried == "millis" else _naive_utc
    if column.type in (DECIMAL, NUMBER):
        return float if column.carried == "double" else _decimal
    if column.type == JSON:
        return _json
    if column.type == UUID:
        return str
    if column.type == BYTES:
        return functools.partial(_bytes, column.carried)
    if column.type == FLOAT:
        return single_precision
    if column.type == DOUBLE:
        return float
    return None


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
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def _to_millis(value):
    value = _naive_utc(value)
    return value.replace(microsecond=value.microsecond // 1000 * 1000) if isinstance(value, dt.datetime) else value


def _decimal(value) -> Decimal:
    """Exact: a decimal carried as text (any scale) equals the source's number of the same value."""
    return value if isinstance(value, Decimal) else Decimal(str(value))


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


def _bytes(carried: str, value) -> bytes:
    if isinstance(value, str):
        try:
            return bytes.fromhex(value) if carried == "hex" else base64.b64decode(value + "=" * (-len(value) % 4),
                                                                                   altchars=b"-_" if "-" in value
                                                                                   or "_" in value else None)
        except (ValueError, binascii.Error):
            return value.encode()
    return bytes(value)
