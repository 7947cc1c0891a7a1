"""The job file on the sandbox's Spark standalone cluster (a master and two workers, started once for the session):
its driver a process of its own, its tasks in the workers' executors. On the team project's tables (a composite key,
partitions a row moves between, Merge-on-Read with hard deletes, Postgres and MariaDB types at their edges): silver
and its time travel equal the sources in continuous and run-once modes, a worker killed while a micro-batch runs
loses nothing and writes nothing twice (the oracle's duplicate and time-travel checks), and a schema version that
appears mid-stream is decoded in the executors. The team's own job file goes there too, by its `{master}`; and a
bug only a cluster shows (its workers run in another zone than the driver) passes in local mode and is caught there.

Its tables and topics are the team project's own, so it runs in the projects' lane beside TICKIT's tests
(`tests/full_suite.py`), and the cluster starts and stops in that run alone."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import uuid
from contextlib import contextmanager

import psutil
import pytest

from cdc_sandbox.config import Settings
from cdc_sandbox.harness.running import job_adapters
from cdc_sandbox.harness.running.lakes_for_tests import finish, pipeline_on_new_lake
from cdc_sandbox.harness.checking.oracle import Oracle, RunStats
from cdc_sandbox.sources.mutations import Mutator
from cdc_sandbox.stack import backends, listening, orphans, process
from cdc_sandbox.stack.services.spark_cluster import SparkWorker1, executors_of, master_state
from cdc_sandbox.wait import wait_until
from tests import PROJECT_ROOT
from tests.broken_variants import Catch, expect_catch

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TEAM_TABLES = ["accounts", "shipments", "ledger_entries"]
SUBMITTED = PROJECT_ROOT / "examples" / "team_job" / "sandbox-job-submitted.yaml"
DAEMONS = ("spark_master", "spark_worker_1", "spark_worker_2")
APP_ID = re.compile(r"Connected to Spark cluster with app ID (app-[\w-]+)")
RUNNING_TASK = re.compile(r"Executor: Running task")
EXECUTOR_LOST = re.compile(r"Lost executor|Executor lost|removed: ")
BROKEN_JOB = PROJECT_ROOT / "tests" / "broken_job.py"
# variant -> the table it is shown on, and the failure it must cause there on the cluster alone
CAUGHT_ON_THE_CLUSTER = {"dates-in-the-process-zone": ("shipments", Catch("snapshot", "shipments", "ship_date"))}


def test_status_shows_the_master_and_its_two_workers_on_loopback(sandbox, spark_cluster):
    """As a sandbox brought up with the cluster (`sandbox up --with spark-cluster`, here SANDBOX_WITH) shows it: its
    daemons and their executors listen on loopback alone."""
    with_cluster = Settings.load(dict(sandbox.env, SANDBOX_WITH="spark-cluster",
                                      SANDBOX_STATE_DIR=str(sandbox.state_dir)))
    statuses, _ = backends.of(with_cluster).status(with_cluster)
    shown = {status.service: status for status in statuses if status.service in DAEMONS}
    assert {name: status.state for name, status in shown.items()} == dict.fromkeys(DAEMONS, "running")
    assert shown["spark_master"].note.startswith(f"{spark_cluster}: 2 workers alive"), shown["spark_master"].note
    assert not any(status.beyond_loopback for status in shown.values()), shown
    printed = subprocess.run([sys.executable, "-m", "cdc_sandbox", "status"], capture_output=True, text=True,
                             timeout=120, env={**with_cluster.env, "COLUMNS": "200"}).stdout
    assert f"spark_master: {spark_cluster}: 2 workers alive" in printed, printed
    cluster = [process for process, service in orphans.servers_in(sandbox.state_dir) if service in DAEMONS]
    assert not [listening.beyond_loopback(listening.listening_addresses(process.pid)) for process in cluster
                if listening.beyond_loopback(listening.listening_addresses(process.pid))]


def test_the_job_on_the_cluster_keeps_every_table_equal_to_its_source_through_a_lost_worker(
        request, sandbox, team, spark, spark_cluster):
    """Continuous micro-batches over every table of the project, a worker (and its executor) killed while a
    micro-batch runs on it, a column added mid-stream, then a run-once round once the worker is back: each round
    checked, and every commit at the end."""
    with _under_the_oracle(request, team, spark, TEAM_TABLES, job_adapters.builtin_submitted(spark_cluster)) as \
            (pipeline, mutator, oracle):
        pipeline.start_continuous()
        oracle.track(TEAM_TABLES)
        mutator.random_batch(24, seed=201)
        oracle.round("continuous")
        app = _app_id(sandbox, pipeline)
        assert all(executors_of(sandbox, worker, app) for worker in DAEMONS[1:]), f"{app} runs on both workers"
        _kill_worker_1_mid_batch(sandbox, pipeline, app,
                                 lambda: mutator.random_batch(200, seed=202, tables=["shipments"]))
        oracle.round("worker 1 killed mid-batch")
        column = f"note_{uuid.uuid4().hex[:6]}"
        mutator.add_column("shipments", column, "text")
        try:
            row = mutator.sample_row("shipments", random.Random(204))
            mutator.update("shipments", {"shipment_id": row["shipment_id"]}, {column: "a schema version new to it"})
            oracle.round("a column added: its schema version decoded by the executors")
        finally:
            mutator.drop_column("shipments", column)
        pipeline.stop_continuous()
        mutator.random_batch(24, seed=203)
        oracle.round("run once")  # the pipeline submits one run of the job for it
        app = _app_id(sandbox, pipeline)
        assert all(executors_of(sandbox, worker, app) for worker in DAEMONS[1:]), f"{app} runs on both workers"
        oracle.verify_history()


def test_a_teams_submitted_job_runs_on_the_cluster(request, sandbox, team, spark, spark_cluster):
    """The team's job file as it is (`--master {master}` in its submit line), sent to the cluster instead."""
    shipments = team.topology.table("shipments")
    topic = team.topology.topic(shipments.namespace, shipments.name)
    team_job = job_adapters.load(SUBMITTED, {"ordering": "source_sequence", "table.shipments.topic": topic,
                                     "table.shipments.key": "shipment_id"}).on_cluster(spark_cluster)
    with _under_the_oracle(request, team, spark, ["shipments"], team_job) as (pipeline, mutator, oracle):
        pipeline.start_continuous()
        oracle.track(["shipments"])
        mutator.random_batch(6, seed=205, tables=["shipments"])
        oracle.round()
        applications = master_state(sandbox)["activeapps"]
        assert any(app["name"] == "team-cdc-job" for app in applications), applications


