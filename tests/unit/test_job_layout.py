"""The job's silver layout (Hudi's bucket index and each table's bucket count, the type of `_source_position`): a
table an earlier version wrote without buckets is recognised by its file names, so the job refuses it; a baseline
written without buckets, with other bucket counts or under another position layout (the marker beside it) is
rebuilt by the harness instead of copied."""

from __future__ import annotations

import json

from cdc_sandbox.harness.running.lake_branch import layout_is_current, layout_marker
from cdc_sandbox.spark_jobs.cdc_hudi_job import BUCKETS_KEY, hudi_options, written_with_buckets
from cdc_sandbox.spark_jobs.decode import POSITION_LAYOUT
from cdc_sandbox.spark_jobs.job_config import JobConfig, TableSpec

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


def test_the_job_writes_with_the_bucket_index_and_records_each_tables_count():
    config = JobConfig(kafka_bootstrap="k:9092", registry_url="http://r", lake="s3a://lake",
                       tables=(TableSpec("t.ems.category", "category", ("catid",), "lsn"),
                               TableSpec("t.ecomm.sale", "sale", ("salesid",), "binlog", buckets=4)), buckets=3)
    category, sale = (hudi_options(config, spec, 1, 0) for spec in config.tables)
    assert category["hoodie.index.type"] == "BUCKET"
    assert (category["hoodie.bucket.index.num.buckets"], category[BUCKETS_KEY]) == ("3", "3")
    assert (sale["hoodie.bucket.index.num.buckets"], sale[BUCKETS_KEY]) == ("4", "4")


def test_a_tables_bucket_count_the_kafka_options_and_the_registry_pauses_survive_the_config_file():
    config = JobConfig(kafka_bootstrap="k:9092", registry_url="http://r", lake="s3a://lake",
                       tables=(TableSpec("t.ecomm.sale", "sale", ("salesid",), "binlog", buckets=4),
                               TableSpec("t.ems.category", "category", ("catid",), "lsn")),
                       kafka_options={"kafka.request.timeout.ms": "5000"}, registry_retry_pauses=(0.1, 0.2))
    assert JobConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


SILVER = "_baseline/silver/sale"
CONFIG = JobConfig(kafka_bootstrap="k:9092", registry_url="http://r", lake="s3a://lake/_baseline",
                   tables=(TableSpec("t.ecomm.sale", "sale", ("salesid",), "binlog", buckets=2),))


def test_an_empty_baseline_is_current():
    assert layout_is_current([], None, CONFIG)


def test_a_baseline_is_current_only_under_the_jobs_position_layout_and_bucket_counts():
    keys = [f"{SILVER}/.hoodie/hoodie.properties", f"{SILVER}/{BUCKETED_BASE}", f"{SILVER}/{BUCKETED_LOG}"]
    assert layout_is_current(keys, layout_marker(CONFIG), CONFIG)
    assert not layout_is_current(keys, None, CONFIG), "written before the marker: binlog positions as a long"
    assert not layout_is_current(keys, str(POSITION_LAYOUT), CONFIG), "written before bucket counts were marked"
    assert not layout_is_current(keys, f"{POSITION_LAYOUT - 1} sale=2", CONFIG)
    assert not layout_is_current(keys, f"{POSITION_LAYOUT} sale=1", CONFIG), "written with another bucket count"
    assert not layout_is_current([f"{SILVER}/{SIMPLE_BASE}"], layout_marker(CONFIG), CONFIG), "written without buckets"

