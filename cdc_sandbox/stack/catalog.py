"""A captured table's schema: TICKIT's as `tickit_data` declares it, a project's read back from the catalog of the
database its DDL created it in (columns, types, nullability, primary key), so the team keeps one description of
its schema: the DDL.

`logical_column` is the one mapping from a source's SQL type to the sandbox's logical types (`cdc_sandbox.schema`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from cdc_sandbox.config import SIGNAL_TABLE, CapturedTable, Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.schema import BIGINT, BOOL, BYTES, DATE, DECIMAL, INT, INTEGER_RANGES, JSON, NUMBER, SMALLINT, STR
from cdc_sandbox.schema import ARRAY, BIT_LAYOUTS, INTERVAL, TIMESTAMP
from cdc_sandbox.schema import DOUBLE, FLOAT, RANGE_FORMS, TEXT_FORMS, TIME, TIMESTAMPTZ, TIMETZ, UUID, Column, ForeignKey, Table
from cdc_sandbox.stack.databases import connection
from cdc_sandbox.tickit_data.ddl import MYSQL, POSTGRES, dialect_of, qualified, quote

SUPPORTED = {
    "postgres": "smallint, integer, bigint, numeric(p,s), numeric, varchar(n), char(n), text, citext, an enum type, "
                "date, timestamp, timestamptz, time, timetz, boolean, bit(n), bit varying, json, jsonb, uuid, bytea, real, "
                "double precision, "
                "interval, inet, cidr, macaddr, macaddr8, xml, tsvector, int4range, int8range, numrange, daterange, "
                "tsrange, tstzrange, a domain over any of these, and arrays of text, "
                "varchar, integers, numeric(p,s), boolean, real, double precision, dates, timestamps, times, uuids and "
                "an enum; with "
                "decimal.handling.mode "
                "string or double also money and numeric of over 38 digits",
    "mysql": "tinyint(1)/boolean, bit(n), tinyint, smallint, mediumint, int, bigint (signed or unsigned), year, decimal(p,s), "
             "float, double, varchar(n), char(n), text, enum, set, date, datetime(p), timestamp(p), time(p), json, binary, "
             "varbinary, blob; with decimal.handling.mode string or double also decimal of over 38 digits",
}
MAX_PRECISION = 38
MONEY_PRECISION = 64  # what Debezium writes for a money column's decimal
_cache: dict[tuple, dict[str, Table]] = {}


@dataclass(frozen=True)
class Placement:
    """Where one captured table lives: its schema, the topology entry and the SQL dialect of its engine."""

    table: Table
    captured: CapturedTable
    dialect: str

    @property
    def name(self) -> str:
        return qualified(self.dialect, self.captured.namespace, self.table.name)

    def select_list(self, columns=None) -> str:
        """The columns as a SELECT reads them exactly (all of them, the catalog's or not, by default: `*`, each
        column read otherwise again after it under its own name, which a row's dictionary keeps)."""
        cast = self._read_as()

        def exact(name: str) -> str:
            return f"CAST({quote(self.dialect, name)} AS {cast[name]}) AS {quote(self.dialect, name)}"

        if columns is None:
            return ", ".join(["*", *(exact(n) for n in self.table.column_names if n in cast)])
        return ", ".join(exact(n) if n in cast else quote(self.dialect, n) for n in columns)

    def _read_as(self) -> dict[str, str]:
        """The columns a SELECT casts, by name: MariaDB shows a float rounded to six digits, so it is read as the
        double that holds its 32 bits, and a bit string as its number (the driver gives a one-byte one as a
        boolean); the Postgres driver parses no array of uuids or of an enum, so they are read as text arrays, and
        gives a range as an object, so it is read as its text (which is what Debezium carries)."""
        columns = self.table.columns
        if self.dialect == MYSQL:
            return {c.name: "DOUBLE" if c.type == FLOAT else "UNSIGNED" for c in columns
                    if c.type == FLOAT or c.carried in BIT_LAYOUTS}
        if self.dialect == POSTGRES:
            return {c.name: "text[]" if c.type == ARRAY else "text" for c in columns
                    if c.type == ARRAY and needs_text_array(c.element) or c.form in RANGE_FORMS}
        return {}

    def insert_sql(self, columns) -> str:
        """INSERT of one row of these columns, its values as driver parameters; on Postgres a value given for an
        identity column GENERATED ALWAYS is taken, as a load's or a replayed row's must be."""
        names = ", ".join(quote(self.dialect, c) for c in columns)
        overriding = " OVERRIDING SYSTEM VALUE" if self.dialect == POSTGRES else ""
        return f"INSERT INTO {self.name} ({names}){overriding} VALUES ({', '.join(['%s'] * len(columns))})"


def needs_text_array(element: Column) -> bool:
    """An array element the Postgres driver neither parses nor writes: read as text, written as an array literal."""
    return element.type == UUID or bool(element.labels)


def placements(settings: Settings, namespace_suffix: str = "") -> list[Placement]:
    """The captured tables in load order (TICKIT's parents first; a project's in the order of its DDL), each where
    the project file puts it."""
    result = []
    for name in load_order(settings):
        table, captured = table_schema(settings, name), settings.topology.table(name)
        if namespace_suffix:
            captured = replace(captured, namespace=captured.namespace + namespace_suffix)
        engine = settings.topology.sources[captured.source].engine
        result.append(Placement(table, captured, dialect_of(engine)))
    return result


def load_order(settings: Settings) -> list[str]:
    if settings.topology.is_tickit:
        from cdc_sandbox.tickit_data import TABLE_NAMES

        return list(TABLE_NAMES)
    return [captured.name for captured in settings.topology.tables]


def placement_of(settings: Settings, table: str) -> Placement:
    return next(p for p in placements(settings) if p.table.name == table)


def table_schema(settings: Settings, name: str) -> Table:
    """The table's columns and key: TICKIT's declared ones, or what the source's catalog says."""
    topology = settings.topology
    if topology.is_tickit:
        from cdc_sandbox.tickit_data import get_table

        return get_table(name)
    captured = topology.table(name)
    tables = source_tables(settings, captured.source)
    if name not in tables:
        source = topology.sources[captured.source]
        raise SandboxError(f"table {captured.namespace}.{name} of {source.ddl} is not in {captured.source}'s catalog",
                           "bring the sandbox up with this project file (`sandbox up`): it runs the DDL")
    return tables[name]


def source_tables(settings: Settings, source: str, fresh: bool = False) -> dict[str, Table]:
    """Every captured table of a source as its catalog describes it, read once per process (`fresh` reads again)."""
    key = (str(settings.topology.file), source, settings.endpoint(source).address)
    if fresh or key not in _cache:
        captured = [t for t in settings.topology.tables if t.source == source]
        modes = settings.topology.sources[source].debezium
        _cache[key] = {name: as_carried(table, modes) for name, table in
                       read_catalog(settings, source, captured).items()}
    return _cache[key]


def as_carried(table: Table, debezium: dict[str, str]) -> Table:
    """The table's columns as the connector carries them under its settings (`Column.carried`): what silver may
    hold. `decimal.handling.mode` string or double, `binary.handling.mode` base64 or hex, `time.precision.mode`
    connect (timestamps in milliseconds)."""
    decimal = debezium.get("decimal.handling.mode", "precise")
    binary = debezium.get("binary.handling.mode", "bytes")
    millis = debezium.get("time.precision.mode") == "connect"

    def carried(column: Column) -> str:
        unsigned_bigint = column.unsigned and (column.sql_type or "").lower().startswith("bigint")
        if column.type in (DECIMAL, NUMBER) and decimal in ("string", "double") and not unsigned_bigint:
            return decimal
        if column.type == BYTES and binary != "bytes" and column.carried not in BIT_LAYOUTS:  # bits stay bytes
            return "hex" if binary == "hex" else "base64"
        if column.type in (TIMESTAMP, TIME) and millis:
            return "millis"
        if column.type == INTERVAL and debezium.get("interval.handling.mode") == "string":
            return "string"
        return column.carried  # what the type itself makes of it (a Postgres time of up to 3 digits)

    return replace(table, columns=tuple(replace(c, carried=carried(c)) for c in table.columns))


def forget() -> None:
    """Read the catalogs again next time (after DDL ran)."""
    _cache.clear()


class Uncomparable(SandboxError):
    """A column of a type the sandbox cannot compare: its table stays out of capture."""


def read_catalog(settings: Settings, source: str, captured: list[CapturedTable]) -> dict[str, Table]:
    """The tables of `captured` the source's catalog holds, described."""
    tables, left_out = read_tables(settings, source, [(t.namespace, t.name) for t in captured])
    if left_out:
        raise next(iter(left_out.values()))
    return tables


def read_tables(settings: Settings, source: str, names: list[tuple[str, str]], loadable: bool = False) \
        -> tuple[dict[str, Table], dict[str, Uncomparable]]:
    """The tables (namespace, name) the source's catalog holds, described; apart, those with a column of a type
    the sandbox cannot compare, each with why. `loadable`: such a table is described without those columns (what
    a load writes: they take their DEFAULT, or NULL)."""
    read = _postgres_table if source == "postgres" else _mysql_table
    found, left_out = {}, {}
    with _catalog_connection(settings, source) as conn, conn.cursor() as cur:
        for namespace, name in names:
            try:
                described = read(cur, namespace, name, Reading(loadable, _decimal_mode(settings, source),
                                                               _connect_times(settings, source)))
            except Uncomparable as exc:
                left_out[name] = exc
                continue
            if described is not None:
                found[name] = described
        conn.commit()
    return found, left_out


def existing_tables(settings: Settings, source: str) -> list[tuple[str, str]]:
    """(namespace, name) of every table a project's source holds, in the order they were created: on Postgres the
    tables of every schema of its database but the server's own and an extension's (a partition counts as its
    parent), on MariaDB/MySQL those of its database; the sandbox's probe and signal tables left out."""
    own = (settings.topology.probe_table, SIGNAL_TABLE)
    with _catalog_connection(settings, source) as conn, conn.cursor() as cur:
        if source == "postgres":
            cur.execute(
                "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname NOT IN %s "
                "AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%%' "
                "AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass "
                "                AND d.objid = c.oid AND d.deptype = 'e') ORDER BY c.oid", (own,))
        else:
            cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                        "AND TABLE_TYPE = 'BASE TABLE' AND TABLE_NAME NOT IN %s ORDER BY CREATE_TIME, TABLE_NAME",
                        (settings.topology.sources[source].database, own))
        found = [tuple(row) for row in cur.fetchall()]
        conn.commit()
    return found


