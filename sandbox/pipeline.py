"""The pipeline as tests drive it: a Spark session running the Hudi job in-process, and silver read back."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from sandbox import job
from sandbox.config import Settings
from sandbox.tickit import normalized_rows
from spark_jobs import cdc_hudi_job, queries
from spark_jobs.job_config import JobConfig
from spark_jobs.session import spark_session
from tickit_data import get_table


@dataclass
class Pipeline:
    settings: Settings
    config: JobConfig
    spark: object
    reports: list[str] = field(default_factory=list)
    owns_session: bool = True

    @classmethod
    def start(cls, settings: Settings, lake: str, **options) -> "Pipeline":
        os.environ["TZ"] = "UTC"  # Spark hands timestamps to Python in the process's zone; sources hold UTC
        time.tzset()
        config = job.job_config(settings, lake=lake, **options)
        return cls(settings, config, spark_session(config))

    def sibling(self, lake: str, **options) -> "Pipeline":
        """Another lake (and job options) in the same Spark session, e.g. Merge-on-Read beside Copy-on-Write."""
        return Pipeline(self.settings, job.job_config(self.settings, lake=lake, **options), self.spark,
                        owns_session=False)

    def stop(self) -> None:
        if self.owns_session:
            self.spark.stop()

    def run_once(self) -> list[dict]:
        """Process everything in Kafka now; returns the batch summaries of this run."""
        import json

        before = len(self.reports)
        cdc_hudi_job.run(self.spark, self.config, once=True, report=self.reports.append)
        return [json.loads(line) for line in self.reports[before:]]

    def path(self, table: str) -> str:
        return self.config.silver_path(table)

    def timeline(self, table: str) -> list[queries.Commit]:
        return queries.timeline(self.spark, self.path(table))

    def snapshot(self, table: str):
        return queries.snapshot(self.spark, self.path(table))

    def time_travel(self, table: str, instant: str):
        return queries.time_travel(self.spark, self.path(table), instant)

    def live_rows(self, frame, table: str) -> list[tuple]:
        """Rows not soft-deleted, in the source table's columns and Python types, in key order."""
        schema = get_table(table)
        rows = frame.filter("__deleted IS NULL OR __deleted != 'true'").select(*schema.column_names).collect()
        return normalized_rows(schema, [tuple(row) for row in rows])
