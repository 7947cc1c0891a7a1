"""The job under test: the sandbox's own Hudi job, or a team's, behind one small protocol.

A job is started on a lake, either to process what Kafka holds now and stop (`once`) or to run micro-batches until
stopped; it returns a handle with `exception()` (None while well) and `stop()`, as Spark's `StreamingQuery` has.
The harness tells it where to write: each silver table at `<lake>/silver/<table>`, its Structured Streaming
checkpoint at `<lake>/checkpoints`, and where in each topic to start (`starting_offsets`).

How the harness knows a round has landed does not depend on the job: the oracle finds the round's own events in
Kafka, and a round has landed once the job's checkpoint has committed past them with no micro-batch running; the
commit that holds them is then each table's latest (`Pipeline.wait_for_positions`). The sandbox's own job also
records the highest source position in each commit, which lets the harness name the commit more precisely and
tell a job that read a change without writing it (`SilverBehind`).

A team's job is described by a YAML file (`--sandbox-job=<file>`, `sandbox scenario run --job <file>`):

    name: team-job
    tables: [category, date, event, venue]   # the silver tables it writes (default: every captured table)
    # Either a spark-submit command line, with the sandbox's values filled in ...
    submit: >-
      {spark_submit} --master {master} {spark_conf} job.py --set kafka.bootstrap.servers={kafka_bootstrap} ...
    once: --once
    continuous: --continuous
    set: "--set {key}={value}"              # how to pass one of `settings` below on the command line
    # ... or a Python callable run in the harness's own Spark session: start(spark, values, once) -> query
    callable: job.py:start_for_sandbox
    settings: {ordering: source_sequence}   # passed to the job as they are

Paths are relative to the YAML file. The values: kafka_bootstrap, registry_url, s3_endpoint, lake, silver,
checkpoint, tables (the tables this test follows, comma-separated), topic_<table> (the topic to read each of them
from: its own, or a replay's), starting_offsets (JSON, or "earliest"),
spark_submit, master (local[2], or the cluster's URL when a test submits the job to one) and spark_conf (the `--conf`
options for the sandbox's jars and S3), and what a test or scenario asks
of the job: table_type (COPY_ON_WRITE or MERGE_ON_READ), hard_deletes (true or false), compaction_delta_commits.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.spark_jobs.job_config import JobConfig

BUILTIN = "builtin"
LOG_LINES = 40  # of a submitted job's output, shown when it fails
LOCAL_MASTER = "local[2]"  # `{master}` unless the job is submitted to a cluster


@dataclass(frozen=True)
class JobUnderTest:
    name: str
    start: Callable  # start(spark, config: JobConfig, once: bool, report) -> a handle like StreamingQuery
    tables: tuple[str, ...] | None = None  # the silver tables it writes; None: every captured table
    records_positions: bool = False  # its commits carry `sandbox.max_source_position`
    settings: dict = field(default_factory=dict)
    spec_path: Path | None = None  # the YAML file it was described by
    master: str | None = None  # the Spark cluster it is submitted to; None: local mode

    @property
    def builtin(self) -> bool:
        return self.name == BUILTIN

    def with_settings(self, **settings) -> "JobUnderTest":
        """The same job with more settings (e.g. another ordering)."""
        if self.spec_path is None:
            raise SandboxError(f"the {self.name} job takes no settings", "describe the job by a YAML file")
        return load_spec(self.spec_path, {**self.settings, **settings}, self.master)

    def on_cluster(self, master: str) -> "JobUnderTest":
        """The same job submitted to the Spark cluster at `master` (a job file's `submit` line gets it as
        `{master}`)."""
        if self.builtin:
            return builtin_submitted(master)
        if self.spec_path is None or "callable" in yaml.safe_load(self.spec_path.read_text()):
            raise SandboxError(f"the {self.name} job runs in the harness's own Spark session, which is local",
                               "describe it by a `submit` line with --master {master} to run it on a cluster")
        return load_spec(self.spec_path, self.settings, master)


def builtin_job() -> JobUnderTest:
    from cdc_sandbox.spark_jobs import cdc_hudi_job

    return JobUnderTest(BUILTIN, cdc_hudi_job.start, records_positions=True)


def builtin_submitted(master: str | None, entry: list[str] | None = None) -> JobUnderTest:
    """The built-in job file submitted as `sandbox job run` submits it, its driver a process of its own: to the Spark
    cluster at `master`, or in local mode for None. `entry` replaces the job file by another that runs it (a file
    and its first arguments, e.g. one that breaks the job first)."""
    return JobUnderTest(BUILTIN, _submitted_to(master, entry), records_positions=True, master=master)


def _submitted_to(master: str | None, entry: list[str] | None) -> Callable:
    def start(spark, config: JobConfig, once: bool, report=None):
        from cdc_sandbox.harness.running import sandbox_job

        settings = Settings.load()
        lake_name = config.lake.rstrip("/").rsplit("/", 1)[-1]
        config_file = sandbox_job.write_config(settings, config, settings.state_dir / "job" / f"{lake_name}.json")
        cluster = sandbox_job.cluster_options(settings, config, master, once) if master else None
        command = sandbox_job.spark_submit_command(config, config_file, once, sandbox_job.java_options(settings, config, once)[0],
                                           cluster=cluster, entry=entry)
        submitted = SubmittedJob(command, cwd=settings.state_dir, report=report,
                                 spark_log=settings.log_file(f"job-{lake_name}"))
        if once:
            submitted.wait()
            if submitted.exception():
                raise SandboxError(submitted.exception(), f"Spark's log: {submitted.spark_log}")
        return submitted
    return start


def load(spec: str | Path | None, settings: dict | None = None) -> JobUnderTest:
    """The job a `--sandbox-job` value names: the built-in job for None or "builtin", else a YAML file."""
    if spec in (None, "", BUILTIN):
        return builtin_job()
    return load_spec(Path(spec), settings or {})


def load_spec(path: Path, settings: dict, master: str | None = None) -> JobUnderTest:
    if not path.is_file():
        raise SandboxError(f"no job file {path}", "give --sandbox-job a YAML file describing the job "
                                                   "(see examples/team_job/sandbox-job.yaml), or 'builtin'")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SandboxError(f"{path} is not valid YAML: {exc}", "fix the file") from None
    if not isinstance(raw, dict) or not raw.get("name") or ("submit" in raw) == ("callable" in raw):
        raise SandboxError(f"{path}: a job file needs a name and exactly one of `submit` or `callable`",
                           "see the format in cdc_sandbox/harness/running/job_adapters.py or examples/team_job/sandbox-job.yaml")
    unknown = set(raw) - {"name", "tables", "submit", "once", "continuous", "set", "callable", "settings"}
    if unknown:
        raise SandboxError(f"{path}: unknown keys {', '.join(sorted(unknown))}",
                           "use name, tables, submit, once, continuous, set, callable, settings")
    merged = {**(raw.get("settings") or {}), **settings}
    tables = tuple(raw["tables"]) if raw.get("tables") else None
    if "callable" in raw:
        start = _in_session(_load_callable(path.parent, raw["callable"]), merged)
    else:
        start = _submitted(path.parent, raw, merged, master)
    return JobUnderTest(raw["name"], start, tables, settings=merged, spec_path=path, master=master)


def _load_callable(base: Path, target: str) -> Callable:
    file, sep, name = target.rpartition(":")
    source = (base / file).resolve()
    if not sep or not source.is_file():
        raise SandboxError(f"callable {target!r}: expected <file.py>:<function>, the file relative to the job file",
                           "e.g. callable: job.py:start_for_sandbox")
    module_spec = importlib.util.spec_from_file_location(f"sandbox_job_{source.stem}", source)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    if not callable(getattr(module, name, None)):
        raise SandboxError(f"{source} has no function {name}", "name the function that starts the job's query")
    return getattr(module, name)


def values_for(config: JobConfig, settings: dict) -> dict[str, str]:
    """What the sandbox tells a job: its endpoints, the lake's paths, where to start, and the job's settings."""
    return {**{key: str(value) for key, value in settings.items()},
            "kafka_bootstrap": config.kafka_bootstrap, "registry_url": config.registry_url,
            "s3_endpoint": config.s3_endpoint or "", "lake": config.lake, "silver": config.silver_root,
            "checkpoint": config.checkpoint(), "tables": ",".join(spec.table for spec in config.tables),
            "table_type": config.table_type, "hard_deletes": str(config.hard_deletes).lower(),
            "compaction_delta_commits": str(config.compaction_delta_commits),
            "starting_offsets": json.dumps(config.starting_offsets) if config.starting_offsets else "earliest",
            **{f"topic_{spec.table}": spec.topic for spec in config.tables}}


def _in_session(function: Callable, settings: dict) -> Callable:
    def start(spark, config: JobConfig, once: bool, report=None):
        return function(spark, values_for(config, settings), once)
    return start


def _submitted(base: Path, raw: dict, settings: dict, master: str | None) -> Callable:
    def start(spark, config: JobConfig, once: bool, report=None):
        command = submit_command(base, raw, config, settings, once, master)
        job = SubmittedJob(command, cwd=base)
        if once:
            job.wait()
            if job.exception():
                raise SandboxError(job.exception(), "see the job's output above")
        return job
    return start


def submit_command(base: Path, raw: dict, config: JobConfig, settings: dict, once: bool,
                   master: str | None = None) -> list[str]:
    """A job file's `submit` line with the sandbox's values filled in; on a cluster, `{master}` is its URL and
    `{spark_conf}` also gives the executors the jars from the nodes' disks."""
    from cdc_sandbox.harness.running.sandbox_job import SPARK_SUBMIT
    from cdc_sandbox.spark_jobs.session import session_conf

    conf = session_conf(config)
    if master:
        conf["spark.executor.extraClassPath"] = ":".join(config.jars)
    quoted = {name: shlex.quote(value) for name, value in values_for(config, {}).items()}
    values = quoted | {
        "spark_submit": shlex.quote(str(SPARK_SUBMIT)),
        "master": shlex.quote(master or LOCAL_MASTER),
        "spark_conf": " ".join(shlex.quote(f"--conf={k}={v}") for k, v in conf.items())}
    try:
        command = raw["submit"].format(**values)
        extra = [raw["set"].format(key=shlex.quote(str(k)), value=shlex.quote(str(v))) for k, v in settings.items()] \
            if raw.get("set") else []
    except KeyError as exc:
        raise SandboxError(f"the job's command line names {{{exc.args[0]}}}, which the sandbox does not fill",
                           f"use only {', '.join(sorted(values))}") from None
    mode = raw.get("once" if once else "continuous", "")
    return shlex.split(" ".join([command, *extra, mode]))


