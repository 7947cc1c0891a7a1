"""Merge-on-Read with compaction reads as Copy-on-Write; a job killed mid-batch resumes to the same silver."""

from __future__ import annotations

import os
import signal
import subprocess
from urllib.parse import urlparse

import pytest

from sandbox import class_archive, job
from sandbox.wait import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]




def test_merge_on_read_after_compaction_reads_as_copy_on_write(pipeline, settle):
    tables = ["category", "venue"]
    mor = pipeline.sibling(lake=pipeline.config.lake + "-mor", only=tables, table_type="MERGE_ON_READ",
                           compaction_delta_commits=2)
    mor.run_once()
    settle(tables)
    mor.run_once()  # the second delta commit: compaction runs inline after it
    pipeline.run_once()
    for table in tables:
        assert any(c.action == "commit" for c in mor.timeline(table)), f"{table}: no compaction commit"
        assert any(c.action == "deltacommit" for c in mor.timeline(table))
        assert mor.live_rows(mor.snapshot(table), table) == pipeline.live_rows(pipeline.snapshot(table), table)


def test_job_killed_mid_batch_resumes_to_the_uninterrupted_result(sandbox, pipeline, s3, tmp_path):
    lake = pipeline.config.lake + "-killed"
    tables = ["category", "date", "sale"]  # both engines, and a backlog long enough to be killed in the middle
    config = job.job_config(sandbox, lake=lake, only=tables)
    archive_option, _ = class_archive.java_options(sandbox, config, record=False)
    command = job.spark_submit_command(config, job.write_config(sandbox, config, tmp_path / "job.json"), once=True,
                                       java_options=archive_option)
    env = job.submit_environment(sandbox)
    bucket, prefix = urlparse(lake).netloc, urlparse(lake).path.lstrip("/")

    killed = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        wait_until(lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/bronze/").get("KeyCount", 0) > 0
                   or killed.poll() is not None, 600, "the job to start writing its first batch")
        assert killed.poll() is None, "the job finished before it could be killed"
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()

    restarted = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    assert restarted.returncode == 0, restarted.stderr[-2000:]
    pipeline.run_once()
    resumed = pipeline.sibling(lake=lake, only=tables)
    for table in tables:
        assert resumed.live_rows(resumed.snapshot(table), table) == pipeline.live_rows(pipeline.snapshot(table), table)
    bronze = pipeline.spark.read.parquet(resumed.config.bronze_path)
    assert bronze.count() == bronze.select("topic", "partition", "offset").distinct().count(), "no change twice in bronze"


def test_hard_deletes_remove_the_row_and_time_travel_still_has_it(sandbox, pipeline, mutator, kafka_bootstrap,
                                                                   registry):
    import random

    from sandbox.changes import ChangeReader

    hard = pipeline.sibling(lake=pipeline.config.lake + "-hard", only=["venue"], hard_deletes=True)
    placement = mutator.placement("venue")
    template = mutator.sample_row("venue", random.Random(8))
    new_id = mutator.next_key("venue") + 700
    with ChangeReader(kafka_bootstrap, sandbox.topology.topic("ems", "venue"), registry, from_end=True) as reader:
        inserted = mutator.insert("venue", {c: template[c] for c in placement.table.column_names} | {"venueid": new_id})
        reader.wait_for_change(inserted, 180)
        hard.run_once()
        alive_commit = hard.timeline("venue")[-1]
        deleted = mutator.delete("venue", {"venueid": new_id})
        reader.wait_for_change(deleted, 180)
    hard.run_once()
    assert hard.snapshot("venue").filter(f"venueid = {new_id}").count() == 0
    assert hard.time_travel("venue", alive_commit.instant).filter(f"venueid = {new_id}").count() == 1
