"""TICKIT in the source databases: create the tables where the topology puts them and bulk-load them.

Each table is loaded with its engine's bulk path (Postgres `COPY`, MySQL/MariaDB `LOAD DATA LOCAL INFILE`, SQL Server
multi-row `INSERT`s) inside
one transaction, so a malformed line stops that table's load with the file, line and reason while every table
already loaded (and this table's previous contents) stays as it was. Loading the same data again changes nothing:
a table whose contents already match is skipped, one that differs is replaced.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from itertools import islice
from pathlib import Path

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.schema import BOOL, Table
from cdc_sandbox.sources.normalize import row_normalizer
from cdc_sandbox.stack.catalog import Placement, placements
from cdc_sandbox.stack.databases import table_connection
from cdc_sandbox.stack.source_tables import create_tables
from cdc_sandbox.tickit_data import (
    TABLES,
    TickitFormatError,
    TickitGenerator,
    canonical_row_text_formatter,
    iter_table_rows,
)
from cdc_sandbox.tickit_data.ddl import MYSQL, POSTGRES, SQLSERVER, quote

CHUNK_ROWS = 50_000
SQLSERVER_INSERT_ROWS = 500  # rows per INSERT ... VALUES statement (SQL Server takes at most 1000)
Progress = Callable[[str, int], None]  # (table, rows just loaded)


class RowSource:
    """Typed rows per table, readable more than once."""

    description = ""

    def rows(self, table: Table) -> Iterator[tuple]:
        raise NotImplementedError

    def expected_count(self, table: Table) -> int | None:
        return None


class GeneratedRows(RowSource):
    def __init__(self, seed: int = 0, scale: float = 1.0):
        self.generator = TickitGenerator(seed=seed, scale=scale)
        self.description = f"generated TICKIT (seed {seed}, scale {scale})"

    def rows(self, table: Table) -> Iterator[tuple]:
        return self.generator.iter_rows(table)

    def expected_count(self, table: Table) -> int:
        return self.generator.row_counts[table.name]


class FileRows(RowSource):
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        missing = [t.tickit_file for t in TABLES if not (self.directory / t.tickit_file).is_file()]
        if missing:
            raise SandboxError(f"{self.directory} lacks TICKIT files: {', '.join(missing)}",
                               "give the directory holding the seven files of tickitdb.zip, or load generated data")
        self.description = f"TICKIT files in {self.directory}"

    def rows(self, table: Table) -> Iterator[tuple]:
        return iter_table_rows(self.directory, table)


# --- loading -----------------------------------------------------------------------------------------------
@dataclass
class TableLoad:
    table: str
    rows: int  # rows in the table afterwards
    added: int = 0
    changed: int = 0
    removed: int = 0

    @property
    def outcome(self) -> str:
        if not (self.added or self.changed or self.removed):
            return "unchanged"
        return f"+{self.added} added, {self.changed} changed, -{self.removed} removed"


def load(settings: Settings, source: RowSource, progress: Progress = lambda table, n: None,
         namespace_suffix: str = "") -> list[TableLoad]:
    """Make every TICKIT table hold exactly `source`'s rows.

    `namespace_suffix` loads into other schemas/databases (e.g. `_scratch`) that no connector captures.
    """
    chosen = placements(settings, namespace_suffix)
    create_tables(settings, namespace_suffix)
    results = []
    for placement in chosen:
        with table_connection(settings, placement) as conn:
            try:
                results.append(_load_table(conn, placement, source, progress))
            except TickitFormatError as exc:
                conn.rollback()
                raise SandboxError(f"load of {placement.table.name} stopped: {exc}; the table keeps its previous "
                                   f"contents, and the tables loaded before it are intact",
                                   "fix that line of the file and load again") from None
    return results


def _load_table(conn, placement: Placement, source: RowSource, progress: Progress) -> TableLoad:
    """Bulk-load an empty table; bring a filled one to the source's rows with the fewest changes."""
    table = placement.table
    existing = _rows_by_key(table, current_rows(conn, placement))
    with conn.cursor() as cur:
        if not existing:
            added = _bulk_insert(cur, placement, source.rows(table), progress)
            conn.commit()
            return TableLoad(table.name, added, added=added)
        canonical = canonical_row_text_formatter(table)
        fresh, changed, seen = [], [], set()
        for row in source.rows(table):
            key = _key(table, row)
            seen.add(key)
            if key not in existing:
                fresh.append(row)
            elif existing[key] != canonical(row):
                changed.append(row)
        removed = [key for key in existing if key not in seen]
        _delete_keys(cur, placement, removed + [_key(table, row) for row in changed])
        _bulk_insert(cur, placement, changed + fresh, progress)
        progress(table.name, len(seen) - len(changed) - len(fresh))
    conn.commit()
    return TableLoad(table.name, len(seen), added=len(fresh), changed=len(changed), removed=len(removed))


def _key(table: Table, row) -> tuple:
    return tuple(row[i] for i in table.primary_key_indexes)


def _rows_by_key(table: Table, rows: list[tuple]) -> dict[tuple, str]:
    canonical = canonical_row_text_formatter(table)
    return {_key(table, row): canonical(row) for row in rows}


