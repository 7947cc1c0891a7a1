"""SQL Server for the `mssql` source: the CDC set-up script generated from the topology and the TICKIT schema (its
log sequence numbers as source positions: `cdc_sandbox.sources.positions`).

The same script runs in the compose container (through `sqlcmd`, at first start) and against an external server
given by `SANDBOX_MSSQL_DSN` (through pymssql). It is idempotent: every statement checks before it creates.
`$(NAME)` are sqlcmd scripting variables; the capture login's password is never written into the script.
"""

from __future__ import annotations

import re

from cdc_sandbox.config import PACKAGE_DIR, Topology, load_topology
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.tickit_data import get_table
from cdc_sandbox.tickit_data.ddl import SQLSERVER, create_table, quote

INIT_SCRIPT_FILE = PACKAGE_DIR / "fixtures" / "sql" / "sqlserver" / "init.sql"
CDC_FILEGROUP = "cdc"  # change tables live in their own filegroup, apart from the captured tables
CDC_ROLE = "cdc_reader"  # the gating role: only its members (and db_owner) may read the change tables
SOURCE = "mssql"


# --- the set-up script -------------------------------------------------------------------------------------
def cdc_setup_batches(topology: Topology) -> list[str]:
    """Database, CDC filegroup, schemas and tables of the `mssql` source, CDC on the database and each table."""
    source = topology.sources[SOURCE]
    db = source.database
    batches = [
        f"IF DB_ID(N'{db}') IS NULL\n    CREATE DATABASE {quote(SQLSERVER, db)}",
        _filegroup_batch(db),
        f"USE {quote(SQLSERVER, db)}",
    ]
    for schema in source.namespaces:
        batches.append(f"IF SCHEMA_ID(N'{schema}') IS NULL\n    EXEC (N'CREATE SCHEMA {quote(SQLSERVER, schema)}')")
    for table in source.tables:
        batches.append(create_table(SQLSERVER, table.namespace, get_table(table.name)))
    batches.append(f"IF NOT EXISTS (SELECT 1 FROM sys.databases WHERE name = N'{db}' AND is_cdc_enabled = 1)\n"
                   f"    EXEC sys.sp_cdc_enable_db")
    for table in source.tables:
        batches.append(_enable_table_batch(table.namespace, table.name))
    batches.append(_capture_polling_batch())
    return batches


CAPTURE_POLLING_SECONDS = 1  # SQL Server's default polling interval would be most of every round's wait


def _capture_polling_batch() -> str:
    """The capture job scans the log every second; a changed setting takes effect when the job starts again
    (sys.sp_cdc_change_job). Without SQL Server Agent there is no job to change."""
    return (
        f"IF EXISTS (SELECT 1 FROM msdb.dbo.cdc_jobs WHERE database_id = DB_ID() AND job_type = N'capture'\n"
        f"           AND pollinginterval <> {CAPTURE_POLLING_SECONDS})\n"
        f"BEGIN\n"
        f"    EXEC sys.sp_cdc_change_job @job_type = N'capture', @pollinginterval = {CAPTURE_POLLING_SECONDS};\n"
        f"    BEGIN TRY EXEC sys.sp_cdc_stop_job @job_type = N'capture'; END TRY BEGIN CATCH END CATCH;\n"
        f"    EXEC sys.sp_cdc_start_job @job_type = N'capture';\n"
        f"END"
    )


def _filegroup_batch(db: str) -> str:
    file_name = f"{db}_{CDC_FILEGROUP}"
    return (
        f"IF NOT EXISTS (SELECT 1 FROM {quote(SQLSERVER, db)}.sys.filegroups WHERE name = N'{CDC_FILEGROUP}')\n"
        f"    ALTER DATABASE {quote(SQLSERVER, db)} ADD FILEGROUP {quote(SQLSERVER, CDC_FILEGROUP)};\n"
        f"IF NOT EXISTS (SELECT 1 FROM {quote(SQLSERVER, db)}.sys.database_files WHERE name = N'{file_name}')\n"
        f"BEGIN\n"
        f"    DECLARE @file nvarchar(4000) = CAST(SERVERPROPERTY('InstanceDefaultDataPath') AS nvarchar(4000))"
        f" + N'{file_name}.ndf';\n"
        f"    EXEC (N'ALTER DATABASE {quote(SQLSERVER, db)} ADD FILE (NAME = N''{file_name}'', FILENAME = N'''"
        f" + @file + N''') TO FILEGROUP {quote(SQLSERVER, CDC_FILEGROUP)}');\n"
        f"END"
    )


def _enable_table_batch(schema: str, table: str) -> str:
    return (
        f"IF NOT EXISTS (SELECT 1 FROM sys.tables t JOIN sys.schemas s ON s.schema_id = t.schema_id\n"
        f"               WHERE s.name = N'{schema}' AND t.name = N'{table}' AND t.is_tracked_by_cdc = 1)\n"
        f"    EXEC sys.sp_cdc_enable_table @source_schema = N'{schema}', @source_name = N'{table}',\n"
        f"        @role_name = N'{CDC_ROLE}', @filegroup_name = N'{CDC_FILEGROUP}', @supports_net_changes = 0"
    )


