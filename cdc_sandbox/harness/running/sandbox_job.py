"""Running the PySpark Hudi job against this sandbox: its config from the topology, and spark-submit."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
from botocore.exceptions import BotoCoreError, ClientError

from cdc_sandbox.config import LOCALHOST, PACKAGE_DIR, CapturedTable, Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import class_sharing
from cdc_sandbox.stack.spark_home import spark_home
from cdc_sandbox.harness.running.lake_buckets import remove_lake
from cdc_sandbox.harness.running.checkpoint import unvouched_batch
from cdc_sandbox.spark_jobs.lake_layout import on_s3, split_uri
from cdc_sandbox.spark_jobs.job_config import JobConfig, TableSpec
from cdc_sandbox.spark_jobs.session import driver_conf
from cdc_sandbox.stack import jvm
from cdc_sandbox.stack.catalog import table_schema
from cdc_sandbox.stack.services.localstack import ACCESS_KEY, SECRET_KEY, sandbox_s3

JOB_FILE = PACKAGE_DIR / "spark_jobs" / "cdc_hudi_job.py"
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"  # the installed PySpark's
JOB_FAILED = "job failed: "  # begins the line naming the cause of a failed run
POSITION_KIND = {"postgres": "lsn", "mariadb": "binlog", "mysql": "binlog", "sqlserver": "sqlserver"}
# A copy-on-write upsert rewrites each file group it touches whole: TICKIT's large tables get several groups so that
# a small upsert rewrites only part of one, but not so many that the backlog and the reads slow down
# (docs/reference/job-settings.md).
TABLE_BUCKETS = {"listing": 8, "sale": 8, "user": 4}
# The JVM's quick compiler alone, for a run that processes what Kafka holds and exits: its optimizing compiler's
# threads cost more than their code saves in so short a life (docs/reference/job-settings.md).
QUICK_COMPILER = "-XX:TieredStopAtLevel=1"
EXECUTOR_MEMORY = "1g"  # within what a sandbox's Spark worker offers (`spark_cluster.WORKER_MEMORY`)
# Spark's streaming checkpoint writes each offsets and commits file to a temporary name and renames it, which S3A
# does by copying and deleting: 25 S3 requests a file, two files a micro-batch. This manager (spark-hadoop-cloud)
# writes the file in place through S3A's abortable stream, which makes it visible only when complete.
CHECKPOINT_MANAGER = {"spark.sql.streaming.checkpointFileManagerClass":
                      "org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager"}


def job_config(settings: Settings, lake: str | None = None, only: list[str] | None = None,
               table_settings: dict[str, dict] | None = None, **options) -> JobConfig:
    """The job's config for this sandbox: every captured table, or `only` the named ones; `table_settings` gives
    tables silver settings of their own ({table: {partition_by: [...], index: ...}}) over the project's."""
    topology = settings.topology
    tables = []
    for captured in topology.tables:
        if only is not None and captured.name not in only:
            continue
        spec = table_spec(settings, captured)
        tables.append(TableSpec.from_dict(spec.to_dict() | (table_settings or {}).get(captured.name, {})))
    return JobConfig(
        kafka_bootstrap=settings.endpoint("kafka").address,
        registry_url=settings.registry_api_url,
        lake=lake or f"s3a://{topology.lake_bucket}",
        tables=tuple(tables),
        s3_endpoint=settings.url("localstack"),
        s3_access_key=ACCESS_KEY,
        s3_secret_key=SECRET_KEY,
        jars=tuple(str(p) for p in sorted((jvm.artifacts_dir(settings) / "spark").glob("*.jar"))),
        extra_spark_conf={"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                          **CHECKPOINT_MANAGER},
        **({"catalog_database": topology.catalog_database} | options),
    )


def table_spec(settings: Settings, captured: CapturedTable) -> TableSpec:
    """A table's entry in the job's config: its record key (the primary key unless the project file names one),
    its position kind and its silver settings."""
    topology = settings.topology
    silver = topology.silver_of(captured.name)
    return TableSpec(topic=topology.topic(captured.namespace, captured.name), table=captured.name,
                     key=silver.record_key or table_schema(settings, captured.name).primary_key,
                     position=POSITION_KIND[topology.sources[captured.source].engine],
                     buckets=TABLE_BUCKETS.get(captured.name) if topology.is_tickit else None,
                     partition_by=silver.partition_by, hive_style=silver.hive_style, table_type=silver.table_type,
                     hard_deletes=silver.hard_deletes, index=silver.index,
                     key_only_deletes=True if silver.replica_identity == "default" else None)


def check_lake_bucket(settings: Settings, config: JobConfig) -> None:
    """A lake in a bucket the sandbox's S3 does not have fails here, not as a stack trace from inside Spark."""
    if not on_s3(config.lake) or not config.s3_endpoint:
        return
    bucket, _ = split_uri(config.lake)
    try:
        sandbox_s3(settings).head_bucket(Bucket=bucket)
    except BotoCoreError as exc:
        raise SandboxError(f"the sandbox's S3 does not answer ({exc})", "start the sandbox: `sandbox up`") from None
    except ClientError:
        raise SandboxError(f"the lake {config.lake} is in bucket {bucket!r}, which the sandbox's S3 does not have",
                           f"use s3a://{settings.topology.lake_bucket}/<prefix>, or create the bucket first") from None


def check_lake_holds_its_checkpoint(settings: Settings, config: JobConfig) -> None:
    """A checkpoint that vouches for data the lake lost would make the job skip that data for good: refuse."""
    problem = unvouched_batch(sandbox_s3(settings), config.lake)
    if problem:
        raise SandboxError(problem, LOST_DATA_ADVICE.format(lake=config.lake))


def delete_lake(settings: Settings, config: JobConfig) -> int:
    """Remove every object of the lake (silver, bronze, quarantine, checkpoints), and the bucket a test or replay
    lake had of its own; returns how many objects went."""
    return remove_lake(settings, config.lake)


def write_config(settings: Settings, config: JobConfig, path: Path | None = None) -> Path:
    path = path or settings.state_dir / "job" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config.to_dict(), indent=2) + "\n")
    return path