def _catalog_connection(settings: Settings, source: str):
    database = settings.topology.sources[source].database
    return connection(settings, source, database if source == "postgres" else None)


def left_out_placements(settings: Settings) -> list[Placement]:
    """The tables capture leaves out (`config.Source.left_out`), described for loading: rows of the captured tables
    may reference them."""
    result = []
    captured = {table.name for table in settings.topology.tables}
    for source in settings.topology.sources.values():
        # A captured table's namesake in another schema stays empty: rows are placed by table name.
        out = [(namespace, name) for namespace, name in source.left_out if name not in captured]
        if out:
            tables, _ = read_tables(settings, source.name, out, loadable=True)
            result += [Placement(tables[name], CapturedTable(source.name, namespace, name), dialect_of(source.engine))
                       for namespace, name in out if name in tables]
    return result


@dataclass(frozen=True)
class Reading:
    """How a table is read: `loadable` describes it without the columns the sandbox cannot compare (instead of
    raising `Uncomparable`); `decimal_mode` is the source's `decimal.handling.mode`."""

    loadable: bool = False
    decimal_mode: str = "precise"
    connect_times: bool = False  # time.precision.mode connect: dates and times as Kafka Connect's own types


def _connect_times(settings: Settings, source: str) -> bool:
    return settings.topology.sources[source].debezium.get("time.precision.mode") == "connect"


