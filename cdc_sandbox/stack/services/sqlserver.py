"""SQL Server, never run natively (its packages are not reachable here): an external server given by
`SANDBOX_MSSQL_DSN`, or the compose backend's container. The sandbox talks to either through pymssql.

On an external server `post_start` runs the generated CDC set-up (database, CDC filegroup, schema, tables, CDC on
the database and the tables); the container runs the same script at its first start.
"""

from __future__ import annotations

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack.databases import connection, sqlserver_driver
from cdc_sandbox.stack.services.base import NativeService
from cdc_sandbox.stack.services.sqlserver_cdc import cdc_setup_batches, substitute_variables


class SqlServer(NativeService):
    name = "mssql"
    start_timeout = 120

    def __init__(self, settings):
        super().__init__(settings)
        self.database = settings.topology.declared_databases["mssql"]  # also when the stand-in holds its tables

    def command(self) -> list[str]:
        raise SandboxError("SQL Server cannot run natively here",
                           "give an external one with SANDBOX_MSSQL_DSN, or use the compose backend")

    def is_ready(self) -> bool:
        with connection(self.settings, "mssql", autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")
            return True

    def version(self) -> str:
        with connection(self.settings, "mssql", autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128))")
            return cur.fetchone()[0]

    def post_start(self) -> None:
        self.run_batches(cdc_setup_batches(self.settings.topology))

    def run_batches(self, batches: list[str], variables: dict[str, str] | None = None) -> None:
        with connection(self.settings, "mssql", autocommit=True) as conn, conn.cursor() as cur:
            for batch in batches:
                try:
                    cur.execute(substitute_variables(batch, variables or {}))
                except sqlserver_driver().Error as exc:
                    raise SandboxError(f"SQL Server refused the CDC set-up:\n{batch}\n{exc}",
                                       "the login needs sysadmin (sp_cdc_enable_db) and the SQL Server Agent "
                                       "must run for CDC to capture changes") from None

    def cdc_enabled_tables(self) -> list[str]:
        """`schema.table` of every table CDC captures in the source database."""
        with connection(self.settings, "mssql", self.database, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("SELECT s.name + '.' + t.name FROM sys.tables t JOIN sys.schemas s "
                        "ON s.schema_id = t.schema_id WHERE t.is_tracked_by_cdc = 1 ORDER BY 1")
            return [row[0] for row in cur.fetchall()]
