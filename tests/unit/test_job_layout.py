"""The job's silver layout (Hudi's bucket index, the type of `_source_position`): a table an earlier version wrote
without buckets is recognised by its file names, so the job refuses it; a baseline written without buckets or under
another position layout (the marker beside it) is rebuilt by the harness instead of copied."""

from __future__ import annotations

from sandbox.lake_branch import layout_is_current
from spark_jobs.cdc_hudi_job import hudi_options, written_with_buckets
from spark_jobs.decode import POSITION_LAYOUT
from spark_jobs.job_config import JobConfig, TableSpec

BUCKETED_BASE = "00000000-7dfb-499b-83a5-d37dd9bb5a47-0_0-93-504_20261123211010476.parquet"
BUCKETED_LOG = ".00000001-7dfb-499b-83a5-d37dd9bb5a47-0_20261123211010476.log.1_0-10-20"
SIMPLE_BASE = "ccc02eba-a4e3-4931-8cba-a8e3e5b9db4e-0_1-158-603_20261123210549675.parquet"
DIGITS_ONLY_UUID = "31415926-a4e3-4931-8cba-a8e3e5b9db4e-0_1-158-603_20261123210549675.parquet"


def test_bucketed_files_and_other_files_pass():
    assert written_with_buckets(BUCKETED_BASE, 1)
    assert written_with_buckets(BUCKETED_LOG, 2)
    assert written_with_buckets(".hoodie_partition_metadata", 1)


def test_files_of_a_table_without_buckets_are_recognised():
    assert not written_with_buckets(SIMPLE_BASE, 1)
    assert not written_with_buckets(DIGITS_ONLY_UUID, 1), "a random file id of digits is no bucket below the count"
    assert not written_with_buckets(BUCKETED_LOG, 1), "bucket 1 does not exist in a one-bucket table"


def test_the_job_writes_with_the_bucket_index_and_the_configured_count():
    config = JobConfig(kafka_bootstrap="k:9092", registry_url="http://r", lake="s3a://lake",
                       tables=(TableSpec("t.ems.category", "category", ("catid",), "lsn"),), buckets=3)
    options = hudi_options(config, config.tables[0], 1, 0)
    assert options["hoodie.index.type"] == "BUCKET"
    assert options["hoodie.bucket.index.num.buckets"] == "3"


SILVER = "_baseline/silver/sale"


def test_an_empty_baseline_is_current():
    assert layout_is_current([], None, 1)


def test_a_baseline_is_current_only_under_the_jobs_position_layout():
    keys = [f"{SILVER}/.hoodie/hoodie.properties", f"{SILVER}/{BUCKETED_BASE}"]
    assert layout_is_current(keys, str(POSITION_LAYOUT), 1)
    assert not layout_is_current(keys, None, 1), "written before the marker: binlog positions as a long"
    assert not layout_is_current(keys, str(POSITION_LAYOUT - 1), 1)
    assert not layout_is_current([f"{SILVER}/{SIMPLE_BASE}"], str(POSITION_LAYOUT), 1), "written without buckets"