def _decimal_mode(settings: Settings, source: str) -> str:
    return settings.topology.sources[source].debezium.get("decimal.handling.mode", "precise")


def _described_columns(dialect: str, table: str, rows, reading: Reading) -> tuple[Column, ...]:
    """(name, SQL type, nullable[, labels]) rows as columns (`Reading`)."""
    columns = []
    for name, sql_type, nullable, *labels in rows:
        try:
            columns.append(logical_column(dialect, table, name, sql_type, nullable, tuple(labels[0] or ()) if labels
                                          else (), reading.decimal_mode, reading.connect_times))
        except Uncomparable:
            if not reading.loadable:
                raise
    return tuple(columns)


def _postgres_table(cur, schema: str, name: str, reading: Reading = Reading()) -> Table | None:
    cur.execute("SELECT to_regclass(%s)", (f'"{schema}"."{name}"',))
    (oid,) = cur.fetchone()
    if oid is None:
        return None
    # A domain's column is its base type, as Debezium carries it; NOT NULL on the domain holds for the column too.
    # A generated column is no column here: the server computes it, and before Postgres 18 logical replication
    # does not publish it.
    cur.execute(
        "SELECT a.attname, CASE WHEN t.typtype = 'd' THEN format_type(t.typbasetype, t.typtypmod) "
        "                       ELSE format_type(a.atttypid, a.atttypmod) END, "
        "       NOT a.attnotnull AND NOT (t.typtype = 'd' AND t.typnotnull), "
        "       (SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e "  # an enum's, or its array's
        "        WHERE e.enumtypid = CASE WHEN r.typelem <> 0 THEN r.typelem ELSE r.oid END) "
        "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
        "JOIN pg_type r ON r.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END "
        "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' "
        "ORDER BY a.attnum",
        (f'"{schema}"."{name}"',))
    columns = _described_columns("postgres", name, cur.fetchall(), reading)
    cur.execute(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
        "WHERE i.indrelid = %s::regclass AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)",
        (f'"{schema}"."{name}"',))
    key = tuple(row[0] for row in cur.fetchall())
    cur.execute(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] "
        "WHERE i.indrelid = %s::regclass AND i.indisunique AND NOT i.indisprimary AND i.indnatts = 1",
        (f'"{schema}"."{name}"',))
    unique = {row[0] for row in cur.fetchall()}
    cur.execute(
        # A partitioned table's references may be declared on its partitions alone (as pg_dump of a table whose
        # partitions were attached writes them): the table's rows must keep to them all the same.
        "SELECT DISTINCT ON (a.attname, r.relname) a.attname, r.relname, ra.attname "
        "FROM pg_constraint c, unnest(c.conkey, c.confkey) AS k(own, other), "
        "pg_attribute a, pg_class r, pg_attribute ra WHERE c.contype = 'f' "
        "AND (c.conrelid = %s::regclass OR c.conrelid IN (SELECT relid FROM pg_partition_tree(%s::regclass))) "
        "AND a.attrelid = c.conrelid AND a.attnum = k.own AND r.oid = c.confrelid "
        "AND ra.attrelid = c.confrelid AND ra.attnum = k.other ORDER BY a.attname, r.relname",
        (f'"{schema}"."{name}"', f'"{schema}"."{name}"'))
    references = _references(cur.fetchall())
    cur.execute(
        "SELECT a.attname, pg_get_constraintdef(c.oid) FROM pg_attribute a "
        "JOIN pg_constraint c ON c.contypid = a.atttypid AND c.contype = 'c' "
        "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped "
        "UNION ALL SELECT a.attname, pg_get_constraintdef(c.oid) FROM pg_constraint c "
        "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] "
        "WHERE c.conrelid = %s::regclass AND c.contype = 'c' AND cardinality(c.conkey) = 1",
        (f'"{schema}"."{name}"', f'"{schema}"."{name}"'))
    checks = cur.fetchall()
    # The bodies of the database's trigger functions (an audit schema's table is written by triggers on others'): a
    # table one of them writes changes without a statement of ours.
    cur.execute("SELECT p.prosrc FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid WHERE NOT t.tgisinternal")
    triggered = _written_by(name, [row[0] for row in cur.fetchall()])
    table = Table(name, columns, key, references, written_by_triggers=triggered)
    return _with_partitions(_with_checks(_with_unique(table, unique), checks), _partition_bounds(cur, f'"{schema}"."{name}"'))