def spark_submit_command(config: JobConfig, config_path: Path, once: bool, java_options: str = "",
                         cluster: list[str] | None = None, entry: list[str] | None = None) -> list[str]:
    """spark-submit of the job file (or of another `entry`: a file and its first arguments) in local mode, or on a
    cluster with `cluster` (`cluster_options`)."""
    # Under spark-submit the driver's classpath and JVM options are fixed at launch: they go on the command line.
    conf = [f"--conf={key}={value}" for key, value in driver_conf(config, java_options).items()]
    return [str(SPARK_SUBMIT), *(cluster or ["--master", "local[2]"]), "--driver-memory", "2g", *conf,
            *(entry or [str(JOB_FILE)]), "--config", str(config_path), "--once" if once else "--continuous"]


def cluster_options(settings: Settings, config: JobConfig, master: str, once: bool) -> list[str]:
    """spark-submit's options for a cluster: the executors load the job's jars from the nodes' own disks, as EMR's
    Hudi bundle is installed on every node (`spark.jars` would copy some 400 MB into each executor's directory),
    import the job's Python files from the archive Spark ships them, and reach the driver on the sandbox's loopback
    address. They start as the driver does (`java_options`): they load the same classes from the same jars."""
    executor_java, _ = java_options(settings, config, once)
    return ["--master", master, "--deploy-mode", "client", "--py-files", str(python_archive(settings)),
            f"--conf=spark.executor.extraClassPath={':'.join(config.jars)}",
            f"--conf=spark.executor.memory={EXECUTOR_MEMORY}",
            *([f"--conf=spark.executor.extraJavaOptions={executor_java}"] if executor_java else []),
            f"--conf=spark.driver.host={LOCALHOST}", f"--conf=spark.driver.bindAddress={LOCALHOST}"]