class SubmittedJob:
    """A job run as its own process: the handle a streaming query would be. `report` is given each line of its
    output that is a JSON object (the built-in job's batch summaries); with `spark_log`, Spark's own log (stderr) goes
    to that file instead of the output kept for a failure's message."""

    def __init__(self, command: list[str], cwd: Path, report: Callable | None = None, spark_log: Path | None = None):
        from cdc_sandbox.harness.running.sandbox_job import launch

        self.command, self.report, self.spark_log = command, report, spark_log
        self.output: deque[str] = deque(maxlen=LOG_LINES)
        stderr = subprocess.STDOUT
        if spark_log:
            spark_log.parent.mkdir(parents=True, exist_ok=True)
            stderr = spark_log.open("w")
        self.process = launch(Settings.load(), command, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd)
        if spark_log:
            stderr.close()  # the child holds its own copy
        self._reader = threading.Thread(target=self._keep_output, daemon=True)
        self._reader.start()

    def _keep_output(self) -> None:
        for line in self.process.stdout:
            self.output.append(line.rstrip())
            if self.report and line.startswith("{"):
                self.report(line.strip())

    def wait(self) -> int:
        code = self.process.wait()
        self._reader.join()
        return code

    awaitTermination = wait  # noqa: N815 (StreamingQuery's name)

    def exception(self) -> str | None:
        code = self.process.poll()
        if code in (None, 0):
            return None
        return f"the job exited with code {code}; its last output:\n" + "\n".join(self.output)

    def stop(self) -> None:
        """SIGTERM: Spark's shutdown hook stops the query between or inside a batch, as a stop does."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.wait()
