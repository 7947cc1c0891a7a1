"""A job stopped after its first micro-batch wrote silver but before Spark committed the batch (the window a stop
during a batch can hit) runs the whole batch again when it restarts: on a lake of its own that is the topic from
its start. Silver stays exact, and the oracle counts every key the re-run rewrote as re-delivered, reading where
Spark resolved the batch's start, also when the job was told "earliest"."""

from __future__ import annotations

import pytest

from cdc_sandbox.harness.running.checkpoint import committed_offsets
from cdc_sandbox.spark_jobs.lake_layout import split_uri

pytestmark = [pytest.mark.e2e]


@pytest.mark.parametrize("branch", [False, True], ids=["own lake from the earliest offsets", "branched lake"])
def test_a_first_batch_cut_short_before_its_commit_runs_again_and_silver_stays_exact(
        branch, pipeline_factory, oracle_factory, mutator, s3):
    pipeline = pipeline_factory(only=["venue"], branch=branch)
    oracle = oracle_factory(pipeline)
    oracle.track(["venue"])  # the job runs once: its first micro-batch writes silver and commits
    checkpoint = pipeline.config.checkpoint()
    bucket, prefix = split_uri(checkpoint)
    s3.delete_object(Bucket=bucket, Key=f"{prefix}/commits/0")  # as a stop between silver's commit and Spark's
    assert committed_offsets(s3, checkpoint) == {}
    pipeline.start_continuous()
    mutator.touch("venue")
    oracle.round("after the first batch ran again")
    assert [commit.batch_id for commit in pipeline.timeline("venue")][-2:] == [0, 1], "batch 0 ran again"
    oracle.verify_history()