@pytest.mark.parametrize("variant", list(CAUGHT_ON_THE_CLUSTER))
def test_a_bug_only_a_cluster_shows_passes_in_local_mode_and_is_caught_there(request, variant, sandbox, team, spark,
                                                                             spark_cluster):
    """The variant's own driver (`tests/broken_job.py`) in local mode, then on the cluster, over the same changes:
    silver equals the source in the one and shows the variant's mismatch in the other."""
    table, catch = CAUGHT_ON_THE_CLUSTER[variant]
    entry = [str(BROKEN_JOB), variant]
    with _under_the_oracle(request, team, spark, [table], job_adapters.builtin_submitted(None, entry)) as \
            (pipeline, mutator, oracle):
        pipeline.start_continuous()
        oracle.track([table])
        mutator.random_batch(8, seed=206, tables=[table])
        oracle.round("in local mode")
    judged = expect_catch(request, variant, f"team project, {table}", "continuous, on the Spark cluster", (catch,))
    with _under_the_oracle(request, team, spark, [table], job_adapters.builtin_submitted(spark_cluster, entry)) as \
            (pipeline, mutator, oracle):
        pipeline.start_continuous()
        with pytest.raises(AssertionError) as caught:  # a verdict, not a time-out (SandboxError)
            oracle.track([table])
    assert not (wrong := judged(caught.value)), f"{variant}: {wrong}"


@contextmanager
def _under_the_oracle(request, settings, spark, tables: list[str], job):
    """A pipeline of `job` on a new lake of these project tables (their topics' history written by the job), with
    a mutator and an oracle of its own; stopped afterwards, its lake kept if the test failed."""
    pipeline = pipeline_on_new_lake(settings, spark, None, only=tables, job_under_test=job)
    failed = True
    try:
        mutator = Mutator(settings)
        yield pipeline, mutator, Oracle(settings, pipeline, mutator,
                                        timeout=request.config.getoption("--oracle-timeout"), stats=RunStats())
        failed = False
    finally:
        finish([pipeline], failed=failed)


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
    """SIGKILL the worker and every process under it; one that has ended by itself meanwhile (the worker's short-lived
    helpers, an executor exiting with its worker) is already where the kill would put it."""
    assert not process.kill_all(process.family(psutil.Process(pid)), 30), "the worker's family outlived SIGKILL"