def _delete_keys(cur, placement: Placement, keys: list[tuple], batch: int = 1000) -> None:
    (column,) = [quote(placement.dialect, name) for name in placement.table.primary_key]
    for start in range(0, len(keys), batch):
        part = [k[0] for k in keys[start : start + batch]]
        marks = ", ".join(["%s"] * len(part))
        cur.execute(f"DELETE FROM {placement.name} WHERE {column} IN ({marks})", part)


def _bulk_insert(cur, placement: Placement, rows: Iterable[tuple], progress: Progress) -> int:
    bulk = {POSTGRES: _copy_postgres, MYSQL: _load_data_mysql, SQLSERVER: _insert_sqlserver}[placement.dialect]
    return bulk(cur, placement, rows, progress)


def _insert_sqlserver(cur, placement: Placement, rows: Iterable[tuple], progress: Progress) -> int:
    """Multi-row INSERTs in the load's transaction (pymssql has no COPY-like path that joins a transaction)."""
    columns = ", ".join(quote(SQLSERVER, c) for c in placement.table.column_names)
    row_marks = "(" + ", ".join(["%s"] * len(placement.table.columns)) + ")"
    total, remaining = 0, iter(rows)
    while batch := list(islice(remaining, SQLSERVER_INSERT_ROWS)):
        values = ", ".join([row_marks] * len(batch))
        cur.execute(f"INSERT INTO {placement.name} ({columns}) VALUES {values}",
                    tuple(value for row in batch for value in row))
        total += len(batch)
        progress(placement.table.name, len(batch))
    return total


def current_rows(conn, placement: Placement) -> list[tuple]:
    columns = ", ".join(quote(placement.dialect, c) for c in placement.table.column_names)
    with conn.cursor() as cur:
        cur.execute(f"SELECT {columns} FROM {placement.name}")
        return list(cur.fetchall())


def row_count(settings: Settings, placement: Placement) -> int | None:
    """Rows in the table, or None if its database does not answer or it does not exist yet."""
    try:
        with table_connection(settings, placement) as conn, conn.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM {placement.name}")
            return cur.fetchone()[0]
    except Exception:  # status must render even with a database down or the table not created yet
        return None


def typed_rows(settings: Settings, placement: Placement) -> list[tuple]:
    """A table's rows in key order as the schema's Python types."""
    with table_connection(settings, placement) as conn:
        rows = current_rows(conn, placement)
    return normalized_rows(placement.table, rows)


def normalized_rows(table: Table, rows: Iterable[tuple]) -> list[tuple]:
    """Rows (in column order) as the schema's Python types (`normalize`), in key order."""
    normalize = row_normalizer(table)
    return sorted((normalize(row) for row in rows), key=lambda row: _key(table, row))


def _copy_postgres(cur, placement: Placement, rows: Iterable[tuple], progress: Progress) -> int:
    columns = ", ".join(quote(POSTGRES, c) for c in placement.table.column_names)
    statement = f"COPY {placement.name} ({columns}) FROM STDIN"
    total = 0
    for chunk in _text_chunks(placement.table, rows, bool_text=("t", "f")):
        cur.copy_expert(statement, io.StringIO(chunk.text))
        total += chunk.rows
        progress(placement.table.name, chunk.rows)
    return total


def _load_data_mysql(cur, placement: Placement, rows: Iterable[tuple], progress: Progress) -> int:
    columns = ", ".join(quote(MYSQL, c) for c in placement.table.column_names)
    statement = (f"LOAD DATA LOCAL INFILE %s INTO TABLE {placement.name} CHARACTER SET utf8mb4 "
                 f"FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' ({columns})")
    total = 0
    with tempfile.TemporaryDirectory(prefix="tickit-load-") as scratch:
        path = os.path.join(scratch, f"{placement.table.name}.tsv")
        for chunk in _text_chunks(placement.table, rows, bool_text=("1", "0")):
            Path(path).write_text(chunk.text, encoding="utf-8")
            cur.execute(statement, (path,))
            total += chunk.rows
            progress(placement.table.name, chunk.rows)
    return total


@dataclass
class _Chunk:
    text: str
    rows: int


def _text_chunks(table: Table, rows: Iterable[tuple], bool_text: tuple[str, str]) -> Iterator[_Chunk]:
    """Rows as tab-separated text in the escaping both COPY and LOAD DATA read (`\\N` is NULL)."""
    formatters = [_field_formatter(column.type == BOOL, bool_text) for column in table.columns]
    lines: list[str] = []
    for row in rows:
        lines.append("\t".join([fmt(value) for fmt, value in zip(formatters, row)]))
        if len(lines) == CHUNK_ROWS:
            yield _Chunk("\n".join(lines) + "\n", len(lines))
            lines = []
    if lines:
        yield _Chunk("\n".join(lines) + "\n", len(lines))


_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _field_formatter(is_bool: bool, bool_text: tuple[str, str]) -> Callable[[object], str]:
    def field(value) -> str:
        if value is None:
            return "\\N"
        if is_bool:
            return bool_text[0] if value else bool_text[1]
        if isinstance(value, str):
            return value.translate(_ESCAPES)
        if isinstance(value, dt.datetime):
            return value.isoformat(" ")
        if isinstance(value, (int, Decimal, dt.date)):
            return str(value)
        raise TypeError(f"cannot bulk-load a {type(value).__name__}")

    return field