def _written_by(name: str, trigger_bodies: list[str]) -> bool:
    """Whether a trigger body inserts into, updates, deletes from or replaces into the table (by its bare or
    qualified name, quoted or not)."""
    target = re.compile(r"\b(?:INSERT\s+(?:IGNORE\s+)?INTO|REPLACE\s+INTO|UPDATE|DELETE\s+FROM)\s+(?:ONLY\s+)?"
                        rf"(?:[`\"]?\w+[`\"]?\.)?[`\"]?{re.escape(name)}[`\"]?(?![\w.])", re.IGNORECASE)
    return any(target.search(body or "") for body in trigger_bodies)


def _partition_bounds(cur, name: str) -> dict[str, tuple[tuple[str | None, ...], ...]]:
    """A partitioned table's one partition key column and its partitions' bounds (`Column.partitions`); nothing
    where a default partition takes any row, or the key is more than one column or an expression."""
    cur.execute("SELECT pg_get_partkeydef(%s::regclass)", (name,))
    (key,) = cur.fetchone()
    single = re.fullmatch(r"(RANGE|LIST) \(\"?(\w+)\"?\)", key or "")
    if not single:
        return {}
    cur.execute("SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE i.inhparent = %s::regclass", (name,))
    bounds = [row[0] for row in cur.fetchall()]
    if not bounds or any(bound == "DEFAULT" for bound in bounds):
        return {}
    kind = single.group(1).lower()
    values = [(kind, *(None if v in ("MINVALUE", "MAXVALUE") else v.strip("'")
                       for v in re.findall(r"'(?:[^']|'')*'|MINVALUE|MAXVALUE|-?[\d.]+", bound))) for bound in bounds]
    return {single.group(2): tuple(values)}


