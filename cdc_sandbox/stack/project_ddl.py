"""A project's tables, created by running its own DDL files, then found and checked as the catalog reads them back:
each table has a primary key, and the silver settings name columns it has. What the catalog held is recorded
(`config.DdlRun`): the topology takes its tables from there, and a table with a column the sandbox cannot compare
stays out of capture, with a warning.

A file runs whole or not at all: where a statement fails, the tables this run created are dropped again and the
error names the file, the statement's line and the database's message. Tables that exist already are left as they
are (a second `sandbox up` changes nothing), so rows already loaded are never lost.
"""

from __future__ import annotations

from cdc_sandbox.config import DdlRun, Settings, Source, check_silver_tables, ddl_run_key, file_digest, read_ddl_runs
from cdc_sandbox.config import ddl_tables, record_ddl_run
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import catalog, ddl_client
from cdc_sandbox.stack.databases import connection
from cdc_sandbox.stack.services.mariadb import create_database_and_fixtures
from cdc_sandbox.stack.services.postgres import Postgres
from cdc_sandbox.tickit_data.ddl import POSTGRES, dialect_of, qualified


def apply(settings: Settings) -> Settings:
    """Run each source's DDL file where its tables are not there yet; the settings with the tables then found."""
    with_ddl = [source for source in settings.topology.sources.values() if source.ddl is not None]
    ran = {source.name for source in with_ddl if _run_file(settings, source)}
    catalog.forget()
    for source in with_ddl:
        _record_tables(settings, source, source.name in ran)
    settings = settings.with_ddl_runs()
    check_silver_tables(settings.topology, read_ddl_runs(settings.state_dir))
    for source in settings.topology.sources.values():
        if source.ddl is not None:
            if source.name in ran:
                _capture_again(settings, source)
            _check(settings, source)
            if source.engine == "postgres":
                _set_replica_identity(settings, source)
    return settings


def _run_file(settings: Settings, source: Source) -> bool:
    """Whether the file ran: not where its tables are there already."""
    found, left_out = catalog.read_tables(settings, source.name, [(t.namespace, t.name) for t in source.tables])
    present = set(found) | set(left_out)
    if len(present) == len(source.tables):
        _notice_an_edit(settings, source)
        return False
    if present:
        raise SandboxError(f"{source.ddl}: tables {', '.join(sorted(present))} exist already in {source.name}, "
                           f"{', '.join(t.name for t in source.tables if t.name not in present)} do not",
                           "drop the tables that exist (or `sandbox reset`), then `sandbox up` runs the file whole")
    if source.engine == "sqlserver":
        raise SandboxError(f"{source.ddl}: a DDL file runs on Postgres, MariaDB and MySQL sources, not on SQL Server",
                           "capture the tables from a Postgres or MariaDB source, or list SQL Server's TICKIT tables")
    before = catalog.existing_tables(settings, source.name)
    try:
        if source.engine == "postgres":
            outcome = ddl_client.run_postgres(settings, source)
        else:
            ddl_client.run_mariadb(settings, source)
            outcome = ddl_client.Outcome()
    except ddl_client.Refused as refused:
        _drop_created(settings, source, before)
        where = f"{source.ddl}, line {refused.line}" if refused.line else f"{source.ddl}"
        raise SandboxError(f"{where}: {source.name} refused the statement: {refused.message}",
                           "fix the statement; nothing of this file was kept, other tables are untouched") from None
    for role in outcome.roles_created:
        print(f"{source.ddl}: role {role} did not exist here; created without login, to own what the file gives it")
    for schema in outcome.schemas_taken_over:
        print(f"{source.ddl}: schema {schema} is the file's own; the sandbox's empty one gave way to it")
    return True


