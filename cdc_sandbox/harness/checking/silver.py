"""The silver tables as two independent readers see them: Spark's Hudi datasource and hudi-rs (the Rust
implementation of Hudi, `hudi` on PyPI).

Both give a table as {primary key: row}, the row in the compared columns and Python types; a soft-deleted key maps
to None. The oracle compares each reader with the expected state, and the two readers with each other.

Each read is also available as Arrow record batches (`*_batches`), what both readers produce natively: the oracle
compares large tables as sorted Arrow columns (`live_table`) and turns a read into Python rows only to describe a
mismatch, which is several times faster than building a dictionary of every row.
"""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc

from cdc_sandbox.harness.running.timeline import Commit
from cdc_sandbox.schema import BIGINT, BIT_LAYOUTS, BOOL, BYTES, DATE, DECIMAL, INT, JSON, NUMBER, SMALLINT, STR, TIMESTAMP
from cdc_sandbox.schema import ARRAY, DOUBLE, FLOAT, INTERVAL, TIME, TIMESTAMPTZ, TIMETZ, UUID, Column, Table
from cdc_sandbox.sources.normalize import normalize_column, row_normalizer
from cdc_sandbox.spark_jobs import queries

Rows = dict[tuple, "tuple | None"]
META_COLUMNS = ("__deleted", "_hoodie_commit_time", "__op")


@dataclass(frozen=True)
class Shape:
    """What is compared of a table: its columns (the schema's plus any added while the test ran) and its key."""

    table: Table
    dropped: frozenset[str] = frozenset()  # columns dropped from the source, which silver keeps
    # Columns a later migration widened: a read of an earlier commit may show them in their new type, since readers
    # read old files under the table's latest schema.
    widened: tuple[Column, ...] = ()

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def source_columns(self) -> list[str]:
        """The columns the source still has."""
        return [c for c in self.columns if c not in self.dropped]

    def from_source(self, values) -> tuple:
        """A source row in `source_columns` as a compared row: a dropped column reads NULL."""
        present = iter(values)
        return self.normalize([None if c in self.dropped else next(present) for c in self.columns])

    def without_dropped(self, rows: "Rows") -> "Rows":
        """Rows with the dropped columns blanked: what the source can still tell of them."""
        if not self.dropped:
            return rows
        blank = [i for i, c in enumerate(self.columns) if c in self.dropped]
        return {key: None if row is None else tuple(None if i in blank else v for i, v in enumerate(row))
                for key, row in rows.items()}

    @property
    def columns(self) -> list[str]:
        return self.table.column_names

    def key_of(self, row: tuple) -> tuple:
        return tuple(row[self.columns.index(k)] for k in self.table.primary_key)

    def normalize(self, values) -> tuple:
        """One row as the source's Python types (`cdc_sandbox.sources.normalize`)."""
        return row_normalizer(self.table)(values)

    def from_journal(self, values: dict) -> tuple:
        """A row the mutation journal recorded (JSON: decimals, dates and times as text) in the compared columns."""
        typed = []
        for column in self.table.columns:
            value = values.get(column.name)
            if isinstance(value, str) and column.type == DATE:  # a decimal's text (money's too) the normalizer reads
                value = dt.date.fromisoformat(value[:10])
            elif isinstance(value, str) and column.type in (TIMESTAMP, TIMESTAMPTZ):
                value = dt.datetime.fromisoformat(value)
            elif isinstance(value, str) and column.type == BYTES and column.carried not in BIT_LAYOUTS:
                value = base64.b64decode(value)  # as the journal writes bytes (`mutations._json_value`)
            typed.append(value)
        return self.normalize(typed)

    def rows(self, records, normalized: bool = False) -> Rows:
        """(compared columns..., __deleted, _hoodie_commit_time) records -> {key: row or None}, the latest commit
        winning when a reader returns a key more than once."""
        latest: dict[tuple, tuple[str, tuple | None]] = {}
        width = len(self.columns)
        for record in records:
            row = tuple(record[:width]) if normalized else self.normalize(record[:width])
            deleted, commit_time = record[width], record[width + 1]
            key = self.key_of(row)
            if key not in latest or commit_time > latest[key][0]:
                latest[key] = (commit_time, None if deleted == "true" else row)
        return {key: row for key, (_, row) in latest.items()}