def java_options(settings: Settings, config: JobConfig, once: bool, record: bool = False):
    """The job's JVM options, and the class archive to keep if this run records one (`class_sharing.driver_java_options`). A run of a
    few batches is over before the optimizing compiler pays for itself (docs/reference/job-settings.md)."""
    archive_option, recording = class_sharing.driver_java_options(settings, config, record=record)
    return " ".join(filter(None, [archive_option, QUICK_COMPILER if once else ""])), recording


def python_archive(settings: Settings) -> Path:
    """The package's Python files in one zip for `--py-files`, made again when one of them changes."""
    sources = sorted(path for path in PACKAGE_DIR.rglob("*.py") if "__pycache__" not in path.parts)
    fingerprint = hashlib.sha256(b"".join(path.read_bytes() for path in sources)).hexdigest()[:12]
    archive = settings.state_dir / "job" / f"cdc_sandbox-{fingerprint}.zip"
    if not archive.exists():
        archive.parent.mkdir(parents=True, exist_ok=True)
        partial = archive.with_suffix(f".{os.getpid()}.part")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zipped:
            for path in sources:
                zipped.write(path, Path(PACKAGE_DIR.name) / path.relative_to(PACKAGE_DIR))
        os.replace(partial, archive)
    return archive


def launch(settings: Settings, command: list[str], stdout, stderr, cwd: Path | None = None,
           own_session: bool = False) -> subprocess.Popen:
    """The one way the sandbox starts a job's spark-submit, the built-in job's command line or a team's: Spark and
    Python found through `spark_environment`; with `own_session`, a Ctrl-C in the terminal does not reach it."""
    return subprocess.Popen(command, cwd=cwd, env=submit_environment(settings), stdout=stdout, stderr=stderr,
                            text=True, start_new_session=own_session)


def submit_environment(settings: Settings) -> dict[str, str]:
    return {**settings.env, **spark_environment(settings)}


