"""A project's rows: per table a data file (CSV, TSV or Parquet, with a header naming columns; an empty field is
NULL) loaded with each engine's bulk path, or rows generated from the column types with a seed and a count.

A table that holds rows already is left as it is: a load never loses what is there. A file's row that does not fit
its table stops that table's load with the file, the line and the database's message; the table stays empty and
the tables loaded before it keep their rows.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.sources.mutations import parameters, random_value, unique_value
from cdc_sandbox.stack.catalog import Placement, left_out_placements, placements
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
    """Each empty table filled, a referenced table before the tables that reference it; tables that reference each
    other (or a table itself) together. Tables capture leaves out are filled too: captured rows may reference them."""
    settings = create_tables(settings)
    left_out = left_out_placements(settings)
    tables = placements(settings) + left_out
    results = []
    for group in reference_groups(tables):
        if len(group) == 1 and not _references_itself(group[0]):
            results.append(_load_table(settings, group[0], tables, progress, optional=group[0] in left_out))
        else:
            results += _load_group(settings, group, tables, progress)
    return results


def _load_table(settings: Settings, placement: Placement, tables: list[Placement], progress: Progress,
                optional: bool = False) -> TableLoad:
    """`optional`: a table left out of capture, whose columns of a type the sandbox cannot make may refuse every
    generated row; it then stays empty (a table that references it says so in its turn)."""
    try:
        return _fill(settings, placement, tables, progress)
    except SandboxError as exc:
        if not optional:
            raise
        return TableLoad(placement.table.name, 0, f"left empty (left out of capture): {exc.message}")


def _fill(settings: Settings, placement: Placement, tables: list[Placement], progress: Progress) -> TableLoad:
    spec = settings.topology.silver_of(placement.table.name).data
    with table_connection(settings, placement) as conn:
        held = _count(conn, placement)
        if held:
            return TableLoad(placement.table.name, held, "unchanged (it holds rows already)")
        if spec.get("file"):
            path = (settings.topology.file.parent / spec["file"]).resolve()
            loaded = _load_file(conn, placement, path)
            how = f"loaded from {path.name}"
        else:
            count, seed = _count_and_seed(spec)
            loaded = _insert(conn, placement, generated_rows(placement, count, seed,
                                                             referenced_rows(conn, placement, tables)))
            how = f"generated (seed {seed})"
    progress(placement.table.name, loaded)
    return TableLoad(placement.table.name, loaded, how)


def _count_and_seed(spec: dict) -> tuple[int, int]:
    return int(spec.get("generate", DEFAULT_ROWS)), int(spec.get("seed", 0))


def _load_group(settings: Settings, group: list[Placement], tables: list[Placement],
                progress: Progress) -> list[TableLoad]:
    """Tables that reference each other, generated together: a reference inside the group names one of the rows
    generated for the table it references, and the rows go in in one transaction with the engine's reference
    checks off (they hold once all are in). A table of the group that holds rows already is left as it is."""
    names = {p.table.name for p in group}
    with table_connection(settings, group[0]) as conn:
        empty = [p for p in group if not _count(conn, p)]
        from_files = [p for p in empty if settings.topology.silver_of(p.table.name).data.get("file")]
        from_file_rows = {}
        for placement in from_files:
            path = (settings.topology.file.parent / settings.topology.silver_of(placement.table.name).data["file"])
            from_file_rows[placement.table.name] = _load_file(_unchecked_session(conn, placement.dialect), placement,
                                                              path.resolve())
        _checked_session(conn, group[0].dialect)
        empty = [p for p in empty if p not in from_files]
        rows = {}
        for placement in empty:
            outside = {name: found for name, found in referenced_rows(conn, placement, tables).items()
                       if name not in names}
            count, seed = _count_and_seed(settings.topology.silver_of(placement.table.name).data)
            rows[placement.table.name] = list(generated_rows(placement, count, seed, outside))
        inside = {p.table.name: rows.get(p.table.name) or _held_rows(conn, p) for p in group}
        for placement in empty:
            _refer_inside(placement, rows[placement.table.name], inside)
        _insert_unchecked(conn, empty, rows)
    loads = [TableLoad(p.table.name, from_file_rows[p.table.name], "loaded from its file (in a cycle of references)")
             for p in from_files]
    for placement in [p for p in group if p not in from_files]:
        if placement in empty:
            progress(placement.table.name, len(rows[placement.table.name]))
            loads.append(TableLoad(placement.table.name, len(rows[placement.table.name]),
                                   "generated with the tables it references in a cycle"))
        else:
            loads.append(TableLoad(placement.table.name, 0, "unchanged (it holds rows already)"))
    return loads


def _unchecked_session(conn, dialect: str):
    """The connection with reference checks off until `_checked_session`: a file's rows may name rows of a table
    of the cycle that is not filled yet."""
    with conn.cursor() as cur:
        cur.execute("SET session_replication_role = replica" if dialect == POSTGRES else "SET FOREIGN_KEY_CHECKS = 0")
    if dialect == POSTGRES:
        conn.commit()
    return conn


def _checked_session(conn, dialect: str) -> None:
    with conn.cursor() as cur:
        cur.execute("RESET session_replication_role" if dialect == POSTGRES else "SET FOREIGN_KEY_CHECKS = 1")
    if dialect == POSTGRES:
        conn.commit()


def _held_rows(conn, placement: Placement) -> list[dict]:
    with conn.cursor() as cur:
        cur.execute(f"SELECT {placement.select_list()} FROM {placement.name}")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]


def _refer_inside(placement: Placement, rows: list[dict], inside: dict[str, list[dict]]) -> None:
    """Each row's references into its group, drawn from the group's rows; a row whose key then repeats another's
    goes."""
    table = placement.table
    targets = {fk.references_table: inside[fk.references_table] for fk in table.foreign_keys
               if fk.references_table in inside}
    rng = random.Random(f"{table.name}:inside")
    used: dict[str, set] = {}
    keys, kept = set(), []
    for row in rows:
        row |= _references_of(table, targets, rng, used)
        key = tuple(str(row[name]) for name in table.primary_key)
        if key not in keys:
            keys.add(key)
            kept.append(row)
    rows[:] = kept


def _insert_unchecked(conn, group: list[Placement], rows: dict[str, list[dict]]) -> None:
    """The group's rows in one transaction, reference checks off for it alone."""
    if not group:
        return
    dialect = group[0].dialect
    _begin(conn, group[0])
    try:
        with conn.cursor() as cur:
            cur.execute("SET LOCAL session_replication_role = replica" if dialect == POSTGRES
                        else "SET FOREIGN_KEY_CHECKS = 0")
            for placement in group:
                names = placement.table.column_names
                cur.executemany(placement.insert_sql(names), [parameters(placement, {n: row[n] for n in names})
                                                              for row in rows[placement.table.name]])
            if dialect == MYSQL:
                cur.execute("SET FOREIGN_KEY_CHECKS = 1")
    except Exception as exc:  # the driver's error, whichever engine
        conn.rollback()
        raise SandboxError(f"{', '.join(p.table.name for p in group)} (which reference each other) refused a "
                           f"generated row: {' '.join(str(exc).split())}",
                           "give these tables data files instead (`data: {file: ...}`); tables loaded before keep "
                           "their rows") from None
    conn.commit()