class SilverReader:
    """What both readers share: each view as {key: row} dictionaries, from the reader's Arrow batches."""

    def snapshot(self, shape: Shape, keys: set[tuple] | None = None) -> Rows:
        """The rows of the latest snapshot (at `keys` only, if given)."""
        return arrow_rows(shape, self.snapshot_batches(shape), keys)

    def as_of(self, shape: Shape, commit: Commit, keys: set[tuple] | None = None) -> Rows:
        return arrow_rows(shape, self.as_of_batches(shape, commit), keys)

    def changes(self, shape: Shape, after: Commit, until: Commit) -> Rows:
        return arrow_rows(shape, self.changes_batches(shape, after, until))


class SparkSilver(SilverReader):
    """Silver through Spark (the reader the job's users query with)."""

    name = "spark"

    def __init__(self, spark, config):
        self.spark, self.config = spark, config

    def snapshot_batches(self, shape: Shape) -> list:
        return self._batches(shape, queries.snapshot(self.spark, self.config.silver_path(shape.name)))

    def as_of_batches(self, shape: Shape, commit: Commit) -> list:
        frame = queries.time_travel(self.spark, self.config.silver_path(shape.name), commit.instant)
        return self._batches(shape, frame)

    def changes_batches(self, shape: Shape, after: Commit, until: Commit) -> list:
        frame = queries.incremental(self.spark, self.config.silver_path(shape.name), after.completed, until.completed)
        return self._batches(shape, frame)

    def _batches(self, shape: Shape, frame) -> list:
        present = set(frame.columns)
        columns = [f"`{c}`" if c in present else f"NULL AS `{c}`" for c in [*shape.columns, *META_COLUMNS]]
        # Collected as Arrow batches (what toPandas uses, without pandas): several times faster than Row objects
        # for the large tables.
        return frame.selectExpr(*columns)._collect_as_arrow()


class RustSilver(SilverReader):
    """Silver through hudi-rs: no JVM, no Spark, an implementation of the table format of its own."""

    name = "hudi-rs"

    def __init__(self, config):
        self.config = config
        self.storage = {"aws_access_key_id": config.s3_access_key or "", "aws_secret_access_key":
                        config.s3_secret_key or "", "aws_region": "us-east-1"}
        if config.s3_endpoint:
            self.storage |= {"aws_endpoint_url": config.s3_endpoint, "aws_allow_http": "true"}

    def _table(self, name: str):
        from hudi import HudiTableBuilder

        uri = urlparse(self.config.silver_path(name))
        base = f"s3://{uri.netloc}{uri.path}" if uri.scheme in ("s3a", "s3n") else uri.geturl()
        return HudiTableBuilder.from_base_uri(base).with_storage_options(self.storage).build()

    def read(self, table: str, as_of: str | None = None, after: str | None = None, until: str | None = None,
             limit: int | None = None) -> list:
        """A table's record batches: its latest snapshot, as of a commit instant, or the changes of the commits whose
        completion time lies in (after, until] (until the latest when not given). With `limit`, streamed only until
        that many rows have arrived."""
        from hudi import HudiQueryType, HudiReadOptions

        options = HudiReadOptions()
        if after is not None:
            options = options.with_query_type(HudiQueryType.Incremental).with_start_timestamp(after)
            if until is not None:
                options = options.with_end_timestamp(until)
        elif as_of is not None:
            options = options.with_as_of_timestamp(as_of)
        if limit is None or after is not None:  # hudi-rs streams snapshots and time travel, not incremental reads
            return self._table(table).read(options)
        batches, rows = [], 0
        for batch in self._table(table).read_stream(options):
            if rows >= limit:
                break
            batches.append(batch)
            rows += batch.num_rows
        return batches

    def snapshot_batches(self, shape: Shape) -> list:
        return self.read(shape.name)

    def as_of_batches(self, shape: Shape, commit: Commit) -> list:
        return self.read(shape.name, as_of=commit.instant)

    def changes_batches(self, shape: Shape, after: Commit, until: Commit) -> list:
        return self.read(shape.name, after=after.completed, until=until.completed)


def arrow_rows(shape: Shape, batches, keys: set[tuple] | None = None) -> Rows:
    """Arrow record batches holding (some of) the compared columns and the meta columns -> {key: row or None}; with
    `keys`, the rows at those keys alone, chosen before any value becomes a Python object."""
    if not batches:
        return {}
    table = pa.Table.from_batches(batches)
    if keys is not None:
        table = _at_keys(shape, table, keys)
    columns = [_values(shape, table, name) for name in [*shape.columns, *META_COLUMNS]]
    rows = shape.rows(zip(*columns), normalized=True)
    if keys is not None and len(shape.table.primary_key) > 1:  # chosen by the first key column only
        rows = {key: row for key, row in rows.items() if key in keys}
    return rows


