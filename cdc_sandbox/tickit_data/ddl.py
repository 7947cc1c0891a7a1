"""CREATE TABLE statements for the TICKIT tables in each SQL dialect, from the declarative schema.

Every identifier is quoted (`user` and `date` are reserved words somewhere): double quotes on Postgres, backticks
on MySQL/MariaDB, brackets on SQL Server.
"""

from __future__ import annotations

from cdc_sandbox.schema import BIGINT, BOOL, DATE, DECIMAL, INT, SMALLINT, STR, TIMESTAMP, TIMESTAMPTZ, Column, Table

from .schema import get_table

POSTGRES = "postgres"
MYSQL = "mysql"
SQLSERVER = "sqlserver"

_QUOTES = {POSTGRES: ('"', '"'), MYSQL: ("`", "`"), SQLSERVER: ("[", "]")}

_TYPES = {
    POSTGRES: {INT: "integer", SMALLINT: "smallint", BIGINT: "bigint", DATE: "date", TIMESTAMP: "timestamp",
               TIMESTAMPTZ: "timestamptz", BOOL: "boolean"},
    # MariaDB and MySQL keep a TIMESTAMP as UTC and show it in the session's zone: the instant is what they hold.
    MYSQL: {INT: "int", SMALLINT: "smallint", BIGINT: "bigint", DATE: "date", TIMESTAMP: "datetime",
            TIMESTAMPTZ: "timestamp(6)", BOOL: "boolean"},
    SQLSERVER: {INT: "int", SMALLINT: "smallint", BIGINT: "bigint", DATE: "date", TIMESTAMP: "datetime2(0)",
                TIMESTAMPTZ: "datetimeoffset(6)", BOOL: "bit"},
}

UNBOUNDED_TEXT = {POSTGRES: "text", MYSQL: "longtext", SQLSERVER: "nvarchar(max)"}


def dialect_of(engine: str) -> str:
    """The SQL dialect of a topology engine (`mariadb` speaks MySQL's)."""
    return {"postgres": POSTGRES, "mariadb": MYSQL, "mysql": MYSQL, "sqlserver": SQLSERVER}[engine]


def quote(dialect: str, identifier: str) -> str:
    opening, closing = _QUOTES[dialect]
    return opening + identifier.replace(closing, closing * 2) + closing


def qualified(dialect: str, namespace: str, table: str) -> str:
    return f"{quote(dialect, namespace)}.{quote(dialect, table)}"


def column_type(dialect: str, column: Column) -> str:
    if column.type == STR and column.max_length is None:
        return UNBOUNDED_TEXT[dialect]
    if column.type == STR:
        kind = "char" if column.fixed_length else "varchar"
        if dialect == SQLSERVER:
            kind = "n" + kind  # unicode text
        return f"{kind}({column.max_length})"
    if column.type == DECIMAL:
        return f"decimal({column.precision},{column.scale})"
    return _TYPES[dialect][column.type]


def create_table(dialect: str, namespace: str, table: str | Table) -> str:
    table = get_table(table)
    columns = [
        f"    {quote(dialect, c.name)} {column_type(dialect, c)}{'' if c.nullable else ' NOT NULL'}"
        for c in table.columns
    ]
    key = ", ".join(quote(dialect, name) for name in table.primary_key)
    columns.append(f"    PRIMARY KEY ({key})")
    body = ",\n".join(columns)
    name = qualified(dialect, namespace, table.name)
    if dialect == SQLSERVER:
        return (f"IF OBJECT_ID(N'{name}', N'U') IS NULL\n"  # bracketed: `user` is a reserved word
                f"CREATE TABLE {name} (\n{body}\n)")
    return f"CREATE TABLE IF NOT EXISTS {name} (\n{body}\n)"
