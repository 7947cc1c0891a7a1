"""Bad input fails fast with a message that names the cause, and touches no existing data."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid

import port_for
import pytest

from cdc_sandbox.config import DEFAULT_PORTS, Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.running import sandbox_job
from cdc_sandbox.stack import backends, jvm, process

pytestmark = pytest.mark.e2e


def scratch_sandbox_env(tmp_path, sandbox, **overrides) -> dict[str, str]:
    """Environment for a second sandbox in `tmp_path` on free ports, sharing the installed tools."""
    env = dict(os.environ, SANDBOX_STATE_DIR=str(tmp_path / "state"), SANDBOX_TOOLS_DIR=str(sandbox.tools_dir))
    for service in DEFAULT_PORTS:
        env[f"SANDBOX_{service.upper()}_PORT"] = str(port_for.select_random())
    env.update(overrides)
    return env


def run_up(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc_sandbox", "up", "--skip-install"], env=env,
                          capture_output=True, text=True, timeout=300)


def nothing_runs(env: dict[str, str], backend: str) -> bool:
    """No service of the scratch sandbox in `env` was started (asked of its backend)."""
    scratch = Settings.load(env, backend=backend)
    return not any(backends.of(scratch).instances(scratch).values())


def test_port_in_use_fails_fast_naming_port_and_process(tmp_path, sandbox):
    keep = tmp_path / "state" / "data" / "postgres" / "precious.txt"
    keep.parent.mkdir(parents=True)
    keep.write_text("loaded data")
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        scratch_env = scratch_sandbox_env(tmp_path, sandbox, SANDBOX_POSTGRES_PORT=str(port))
        result = run_up(scratch_env)
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 1
    assert f"port {port} (postgres) is in use by pid {os.getpid()}" in output
    assert "SANDBOX_POSTGRES_PORT" in output, "the message says how to pick another port"
    assert keep.read_text() == "loaded data"
    assert nothing_runs(scratch_env, sandbox.backend)


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


def test_missing_java_is_named(tmp_path, sandbox):
    # The native backend runs Kafka, Connect and Apicurio on the host's Java (a Docker host can choose it too).
    env = scratch_sandbox_env(tmp_path, sandbox, PATH=os.path.dirname(sys.executable), SANDBOX_BACKEND="native")
    env.pop("JAVA_HOME", None)
    result = run_up(env)
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 1
    assert "Java was not found" in output and "openjdk-17" in output
    assert nothing_runs(env, "native")


def test_unresolvable_maven_artifact_is_named(tmp_path):
    with pytest.raises(SandboxError) as failure:
        jvm.resolve_jvm_artifacts(tmp_path / "jvm", overrides={"debezium.version": "0.0.0.NoSuchRelease"})
    message = str(failure.value)
    assert "io.debezium:debezium-connector-postgres:tar.gz:plugin:0.0.0.NoSuchRelease" in message
    assert not (tmp_path / "jvm").exists(), "a failed resolution leaves no half-filled layout"


def test_job_run_on_a_bucket_that_does_not_exist_says_so(sandbox):
    result = subprocess.run([sys.executable, "-m", "cdc_sandbox", "job", "run", "--lake", "s3a://no-such-bucket/x",
                             "--table", "category"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "no-such-bucket" in result.stderr and "does not have" in result.stderr, result.stderr
    assert f"s3a://{sandbox.topology.lake_bucket}/<prefix>" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_kafka_data_loss_stops_the_job_unless_allowed_and_so_does_a_lake_that_lost_data(sandbox, spark, s3):
    """Changes the topic no longer holds (deleted records, a recreated topic) stop the job: a lake that silently
    skipped them would be judged against a source it no longer mirrors. The other way round, a lake that lost data
    its checkpoint vouches for is refused by `sandbox job run`, which would otherwise never read that data again."""
    from dataclasses import replace

    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from cdc_sandbox.harness.running.checkpoint import unvouched_batch
    from cdc_sandbox.spark_jobs.lake_layout import delete_prefix
    from cdc_sandbox.harness.running.lake_buckets import remove_lake
    from cdc_sandbox.harness.running.lakes_for_tests import new_lake
    from cdc_sandbox.spark_jobs import cdc_hudi_job
    from cdc_sandbox.spark_jobs.job_config import TableSpec

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
        config = replace(sandbox_job.job_config(sandbox, lake=lake, only=["category"]),
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
        result = subprocess.run([sys.executable, "-m", "cdc_sandbox", "job", "run", "--lake", allowed.lake],
                                capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "400"})
        assert result.returncode == 1 and f"--from-scratch --lake {allowed.lake}" in result.stderr, result.stderr
    finally:
        admin.delete_topics([topic])
        remove_lake(sandbox, lake, whole_names=False)


def sandbox_command(env: dict[str, str], *args: str) -> tuple[int, str]:
    result = subprocess.run([sys.executable, "-m", "cdc_sandbox", *args], env=env, capture_output=True, text=True,
                            timeout=120)
    return result.returncode, " ".join((result.stdout + result.stderr).split())


@pytest.mark.parametrize("command", [("load",), ("mutate", "delete", "date", '{"dateid": 1}'),
                                     ("mutate", "update", "category", '{"catid": 1}', '{"catname": "x"}')])
def test_load_and_mutate_with_the_databases_down_say_which_and_what_to_do(tmp_path, sandbox_settings, command):
    env = scratch_sandbox_env(tmp_path, sandbox_settings)  # nothing listens on its ports
    code, output = sandbox_command(env, *command)
    assert code == 1 and "Traceback" not in output, output
    assert "cannot connect to" in output and "sandbox up" in output, output
    assert not (tmp_path / "state" / "journal.jsonl").exists() or \
        not (tmp_path / "state" / "journal.jsonl").read_text().strip(), "nothing journaled"


@pytest.mark.parametrize("body", [b"<html>not found</html>", "a zip without TICKIT"])
def test_download_of_something_other_than_the_tickit_zip_says_so(tmp_path, sandbox_settings, body):
    import http.server
    import io
    import threading
    import zipfile

    if isinstance(body, str):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("readme.txt", "not the sample")
        body = buffer.getvalue()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = scratch_sandbox_env(tmp_path, sandbox_settings,
                                  SANDBOX_TICKIT_URL=f"http://127.0.0.1:{server.server_port}/tickitdb.zip")
        code, output = sandbox_command(env, "load", "--download")
    finally:
        server.shutdown()
    assert code == 1 and "Traceback" not in output, output
    assert ("did not send a zip file" in output or "is not TICKIT" in output) and "sandbox load" in output, output
    assert not (tmp_path / "state" / "tickit" / "real").exists(), "nothing kept of a wrong download"