def _with_partitions(table: Table, bounds: dict[str, tuple]) -> Table:
    return replace(table, columns=tuple(replace(c, partitions=bounds[c.name]) if c.name in bounds else c
                                        for c in table.columns))


def _mysql_table(cur, database: str, name: str, reading: Reading = Reading()) -> Table | None:
    cur.execute("SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE = 'YES' FROM information_schema.COLUMNS "
                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND COALESCE(GENERATION_EXPRESSION, '') = '' "  # computed
                "ORDER BY ORDINAL_POSITION", (database, name))
    described = cur.fetchall()
    if not described:
        return None
    json_columns = _mysql_json_columns(cur, database, name)
    columns = _described_columns("mysql", name, [(column, "json" if column in json_columns else sql_type, bool(nullable))
                                                 for column, sql_type, nullable in described], reading)
    cur.execute("SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s AND "
                "TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION", (database, name))
    key = tuple(row[0] for row in cur.fetchall())
    cur.execute("SELECT MIN(COLUMN_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s AND "
                "TABLE_NAME = %s AND NON_UNIQUE = 0 AND INDEX_NAME <> 'PRIMARY' GROUP BY INDEX_NAME "
                "HAVING COUNT(*) = 1", (database, name))
    unique = {row[0] for row in cur.fetchall()}
    cur.execute("SELECT COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE "
                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND REFERENCED_TABLE_NAME IS NOT NULL "
                "ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION", (database, name))
    references = _references(cur.fetchall())
    clauses = _mysql_check_clauses(cur, database, name)
    checks = [(column.name, clause) for column in columns for clause in clauses
              if f"`{column.name}`" in clause and clause.count("`") == clause.count(f"`{column.name}`") * 2]
    cur.execute("SELECT ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = %s", (database,))
    triggered = _written_by(name, [row[0] for row in cur.fetchall()])
    return _with_checks(_with_unique(Table(name, columns, key, references, written_by_triggers=triggered), unique),
                        checks)