def _at_keys(shape: Shape, table: pa.Table, keys: set[tuple]) -> pa.Table:
    """The rows at `keys`, chosen by the key's first column (a composite key's other columns are matched once the
    rows are Python values); the whole table where the keys do not fit the column's type (the rows then show it)."""
    column = shape.table.primary_key[0]
    try:
        wanted = pa.array(list({key[0] for key in keys}), type=table.column(column).type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, KeyError):
        return table
    return table.filter(pc.is_in(table.column(column), value_set=wanted))


def _values(shape: Shape, table: pa.Table, name: str) -> list:
    """One column as the source's Python types (what `Shape.normalize` does row by row, a column at a time)."""
    if name not in table.column_names:
        return [None] * table.num_rows
    column = table.column(name)
    if pa.types.is_timestamp(column.type) and column.type.tz:
        column = column.cast(pa.timestamp(column.type.unit))  # the same instants, as naive UTC
    values = _python_values(column)
    return normalize_column(shape.table.column(name), values) if name in shape.columns else values


def _python_values(column) -> list:
    """The column's values; a date or time Python cannot hold (a year 0, say, which a wrong job can write) as its
    text with a note, so that the comparison reports it instead of failing to read it."""
    try:
        return column.to_pylist()
    except (OverflowError, ValueError):
        texts = column.cast(pa.string()).to_pylist()
        values = []
        for value, text in zip(column, texts):
            try:
                values.append(value.as_py())
            except (OverflowError, ValueError):
                values.append(OutOfRange(text))
        return values


class OutOfRange(str):
    """A silver value outside Python's dates and times, shown as its text."""

    def __repr__(self) -> str:
        return f"{str(self)} (outside Python's dates)"


def arrow_type(column: Column, dialect: str) -> pa.DataType:
    """The type a silver column must have, as both readers give it: what Debezium's Avro (under the connector's
    settings, `Column.carried`) and the job make of the source type. Avro has no 16-bit integer, so smallint arrives
    as int; MySQL's boolean is tinyint(1), which the connectors capture as a boolean however they learned the column
    (`cdc_sandbox/fixtures/connectors/mariadb.json`); times are UTC microseconds; a decimal of any scale is its exact text."""
    carried = {"string": pa.string(), "double": pa.float64(), "base64": pa.string(), "hex": pa.string(),
               "text": pa.string()}
    if column.carried in carried:
        return carried[column.carried]
    if column.carried in ("count", "millis count"):  # a date's days, a timestamp's micro- or milliseconds (in an array)
        return pa.int32() if column.type == DATE else pa.int64()
    own = {INT: pa.int32(), SMALLINT: pa.int32(), BIGINT: pa.int64(), STR: pa.string(), NUMBER: pa.string(),
           JSON: pa.string(), UUID: pa.string(), BYTES: pa.binary(), DATE: pa.date32(), BOOL: pa.bool_(),
           TIMESTAMP: pa.timestamp("us", tz="UTC"), TIMESTAMPTZ: pa.timestamp("us", tz="UTC"), FLOAT: pa.float32(),
           DOUBLE: pa.float64(), TIMETZ: pa.string(), INTERVAL: pa.int64()}
    if column.type == ARRAY:
        return pa.list_(arrow_type(column.element, dialect))
    if column.type == TIME:  # Debezium's count since midnight: milliseconds in 32 bits, microseconds in 64
        return pa.int32() if column.carried == "millis" else pa.int64()
    if column.type == DECIMAL:
        return pa.decimal128(column.precision, column.scale)
    return own[column.type]


def wrong_types(shape: Shape, schema: pa.Schema, dialect: str) -> dict[str, str]:
    """A line for each compared column whose type in a read is not `arrow_type`'s, by column. A column the read does
    not have (or has only as NULLs of no type, e.g. time travel to before it was added) is left to the value
    comparison."""
    lines = {}
    for column in shape.table.columns:
        if column.name not in schema.names or pa.types.is_null(schema.field(column.name).type):
            continue
        expected, actual = arrow_type(column, dialect), schema.field(column.name).type
        later = [arrow_type(c, dialect) for c in shape.widened if c.name == column.name]
        if actual != expected and actual not in later and not _same_instants(expected, actual):
            lines[column.name] = (f"  column {column.name} ({column.original_sql_type} in the source): "
                                  f"expected {expected}, actual {actual}")
    return lines


def _same_instants(expected: pa.DataType, actual: pa.DataType) -> bool:
    """Instants in any zone: a reader shows them in its session's zone, the values are the same."""
    return pa.types.is_timestamp(expected) and pa.types.is_timestamp(actual) and expected.unit == actual.unit \
        and bool(expected.tz) and bool(actual.tz)


