"""Reading the silver tables: snapshot, time travel, incremental, and the commit timeline.

The timeline lists each completed commit with the highest source position it holds (written by the job into the
commit's metadata), so a caller can map a commit to the source state it must equal.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import fastavro
from pyspark.sql import DataFrame, SparkSession

from spark_jobs.cdc_hudi_job import COMMIT_META_PREFIX

COMPLETED_ACTIONS = ("commit", "deltacommit", "replacecommit")


@dataclass(frozen=True)
class Commit:
    instant: str  # the instant to time-travel to (the commit's requested time)
    completed: str
    action: str
    max_source_position: int | None
    batch_id: int | None
    operation: str


def snapshot(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.format("hudi").load(path)


def time_travel(spark: SparkSession, path: str, instant: str) -> DataFrame:
    return spark.read.format("hudi").option("as.of.instant", instant).load(path)


def incremental(spark: SparkSession, path: str, after: str, end: str | None = None) -> DataFrame:
    """Changes of the commits that completed after `after` and up to `end` (the latest when None).

    Hudi 1.x orders incremental reads by completion time: pass `Commit.completed`, or "000" for the beginning.
    Hudi 1.0's Spark reader takes the begin time inclusively (made exclusive in later releases), so the read
    starts one millisecond after `after`.
    """
    begin = after if after == "000" else str(int(after) + 1).zfill(len(after))
    reader = (spark.read.format("hudi").option("hoodie.datasource.query.type", "incremental")
              .option("hoodie.datasource.read.begin.instanttime", begin))
    if end:
        reader = reader.option("hoodie.datasource.read.end.instanttime", end)
    return reader.load(path)


def timeline(spark: SparkSession, path: str) -> list[Commit]:
    """Completed commits, oldest first, read from the table's own timeline files (any Hadoop file system)."""
    files = (spark.read.format("binaryFile").option("pathGlobFilter", "*_*.*")  # completed: <requested>_<completed>
             .load(f"{path}/.hoodie/timeline").select("path", "content").collect())
    commits = []
    for row in files:
        name = row["path"].rsplit("/", 1)[1]
        stem, _, action = name.partition(".")
        if action not in COMPLETED_ACTIONS:
            continue
        requested, completed = stem.split("_")
        metadata = next(fastavro.reader(io.BytesIO(row["content"])))
        extra = metadata.get("extraMetadata") or {}
        position = extra.get(f"{COMMIT_META_PREFIX}max_source_position")
        batch = extra.get(f"{COMMIT_META_PREFIX}batch_id")
        commits.append(Commit(requested, completed, action, int(position) if position else None,
                              int(batch) if batch else None, metadata.get("operationType") or ""))
    return sorted(commits, key=lambda c: c.completed)