def check_bounds(clause: str, column: str) -> tuple[int | None, int | None]:
    """The lowest and highest integer a column's CHECK lets through, where the clause is a conjunction of simple
    comparisons of the column (or a domain's VALUE) with numbers (`VALUE >= 1901 AND VALUE <= 2155`, as catalogs
    write them); None where it says nothing simple."""
    if re.search(r"\b(or|not|in|like|case)\b", clause, re.IGNORECASE):
        return None, None
    operand = "|".join(re.escape(name) for name in ("VALUE", column, f"`{column}`", f'"{column}"'))
    bound = re.compile(rf"(?<![\w(])\(*(?:{operand})\)?\s*(>=|<=|>|<)\s*\(*'?(-?\d+)'?\)*(?:::\w+)?")
    low = high = None
    for operator, number in bound.findall(clause):
        value = int(number)
        if operator.startswith(">"):
            value += operator == ">"
            low = value if low is None else max(low, value)
        else:
            value -= operator == "<"
            high = value if high is None else min(high, value)
    return low, high


def _with_checks(table: Table, checks) -> Table:
    """An integer column's generated values kept inside its simple CHECK constraints (its domain's too)."""
    columns = []
    for column in table.columns:
        limits = column.value_range if column.type in INTEGER_RANGES else None
        for name, clause in checks:
            low, high = check_bounds(clause, column.name) if name == column.name and limits else (None, None)
            if low is not None or high is not None:
                limits = (max(limits[0], low if low is not None else limits[0]),
                          min(limits[1], high if high is not None else limits[1]))
        columns.append(replace(column, limits=limits) if limits and limits != column.value_range else column)
    return replace(table, columns=tuple(columns))


def _references(rows) -> tuple[ForeignKey, ...]:
    """A table's foreign keys, a column at a time (a composite reference gives one per column pair): the mutator
    leaves such columns alone, and a generated row must find what they reference."""
    return tuple(ForeignKey(column, table, referenced) for column, table, referenced in rows)


def _with_unique(table: Table, unique: set[str]) -> Table:
    return replace(table, columns=tuple(replace(c, unique=c.name in unique) for c in table.columns))


def _mysql_json_columns(cur, database: str, name: str) -> set[str]:
    """MariaDB keeps `json` as longtext with a json_valid check; MySQL reports `json` itself."""
    return {match.group(1) for clause in _mysql_check_clauses(cur, database, name)
            for match in [re.fullmatch(r"json_valid\(`([^`]+)`\)", clause.strip())] if match}


def _mysql_check_clauses(cur, database: str, name: str) -> list[str]:
    """The table's CHECK clauses. MariaDB's CHECK_CONSTRAINTS names the table (a column's check is named after the
    column, so names repeat across tables); MySQL 8's does not, and its names are the schema's own."""
    cur.execute("SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'information_schema' "
                "AND TABLE_NAME = 'CHECK_CONSTRAINTS' AND COLUMN_NAME = 'TABLE_NAME'")
    if cur.fetchone()[0]:
        cur.execute("SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = %s "
                    "AND TABLE_NAME = %s", (database, name))
    else:
        cur.execute("SELECT c.CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS c "
                    "JOIN information_schema.TABLE_CONSTRAINTS t ON t.CONSTRAINT_SCHEMA = c.CONSTRAINT_SCHEMA "
                    "AND t.CONSTRAINT_NAME = c.CONSTRAINT_NAME AND t.CONSTRAINT_TYPE = 'CHECK' "
                    "WHERE c.CONSTRAINT_SCHEMA = %s AND t.TABLE_NAME = %s", (database, name))
    return [clause for (clause,) in cur.fetchall()]


_LENGTH = re.compile(r"\((\d+)(?:,\s*(\d+))?\)")


