"""A project's rows: per table a data file (CSV, TSV or Parquet, with a header naming columns; an empty field is
NULL) loaded with each engine's bulk path, or rows generated from the column types with a seed and a count.

A table that holds rows already is left as it is: a load never loses what is there. A file's row that does not fit
its table stops that table's load with the file, the line and the database's message; the table stays empty and
the tables loaded before it keep their rows.
"""

from __future__ import annotations

import csv
import graphlib
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.sources.mutations import random_value, sql_parameter, unique_value
from cdc_sandbox.stack.catalog import Placement, placements
from cdc_sandbox.stack.databases import table_connection
from cdc_sandbox.stack.source_tables import create_tables
from cdc_sandbox.tickit_data.ddl import MYSQL, POSTGRES, quote

DEFAULT_ROWS = 100
DRAWS_PER_ROW = 20
Progress = Callable[[str, int], None]


@dataclass
class TableLoad:
    table: str
    rows: int
    outcome: str


def load(settings: Settings, progress: Progress = lambda table, n: None) -> list[TableLoad]:
    """Each empty table filled, a referenced table before the tables that reference it."""
    settings = create_tables(settings)
    results = []
    ordered = in_reference_order(placements(settings))
    for placement in ordered:
        spec = settings.topology.silver_of(placement.table.name).data
        with table_connection(settings, placement) as conn:
            held = _count(conn, placement)
            if held:
                results.append(TableLoad(placement.table.name, held, "unchanged (it holds rows already)"))
                continue
            if spec.get("file"):
                path = (settings.topology.file.parent / spec["file"]).resolve()
                loaded = _load_file(conn, placement, path)
                how = f"loaded from {path.name}"
            else:
                count, seed = int(spec.get("generate", DEFAULT_ROWS)), int(spec.get("seed", 0))
                referenced = referenced_rows(conn, placement, ordered)
                loaded = _insert(conn, placement, generated_rows(placement, count, seed, referenced))
                how = f"generated (seed {seed})"
            progress(placement.table.name, loaded)
            results.append(TableLoad(placement.table.name, loaded, how))
    return results


def _count(conn, placement: Placement) -> int:
    with conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM {placement.name}")
        return cur.fetchone()[0]


def in_reference_order(tables: list[Placement]) -> list[Placement]:
    """The tables with each one after those it references (a cycle of references keeps the given order)."""
    by_name = {p.table.name: p for p in tables}
    graph = {p.table.name: {fk.references_table for fk in p.table.foreign_keys
                            if fk.references_table in by_name and fk.references_table != p.table.name}
             for p in tables}
    try:
        return [by_name[name] for name in graphlib.TopologicalSorter(graph).static_order()]
    except graphlib.CycleError:
        return tables


def referenced_rows(conn, placement: Placement, tables: list[Placement]) -> dict[str, list[dict]]:
    """For each table this one references: the referenced columns' values of its rows ({} of a table not captured,
    whose rows the generated ones cannot know)."""
    by_name = {p.table.name: p for p in tables}
    wanted: dict[str, set[str]] = {}
    for fk in placement.table.foreign_keys:
        if fk.references_table in by_name and fk.references_table != placement.table.name:
            wanted.setdefault(fk.references_table, set()).add(fk.references_column)
    found = {}
    with conn.cursor() as cur:
        for name, columns in wanted.items():
            names = sorted(columns)
            listed = ", ".join(quote(placement.dialect, c) for c in names)
            cur.execute(f"SELECT DISTINCT {listed} FROM {by_name[name].name}")
            found[name] = [dict(zip(names, row)) for row in cur.fetchall()]
    return found


def generated_rows(placement: Placement, count: int, seed: int,
                   referenced: dict[str, list[dict]] | None = None) -> Iterator[dict]:
    """`count` rows of the column types, each key once: a single integer key counts up from 1. A column with a
    UNIQUE constraint takes a value made from the row's key; the columns of a reference take the values of one row
    of the referenced table (`referenced`: its rows), so a foreign key holds."""
    rng = random.Random(f"{placement.table.name}:{seed}")
    table = placement.table
    keys: set[tuple] = set()
    counting = len(table.primary_key) == 1 and table.column(table.primary_key[0]).type in ("int", "smallint",
                                                                                            "bigint")
    for _ in range(count * DRAWS_PER_ROW):  # a key that is a reference has as many values as the referenced rows
        if len(keys) == count:
            return
        row = {c.name: random_value(c, rng) for c in table.columns}
        if counting:
            row[table.primary_key[0]] = len(keys) + 1
        else:
            for name in table.primary_key:
                while row[name] is None:
                    row[name] = random_value(table.column(name), rng)
        row |= _references_of(table, referenced or {}, rng)
        key = {name: row[name] for name in table.primary_key}
        row |= {c.name: unique_value(c, key, rng) for c in table.columns if c.unique and c.name not in key}
        if tuple(str(value) for value in key.values()) not in keys:
            keys.add(tuple(str(value) for value in key.values()))
            yield row


def _references_of(table, referenced: dict[str, list[dict]], rng: random.Random) -> dict:
    """The reference columns' values, each referenced table's from one of its rows."""
    values = {}
    for name, rows in referenced.items():
        chosen = rng.choice(rows) if rows else None
        for fk in table.foreign_keys:
            if fk.references_table != name:
                continue
            if chosen is None and not table.column(fk.column).nullable:
                raise SandboxError(f"{table.name}.{fk.column} references {name}, which holds no rows",
                                   f"give {name} rows (`data:` in the project file) before {table.name}")
            values[fk.column] = None if chosen is None else chosen[fk.references_column]
    return values


