"""The source databases as clients see them: where each TICKIT table lives, and connections opened as context
managers that close them. The one way the sandbox speaks SQL to Postgres, MariaDB/MySQL and SQL Server: the
services' set-up, loading, mutations, the oracle and the tests alike.

Leaving a `connection` block closes the connection; committing is the caller's (psycopg2's and pymssql's own
`with conn:` differ on that, which is why no caller uses them).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import psycopg2
import pymssql
import pymysql

from sandbox.config import CapturedTable, Settings, load_topology
from sandbox.errors import SandboxError
from sandbox.stack.credentials import login
from tickit_data import TABLES
from tickit_data.ddl import MYSQL, SQLSERVER, dialect_of, qualified
from tickit_data.schema import Table

UNREACHABLE = (psycopg2.OperationalError, pymysql.err.OperationalError, pymssql.OperationalError)


@dataclass(frozen=True)
class Placement:
    """Where one TICKIT table lives: its schema, the topology entry and the SQL dialect of its engine."""

    table: Table
    captured: CapturedTable
    dialect: str

    @property
    def name(self) -> str:
        return qualified(self.dialect, self.captured.namespace, self.table.name)


def placements(settings: Settings, namespace_suffix: str = "") -> list[Placement]:
    """The TICKIT tables in load order (parents first), each where the topology puts it."""
    result = []
    for table in TABLES:
        captured = settings.topology.table(table.name)
        if namespace_suffix:
            captured = replace(captured, namespace=captured.namespace + namespace_suffix)
        engine = settings.topology.sources[captured.source].engine
        result.append(Placement(table, captured, dialect_of(engine)))
    return result


def placement_of(settings: Settings, table: str) -> Placement:
    return next(p for p in placements(settings) if p.table.name == table)


@functools.cache
def declared_database(source: str) -> str:
    """The source's own database as the topology file declares it (also while a stand-in holds its tables)."""
    return load_topology().sources[source].database


@contextmanager
def connection(settings: Settings, source: str, database: str | None = None, role: str = "admin",
               **options) -> Iterator:
    """A connection to the `postgres`, `mysql` or `mssql` service as `role`, into `database` (the source's own
    by default; SQL Server's `master`)."""
    conn = open_connection(settings, source, database, role, **options)
    try:
        yield conn
    finally:
        conn.close()


def open_connection(settings: Settings, source: str, database: str | None = None, role: str = "admin", **options):
    """A connection the caller closes (for one held open across calls; otherwise use `connection`)."""
    endpoint, who = settings.endpoint(source), login(settings, source, role)
    if source == "postgres":
        return psycopg2.connect(host=endpoint.host, port=endpoint.port, user=who.user, password=who.password,
                                dbname=database or declared_database("postgres"),
                                connect_timeout=3, **options)
    if source == "mysql":
        return pymysql.connect(host=endpoint.host, port=endpoint.port, user=who.user, password=who.password,
                               database=database, connect_timeout=3, **{"autocommit": True, **options})
    try:
        return pymssql.connect(server=endpoint.host, port=str(endpoint.port), user=who.user, password=who.password,
                               database=database or "master", login_timeout=5, timeout=300, **options)
    except pymssql.Error as exc:
        raise SandboxError(f"cannot log in to SQL Server at {endpoint.address} as {who.user}: {exc}",
                           "check SANDBOX_MSSQL_DSN (host, port, login, password)") from None


@contextmanager
def table_connection(settings: Settings, placement: Placement) -> Iterator:
    """A connection to the database that holds the table."""
    source = placement.captured.source
    options = {"local_infile": True} if placement.dialect == MYSQL else {}
    database = declared_database("mssql") if placement.dialect == SQLSERVER else None
    try:
        conn = open_connection(settings, source, database, **options)
    except UNREACHABLE as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SandboxError(f"cannot connect to {source} at {settings.endpoint(source).address} for "
                           f"{placement.table.name}: {reason}",
                           "start it with `sandbox up` (`sandbox status` shows what runs); nothing was changed") \
            from None
    try:
        yield conn
    finally:
        conn.close()
