r"""Streaming parser for TICKIT files, published or generated.

Rows end at "\n" (normally "\r\n"); a carriage return not followed by "\n" is
part of the row, and is dropped from non-text fields where the published
listings and sales files have a few of them. `\N` is NULL in every column; an
empty field is NULL in every non-text column (the users file writes unknown
preferences that way) and the empty string in text columns.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Callable, Iterator

from cdc_sandbox.schema import BOOL, DATE, DECIMAL, INT, INTEGER_RANGES, SMALLINT, STR, TIMESTAMP, Column, Table

from .schema import TABLES, get_table

NULL_TEXT = "\\N"


class TickitFormatError(ValueError):
    """A TICKIT file line that cannot be parsed; line_number is 1-based."""

    def __init__(self, file_name: str, line_number: int, reason: str) -> None:
        super().__init__(f"{file_name}, line {line_number}: {reason}")
        self.file_name = file_name
        self.line_number = line_number
        self.reason = reason

    def __reduce__(self):
        return (type(self), (self.file_name, self.line_number, self.reason))


class _BadValue(ValueError):
    pass


# ---------------------------------------------------------------------------
# Field parsers: text (without stray "\r") -> typed value, raising ValueError


def _integer_parser(column: Column) -> Callable[[str], int]:
    lowest, highest = INTEGER_RANGES[column.type]

    def parse(text: str) -> int:
        if not text.isascii():
            raise _BadValue(f"bad integer {text!r}")
        try:
            value = int(text)
        except ValueError:
            raise _BadValue(f"bad integer {text!r}") from None
        if not lowest <= value <= highest:
            raise _BadValue(f"integer {value} out of {column.type} range")
        return value

    return parse


def _decimal_parser(column: Column) -> Callable[[str], Decimal]:
    quantum = Decimal(1).scaleb(-column.scale)
    limit = Decimal(10) ** (column.precision - column.scale)

    def parse(text: str) -> Decimal:
        try:
            value = Decimal(text)
            exact = value.quantize(quantum) if value.is_finite() else None
        except ArithmeticError:  # decimal.InvalidOperation
            raise _BadValue(f"bad decimal {text!r}") from None
        if exact is None or not text.isascii():
            raise _BadValue(f"bad decimal {text!r}")
        if exact != value:
            raise _BadValue(f"decimal {text!r} has more than {column.scale} decimal places")
        if abs(exact) >= limit:
            raise _BadValue(f"decimal {text!r} does not fit decimal({column.precision},{column.scale})")
        return exact

    return parse


def _parse_date(text: str) -> date:
    try:
        if len(text) != 10:
            raise ValueError
        return date.fromisoformat(text)
    except ValueError:
        raise _BadValue(f"bad date {text!r} (expected YYYY-MM-DD)") from None


def _parse_timestamp(text: str) -> datetime:
    try:
        value = _parse_us_timestamp(text) if "/" in text else datetime.fromisoformat(text)
    except ValueError:
        raise _BadValue(
            f"bad timestamp {text!r} (expected YYYY-MM-DD HH:MM:SS or M/D/YYYY HH:MM:SS)"
        ) from None
    if value.tzinfo is not None:
        raise _BadValue(f"bad timestamp {text!r} (time zones are not expected)")
    return value


def _parse_us_timestamp(text: str) -> datetime:
    calendar_part, _, clock_part = text.partition(" ")
    month, day, year = calendar_part.split("/")
    hour, minute, second = clock_part.split(":") if clock_part else ("0", "0", "0")
    fields = (year, month, day, hour, minute, second)
    if not all(field.isdigit() and field.isascii() for field in fields) or len(year) != 4:
        raise ValueError(text)
    return datetime(*(int(field) for field in fields))


_BOOLEANS = {"true": True, "t": True, "false": False, "f": False}


def _parse_bool(text: str) -> bool:
    try:
        return _BOOLEANS[text.lower()]
    except KeyError:
        raise _BadValue(f"bad boolean {text!r} (expected TRUE or FALSE)") from None


def _text_parser(column: Column) -> Callable[[str], str]:
    max_length = column.max_length

    def parse(text: str) -> str:
        if len(text) > max_length:
            raise _BadValue(f"text of {len(text)} characters exceeds {column.original_sql_type}")
        return text

    return parse


def _value_parser(column: Column) -> Callable[[str], object]:
    if column.type in (INT, SMALLINT):
        parse = _integer_parser(column)
    elif column.type == DECIMAL:
        parse = _decimal_parser(column)
    elif column.type == DATE:
        parse = _parse_date
    elif column.type == TIMESTAMP:
        parse = _parse_timestamp
    elif column.type == BOOL:
        parse = _parse_bool
    else:
        parse = _text_parser(column)
    return _with_nulls(column, parse)


def _with_nulls(column: Column, parse: Callable[[str], object]) -> Callable[[str], object]:
    null_texts = (NULL_TEXT,) if column.type == STR else (NULL_TEXT, "")
    if column.nullable:
        return lambda text: None if text in null_texts else parse(text)

    def parse_required(text: str) -> object:
        if text in null_texts:
            raise _BadValue("NULL in a NOT NULL column")
        return parse(text)

    return parse_required


# ---------------------------------------------------------------------------
# Rows


class _TableParser:
    def __init__(self, table: Table) -> None:
        self.table = table
        self.parsers = [_value_parser(column) for column in table.columns]
        self.width = len(self.parsers)
        # Stray carriage returns are only removed where they cannot be data.
        self.text_columns = frozenset(i for i, column in enumerate(table.columns) if column.type == STR)

    def fields(self, record: str) -> list[str]:
        fields = record.split(self.table.delimiter)
        if len(fields) != self.width:
            raise _BadValue(f"wrong field count: expected {self.width}, found {len(fields)}")
        if "\r" in record:
            fields = [
                field if index in self.text_columns else field.replace("\r", "")
                for index, field in enumerate(fields)
            ]
        return fields

    def row(self, record: str) -> tuple:
        fields = self.fields(record)
        try:
            return tuple([parse(field) for parse, field in zip(self.parsers, fields)])
        except ValueError:
            raise _BadValue(self._explain(fields)) from None

    def _explain(self, fields: list[str]) -> str:
        for column, parse, field in zip(self.table.columns, self.parsers, fields):
            try:
                parse(field)
            except ValueError as error:
                return f"column {column.name}: {error}"
        return "unparseable row"  # pragma: no cover - some field failed above


def _records(path: Path, encoding: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, record without its line ending); blank lines skipped."""
    with open(path, "rb") as stream:
        for line_number, raw in enumerate(stream, start=1):
            if raw.endswith(b"\r\n"):
                raw = raw[:-2]
            elif raw.endswith(b"\n"):
                raw = raw[:-1]
            try:
                record = raw.decode(encoding)
            except UnicodeDecodeError as error:
                raise TickitFormatError(path.name, line_number, f"not valid {encoding}: {error.reason}") from None
            # No table has fewer than four columns, so a blank line is never a row.
            if record.strip("\r") == "":
                continue
            yield line_number, record