def refresh_capture_instance_batch(schema: str, table: str) -> str:
    """T-SQL that gives a table whose columns changed a new capture instance, Debezium's online schema update:
    CDC keeps capturing the columns an instance was created with, and the connector moves to the newer instance
    at its start LSN. A table holds at most two instances, so the older of two is retired first: the schema
    change before this one has been streamed by then (a new one is made per migration, never two at once)."""
    source = f"N'{quote(SQLSERVER, schema)}.{quote(SQLSERVER, table)}'"
    return (
        f"DECLARE @retired sysname = (SELECT TOP 1 capture_instance FROM cdc.change_tables\n"
        f"    WHERE source_object_id = OBJECT_ID({source}) AND 2 <= (SELECT COUNT(*) FROM cdc.change_tables\n"
        f"        WHERE source_object_id = OBJECT_ID({source})) ORDER BY create_date, object_id);\n"
        f"IF @retired IS NOT NULL\n"
        f"    EXEC sys.sp_cdc_disable_table @source_schema = N'{schema}', @source_name = N'{table}',\n"
        f"        @capture_instance = @retired;\n"
        f"DECLARE @instance sysname = N'{schema}_{table}_' + FORMAT(SYSUTCDATETIME(), 'yyyyMMddHHmmssfffffff');\n"
        f"EXEC sys.sp_cdc_enable_table @source_schema = N'{schema}', @source_name = N'{table}',\n"
        f"    @role_name = N'{CDC_ROLE}', @filegroup_name = N'{CDC_FILEGROUP}', @supports_net_changes = 0,\n"
        f"    @capture_instance = @instance;"
    )


def capture_login_batches(topology: Topology) -> list[str]:
    """The capture login Debezium uses (compose; an external server's DSN login is used as it is).

    It reads the captured schemas and the change tables and is a member of the gating role; VIEW SERVER STATE
    lets the connector see whether the SQL Server Agent (which fills the change tables) runs.
    """
    source = topology.sources[SOURCE]
    user = "$(CAPTURE_USER)"
    batches = [
        "USE [master]",
        f"IF SUSER_ID(N'{user}') IS NULL\n"
        f"    CREATE LOGIN [{user}] WITH PASSWORD = N'$(CAPTURE_PASSWORD)', CHECK_POLICY = OFF;\n"
        f"ELSE\n"
        f"    ALTER LOGIN [{user}] WITH PASSWORD = N'$(CAPTURE_PASSWORD)'",
        f"GRANT VIEW SERVER STATE TO [{user}]",
        f"USE {quote(SQLSERVER, source.database)}",
        f"IF USER_ID(N'{user}') IS NULL\n    CREATE USER [{user}] FOR LOGIN [{user}]",
        f"ALTER ROLE {quote(SQLSERVER, CDC_ROLE)} ADD MEMBER [{user}]",
        f"GRANT VIEW DATABASE STATE TO [{user}]",
    ]
    for schema in [*source.namespaces, "cdc"]:
        batches.append(f"GRANT SELECT ON SCHEMA::{quote(SQLSERVER, schema)} TO [{user}]")
    return batches


def init_script(topology: Topology | None = None) -> str:
    """The whole script the compose container runs with sqlcmd (kept in `cdc_sandbox/fixtures/sql/sqlserver/init.sql`)."""
    topology = topology or load_topology()
    header = ("-- Generated from cdc_sandbox/fixtures/topology.yaml and cdc_sandbox/tickit_data/schema.py by cdc_sandbox/stack/services/sqlserver_cdc.py; do not edit.\n"
              "-- sqlcmd variables: CAPTURE_USER, CAPTURE_PASSWORD (the Debezium login).\n")
    batches = cdc_setup_batches(topology) + capture_login_batches(topology)
    return header + "".join(f"{batch}\nGO\n" for batch in batches)


def split_batches(script: str) -> list[str]:
    """The batches of a script, split on `GO` lines as sqlcmd does, without `--` comment lines."""
    batches, current = [], []
    for line in script.splitlines():
        if line.strip().upper() == "GO":
            batches.append("\n".join(current).strip())
            current = []
        elif not line.lstrip().startswith("--"):
            current.append(line)
    batches.append("\n".join(current).strip())
    return [batch for batch in batches if batch]


def substitute_variables(batch: str, variables: dict[str, str]) -> str:
    """Replace sqlcmd `$(NAME)` variables; an unknown one is an error, as in sqlcmd."""

    def value(match: re.Match) -> str:
        if match.group(1) not in variables:
            raise SandboxError(f"the SQL Server script uses $({match.group(1)}), which the sandbox does not set",
                               f"fix {INIT_SCRIPT_FILE} (regenerate it with cdc_sandbox.stack.services.sqlserver_cdc.init_script)")
        return variables[match.group(1)]

    return re.sub(r"\$\((\w+)\)", value, batch)
