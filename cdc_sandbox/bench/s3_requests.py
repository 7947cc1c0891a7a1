"""`make bench`'s S3 requests per commit: what the job's micro-batch that commits one changed row of one table asks of
S3 (LocalStack here, the bill on AWS), by operation, read from the S3A connector's own request counters in the job's
Spark session. Measured with the job's Hudi settings and with Hudi's defaults for the settings the job changes, in
one run, so the two columns compare on one machine.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager

from rich.console import Console
from rich.table import Table

from cdc_sandbox.bench.results import Results
from cdc_sandbox.config import Settings
from cdc_sandbox.harness.running.lake_branch import LakeBranches
from cdc_sandbox.harness.running.lakes_for_tests import finish, pipeline_on_new_lake
from cdc_sandbox.harness.running.pipeline import spark_for
from cdc_sandbox.sources.changes import end_offsets
from cdc_sandbox.sources.mutations import Mutator
from cdc_sandbox.spark_jobs import cdc_hudi_job
from cdc_sandbox.wait import wait_until

SECTION = "S3 requests per commit"
TABLE = "category"
COMMITS = 5
# Hudi 1.0.2's defaults for the settings the job sets otherwise (cdc_hudi_job.hudi_options says why).
HUDI_DEFAULTS = {"hoodie.metadata.enable": "true", "hoodie.embed.timeline.server": "true",
                 "hoodie.write.markers.type": "TIMELINE_SERVER_BASED", "hoodie.combine.before.upsert": "true"}
SETTINGS = {"job": {}, "Hudi's defaults": HUDI_DEFAULTS}
# S3A's counters by the request each counts (others count the same requests again, or totals).
OPERATIONS = {"object_metadata_request": "HEAD", "object_list_request": "LIST", "object_continue_list_request": "LIST",
              "action_http_get_request": "GET", "object_put_request": "PUT", "object_copy_requests": "COPY",
              "object_delete_request": "DELETE", "object_bulk_delete_request": "DELETE (bulk)",
              "multipart_upload_part_put": "PUT (part)", "object_multipart_initiated": "POST (multipart)"}


def report(settings: Settings, results: Results) -> None:
    spark = spark_for(settings)
    try:
        branches, mutator = LakeBranches(settings, spark), Mutator(settings)
        per_commit = {name: requests_per_commit(settings, spark, branches, mutator, changed)
                      for name, changed in SETTINGS.items()}
    finally:
        spark.stop()
    operations = sorted(set().union(*per_commit.values()), key=lambda op: -per_commit["job"].get(op, 0))
    table = Table(title=f"{SECTION}: one changed row of {TABLE}, Copy-on-Write (mean of {COMMITS} commits)")
    table.add_column("operation")
    for name in per_commit:
        table.add_column(name, justify="right")
    for op in [*operations, "total"]:
        counts = [sum(c.values()) if op == "total" else c.get(op, 0) for c in per_commit.values()]
        table.add_row(op, *(f"{n:.1f}" for n in counts))
    Console().print(table)
    for name, counts in per_commit.items():
        key = "job" if name == "job" else "hudi_defaults"
        results.add(SECTION, f"s3.{key}.total", f"S3 requests per commit, {name}", sum(counts.values()), "requests")
        for op, n in counts.items():
            results.add(SECTION, f"s3.{key}.{op}", f"S3 {op} per commit, {name}", n, "requests")


def requests_per_commit(settings: Settings, spark, branches: LakeBranches, mutator: Mutator,
                        changed: dict[str, str]) -> dict[str, float]:
    """The mean S3 requests, by S3A counter, of `COMMITS` micro-batches each committing one changed row."""
    pipeline = pipeline_on_new_lake(settings, spark, branches, only=[TABLE])
    topic = pipeline.config.spec(TABLE).topic
    total = Counter()
    try:
        with hudi_options_changed(changed):
            pipeline.run_once()  # the branch's gap, and the table's first commit under these settings
            for _ in range(COMMITS):
                held = end_offsets(settings.endpoint("kafka").address, [topic])
                mutator.touch(TABLE)
                wait_until(lambda: end_offsets(settings.endpoint("kafka").address, [topic]) != held, 60,
                           f"the change in {topic}")
                before = s3a_requests(spark, pipeline.config.lake)
                pipeline.run_once()
                total += s3a_requests(spark, pipeline.config.lake) - before
    finally:
        finish([pipeline], failed=False)
    return {op: n / COMMITS for op, n in total.items()}


@contextmanager
def hudi_options_changed(changed: dict[str, str]):
    original = cdc_hudi_job.hudi_options
    cdc_hudi_job.hudi_options = lambda *args: original(*args) | changed
    try:
        yield
    finally:
        cdc_hudi_job.hudi_options = original


def s3a_requests(spark, lake: str) -> Counter:
    """The requests S3A made for the lake's bucket so far, by HTTP operation (one file system instance per bucket
    and user)."""
    jvm = spark._jvm
    uri = jvm.java.net.URI(lake.split("/", 3)[0] + "//" + lake.split("/", 3)[2] + "/")
    counters = jvm.org.apache.hadoop.fs.FileSystem.get(uri, spark._jsc.hadoopConfiguration()).getIOStatistics() \
        .counters()
    made = Counter()
    for counter, operation in OPERATIONS.items():
        made[operation] += int(counters.get(counter) or 0)
    return made
