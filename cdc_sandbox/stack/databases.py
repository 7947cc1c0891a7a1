"""The source databases as clients see them: connections opened as context
managers that close them. The one way the sandbox speaks SQL to Postgres, MariaDB/MySQL and SQL Server: the
services' set-up, loading, mutations, the oracle and the tests alike.

Leaving a `connection` block closes the connection; committing is the caller's (psycopg2's and pymssql's own
`with conn:` differ on that, which is why no caller uses them).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg2
import pymysql
from pymysql.constants import FIELD_TYPE
from pymysql.converters import conversions

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack.credentials import login
from cdc_sandbox.tickit_data.ddl import MYSQL, SQLSERVER

# bytea as bytes, as the other drivers give binary columns (psycopg2 gives a memoryview, which cannot be copied).
BYTEA_AS_BYTES = psycopg2.extensions.new_type(
    psycopg2.BINARY.values, "BYTEA_AS_BYTES",
    lambda value, cursor: None if value is None else bytes(psycopg2.BINARY(value, cursor)))
# interval as the server writes it: psycopg2's timedelta counts a month as 30 days, which loses the months Debezium
# carries (`cdc_sandbox.sources.normalize`).
INTERVAL_AS_TEXT = psycopg2.extensions.new_type((1186,), "INTERVAL_AS_TEXT", lambda value, cursor: value)
# bit(1) as the boolean Debezium carries it (psycopg2 gives '1', pymysql b'\x01'). pymysql gives any bit string of
# up to 8 bits as one byte, read as a boolean too: the sandbox compares bit(1) alone (a wider one leaves its table
# out of capture).
BIT_ONE_AS_BOOLEAN = psycopg2.extensions.new_type(
    (1560,), "BIT_ONE_AS_BOOLEAN", lambda value, cursor: value if value is None or len(value) != 1 else value == "1")
MYSQL_CONVERSIONS = conversions | {FIELD_TYPE.BIT: lambda value: value == b"\x01" if len(value) == 1 else value}


def sqlserver_driver():
    """pymssql, which only a sandbox with SQL Server needs (the package's `sqlserver` extra)."""
    try:
        import pymssql
    except ImportError:
        raise SandboxError("SQL Server needs its driver, pymssql, which is not installed",
                           "pip install 'cdc-sandbox[sqlserver]'") from None
    return pymssql


def unreachable_errors() -> tuple[type[Exception], ...]:
    """What a driver raises for a server that does not answer (SQL Server's only where its driver is installed)."""
    drivers = (psycopg2.OperationalError, pymysql.err.OperationalError)
    try:
        import pymssql
    except ImportError:
        return drivers
    return (*drivers, pymssql.OperationalError)


def _postgres_connection(attempts: int = 3, **arguments):
    """A server that refuses is named at once; one that answers too slowly, as while the machine starts every JVM of
    the stack, is asked again before it counts as unreachable."""
    for attempt in range(1, attempts + 1):
        try:
            return psycopg2.connect(connect_timeout=3, **arguments)
        except psycopg2.OperationalError as exc:
            if "timeout expired" not in str(exc) or attempt == attempts:
                raise


def declared_database(settings: Settings, source: str) -> str:
    """The source's own database as the project file declares it (also while a stand-in holds its tables)."""
    return settings.topology.declared_databases.get(source, "postgres" if source == "postgres" else "master")


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
        conn = _postgres_connection(host=endpoint.host, port=endpoint.port, user=who.user, password=who.password,
                                    dbname=database or declared_database(settings, "postgres"), **options)
        psycopg2.extensions.register_type(BYTEA_AS_BYTES, conn)
        psycopg2.extensions.register_type(INTERVAL_AS_TEXT, conn)
        psycopg2.extensions.register_type(BIT_ONE_AS_BOOLEAN, conn)
        return conn
    if source == "mysql":
        return pymysql.connect(host=endpoint.host, port=endpoint.port, user=who.user, password=who.password,
                               conv=MYSQL_CONVERSIONS,
                               database=database, connect_timeout=3, **{"autocommit": True, **options})
    pymssql = sqlserver_driver()
    try:
        return pymssql.connect(server=endpoint.host, port=str(endpoint.port), user=who.user, password=who.password,
                               database=database or "master", login_timeout=5, timeout=300, **options)
    except pymssql.Error as exc:
        raise SandboxError(f"cannot log in to SQL Server at {endpoint.address} as {who.user}: {exc}",
                           "check SANDBOX_MSSQL_DSN (host, port, login, password)") from None


@contextmanager
def table_connection(settings: Settings, placement) -> Iterator:
    """A connection to the database that holds the table."""
    source = placement.captured.source
    options = {"local_infile": True} if placement.dialect == MYSQL else {}
    database = declared_database(settings, "mssql") if placement.dialect == SQLSERVER else None
    try:
        conn = open_connection(settings, source, database, **options)
    except unreachable_errors() as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SandboxError(f"cannot connect to {source} at {settings.endpoint(source).address} for "
                           f"{placement.table.name}: {reason}",
                           "start it with `sandbox up` (`sandbox status` shows what runs); nothing was changed") \
            from None
    try:
        yield conn
    finally:
        conn.close()
