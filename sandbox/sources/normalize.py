"""Values as the comparisons see them: the source's Python types, whichever way a value arrived (a database driver,
a Debezium event, a silver read through Spark or hudi-rs). MySQL and Debezium carry booleans as 0/1, SQL pads
char(n) with spaces, and readers may give times with a zone: compared as naive UTC."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterable

from sandbox.schema import BOOL, Column, TIMESTAMP, Table


def normalizer(column: Column) -> Callable[[object], object] | None:
    """The conversion this column's non-null values need, or None."""
    if column.type == BOOL:
        return bool
    if column.fixed_length:
        return _unpadded
    if column.type == TIMESTAMP:
        return _naive_utc
    return None


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
