"""A captured table as every part of the sandbox sees it: its columns in logical types, its primary key.

TICKIT's tables are declared in `cdc_sandbox/tickit_data/schema.py`; a project's tables are read back from each database's
catalog after its DDL ran (`cdc_sandbox.stack.catalog`). What a logical type becomes in Debezium's events, in silver
and in the oracle's comparison is decided from this one description (`cdc_sandbox.stack.catalog.logical_column`,
`cdc_sandbox.harness.checking.silver.arrow_type`, `cdc_sandbox.sources.normalize`).
"""

from __future__ import annotations

from dataclasses import dataclass

# Logical column types.
SMALLINT = "smallint"
INT = "int"
BIGINT = "bigint"
DECIMAL = "decimal"  # exact, fixed precision and scale (an unsigned bigint is decimal(20,0))
NUMBER = "number"  # exact, any scale: Postgres `numeric` without a scale
STR = "str"  # text: varchar, char, text, an enum's label
DATE = "date"
TIMESTAMP = "timestamp"  # a wall-clock time without zone, compared as UTC
TIMESTAMPTZ = "timestamptz"  # an instant
TIME = "time"  # a time of day without zone, compared as microseconds since midnight (MySQL's may pass 24 hours)
TIMETZ = "timetz"  # a time of day with its offset, compared as microseconds since midnight in UTC
INTERVAL = "interval"  # a Postgres interval, compared as Debezium makes it of its months, days and time
ARRAY = "array"  # a Postgres array of one dimension (`Column.element` says of what), compared element by element
BOOL = "bool"
FLOAT = "float"  # binary floating point, single precision (Postgres real)
DOUBLE = "double"  # binary floating point, double precision
JSON = "json"
UUID = "uuid"
BYTES = "bytes"
LOGICAL_TYPES = frozenset({SMALLINT, INT, BIGINT, DECIMAL, NUMBER, STR, DATE, TIMESTAMP, TIMESTAMPTZ, BOOL, JSON,
                           UUID, BYTES, FLOAT, DOUBLE, TIME, TIMETZ, ARRAY, INTERVAL})
BIT_LAYOUTS = frozenset({"bits", "padded bits"})  # `Column.carried` of a bit string
# Text of a grammar of its own (str only): what a generated value must look like, and how a driver may give it.
RANGE_FORMS = frozenset({"int4range", "int8range", "numrange", "daterange", "tsrange", "tstzrange"})
TEXT_FORMS = frozenset({"inet", "cidr", "macaddr", "macaddr8", "xml", "set", "tsvector"}) | RANGE_FORMS

INTEGER_RANGES = {
    SMALLINT: (-(2**15), 2**15 - 1),
    INT: (-(2**31), 2**31 - 1),
    BIGINT: (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nullable: bool = True
    max_length: int | None = None  # str only; None for unbounded text
    fixed_length: bool = False  # str only: char(n) rather than varchar(n)
    precision: int | None = None  # decimal only
    scale: int | None = None  # decimal only
    labels: tuple[str, ...] = ()  # an enum's values, or a set's members (str)
    form: str = ""  # str only: one of TEXT_FORMS, or "" for any text
    unsigned: bool = False  # an integer column that holds no negative value (decimal(20,0) for bigint unsigned)
    sql_type: str | None = None  # the type as the source's catalog names it
    unique: bool = False  # a UNIQUE constraint of its own (besides the primary key): generated rows draw new values
    # An integer column's range where the source type's is narrower (tinyint); a decimal's, as unscaled digits, where
    # its type's is narrower than its precision says (money).
    limits: tuple[int, int] | None = None
    # The partition key of a partitioned table without a default partition: each partition's bounds as the catalog
    # writes them, ("range", from, to) (None: unbounded) or ("list", value, ...). Generated values fall in one.
    partitions: tuple[tuple[str | None, ...], ...] = ()
    element: Column | None = None  # an array's elements (array only)
    # A bit string's declared length (bytes only; None for an unbounded bit varying): Debezium carries the value as
    # little-endian bytes, the fewest that hold it on Postgres, ceil(length / 8) on MySQL (`carried` "bits" and
    # "padded bits").
    bit_length: int | None = None
    # How the connector carries the value when its settings make it other than the type's own (so silver holds it
    # so): "string" or "double" (decimal.handling.mode), "base64"/"hex" (binary.handling.mode), "millis"
    # (time.precision.mode=connect, and a time of up to 3 digits in Postgres's adaptive mode), "bits"/"padded bits" (a
    # bit string, `bit_length`), "count"/"millis count"/"text" (a date's days, a timestamp's micro- or milliseconds,
    # a timestamptz's ISO text: an array's elements). Empty: as the type itself.
    carried: str = ""

    def __post_init__(self) -> None:
        if self.type not in LOGICAL_TYPES:
            raise ValueError(f"column {self.name}: unknown logical type {self.type!r}")
        if (self.max_length is not None or self.form) and self.type != STR:
            raise ValueError(f"column {self.name}: max_length and form are for str only")
        if self.carried in BIT_LAYOUTS and self.type != BYTES:
            raise ValueError(f"column {self.name}: a bit string is carried as bytes")
        if (self.type == ARRAY) != (self.element is not None):
            raise ValueError(f"column {self.name}: an array, and only an array, has an element type")
        if self.form and self.form not in TEXT_FORMS:
            raise ValueError(f"column {self.name}: unknown text form {self.form!r}")
        if (self.type == DECIMAL) != (self.precision is not None and self.scale is not None):
            raise ValueError(f"column {self.name}: precision/scale are required for decimal and only for decimal")

    @property
    def value_range(self) -> tuple[int, int]:
        """The smallest and largest value an integer column holds."""
        if self.limits is not None:
            return self.limits
        low, high = INTEGER_RANGES[self.type]
        return (0, high) if self.unsigned else (low, high)

    @property
    def original_sql_type(self) -> str:
        """The type as the source declares it."""
        if self.sql_type:
            return self.sql_type
        if self.element is not None:
            return self.element.original_sql_type + "[]"
        if self.type == STR:
            length = f"({self.max_length})" if self.max_length else ""
            return f"{'char' if self.fixed_length else 'varchar'}{length}"
        if self.type == DECIMAL:
            return f"decimal({self.precision},{self.scale})"
        return {INT: "integer", SMALLINT: "smallint", BIGINT: "bigint", NUMBER: "numeric", DATE: "date",
                TIMESTAMP: "timestamp", TIMESTAMPTZ: "timestamptz", BOOL: "boolean", JSON: "json", UUID: "uuid",
                BYTES: "bytea", FLOAT: "real", DOUBLE: "double precision", TIME: "time",
                TIMETZ: "time with time zone", INTERVAL: "interval"}[self.type]


@dataclass(frozen=True)
class ForeignKey:
    """A logical reference; the referenced table may live on another engine."""

    column: str
    references_table: str
    references_column: str


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    foreign_keys: tuple[ForeignKey, ...] = ()
    # A trigger of the database writes its rows (an audit or outbox table, Sakila's film_text): changes nobody
    # journals, which the oracle reads from the source after each round.
    written_by_triggers: bool = False

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(column.name for column in self.columns)

    def column_index(self, name: str) -> int:
        try:
            return self.column_names.index(name)
        except ValueError:
            raise KeyError(f"table {self.name} has no column {name!r}") from None

    def column(self, name: str) -> Column:
        return self.columns[self.column_index(name)]

    @property
    def primary_key_indexes(self) -> tuple[int, ...]:
        return tuple(self.column_index(name) for name in self.primary_key)
