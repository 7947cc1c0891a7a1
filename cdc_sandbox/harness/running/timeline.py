"""A silver table's commit timeline as the harness reads it: each completed commit with the highest source position
it holds, so that a commit can be mapped to the source state it must equal.

The job writes that position, as plain digits, into each commit's extra metadata under
`sandbox.max_source_position`, and the micro-batch under `sandbox.batch_id` (`cdc_sandbox/spark_jobs/cdc_hudi_job.py`,
`hudi_options`). Those keys are the contract between job and harness; the harness reads the timeline files itself
rather than through the job's code.
"""

from __future__ import annotations

import fnmatch
import io
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import fastavro

from cdc_sandbox.spark_jobs.lake_layout import object_keys, split_uri

MAX_POSITION_KEY = "sandbox.max_source_position"
BATCH_ID_KEY = "sandbox.batch_id"
COMPLETED_ACTIONS = ("commit", "deltacommit", "replacecommit")
MAINTENANCE = ("COMPACT", "LOG_COMPACT", "CLUSTER")  # operations that rewrite files without writing changes
COMPLETED_FILES = "*_*.*"  # <requested>_<completed>.<action>; requested and inflight files have no completion time


@dataclass(frozen=True)
class Commit:
    instant: str  # the instant to time-travel to (the commit's requested time)
    completed: str
    action: str
    max_source_position: int | None
    batch_id: int | None
    operation: str

    @property
    def writes_changes(self) -> bool:
        """A commit of the job's writes, not Hudi's own upkeep (compaction, clustering)."""
        return self.operation.upper() not in MAINTENANCE


def read_timeline(spark, path: str) -> list[Commit]:
    """Completed commits, oldest first, read from the table's own timeline files (any Hadoop file system)."""
    files = (spark.read.format("binaryFile").option("pathGlobFilter", COMPLETED_FILES)
             .load(f"{path}/.hoodie/timeline").select("path", "content").collect())
    commits = [commit_of(row["path"].rsplit("/", 1)[1], row["content"]) for row in files]
    return sorted((c for c in commits if c is not None), key=lambda c: c.completed)


class S3Timelines:
    """Timelines on S3 read with an S3 client instead of a Spark job: a listing per read, and each completed
    file fetched once (Hudi never rewrites one). Polled every half second while a test waits, a Spark job per read
    took 0.2-0.4 s of the driver that runs the job under test; a listing takes milliseconds."""

    def __init__(self, s3):
        self.s3 = s3
        self._commits: dict[str, Commit | None] = {}  # object key -> the commit its file describes

    def read(self, path: str) -> list[Commit]:
        """Completed commits, oldest first ([] for a table not written yet)."""
        bucket, prefix = split_uri(path)
        prefix += "/.hoodie/timeline/"
        keys = [key for key in object_keys(self.s3, bucket, prefix, delimiter="/")
                if fnmatch.fnmatchcase(key[len(prefix):], COMPLETED_FILES)]
        new = [key for key in keys if key not in self._commits]
        with ThreadPoolExecutor(max(1, min(8, len(new)))) as pool:
            for key, commit in zip(new, pool.map(lambda k: self._fetch(bucket, k), new)):
                self._commits[key] = commit
        commits = [self._commits[key] for key in keys]
        return sorted((c for c in commits if c is not None), key=lambda c: c.completed)

    def _fetch(self, bucket: str, key: str) -> Commit | None:
        content = self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        return commit_of(key.rsplit("/", 1)[1], content)


def commit_of(file_name: str, content: bytes) -> Commit | None:
    """The commit a completed timeline file (`<requested>_<completed>.<action>`, Avro) describes; None for an
    action that is no commit."""
    stem, _, action = file_name.partition(".")
    if action not in COMPLETED_ACTIONS:
        return None
    requested, completed = stem.split("_")
    metadata = next(fastavro.reader(io.BytesIO(content)))
    extra = metadata.get("extraMetadata") or {}
    position, batch = extra.get(MAX_POSITION_KEY), extra.get(BATCH_ID_KEY)
    return Commit(requested, completed, action, int(position) if position else None, int(batch) if batch else None,
                  metadata.get("operationType") or "")