def _insert(conn, placement: Placement, rows: Iterator[dict]) -> int:
    names = placement.table.column_names
    values = [tuple(sql_parameter(row[n]) for n in names) for row in rows]
    _begin(conn, placement)
    try:
        with conn.cursor() as cur:
            cur.executemany(placement.insert_sql(names), values)
    except Exception as exc:  # the driver's error, whichever engine
        conn.rollback()
        raise SandboxError(f"{placement.table.name} refused a generated row: {' '.join(str(exc).split())}",
                           "generated values keep to the column types the catalog reports; give the table a data "
                           "file instead (`data: {file: ...}`); tables loaded before keep their rows") from None
    conn.commit()
    return len(values)


def _load_file(conn, placement: Placement, path: Path) -> int:
    if not path.is_file():
        raise SandboxError(f"data file {path} of {placement.table.name} does not exist",
                           "fix `data: {file: ...}` of the table in the project file")
    if path.suffix == ".parquet":
        return _load_parquet(conn, placement, path)
    return _load_delimited(conn, placement, path)


def _header(placement: Placement, path: Path, delimiter: str) -> list[str]:
    with path.open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle, delimiter=delimiter), [])
    unknown = [name for name in header if name not in placement.table.column_names]
    if not header or unknown:
        raise SandboxError(f"{path}, line 1: the header names {', '.join(unknown) or 'no column'}, which "
                           f"{placement.table.name} does not have",
                           "name the table's columns in the first line: " + ", ".join(placement.table.column_names))
    return header


def _load_delimited(conn, placement: Placement, path: Path) -> int:
    """COPY on Postgres, LOAD DATA on MariaDB/MySQL, in one transaction: a row the table refuses loads nothing."""
    delimiter = "\t" if path.suffix in (".tsv", ".tab") else ","
    header = _header(placement, path, delimiter)
    columns = ", ".join(quote(placement.dialect, name) for name in header)
    pg_delimiter = "E'\\t'" if delimiter == "\t" else "','"
    try:
        with conn.cursor() as cur:
            if placement.dialect == POSTGRES:
                with path.open(encoding="utf-8") as handle:
                    cur.copy_expert(f"COPY {placement.name} ({columns}) FROM STDIN WITH (FORMAT csv, HEADER true, "
                                    f"DELIMITER {pg_delimiter})", handle)
                loaded = cur.rowcount
            else:
                cur.execute("START TRANSACTION")
                # An empty field is NULL, as COPY's CSV reads it on Postgres.
                variables = ", ".join(f"@v{i}" for i in range(len(header)))
                nulls = ", ".join(f"{quote(placement.dialect, name)} = NULLIF(@v{i}, '')"
                                  for i, name in enumerate(header))
                cur.execute(f"LOAD DATA LOCAL INFILE %s INTO TABLE {placement.name} CHARACTER SET utf8mb4 FIELDS "
                            f"TERMINATED BY %s OPTIONALLY ENCLOSED BY '\"' IGNORE 1 LINES ({variables}) SET {nulls}",
                            (str(path), delimiter))
                loaded = cur.rowcount
                cur.execute("SHOW WARNINGS")
                warnings = [row[2] for row in cur.fetchall() if row[0] in ("Warning", "Error")]
                if warnings:
                    raise _Refused(f"{warnings[0]} (a row counts from the first after the header)")
        conn.commit()
        return loaded
    except Exception as exc:  # the driver's error, whichever engine: reported with the file's line
        conn.rollback()
        message = " ".join(str(exc).split())
        raise SandboxError(f"{path}: {placement.table.name} refused the file: {message}",
                           "fix that line of the file and load again; nothing of it was kept, tables loaded before "
                           "keep their rows") from None


class _Refused(Exception):
    pass


def _begin(conn, placement: Placement) -> None:
    """One transaction for all the rows: the MariaDB connection otherwise commits each statement by itself."""
    if placement.dialect == MYSQL:
        conn.begin()


def _first_refused(conn, placement: Placement, statement: str, rows: list[tuple]) -> tuple[int, Exception]:
    """The number (from 1) of the first row the database refuses, and its error; nothing is kept."""
    _begin(conn, placement)
    try:
        with conn.cursor() as cur:
            for number, row in enumerate(rows, start=1):
                try:
                    cur.execute(statement, row)
                except Exception as exc:  # the driver's error, whichever engine
                    return number, exc
        return len(rows), RuntimeError("refused as a whole, each row accepted alone")
    finally:
        conn.rollback()


def _load_parquet(conn, placement: Placement, path: Path) -> int:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    unknown = [name for name in table.column_names if name not in placement.table.column_names]
    if unknown:
        raise SandboxError(f"{path}: columns {', '.join(unknown)} are not columns of {placement.table.name}",
                           "name the table's columns: " + ", ".join(placement.table.column_names))
    names = table.column_names
    rows = [tuple(sql_parameter(row[name]) for name in names) for row in table.to_pylist()]
    statement = placement.insert_sql(names)
    _begin(conn, placement)
    try:
        with conn.cursor() as cur:
            cur.executemany(statement, rows)
    except Exception:  # the driver's error: found again row by row, to name the row
        conn.rollback()
        number, exc = _first_refused(conn, placement, statement, rows)
        raise SandboxError(f"{path}, row {number}: {placement.table.name} refused it: {' '.join(str(exc).split())}",
                           "fix that row and load again; nothing of the file was kept") from None
    conn.commit()
    return len(rows)