def _record_tables(settings: Settings, source: Source, ran: bool) -> None:
    """The tables the source's catalog holds now, as the file's run (`config.DdlRun`); each left out of capture
    is named with why. Tables made from an earlier version of the file keep the record of the file they came from."""
    key = ddl_run_key(source.name, source.database)
    recorded = read_ddl_runs(settings.state_dir).get(key)
    digest = file_digest(source.ddl)
    if not ran and recorded is not None and recorded.digest != digest:
        return
    names = _in_file_order(catalog.existing_tables(settings, source.name), source)
    elsewhere = {t.name: f"{t.source}'s {t.namespace}" for t in settings.with_ddl_runs().topology.tables
                 if t.source != source.name}
    why_out = _namesakes(names, elsewhere)
    _, uncomparable = catalog.read_tables(settings, source.name, [t for t in names if t not in why_out])
    why_out |= {t: uncomparable[t[1]].message for t in names if t not in why_out and t[1] in uncomparable}
    record_ddl_run(settings.state_dir, key, DdlRun(
        digest, tuple(t for t in names if t not in why_out),
        tuple((namespace, name, why_out[namespace, name]) for namespace, name in names if (namespace, name) in why_out)))
    for (namespace, name), why in why_out.items():
        print(f"{source.ddl}: table {name} is left out of capture (its rows stay in {source.name}): {why}")


def _namesakes(names: list[tuple[str, str]], elsewhere: dict[str, str] | None = None) -> dict[tuple[str, str], str]:
    """Tables with the name of one before them (in another schema, or `elsewhere`: another source's, by name), each
    with why it is left out: the sandbox names a table, its silver table and its settings by the table's name
    alone."""
    first: dict[str, str] = dict(elsewhere or {})
    why: dict[tuple[str, str], str] = {}
    for namespace, name in names:
        if name in first:
            why[namespace, name] = (f"{namespace}.{name} has the name of {first[name]}.{name}, and the sandbox names "
                                    f"a table (its silver table, its settings) by its name alone; rename one to "
                                    f"capture both")
        else:
            first[name] = namespace
    return why


def _in_file_order(names: list[tuple[str, str]], source: Source) -> list[tuple[str, str]]:
    """The tables in the order the file creates them where its text says (a server's creation times are seconds),
    then the others (made by a function, say) in the order the catalog has them."""
    written = ddl_tables(source.ddl, {"engine": source.engine, "database": source.database})
    return sorted(names, key=lambda t: written.index(t) if t in written else len(written) + names.index(t))


def _notice_an_edit(settings: Settings, source: Source) -> None:
    """A file edited since its tables were created from it is not run again over tables that hold rows: `sandbox
    up` says so each time, until the file is as it was or the tables are made again from it. (Tables made before
    the sandbox kept a record take the file as it is now.)"""
    recorded = read_ddl_runs(settings.state_dir).get(ddl_run_key(source.name, source.database))
    if recorded is not None and recorded.digest != file_digest(source.ddl):
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


def _drop_created(settings: Settings, source: Source, before: list[tuple[str, str]]) -> None:
    """MariaDB commits each CREATE TABLE on its own: drop what this file created before its failing statement."""
    dialect = dialect_of(source.engine)
    if dialect == POSTGRES:
        return
    created = [table for table in catalog.existing_tables(settings, source.name) if table not in before]
    with connection(settings, source.name) as conn, conn.cursor() as cur:
        cur.execute("SET FOREIGN_KEY_CHECKS = 0")  # a table another created one references
        for namespace, name in created:
            cur.execute(f"DROP TABLE {qualified(dialect, namespace, name)}")


def _check(settings: Settings, source: Source) -> None:
    ran = read_ddl_runs(settings.state_dir).get(ddl_run_key(source.name, source.database))
    if ran is not None and ran.left_out and not ran.tables:
        raise SandboxError(f"{source.ddl}: every table it makes is left out of capture, so {source.name} has "
                           f"nothing to capture", "see the lines above for why each is left out")
    tables = catalog.source_tables(settings, source.name)
    problems = [f"{t.namespace}.{t.name} is not in the catalog after the file ran" for t in source.tables
                if t.name not in tables]
    problems += [f"{name} has no primary key" for name, table in tables.items() if not table.primary_key]
    if problems:
        raise SandboxError(f"{source.ddl}: " + "; ".join(problems),
                           "give each table a PRIMARY KEY: the sandbox keys silver and checks it by it")
    for name, table in tables.items():
        silver = settings.topology.silver_of(name)
        named = [*silver.record_key, *silver.partition_by]
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
