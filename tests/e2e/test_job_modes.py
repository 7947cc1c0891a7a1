"""A job killed mid-batch resumes to the same silver. (The job modes under the oracle: test_job_mode_matrix.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
from urllib.parse import urlparse

import pytest

from sandbox import class_archive, job
from sandbox.wait import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_job_killed_mid_batch_resumes_to_the_uninterrupted_result(sandbox, pipeline, s3, tmp_path):
    lake = pipeline.config.lake + "-killed"
    tables = ["category", "date", "venue"]  # both engines; a new table's first upsert outlasts the bronze write
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