def spark_environment(settings: Settings) -> dict[str, str]:
    """spark-submit finds Spark and Python through these; the venv's python is not first on every PATH. Spark is the
    installed PySpark's, from the machine's Spark home, where the driver's class archive applies."""
    return {"TZ": "UTC", "SPARK_HOME": str(spark_home(settings)), "SPARK_LOCAL_IP": LOCALHOST,
            "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


DATA_LOSS_SIGN = "failOnDataLoss"  # Spark's Kafka source names the option in its data-loss error
LOST_DATA_ADVICE = ("rebuild the lake from Kafka, which keeps every change in the sandbox: "
                    "`sandbox job run --from-scratch --lake {lake}` (time travel to commits before it is lost)")
DATA_LOSS_ADVICE = ("the lake's checkpoint expects Kafka offsets the topics no longer hold (a topic recreated, e.g. "
                    "by `make bench`, or its retention passed): changes it never read are lost to this lake. Rebuild "
                    "it from the topics: `sandbox job run --from-scratch` (with the same --lake/--table options)")


def run(settings: Settings, config: JobConfig, once: bool, say=functools.partial(print, flush=True),
        master: str | None = None) -> int:
    """spark-submit the job (in local mode, or on the cluster at `master`); each micro-batch's summary becomes one
    line through `say`, and Spark's own log (and the JVM's warnings) go to `<state>/logs/job.log`, whose tail is
    shown if the job fails."""
    driver_java, recording = java_options(settings, config, once, record=once)
    command = spark_submit_command(config, write_config(settings, config), once, driver_java,
                                   cluster_options(settings, config, master, once) if master else None)
    log = settings.log_file("job")
    log.parent.mkdir(parents=True, exist_ok=True)
    where = f" on the cluster at {master}" if master else ""
    say(f"job: spark-submit {'--once' if once else '--continuous'}{where} on {config.lake} (Spark log: {log})")
    if recording:
        say("job: this first run also records the JVM's class archive as it exits (once; later runs start faster)")
    signals: list[int] = []
    with open(log, "w") as spark_log:
        # Its own session: a Ctrl-C in the terminal reaches this process alone, which asks the job to stop cleanly.
        child = launch(settings, command, stdout=subprocess.PIPE, stderr=spark_log, own_session=True)
        with stopping_on_signals(child, signals):
            named_cause = False
            for line in child.stdout:
                summary = describe_summary(line.strip())
                named_cause = named_cause or bool(summary and summary.startswith(JOB_FAILED))
                if summary:
                    say(summary)
                else:  # the JVM and libraries print warnings to stdout too: they belong with Spark's log
                    spark_log.write(line)
                    spark_log.flush()
            code = child.wait()
    if signals and not named_cause:  # stopped as asked (not failed meanwhile): the shell's convention after Ctrl-C
        return 128 + signal.SIGINT if signals[0] == signal.SIGINT else 0
    if code == 0:
        class_sharing.keep_driver_recording(recording)
    else:
        text = log.read_text(errors="replace")
        if named_cause:  # the job said why in one line; its stack trace stays in the log
            say(f"job failed (exit {code}); the stack trace is in {log}")
        else:
            say(f"job failed (exit {code}); the end of {log}:\n" + "\n".join(text.splitlines()[-40:]))
        if DATA_LOSS_SIGN in text:
            say(DATA_LOSS_ADVICE.format(lake=config.lake))
    return code


@contextmanager
def stopping_on_signals(child: subprocess.Popen, received: list[int]) -> Iterator[None]:
    """While the job runs in the main thread, SIGINT or SIGTERM asks its driver to stop between micro-batches; a
    second one ends the job at once. `received` collects the signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(number: int, _frame) -> None:
        received.append(number)
        if len(received) > 1:
            _tell("job: stopped at once; the micro-batch in progress runs again on the next start")
            os.killpg(child.pid, signal.SIGKILL)
            return
        _tell("job: stopping after the running micro-batch (signal again to stop at once)")
        _ask_driver_to_stop(child)

    previous = {number: signal.signal(number, handle) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _tell(line: str) -> None:
    """A line on stderr from a signal handler: unbuffered, so it never re-enters a print the handler interrupted."""
    os.write(sys.stderr.fileno(), (line + "\n").encode())


def _ask_driver_to_stop(child: subprocess.Popen) -> None:
    """SIGTERM to the job's Python driver, which spark-submit's JVM started; before it runs, to the whole job."""
    try:
        drivers = [p for p in psutil.Process(child.pid).children(recursive=True)
                   if "python" in p.name() and any(arg.endswith(JOB_FILE.name) for arg in p.cmdline())]
    except psutil.NoSuchProcess:
        return
    if drivers:
        for driver in drivers:
            driver.send_signal(signal.SIGTERM)
    else:
        os.killpg(child.pid, signal.SIGTERM)


def describe_summary(line: str) -> str | None:
    """One readable line for a batch summary the job printed; None for any other output."""
    try:
        summary = json.loads(line)
    except ValueError:
        return None
    if isinstance(summary, dict) and "failed" in summary:
        return f"{JOB_FAILED}{summary['failed']}"
    if isinstance(summary, dict) and "stopped" in summary:
        return f"job stopped {summary['stopped']}"
    if not isinstance(summary, dict) or "batch_id" not in summary:
        return None
    if summary.get("empty"):
        return f"batch {summary['batch_id']}: no new changes"
    tables = ", ".join(f"{name} {t.get('rows', 0)}" for name, t in summary.get("tables", {}).items())
    quarantined = f"; {summary['quarantined']} quarantined in {summary.get('quarantine_path')}" \
        if summary.get("quarantined") else ""
    return f"batch {summary['batch_id']}: {tables or 'no table changed'} ({summary.get('seconds', '?')} s){quarantined}"