def duplicate_keys(shape: Shape, batches) -> dict[tuple, list[str]]:
    """The keys a read holds more than once, each with the commit times of its copies (an upsert written as an
    insert, a record key that is not the source key, a replay into a second file group)."""
    table = pa.Table.from_batches(batches) if batches else None
    keys = list(shape.table.primary_key)
    if table is None or table.num_rows == 0 or any(k not in table.column_names for k in keys):
        return {}
    if len(keys) == 1 and pc.count_distinct(table.column(keys[0])).as_py() == table.num_rows:
        return {}
    if "_hoodie_commit_time" not in table.column_names:
        table = table.append_column("_hoodie_commit_time", pa.nulls(table.num_rows, pa.string()))
    grouped = table.select([*keys, "_hoodie_commit_time"]).group_by(keys).aggregate(
        [("_hoodie_commit_time", "list")]).to_pylist()
    return {tuple(g[k] for k in keys): sorted(g["_hoodie_commit_time_list"], key=str)
            for g in grouped if len(g["_hoodie_commit_time_list"]) > 1}


def deleted_rows(shape: Shape, batches) -> dict[tuple, tuple[tuple, str | None]]:
    """The soft-deleted rows of a read (`__deleted='true'`): {key: (row in the compared columns, `__op`)}."""
    table = pa.Table.from_batches(batches) if batches else None
    if table is None or "__deleted" not in table.column_names:
        return {}
    table = table.filter(pc.fill_null(pc.equal(table.column("__deleted"), "true"), False))
    columns = [_values(shape, table, name) for name in [*shape.columns, "__op"]]
    width = len(shape.columns)
    return {shape.key_of(record[:width]): (tuple(record[:width]), record[width]) for record in zip(*columns)}


class NotComparableAsArrow(Exception):
    """A read the Arrow comparison cannot decide (a column type it does not normalize, a key held twice): the
    caller compares Python rows instead."""


def live_table(shape: Shape, batches) -> pa.Table:
    """The live rows of a read in the compared columns, normalized as `Shape.normalize` does and sorted by key.
    Raises NotComparableAsArrow where only the row-by-row comparison can decide."""
    table = pa.Table.from_batches(batches) if batches else None
    if table is None or table.num_rows == 0:
        raise NotComparableAsArrow("empty read")
    keys = list(shape.table.primary_key)
    if any(k not in table.column_names for k in keys):
        raise NotComparableAsArrow("key column missing")
    if len(keys) != 1 or pc.count_distinct(table.column(keys[0])).as_py() != table.num_rows:
        raise NotComparableAsArrow("a composite key, or a key held more than once: compared row by row")
    if "__deleted" in table.column_names:
        table = table.filter(pc.fill_null(pc.not_equal(table.column("__deleted"), "true"), True))
    columns = [_normalized_column(shape, table, name) for name in shape.columns]
    live = pa.table(columns, names=shape.columns)
    return live.take(pc.sort_indices(live, [(k, "ascending") for k in keys]))


def _normalized_column(shape: Shape, table: pa.Table, name: str) -> pa.ChunkedArray:
    if name not in table.column_names:
        raise NotComparableAsArrow(f"column {name} missing")
    column = table.column(name)
    if pa.types.is_timestamp(column.type) and column.type.tz:
        return column.cast(pa.timestamp(column.type.unit))
    spec = shape.table.column(name)
    if spec.type not in (BOOL, INT, SMALLINT, BIGINT, STR, DATE, DECIMAL, TIMESTAMP) or spec.carried:
        raise NotComparableAsArrow(f"column {name} ({spec.type}) is compared as Python values")
    if spec.type == BOOL:
        if pa.types.is_boolean(column.type):
            return column
        if pa.types.is_integer(column.type):
            return pc.not_equal(column, 0)
        raise NotComparableAsArrow(f"column {name} of type {column.type}")
    if spec.fixed_length:
        return pc.utf8_rtrim(column, characters=" ")
    return column


def expected_table(shape: Shape, state: Rows, schema: pa.Schema) -> pa.Table:
    """The live rows of an expected state as an Arrow table of `schema` (a reader's), sorted by key. Raises
    NotComparableAsArrow when a value does not fit the reader's type (the row-by-row comparison then reports it)."""
    rows = [row for row in state.values() if row is not None]
    values = list(zip(*rows)) if rows else [()] * len(shape.columns)
    try:
        table = pa.table([pa.array(column, type=field.type) for column, field in zip(values, schema)], schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
        raise NotComparableAsArrow(str(exc)) from exc
    return table.take(pc.sort_indices(table, [(k, "ascending") for k in shape.table.primary_key]))
