"""The job killed with SIGKILL mid-batch, then `sandbox job run` on the same lake: silver equals the source and bronze
holds no change twice; a continuous `sandbox job run` stopped by a signal. (The job modes under the oracle: test_job_mode_matrix.py; the services killed:
test_faults.py.)"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from urllib.parse import urlparse

import pytest

from cdc_sandbox.stack import class_sharing
from cdc_sandbox.harness.running import sandbox_job
from cdc_sandbox.harness.running.checkpoint import unvouched_batch
from cdc_sandbox.spark_jobs.lake_layout import delete_prefix
from cdc_sandbox.harness.checking.oracle import Oracle
from cdc_sandbox.spark_jobs.cdc_hudi_job import STOP_GRACE_SECONDS
from cdc_sandbox.wait import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.faults]

TABLES = ["category", "date", "venue"]  # both engines; a new table's first upsert outlasts the bronze write


def test_job_killed_mid_batch_then_sandbox_job_run_reaches_the_source(request, sandbox, pipeline_factory, mutator,
                                                                      s3, tmp_path):
    lake = pipeline_factory(only=TABLES, branch=False)  # written by spark-submit from the earliest offsets
    lake.drives_job = False
    oracle = Oracle(sandbox, lake, mutator, timeout=request.config.getoption("--oracle-timeout"))
    for table in TABLES:  # the source positions the lake must reach, changed before the job first runs
        mutator.touch(table)
    killed = start_and_kill_mid_batch(sandbox, s3, lake.config, tmp_path)
    assert killed is None, "the job finished before it could be killed"

    run = [sys.executable, "-m", "cdc_sandbox", "job", "run", "--lake", lake.config.lake,
           *[arg for table in TABLES for arg in ("--table", table)]]
    result = subprocess.run(run, capture_output=True, text=True, timeout=1200)
    shown = " ".join(result.stdout.split())
    assert result.returncode == 0, shown[-2000:] + result.stderr[-2000:]
    assert re.search(r"batch \d+: ", shown) and " INFO " not in shown and "WARN" not in shown, "summaries, not Spark's log"

    oracle.track(TABLES, "after the restart")  # every row of the three tables against the source, both readers
    bronze = lake.spark.read.parquet(lake.config.bronze_path)
    assert bronze.count() == bronze.select("topic", "partition", "offset").distinct().count(), "no change twice in bronze"


def start_and_kill_mid_batch(sandbox, s3, config, tmp_path) -> int | None:
    """spark-submit the job once, SIGKILL it as soon as its first batch has written to bronze; returns its exit
    code if it ended by itself before that."""
    archive_option, _ = class_sharing.driver_java_options(sandbox, config, record=False)
    command = sandbox_job.spark_submit_command(config, sandbox_job.write_config(sandbox, config, tmp_path / "job.json"), once=True,
                                       java_options=archive_option)
    bucket, prefix = urlparse(config.lake).netloc, urlparse(config.lake).path.lstrip("/")
    killed = sandbox_job.launch(sandbox, command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, own_session=True)
    try:
        wait_until(lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/bronze/").get("KeyCount", 0) > 0
                   or killed.poll() is not None, 600, "the job to start writing its first batch")
        return killed.poll()
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()


def test_a_pause_that_cuts_a_batch_short_keeps_the_paused_changes_in_one_batch(pipeline_factory, oracle_factory,
                                                                              mutator):
    """Stopping a continuous job mid-batch leaves that batch to run again first when the job starts: the pause
    finishes it, so that the changes made while paused still reach the job together."""
    pipeline = pipeline_factory(only=["category"])
    oracle = oracle_factory(pipeline)
    pipeline.start_continuous()
    oracle.track(["category"])
    mutator.touch("category")
    oracle.wait_delivered()
    wait_until(lambda: pipeline.query.status["message"] == "Processing new data", 60, "the job to start a batch")
    oracle.pause()
    mutator.touch("category")
    mutator.touch("category")
    oracle.resume()
    oracle.round("changed while paused, after a batch was cut short")


@pytest.mark.parametrize("stop, exit_status", [(signal.SIGINT, 130), (signal.SIGTERM, 0)], ids=["SIGINT", "SIGTERM"])
def test_a_continuous_job_run_stops_cleanly_on_a_signal_to_the_cli_alone(sandbox, s3, mutator, tmp_path, stop,
                                                                         exit_status):
    """As a supervisor or `timeout` stops it (the signal to the CLI's process, not its group): the running
    micro-batch finishes, one line says so, the exit status follows the shell's convention, and the lake holds
    what its checkpoint vouches for."""
    lake = f"s3a://{sandbox.topology.lake_bucket}/test-stop-{stop.name.lower()}-{os.getpid()}"
    output = tmp_path / "job.out"
    with open(output, "w") as out:
        cli = subprocess.Popen([sys.executable, "-m", "cdc_sandbox", "job", "run", "--continuous", "--lake", lake,
                                "--table", "category"], stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: "batch 0:" in output.read_text() or cli.poll() is not None, 600, "the job's first batch")
        mutator.touch("category")  # a change for the batches after it
        cli.send_signal(stop)
        assert cli.wait(timeout=STOP_GRACE_SECONDS + 60) == exit_status, output.read_text()[-3000:]
        said = output.read_text()
        assert "job stopped between micro-batches" in said, said[-3000:]
        assert "Traceback" not in said and "job failed" not in said, said[-3000:]
        assert unvouched_batch(s3, lake) is None
    finally:
        if cli.poll() is None:
            cli.kill()
        delete_prefix(s3, lake, whole_names=False)