def _count(conn, placement: Placement) -> int:
    with conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM {placement.name}")
        return cur.fetchone()[0]


def reference_groups(tables: list[Placement]) -> list[list[Placement]]:
    """The tables in groups, each group after the groups it references and otherwise in the given order: a table
    alone, or tables that reference each other in a cycle (Tarjan's strongly connected components)."""
    by_name = {p.table.name: p for p in tables}
    edges = {p.table.name: [fk.references_table for fk in p.table.foreign_keys if fk.references_table in by_name]
             for p in tables}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[Placement]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for other in edges[name]:
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            members = []
            while not members or members[-1] != name:
                members.append(stack.pop())
            groups.append([by_name[n] for n in by_name if n in members])

    for placement in tables:
        if placement.table.name not in index:
            visit(placement.table.name)
    return groups


def _references_itself(placement: Placement) -> bool:
    return any(fk.references_table == placement.table.name for fk in placement.table.foreign_keys)


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
    references = {fk.column for fk in table.foreign_keys}
    used: dict[str, set] = {}
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
        row |= _references_of(table, referenced or {}, rng, used)
        key = {name: row[name] for name in table.primary_key}
        row |= {c.name: unique_value(c, key, rng) for c in table.columns
                if c.unique and c.name not in key and c.name not in references}
        if tuple(str(value) for value in key.values()) not in keys:
            keys.add(tuple(str(value) for value in key.values()))
            yield row


def _references_of(table, referenced: dict[str, list[dict]], rng: random.Random,
                   used: dict[str, set] | None = None) -> dict:
    """The reference columns' values, each referenced table's from one of its rows; a reference column with a
    UNIQUE constraint takes a row no other generated row took (`used`: the values taken, by column)."""
    used = {} if used is None else used
    values = {}
    for name, rows in referenced.items():
        columns = [fk for fk in table.foreign_keys if fk.references_table == name]
        unique = [fk.column for fk in columns if fk.column in table.column_names and table.column(fk.column).unique]
        free = [row for row in rows if all(row[fk.references_column] not in used.get(fk.column, ())
                                           for fk in columns if fk.column in unique)]
        chosen = rng.choice(free) if free else None
        for fk in columns:
            if fk.column not in table.column_names:
                continue
            if chosen is None and not table.column(fk.column).nullable:
                raise SandboxError(f"{table.name}.{fk.column} references {name}, which holds no rows"
                                   + (" it has not taken already" if rows else ""),
                                   f"give {name} rows (`data:` in the project file) before {table.name}"
                                   + (", as many as it" if rows else ""))
            values[fk.column] = None if chosen is None else chosen[fk.references_column]
            if fk.column in unique and chosen is not None:
                used.setdefault(fk.column, set()).add(values[fk.column])
    return values


def _insert(conn, placement: Placement, rows: Iterator[dict]) -> int:
    names = placement.table.column_names
    values = [parameters(placement, {n: row[n] for n in names}) for row in rows]
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
    rows = [parameters(placement, {name: row[name] for name in names}) for row in table.to_pylist()]
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
