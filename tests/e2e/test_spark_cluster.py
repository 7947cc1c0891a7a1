"""The job file on the sandbox's Spark standalone cluster (a master and two workers, started once for the session):
its driver a process of its own, its tasks in the workers' executors. Silver and its time travel equal the source
over every table in continuous and run-once modes, and a worker killed while a micro-batch runs loses nothing and
writes nothing twice (the oracle's duplicate and time-travel checks), and a schema version that appears mid-stream is
decoded in the executors."""

from __future__ import annotations

import random
import re
import uuid

import psutil
import pytest

from cdc_sandbox.harness import jobs
from cdc_sandbox.stack import backends
from cdc_sandbox.stack.services.spark_cluster import SparkWorker1, executors_of, master_state
from tests import PROJECT_ROOT
from cdc_sandbox.wait import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SUBMITTED = PROJECT_ROOT / "examples" / "team_job" / "sandbox-job-submitted.yaml"
ALL_TABLES = ["category", "venue", "date", "user", "event", "listing", "sale"]
DAEMONS = ("spark_master", "spark_worker_1", "spark_worker_2")
APP_ID = re.compile(r"Connected to Spark cluster with app ID (app-[\w-]+)")
RUNNING_TASK = re.compile(r"Executor: Running task")
EXECUTOR_LOST = re.compile(r"Lost executor|Executor lost|removed: ")


def test_status_shows_the_master_and_its_two_workers_on_loopback(sandbox, spark_cluster):
    statuses, _ = backends.of(sandbox).status(sandbox)
    shown = {status.service: status for status in statuses if status.service in DAEMONS}
    assert {name: status.state for name, status in shown.items()} == dict.fromkeys(DAEMONS, "running")
    assert shown["spark_master"].note.startswith(f"{spark_cluster}: 2 workers alive"), shown["spark_master"].note
    assert not any(status.beyond_loopback for status in shown.values()), shown


def test_the_job_on_the_cluster_keeps_every_table_equal_to_the_source_through_a_lost_worker(
        sandbox, spark_cluster, pipeline_factory, oracle_factory, mutator):
    """Continuous micro-batches over every table, a worker (and its executor) killed while a micro-batch of `sale`
    runs on it, a column added mid-stream, then a run-once round once the worker is back: each round checked, and
    every commit at the end."""
    pipeline = pipeline_factory(master=spark_cluster)
    oracle = oracle_factory(pipeline)
    pipeline.start_continuous()
    oracle.track(ALL_TABLES)
    mutator.random_batch(24, seed=201)
    oracle.round("continuous")
    app = _app_id(sandbox, pipeline)
    assert all(executors_of(sandbox, worker, app) for worker in DAEMONS[1:]), f"{app} runs on both workers"
    _kill_worker_1_mid_batch(sandbox, pipeline, app, lambda: mutator.random_batch(300, seed=202, tables=["sale"]))
    oracle.round("worker 1 killed mid-batch")
    column = f"note_{uuid.uuid4().hex[:6]}"
    mutator.add_column("venue", column, "text")
    try:
        row = mutator.sample_row("venue", random.Random(204))
        mutator.update("venue", {"venueid": row["venueid"]}, {column: "a schema version new to the job"})
        oracle.round("a column added: its schema version decoded by the executors")
    finally:
        mutator.drop_column("venue", column)
    pipeline.stop_continuous()
    mutator.random_batch(24, seed=203)
    oracle.round("run once")  # the pipeline submits one run of the job for it
    app = _app_id(sandbox, pipeline)
    assert all(executors_of(sandbox, worker, app) for worker in DAEMONS[1:]), f"{app} runs on both workers again"
    oracle.verify_history()


def test_a_teams_submitted_job_runs_on_the_cluster(sandbox, spark_cluster, pipeline_factory, oracle_factory, mutator):
    """The team's job file as it is (`--master {master}` in its submit line), sent to the cluster instead."""
    team_job = jobs.load(SUBMITTED, {"ordering": "source_sequence"})
    pipeline = pipeline_factory(only=["category"], job=team_job, master=spark_cluster)
    oracle = oracle_factory(pipeline)
    pipeline.start_continuous()
    oracle.track(["category"])
    mutator.random_batch(6, seed=205, tables=["category"])
    oracle.round()
    applications = master_state(sandbox)["activeapps"]
    assert any(app["name"] != "tickit-cdc-hudi" for app in applications), applications


def _kill_worker_1_mid_batch(settings, pipeline, app: str, change) -> None:
    """Make the change, wait until the worker's executor runs a task of the micro-batch that reads it, then kill the
    worker and its executor; start the worker again once the driver has seen the executor go."""
    worker = SparkWorker1(settings)
    (executor,) = executors_of(settings, worker.name, app)
    tasks = settings.data_dir(worker.name) / "work" / app / str(executor["id"]) / "stderr"
    seen = tasks.stat().st_size
    change()
    wait_until(lambda: RUNNING_TASK.search(tasks.read_text()[seen:]), 120, f"a task on {worker.name}'s executor")
    _kill_with_its_executors(worker.pid())
    log = settings.log_file(f"job-{_lake_name(pipeline)}")
    wait_until(lambda: EXECUTOR_LOST.search(log.read_text()), 60, "the driver to see the executor go")
    worker.start()


def _lake_name(pipeline) -> str:
    return pipeline.config.lake.rstrip("/").rsplit("/", 1)[-1]


def _app_id(settings, pipeline) -> str:
    found = APP_ID.findall(settings.log_file(f"job-{_lake_name(pipeline)}").read_text())
    assert found, "the driver connected to the cluster"
    return found[-1]


def _kill_with_its_executors(pid: int) -> None:
    worker = psutil.Process(pid)
    family = [worker, *worker.children(recursive=True)]
    for process in family:
        process.kill()
    psutil.wait_procs(family, timeout=30)
