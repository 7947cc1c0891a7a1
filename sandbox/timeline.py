"""A silver table's commit timeline as the harness reads it: each completed commit with the highest source position
it holds, so that a commit can be mapped to the source state it must equal.

The job writes that position, as plain digits, into each commit's extra metadata under
`sandbox.max_source_position`, and the micro-batch under `sandbox.batch_id` (`spark_jobs/cdc_hudi_job.py`,
`hudi_options`). Those keys are the contract between job and harness; the harness reads the timeline files itself
rather than through the job's code.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import fastavro

MAX_POSITION_KEY = "sandbox.max_source_position"
BATCH_ID_KEY = "sandbox.batch_id"
COMPLETED_ACTIONS = ("commit", "deltacommit", "replacecommit")


@dataclass(frozen=True)
class Commit:
    instant: str  # the instant to time-travel to (the commit's requested time)
    completed: str
    action: str
    max_source_position: int | None
    batch_id: int | None
    operation: str


def read_timeline(spark, path: str) -> list[Commit]:
    """Completed commits, oldest first, read from the table's own timeline files (any Hadoop file system)."""
    files = (spark.read.format("binaryFile").option("pathGlobFilter", "*_*.*")  # completed: <requested>_<completed>
             .load(f"{path}/.hoodie/timeline").select("path", "content").collect())
    commits = [commit_of(row["path"].rsplit("/", 1)[1], row["content"]) for row in files]
    return sorted((c for c in commits if c is not None), key=lambda c: c.completed)


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