def logical_column(dialect: str, table: str, name: str, sql_type: str, nullable: bool,
                   labels: tuple[str, ...] = (), decimal_mode: str = "precise", connect_times: bool = False) -> Column:
    """The logical column for a SQL type as the source's catalog names it; a type the sandbox cannot compare
    exactly raises `Uncomparable`, naming the table and column."""
    text = sql_type.lower().strip()
    if dialect == "postgres" and text.endswith("[]"):
        return _array_column(table, name, sql_type, nullable, decimal_mode, labels, connect_times)
    size = _LENGTH.search(text)
    first, second = (int(size.group(1)), int(size.group(2)) if size.group(2) else None) if size else (None, None)
    base = _LENGTH.sub("", text).replace(" zerofill", "").strip()
    column = dict(name=name, nullable=nullable, sql_type=sql_type)
    if labels or base.startswith("enum"):
        return Column(type=STR, labels=labels or _enum_labels(sql_type), **column)
    if dialect == "mysql" and base.startswith("set("):  # Debezium carries a set as its members joined by commas
        return Column(type=STR, labels=_enum_labels(sql_type), form="set", **column)
    logical = (_postgres_type if dialect == "postgres" else _mysql_type)(base, first, second)
    if logical is None:
        raise Uncomparable(f"{table}.{name} has type {sql_type}, which the sandbox does not compare yet",
                           f"the types it compares: {SUPPORTED[dialect]}")
    kind, options = logical
    if kind == DECIMAL and options["precision"] > MAX_PRECISION and decimal_mode == "precise":
        # Debezium carries money as a decimal of 64 digits, and a wide decimal with its own: Spark reads neither
        raise Uncomparable(f"{table}.{name} has type {sql_type}: Debezium carries it as a decimal of "
                           f"{options['precision']} digits, and Spark's hold {MAX_PRECISION} at most",
                           "set `decimal.handling.mode: string` among the source's `debezium:` settings to carry it "
                           "as exact text")
    return Column(type=kind, **column, **options)


ARRAY_ELEMENTS = frozenset({STR, SMALLINT, INT, BIGINT, DECIMAL, BOOL, FLOAT, DOUBLE, DATE, TIMESTAMP, TIMESTAMPTZ, TIME,
                            UUID})
# Inside an array Debezium carries a date as its days, a timestamp as its microseconds, a timestamptz as its ISO
# text and a time as its microseconds cut to whole milliseconds, and the job keeps them so (`Column.carried`).
ARRAY_CARRIED = {DATE: "count", TIMESTAMP: "count", TIMESTAMPTZ: "text", TIME: "whole millis"}


def _array_column(table: str, name: str, sql_type: str, nullable: bool, decimal_mode: str,
                  labels: tuple[str, ...] = (), connect_times: bool = False) -> Column:
    """An array whose elements Debezium carries as Avro values of their own (`ARRAY_CARRIED`; a decimal as
    decimal.handling.mode says; dates and times under time.precision.mode connect, as Connect's types: not compared
    yet). An enum's array takes no NULL element: Debezium's schema for its elements is not optional, and its
    connector stops on one."""
    try:
        element = logical_column("postgres", table, name, sql_type.strip()[:-2], not labels, labels)
    except Uncomparable:
        element = None
    as_text = decimal_mode != "precise" and element is not None and element.type in (DECIMAL, NUMBER)
    if element is None or element.type not in ARRAY_ELEMENTS and not as_text or element.form \
            or element.carried not in ("", "millis") or connect_times and element.type in (DATE, TIMESTAMP, TIME):
        raise Uncomparable(f"{table}.{name} has type {sql_type}, which the sandbox does not compare yet",
                           f"the types it compares: {SUPPORTED['postgres']}")
    if as_text:
        carried = decimal_mode
    elif element.type == TIMESTAMP and re.search(r"\([0-3]\)", sql_type):  # Debezium's milliseconds
        carried = "millis count"
    else:
        carried = element.carried or ARRAY_CARRIED.get(element.type, "")
    return Column(name, ARRAY, nullable=nullable, sql_type=sql_type, element=replace(element, carried=carried))


