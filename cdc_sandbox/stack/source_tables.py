"""The captured tables created where the topology places them, with what capture needs of each engine."""

from __future__ import annotations

from cdc_sandbox.config import Settings
from cdc_sandbox.stack import project_ddl
from cdc_sandbox.stack.catalog import placements
from cdc_sandbox.stack.databases import table_connection
from cdc_sandbox.stack.services.sqlserver import SqlServer
from cdc_sandbox.tickit_data.ddl import MYSQL, POSTGRES, SQLSERVER, create_table, quote


def _create_namespace_sql(dialect: str, namespace: str) -> str:
    if dialect == SQLSERVER:  # CREATE SCHEMA must be alone in its batch
        return f"IF SCHEMA_ID(N'{namespace}') IS NULL EXEC (N'CREATE SCHEMA {quote(dialect, namespace)}')"
    kind = "DATABASE" if dialect == MYSQL else "SCHEMA"
    return f"CREATE {kind} IF NOT EXISTS {quote(dialect, namespace)}"


def create_tables(settings: Settings, namespace_suffix: str = "") -> Settings:
    """Create every captured table (and its schema or database) that is missing (idempotent): a project's by
    running its DDL files (`project_ddl`), TICKIT's from its declared schema. The settings with the tables created.

    On SQL Server the generated CDC set-up does it (database, CDC filegroup, tables, CDC on them); scratch copies
    (`namespace_suffix`) are plain tables.
    """
    if not settings.topology.is_tickit and not namespace_suffix:
        return project_ddl.apply(settings)
    if not namespace_suffix and "mssql" in settings.topology.sources:
        SqlServer(settings).post_start()
    for placement in placements(settings, namespace_suffix):
        with table_connection(settings, placement) as conn:
            with conn.cursor() as cur:
                cur.execute(_create_namespace_sql(placement.dialect, placement.captured.namespace))
                cur.execute(create_table(placement.dialect, placement.captured.namespace, placement.table))
                if placement.dialect == POSTGRES:
                    # Deletes then carry the whole old row, as MySQL's full row images do.
                    cur.execute(f"ALTER TABLE {placement.name} REPLICA IDENTITY FULL")
            conn.commit()
    return settings
