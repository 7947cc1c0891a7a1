"""Reading the silver tables: snapshot, time travel and incremental.

The commit timeline (which source position each commit reached) is read by the harness itself: `cdc_sandbox/harness/running/timeline.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the harness's pytest plugin reaches this module: a suite without Spark fixtures loads no Spark
    from pyspark.sql import DataFrame, SparkSession


def snapshot(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("hudi").load(path)


def time_travel(spark: SparkSession, path: str, instant: str) -> DataFrame:
    return spark.read.format("hudi").option("as.of.instant", instant).load(path)


def incremental(spark: SparkSession, path: str, after: str, end: str | None = None) -> DataFrame:
    """Changes of the commits that completed after `after` and up to `end` (the latest when None).

    Hudi 1.x orders incremental reads by completion time: pass a commit's completion time, or "000" for the
    beginning.
    Hudi 1.0's Spark reader takes the begin time inclusively (made exclusive in later releases), so the read
    starts one millisecond after `after`.
    """
    begin = after if after == "000" else str(int(after) + 1).zfill(len(after))
    reader = (spark.read.format("hudi").option("hoodie.datasource.query.type", "incremental")
              .option("hoodie.datasource.read.begin.instanttime", begin))
    if end:
        reader = reader.option("hoodie.datasource.read.end.instanttime", end)
    return reader.load(path)

