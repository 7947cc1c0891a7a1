"""The Spark cluster's settings without starting it: the optional service a sandbox remembers, the daemons' command
lines, and what spark-submit is given to run the job on it."""

from __future__ import annotations

import zipfile
from dataclasses import replace

import pytest

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.running import sandbox_job
from cdc_sandbox.stack.backends import native
from cdc_sandbox.stack.services.spark_cluster import SparkMaster, SparkWorker2, master_url


@pytest.fixture
def settings(tmp_path):
    return Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "state"), "SANDBOX_TOOLS_DIR": str(tmp_path / "tools"),
                          "SANDBOX_SPARK_MASTER_PORT": "17077"})


def test_the_cluster_is_remembered_once_asked_for_and_an_unknown_name_is_refused(settings, tmp_path):
    assert settings.optional_services == ()
    assert not any(svc.name.startswith("spark_") for svc in native.all_services(settings))
    settings.record_optional_services([])
    assert not settings.state_dir.exists(), "nothing written when nothing is asked for"
    settings.record_optional_services(["spark-cluster"])
    again = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "state")})
    assert again.optional_services == ("spark-cluster",)
    assert [svc.name for svc in native.all_services(again)][-3:] == ["spark_master", "spark_worker_1",
                                                                      "spark_worker_2"]
    with pytest.raises(SandboxError, match="no optional service named trino"):
        again.record_optional_services(["trino"])
    for_one_command = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "other"), "SANDBOX_WITH": "spark-cluster"})
    assert for_one_command.optional_services == ("spark-cluster",)
    with pytest.raises(SandboxError, match="SANDBOX_WITH names no optional service trino"):
        Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "other"), "SANDBOX_WITH": "trino"}).optional_services


def test_the_daemons_listen_on_loopback_at_the_sandboxs_ports(settings):
    master, worker = SparkMaster(settings), SparkWorker2(settings)
    assert master_url(settings) == "spark://127.0.0.1:17077"
    assert master.arguments() == ["--host", "127.0.0.1", "--port", "17077", "--webui-port", "8090"]
    assert worker.arguments()[-1] == "spark://127.0.0.1:17077" and "--cores" in worker.arguments()
    assert master.environment()["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert worker.ports == [7079, 8092]


def test_the_job_is_submitted_to_the_cluster_with_its_python_files_and_the_nodes_jars(settings, tmp_path):
    jars = [tmp_path / "hudi-bundle.jar", tmp_path / "hadoop-aws.jar"]
    for jar in jars:
        jar.write_bytes(b"PK")
    config = replace(sandbox_job.job_config(settings), jars=[str(jar) for jar in jars])
    options = sandbox_job.cluster_options(settings, config, "spark://127.0.0.1:17077", once=True)
    command = sandbox_job.spark_submit_command(config, settings.state_dir / "config.json", once=True, cluster=options)
    assert command[command.index("--master") + 1] == "spark://127.0.0.1:17077" and "local[2]" not in command
    archive = options[options.index("--py-files") + 1]
    with zipfile.ZipFile(archive) as zipped:
        assert "cdc_sandbox/spark_jobs/cdc_hudi_job.py" in zipped.namelist()
    assert sandbox_job.python_archive(settings) == sandbox_job.python_archive(settings).resolve(), "made once"
    assert f"--conf=spark.executor.extraJavaOptions={sandbox_job.QUICK_COMPILER}" in options, "a run-once's executors too"
    executor_path = next(o for o in options if o.startswith("--conf=spark.executor.extraClassPath="))
    assert executor_path.split("=", 2)[2] == f"{jars[0]}:{jars[1]}"