def iter_file_rows(table: str | Table, path: str | Path, encoding: str = "utf-8") -> Iterator[tuple]:
    """Typed rows of one TICKIT file, in file order."""
    table = get_table(table)
    path = Path(path)
    parser = _TableParser(table)
    for line_number, record in _records(path, encoding):
        try:
            yield parser.row(record)
        except _BadValue as error:
            raise TickitFormatError(path.name, line_number, str(error)) from None


def iter_table_rows(directory: str | Path, table: str | Table, encoding: str = "utf-8") -> Iterator[tuple]:
    """Typed rows of one table from a directory holding the TICKIT files."""
    table = get_table(table)
    return iter_file_rows(table, Path(directory) / table.tickit_file, encoding)


def read_tickit_directory(directory: str | Path, encoding: str = "utf-8") -> dict[str, Iterator[tuple]]:
    """Lazy typed-row iterators for all seven tables, keyed by CDC table name.

    Missing files raise FileNotFoundError up front rather than mid-load.
    """
    directory = Path(directory)
    missing = [table.tickit_file for table in TABLES if not (directory / table.tickit_file).is_file()]
    if missing:
        raise FileNotFoundError(f"{directory}: missing TICKIT files: {', '.join(missing)}")
    return {table.name: iter_table_rows(directory, table, encoding) for table in TABLES}


# ---------------------------------------------------------------------------
# Normalized text for bulk loaders


def _normalizer(column: Column) -> Callable[[object], object]:
    if column.type in (INT, SMALLINT):
        normalize: Callable = str
    elif column.type == DECIMAL:
        normalize = lambda value: format(value, f".{column.scale}f")  # noqa: E731
    elif column.type == DATE:
        normalize = date.isoformat
    elif column.type == TIMESTAMP:
        normalize = lambda value: value.isoformat(" ")  # noqa: E731
    else:  # str stays str, bool stays bool
        return lambda value: value
    return lambda value: None if value is None else normalize(value)


def iter_normalized_fields(table: str | Table, path: str | Path, encoding: str = "utf-8") -> Iterator[list]:
    """Rows of a TICKIT file as lists of loader-ready values.

    None for NULL, integers and decimals as text (decimals with the column's
    scale), dates `YYYY-MM-DD`, timestamps `YYYY-MM-DD HH:MM:SS`, booleans as
    Python bools, text unchanged.
    """
    table = get_table(table)
    normalizers = [_normalizer(column) for column in table.columns]
    for row in iter_file_rows(table, path, encoding):
        yield [normalize(value) for normalize, value in zip(normalizers, row)]
