"""A project's tables, created by running its own DDL files, then checked as the catalog reads them back: each
table has a primary key, and the silver settings name columns it has.

A file runs whole or not at all: where a statement fails, the tables this run created are dropped again and the
error names the file, the statement's line and the database's message. Tables that exist already are left as they
are (a second `sandbox up` changes nothing), so rows already loaded are never lost.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from cdc_sandbox.config import Settings, Source
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import catalog, ddl_client
from cdc_sandbox.stack.databases import connection
from cdc_sandbox.stack.services.mariadb import create_database_and_fixtures
from cdc_sandbox.stack.services.postgres import Postgres
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
        _notice_an_edit(settings, source)
        return
    if present:
        raise SandboxError(f"{source.ddl}: tables {', '.join(sorted(present))} exist already in {source.name}, "
                           f"{', '.join(t.name for t in source.tables if t.name not in present)} do not",
                           "drop the tables that exist (or `sandbox reset`), then `sandbox up` runs the file whole")
    if source.engine == "sqlserver":
        raise SandboxError(f"{source.ddl}: a DDL file runs on Postgres, MariaDB and MySQL sources, not on SQL Server",
                           "capture the tables from a Postgres or MariaDB source, or list SQL Server's TICKIT tables")
    try:
        if source.engine == "postgres":
            outcome = ddl_client.run_postgres(settings, source)
        else:
            ddl_client.run_mariadb(settings, source)
            outcome = ddl_client.Outcome()
    except ddl_client.Refused as refused:
        _drop_created(settings, source)
        where = f"{source.ddl}, line {refused.line}" if refused.line else f"{source.ddl}"
        raise SandboxError(f"{where}: {source.name} refused the statement: {refused.message}",
                           "fix the statement; nothing of this file was kept, other tables are untouched") from None
    _capture_again(settings, source)
    _record_run(settings, source)
    for role in outcome.roles_created:
        print(f"{source.ddl}: role {role} did not exist here; created without login, to own what the file gives it")
    for schema in outcome.schemas_taken_over:
        print(f"{source.ddl}: schema {schema} is the file's own; the sandbox's empty one gave way to it")


def _runs_record(settings: Settings) -> Path:
    return settings.state_dir / "ddl-runs.json"


def _record_key(source: Source) -> str:
    return f"{source.name}/{source.database}"


def _recorded_runs(settings: Settings) -> dict[str, str]:
    try:
        return json.loads(_runs_record(settings).read_text())
    except (OSError, ValueError):
        return {}


def _record_run(settings: Settings, source: Source) -> None:
    """The digest of the file the source's tables were created from."""
    runs = _recorded_runs(settings) | {_record_key(source): _digest(source)}
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    _runs_record(settings).write_text(json.dumps(runs, indent=2, sort_keys=True) + "\n")


def _digest(source: Source) -> str:
    return hashlib.sha256(source.ddl.read_bytes()).hexdigest()


def _notice_an_edit(settings: Settings, source: Source) -> None:
    """A file edited since its tables were created from it is not run again over tables that hold rows: `sandbox
    up` says so each time, until the file is as it was or the tables are made again from it. (Tables made before
    the sandbox kept a record take the file as it is now.)"""
    recorded = _recorded_runs(settings).get(_record_key(source))
    if recorded is None:
        _record_run(settings, source)
    elif recorded != _digest(source):
        print(f"{source.ddl} changed since {source.name}'s tables in {source.database} were created from it; they "
              f"keep the schema they have. To take the new file, drop the file's tables and run `sandbox up`, which "
              f"runs it whole (their rows go; `sandbox load` fills them again); to keep the tables, put the file "
              f"back as it was")


def _capture_again(settings: Settings, source: Source) -> None:
    """What the server's set-up gave the source's schemas or database (the capture role's grants, the publication,
    the probe table), again: the file may have created them, or dropped and created them anew."""
    if source.engine == "postgres":
        Postgres(settings).post_start()
    else:
        with connection(settings, source.name) as conn, conn.cursor() as cur:
            create_database_and_fixtures(cur, source.database)


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
    """FULL by default: deletes and updates then carry the whole old row, as MariaDB's full row images do. A
    partitioned table's partitions each take it too: a row moved to another partition is decoded as a delete from
    its old partition, which carries what that partition's own setting gives."""
    with connection(settings, source.name, source.database) as conn:
        with conn.cursor() as cur:
            for table in source.tables:
                identity = settings.topology.silver_of(table.name).replica_identity.upper()
                name = f'"{table.namespace}"."{table.name}"'
                cur.execute("SELECT relid::regclass::text FROM pg_partition_tree(%s::regclass)", (name,))
                for relation in {name, *(row[0] for row in cur.fetchall())}:  # no tree: a table alone
                    cur.execute(f"ALTER TABLE {relation} REPLICA IDENTITY {identity}")
        conn.commit()
