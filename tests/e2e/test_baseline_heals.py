"""A baseline lake its job can no longer write is rebuilt from the topics instead of being handed to every later
test: here one whose `date` table lost its table properties (`.hoodie/hoodie.properties`), which every write reads."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cdc_sandbox.harness.running import lake_branch
from cdc_sandbox.spark_jobs.lake_layout import object_keys, split_uri
from cdc_sandbox.harness.running.lake_buckets import remove_lake
from cdc_sandbox.harness.running.lake_branch import LakeBranches
from cdc_sandbox.harness.running.lakes_for_tests import new_lake
from cdc_sandbox.harness.running.pipeline import Pipeline
from cdc_sandbox.stack.services.localstack import sandbox_s3

pytestmark = [pytest.mark.e2e]


def test_a_baseline_its_job_fails_on_is_rebuilt_from_the_topics(sandbox, spark, mutator, oracle_factory,
                                                                 pipeline_factory, monkeypatch):
    branches = LakeBranches(sandbox, spark)
    config = branches.baseline.config
    baseline_lake, s3 = new_lake(sandbox, "baseline"), sandbox_s3(sandbox)
    branches.baseline = Pipeline(sandbox, replace(config, lake=baseline_lake, tables=(config.spec("date"),)), spark,
                                 owns_session=False)
    first, lake = new_lake(sandbox), new_lake(sandbox)
    try:
        monkeypatch.setattr(lake_branch, "CATCH_UP_LAG", -1)  # catch up on every branch
        branches.branch(first, ["date"])  # builds the baseline
        bucket, prefix = split_uri(branches.baseline.config.silver_path("date"))
        for key in object_keys(s3, bucket, prefix + "/.hoodie/"):
            if "hoodie.properties" in key:
                s3.delete_object(Bucket=bucket, Key=key)
        mutator.touch("date")
        offsets = branches.branch(lake, ["date"])
        assert offsets is not None
        assert len(branches.rebuilt_after) == 1, "the baseline's job failed and it was rebuilt"
        assert "the job failed on a micro-batch: " in branches.rebuilt_after[0]
        assert "\n" not in branches.rebuilt_after[0], "its cause in one line"
        pipeline = pipeline_factory(only=["date"], branch=False)
        pipeline.config = replace(pipeline.config, lake=lake, starting_offsets=offsets)
        oracle = oracle_factory(pipeline)
        oracle.track(["date"])  # the branch of the rebuilt baseline holds the source's rows
        oracle.verify_history()
    finally:
        for made in (baseline_lake, first, lake):
            remove_lake(sandbox, made)
