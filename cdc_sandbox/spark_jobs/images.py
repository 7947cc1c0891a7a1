"""Values a change event leaves out, and the values they stand for.

A Postgres table whose replica identity is not FULL (DEFAULT, as most are) leaves two kinds out:
- an update leaves out each unchanged TOASTed value (text, bytea, jsonb stored out of line, typically over 2 kB):
  Debezium writes its placeholder `__debezium_unavailable_value` instead (its bytes in a binary column);
- a delete's old row holds the key alone: the other columns arrive NULL (a table's `key_only_deletes`).
Silver must hold what the source holds, so each such value is the key's previous one: from the key's latest earlier
change in the same batch, else from silver's live row. A key silver does not hold yet keeps NULL, and so does a
column the change's schema version lacks (dropped from the source before it), as in any row written after a drop.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, StringType

from cdc_sandbox.spark_jobs.decode import KAFKA_COLUMNS
from cdc_sandbox.spark_jobs.job_config import TableSpec

PLACEHOLDER = "__debezium_unavailable_value"  # Debezium's `unavailable.value.placeholder`, left at its default
CREATE, UPDATE, DELETE = "c", "u", "d"  # Debezium's operation codes
STORED_PREFIX = "_stored_"


def value_columns(rows: DataFrame, spec: TableSpec) -> list[str]:
    """The source columns of the changes that are not the record key."""
    return [name for name in rows.columns
            if not name.startswith("_") and name not in KAFKA_COLUMNS and name not in spec.key]


def left_out(rows: DataFrame, key_only_deletes: bool, column: str) -> Column:
    """Whether a change's value of `column` is not in its event (never NULL). A column its event's schema version
    does not have (dropped from the source before the change) is not left out: the change holds it NULL."""
    field = rows.schema[column]
    versions = field.metadata.get("schema_ids")
    own = F.col("_schema_id").isin(list(versions)) if versions and "_schema_id" in rows.columns else F.lit(True)
    return own & _marked(rows, key_only_deletes, column)


def _marked(rows: DataFrame, key_only_deletes: bool, column: str) -> Column:
    data_type = rows.schema[column].dataType
    marks = []
    if isinstance(data_type, StringType):
        marks.append(F.col(column).eqNullSafe(F.lit(PLACEHOLDER)))
    elif isinstance(data_type, BinaryType):
        marks.append(F.col(column).eqNullSafe(F.lit(bytearray(PLACEHOLDER.encode()))))
    if key_only_deletes:
        marks.append(F.col("__op").eqNullSafe(F.lit(DELETE)))
    return reduce(lambda a, b: a | b, marks, F.lit(False))


def any_left_out(rows: DataFrame, spec: TableSpec, key_only_deletes: bool) -> Column:
    """Whether a change leaves a value out: a snapshot's reads never do, so a load's rows are not compared (a key
    update's insert may carry a placeholder for the new key, which silver cannot fill: it becomes NULL)."""
    columns = value_columns(rows, spec)
    if not columns:
        return F.lit(False)
    some = reduce(lambda a, b: a | b, [left_out(rows, key_only_deletes, c) for c in columns])
    return F.when(F.col("__op").isin(CREATE, UPDATE, DELETE), some).otherwise(F.lit(False))


def completed(rows: DataFrame, spec: TableSpec, key_only_deletes: bool, stored: DataFrame | None) -> DataFrame:
    """`rows` (a table's changes with their `_source_position`) with every left-out value filled in from the key's
    earlier change in the batch or, failing that, from `stored` (silver's live rows, or None)."""
    columns = value_columns(rows, spec)
    earlier = Window.partitionBy(*spec.key).orderBy("_source_position", "offset") \
        .rowsBetween(Window.unboundedPreceding, -1)
    if stored is not None:
        kept = [c for c in columns if c in stored.columns]
        stored = stored.select(*spec.key, *[F.col(c).cast(rows.schema[c].dataType).alias(STORED_PREFIX + c)
                                            for c in kept])
        rows = rows.join(stored, list(spec.key), "left")
    filled = {}
    for column in columns:
        missing = left_out(rows, key_only_deletes, column)
        # A struct, so that a NULL the earlier change set counts as its value.
        before = F.last(F.when(~missing, F.struct(F.col(column).alias("value"))), ignorenulls=True).over(earlier)
        in_silver = F.col(STORED_PREFIX + column) if STORED_PREFIX + column in rows.columns else F.lit(None)
        filled[column] = F.when(missing & before.isNotNull(), before["value"]) \
            .when(missing, in_silver.cast(rows.schema[column].dataType)).otherwise(F.col(column))
    rows = rows.withColumns(filled)
    return rows.drop(*[c for c in rows.columns if c.startswith(STORED_PREFIX)])
