"""Bad input to the running sandbox fails fast with a message that names the cause, and touches no existing data.
(Bad input that needs no running sandbox: test_bad_input_scratch.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from sandbox.harness import job
from sandbox.stack import backends, process
from tests.e2e.scratch_sandbox import run_up, scratch_sandbox_env

pytestmark = pytest.mark.e2e


def test_port_held_by_the_running_sandbox_names_that_service(tmp_path, sandbox):
    backend = backends.of(sandbox)
    before = backend.instances(sandbox)
    port = sandbox.ports["kafka"]
    holder = process.process_on_port(port)  # natively Kafka itself, under compose Docker's port proxy
    env = scratch_sandbox_env(tmp_path, sandbox, SANDBOX_KAFKA_PORT=str(port))
    result = run_up(env)
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 1
    assert f"port {port} (kafka) is in use by {holder.split(':')[0]}" in output
    assert backend.instances(sandbox) == before, "the running sandbox is untouched"
    _, connectors = backend.status(sandbox)
    assert {state for _, state in connectors} == {"RUNNING"}


def test_job_run_on_a_bucket_that_does_not_exist_says_so(sandbox):
    result = subprocess.run([sys.executable, "-m", "sandbox", "job", "run", "--lake", "s3a://no-such-bucket/x",
                             "--table", "category"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "no-such-bucket" in result.stdout and "does not have" in result.stdout, result.stdout
    assert f"s3a://{sandbox.topology.lake_bucket}/<prefix>" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_kafka_data_loss_stops_the_job_unless_allowed_and_so_does_a_lake_that_lost_data(sandbox, spark, s3):
    """Changes the topic no longer holds (deleted records, a recreated topic) stop the job: a lake that silently
    skipped them would be judged against a source it no longer mirrors. The other way round, a lake that lost data
    its checkpoint vouches for is refused by `sandbox job run`, which would otherwise never read that data again."""
    from dataclasses import replace

    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from sandbox.harness.checkpoint import delete_prefix, unvouched_batch
    from sandbox.harness.lakes_for_tests import new_lake
    from spark_jobs import cdc_hudi_job
    from spark_jobs.job_config import TableSpec

    bootstrap = sandbox.endpoint("kafka").address
    topic = f"sandbox-data-loss-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    lake = new_lake(sandbox, "data-loss")
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    try:
        producer = Producer({"bootstrap.servers": bootstrap})
        for n in range(3):
            producer.produce(topic, value=b"not an avro change %d" % n)
        producer.flush(30)
        admin.delete_records([TopicPartition(topic, 0, 2)])[TopicPartition(topic, 0, 2)].result(30)
        config = replace(job.job_config(sandbox, lake=lake, only=["category"]),
                         tables=(TableSpec(topic, "category", ("catid",), "lsn"),), starting_offsets={topic: {"0": 0}},
                         catalog_database="")
        with pytest.raises(Exception, match="failOnDataLoss"):
            cdc_hudi_job.run(spark, config, once=True, report=lambda line: None)
        allowed = replace(config, lake=config.lake + "-allowed", fail_on_data_loss=False)
        summaries = []
        cdc_hudi_job.run(spark, allowed, once=True, report=summaries.append)
        assert sum(json.loads(s).get("quarantined", 0) for s in summaries) == 1, "only the record still in Kafka"
        assert unvouched_batch(s3, allowed.lake) is None
        delete_prefix(s3, f"{allowed.lake}/bronze")
        assert "micro-batch 0 is committed, but bronze holds no data of it" in unvouched_batch(s3, allowed.lake)
        result = subprocess.run([sys.executable, "-m", "sandbox", "job", "run", "--lake", allowed.lake],
                                capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "400"})
        assert result.returncode == 1 and f"--from-scratch --lake {allowed.lake}" in result.stdout, result.stdout
    finally:
        admin.delete_topics([topic])
        delete_prefix(s3, lake, whole_names=False)


