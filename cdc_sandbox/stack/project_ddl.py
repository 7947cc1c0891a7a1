"""A project's tables, created by running its own DDL files, then checked as the catalog reads them back: each
table has a primary key, and the silver settings name columns it has.

A file runs whole or not at all: where a statement fails, the tables this run created are dropped again and the
error names the file, the statement's line and the database's message. Tables that exist already are left as they
are (a second `sandbox up` changes nothing), so rows already loaded are never lost.
"""

from __future__ import annotations

from psycopg2 import sql as pgsql

from cdc_sandbox.config import Settings, Source
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import catalog
from cdc_sandbox.stack.databases import connection
from cdc_sandbox.tickit_data.ddl import POSTGRES, dialect_of, qualified


def apply(settings: Settings) -> None:
    for source in settings.topology.sources.values():
        if source.ddl is not None:
            _run_file(settings, source)
    catalog.forget()
    for source in settings.topology.sources.values():
        if source.ddl is not None:
            _check(settings, source)
            if source.engine == "postgres":
                _set_replica_identity(settings, source)


def _run_file(settings: Settings, source: Source) -> None:
    present = catalog.read_catalog(settings, source.name, list(source.tables))
    if len(present) == len(source.tables):
        return
    if present:
        raise SandboxError(f"{source.ddl}: tables {', '.join(sorted(present))} exist already in {source.name}, "
                           f"{', '.join(t.name for t in source.tables if t.name not in present)} do not",
                           "drop the tables that exist (or `sandbox reset`), then `sandbox up` runs the file whole")
    dialect = dialect_of(source.engine)
    database = source.database if dialect == POSTGRES else None
    with connection(settings, source.name, database) as conn:
        if dialect != POSTGRES:
            with conn.cursor() as cur:
                cur.execute(f"USE `{source.database}`")
        for line, statement in statements(source.ddl.read_text()):
            try:
                with conn.cursor() as cur:
                    cur.execute(statement)
            except Exception as exc:  # the driver's error, whichever engine: reported with the file's line
                conn.rollback()
                _drop_created(settings, source)
                message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise SandboxError(f"{source.ddl}, line {line}: {source.name} refused the statement: {message}",
                                   "fix the statement; nothing of this file was kept, other tables are untouched") \
                    from None
        conn.commit()


def _drop_created(settings: Settings, source: Source) -> None:
    """MariaDB commits each CREATE TABLE on its own: drop what this file created before its failing statement."""
    dialect = dialect_of(source.engine)
    if dialect == POSTGRES:
        return
    created = catalog.read_catalog(settings, source.name, list(source.tables))
    with connection(settings, source.name) as conn, conn.cursor() as cur:
        for table in source.tables:
            if table.name in created:
                cur.execute(f"DROP TABLE {qualified(dialect, table.namespace, table.name)}")


def _check(settings: Settings, source: Source) -> None:
    tables = catalog.source_tables(settings, source.name)
    problems = [f"{t.namespace}.{t.name} is not in the catalog after the file ran" for t in source.tables
                if t.name not in tables]
    problems += [f"{name} has no primary key" for name, table in tables.items() if not table.primary_key]
    if problems:
        raise SandboxError(f"{source.ddl}: " + "; ".join(problems),
                           "give each table a PRIMARY KEY: the sandbox keys silver and checks it by it")
    for name, table in tables.items():
        silver = settings.topology.silver_of(name)
        named = [*silver.record_key, *silver.partition_by, *([silver.ordering] if silver.ordering else [])]
        missing = [column for column in named if column not in table.column_names]
        if missing:
            raise SandboxError(f"{settings.topology.file}: table {name}: {', '.join(missing)} is no column of "
                               f"{name} in {source.ddl}", "columns: " + ", ".join(table.column_names))


def _set_replica_identity(settings: Settings, source: Source) -> None:
    """FULL by default: deletes and updates then carry the whole old row, as MariaDB's full row images do."""
    with connection(settings, source.name, source.database) as conn:
        with conn.cursor() as cur:
            for table in source.tables:
                identity = settings.topology.silver_of(table.name).replica_identity.upper()
                cur.execute(pgsql.SQL("ALTER TABLE {}.{} REPLICA IDENTITY " + identity).format(
                    pgsql.Identifier(table.namespace), pgsql.Identifier(table.name)))
        conn.commit()


def statements(text: str) -> list[tuple[int, str]]:
    """The statements of a SQL file with the line each begins on: split at semicolons outside quotes, comments and
    Postgres dollar quoting."""
    found, current, start, line = [], [], None, 1
    i, quote = 0, None
    while i < len(text):
        char = text[i]
        if quote is None and text.startswith("--", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        if quote is None and text.startswith("/*", i):
            end = text.find("*/", i)
            skipped = text[i:len(text) if end < 0 else end + 2]
            line += skipped.count("\n")
            i += len(skipped)
            continue
        if quote is None and char == "$":
            tag_end = text.find("$", i + 1)
            tag = text[i:tag_end + 1] if tag_end > 0 else ""
            if tag and (tag == "$$" or tag[1:-1].isidentifier()):
                quote = tag
        elif quote is None and char in "'\"`":
            quote = char
        elif quote is not None and text.startswith(quote, i) and (len(quote) > 1 or char == quote):
            current.append(quote)
            i += len(quote)
            quote = None
            continue
        if quote is None and char == ";":
            if "".join(current).strip():
                found.append((start, "".join(current).strip()))
            current, start = [], None
        else:
            if start is None and not char.isspace():
                start = line
            current.append(char)
        line += char == "\n"
        i += 1
    if "".join(current).strip():
        found.append((start, "".join(current).strip()))
    return found