def _postgres_type(base: str, first: int | None, second: int | None):
    if base in ("character varying", "varchar", "character", "char"):
        return STR, {"max_length": first, "fixed_length": base in ("character", "char")}
    if base in ("numeric", "decimal"):
        return (DECIMAL, {"precision": first, "scale": second or 0}) if first else (NUMBER, {})
    if base == "money":  # a 64-bit count of cents, carried as a decimal of two fraction digits (money.fraction.digits)
        return DECIMAL, {"precision": MONEY_PRECISION, "scale": 2, "limits": (-(2**63), 2**63 - 1)}
    if base.startswith("timestamp"):
        return (TIMESTAMPTZ if "with time zone" in base else TIMESTAMP), {}
    if base == "time without time zone":  # adaptive mode: up to 3 digits a count of milliseconds, else microseconds
        return TIME, {"carried": "millis" if first is not None and first <= 3 else ""}
    if base == "time with time zone":
        return TIMETZ, {}
    if base.startswith("interval"):  # `interval day to second` and the like too
        return INTERVAL, {}
    if base in TEXT_FORMS:  # a range among them: Debezium carries its text
        return STR, {"form": base}
    if base == "bit" and first in (1, None) or base == "bit varying" and first == 1:  # carried as a boolean
        return BOOL, {}
    if base in ("bit", "bit varying"):  # a wider one as the fewest little-endian bytes that hold its value
        return BYTES, {"carried": "bits", "bit_length": first}
    simple = {"smallint": SMALLINT, "integer": INT, "bigint": BIGINT, "text": STR, "citext": STR, "date": DATE,
              "boolean": BOOL, "json": JSON, "jsonb": JSON, "uuid": UUID, "bytea": BYTES, "real": FLOAT,
              "double precision": DOUBLE}
    return (simple[base], {}) if base in simple else None


def _mysql_type(base: str, first: int | None, second: int | None):
    unsigned = base.endswith(" unsigned")
    base = base.removesuffix(" unsigned").strip()
    if base in ("tinyint", "bool", "boolean") and (first == 1 or base != "tinyint") or base == "bit" and first in (1, None):
        return BOOL, {}
    if base == "bit":  # a wider one as ceil(length / 8) little-endian bytes
        return BYTES, {"carried": "padded bits", "bit_length": first}
    if base == "bigint":
        return (DECIMAL, {"precision": 20, "scale": 0, "unsigned": True}) if unsigned else (BIGINT, {})
    if base == "year":  # Debezium carries a year as its number
        return INT, {"limits": (1901, 2155)}
    if base in MYSQL_INTEGERS:
        # Debezium carries each integer in the smallest Kafka Connect type that holds its range
        signed, unsigned_type, bits = MYSQL_INTEGERS[base]
        limits = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        return (unsigned_type if unsigned else signed), {"unsigned": unsigned, "limits": limits}
    if base in ("decimal", "numeric"):
        return DECIMAL, {"precision": first or 10, "scale": second or 0, "unsigned": unsigned}
    if base in ("varchar", "char"):
        return STR, {"max_length": first, "fixed_length": base == "char"}
    if base in ("text", "tinytext", "mediumtext", "longtext"):
        return STR, {}
    if base in ("binary", "varbinary", "blob", "tinyblob", "mediumblob", "longblob"):
        return BYTES, {}
    if base == "float" and (first is None or second is not None or first <= 24):  # float(25..53) is a double
        return FLOAT, {}  # read as its double: the server shows it rounded to six digits (`Placement.select_list`)
    simple = {"date": DATE, "datetime": TIMESTAMP, "timestamp": TIMESTAMPTZ, "json": JSON, "double": DOUBLE,
              "double precision": DOUBLE, "real": DOUBLE, "time": TIME, "float": DOUBLE}
    return (simple[base], {}) if base in simple else None


MYSQL_INTEGERS = {  # type -> (its logical type, an unsigned one's, its bits)
    "tinyint": (SMALLINT, SMALLINT, 8), "smallint": (SMALLINT, INT, 16), "mediumint": (INT, INT, 24),
    "int": (INT, BIGINT, 32), "integer": (INT, BIGINT, 32),
}


def _enum_labels(sql_type: str) -> tuple[str, ...]:
    return tuple(label.replace("''", "'") for label in re.findall(r"'((?:[^']|'')*)'", sql_type))
