"""The `sandbox` command: bring the CDC stack up and down, inspect it, read its logs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import importlib
import importlib.metadata
import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

import typer
from botocore.exceptions import BotoCoreError, ClientError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.running import sandbox_job
from cdc_sandbox.harness.running.checkpoint import unvouched_batch
from cdc_sandbox.harness.running.timeline import S3Timelines
from cdc_sandbox.sources import tickit
from cdc_sandbox.stack import backends, catalog, orphans
from cdc_sandbox.stack.backends import select
from cdc_sandbox.stack.connection_env import connection_env
from cdc_sandbox.stack.services.localstack import sandbox_s3
from cdc_sandbox.stack.services.metastore import require_metastore, thrift_uri

class SandboxTyper(typer.Typer):
    """Typer whose commands each report a `SandboxError`, wherever it is raised (reading the project file too), as
    `_fail` does: the error and what to do on stderr, exit 1, no traceback."""

    def command(self, *args, **kwargs):
        register = super().command(*args, **kwargs)

        def decorator(function):
            @functools.wraps(function)
            def reported(*given, **named):
                try:
                    return function(*given, **named)
                except SandboxError as exc:
                    _fail(exc)

            register(reported)
            return function

        return decorator


app = SandboxTyper(help="Local CDC data-lake sandbox: Postgres, MariaDB, Kafka, Debezium, Apicurio, S3.",
                   no_args_is_help=True, pretty_exceptions_enable=False)
console = Console()
errors = Console(stderr=True)  # errors go to stderr, so that a command's output can be piped or parsed


@app.callback()
def main(version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True,
                                      callback=lambda given: _print_version() if given else None)):
    """Local CDC data-lake sandbox: Postgres, MariaDB, Kafka, Debezium, Apicurio, S3."""


def _print_version() -> None:
    console.print(f"cdc-sandbox {importlib.metadata.version('cdc-sandbox')}", highlight=False)
    raise typer.Exit()


def _report(name: str, outcome: str) -> None:
    console.print(f"  [bold]{name:<22}[/bold] {outcome}")


def _fail(exc: SandboxError) -> None:
    # soft_wrap: a path in the message stays whole, to copy, however narrow the terminal
    errors.print(f"[red]error:[/red] {exc.message}", highlight=False, soft_wrap=True)
    if exc.hint:
        errors.print(f"[yellow]what to do:[/yellow] {exc.hint}", highlight=False, soft_wrap=True)
    raise typer.Exit(1)


@app.command()
def up(skip_install: bool = typer.Option(False, help="Do not check or install packages, jars or LocalStack."),
       optional: list[str] = typer.Option([], "--with", help="Start an optional service too, and with every later "
                                          "`sandbox up`: spark-cluster (a Spark master and two workers).")):
    """Install what is missing, start every service, register the connectors, print the status."""
    started = time.monotonic()
    try:
        choice = select.choose(Settings.load())
        settings = select.settings_for(choice)
        settings.record_optional_services(optional)
        console.print(f"[bold]sandbox up[/bold]: {choice.describe()}, state in {settings.state_dir}", highlight=False)
        with console.status("working…"):
            backends.of(settings).up(settings, _report, skip_install=skip_install)
            settings.record_backend()
            settings = settings.with_ddl_runs()  # the tables the DDL files made
    except SandboxError as exc:
        _fail(exc)
    console.print(f"ready in {time.monotonic() - started:.1f} s")
    _print_status(settings, *backends.of(settings).status(settings))


@app.command()
def down():
    """Stop every service; data stays in the state directory (on compose: in the volumes)."""
    try:
        settings = Settings.load()
        backends.of(settings).down(settings, _report)
    except SandboxError as exc:
        _fail(exc)


@app.command()
def status(as_json: bool = typer.Option(False, "--json", help="Print services and connectors as JSON.")):
    """Show every service and connector: state, address, pid, version (and stop what killed test sessions left).
    Exits 1 when a service is not running or a connector is not RUNNING."""
    for line in orphans.reap():
        (errors if as_json else console).print(line, highlight=False)
    try:
        settings = Settings.load()
        statuses, connectors = backends.of(settings).status(settings)
    except SandboxError as exc:
        _fail(exc)
    if as_json:
        print(json.dumps({"services": [dataclasses.asdict(st) for st in statuses],
                          "connectors": [{"connector": name, "state": state} for name, state in connectors]},
                         indent=2))
    else:
        _print_status(settings, statuses, connectors)
    healthy = all(st.state in ("running", "external") for st in statuses) and \
        all(state == "RUNNING" for _, state in connectors)
    raise typer.Exit(0 if healthy else 1)


def _print_status(settings: Settings, statuses: list, connectors: list[tuple[str, str]]) -> None:
    table = Table(title="services")
    for column in ("service", "state", "address", "pid", "version"):
        table.add_column(column)
    colours = {"running": "green", "external": "cyan", "stopped": "red", "unreachable": "red", "starting": "yellow"}
    for st in statuses:
        colour = colours.get(st.state, "white")
        address = f"[red]{st.address}[/red]" if st.beyond_loopback else st.address
        table.add_row(st.service, f"[{colour}]{st.state}[/{colour}]", address, str(st.pid or "-"), st.version)
    console.print(table)
    for st in statuses:
        if st.note:
            console.print(f"{st.service}: {st.note}", highlight=False)
        if st.beyond_loopback:
            console.print(f"[red]{st.service} listens beyond loopback ({', '.join(st.beyond_loopback)})[/red]: "
                          "other machines can reach it; stop it with "
                          "`sandbox down` and see \"What runs where\" in the documentation (docs/concepts/stack.md)",
                          highlight=False)
    console.print(_tables_table(settings))
    ctable = Table(title="connectors")
    ctable.add_column("connector")
    ctable.add_column("state")
    for name, state in connectors:
        ctable.add_row(name, state)
    console.print(ctable)
    s3_up = any(st.service == "localstack" and st.state in ("running", "external") for st in statuses)
    console.print(_lake_table(settings, s3_up))


def _lake_table(settings: Settings, s3_up: bool) -> Table:
    """Whether the default lake holds what its checkpoint vouches for."""
    config = sandbox_job.job_config(settings)
    table = Table(title="lake")
    for column in ("lake", "state", "what to do"):
        table.add_column(column)
    if not s3_up:
        table.add_row(config.lake, "[red]S3 is not running[/red]", "`sandbox up`")
        return table
    try:
        problem = unvouched_batch(sandbox_s3(settings), config.lake)
    except (BotoCoreError, ClientError) as exc:
        table.add_row(config.lake, "[red]unreadable[/red]", f"start S3: `sandbox up` ({type(exc).__name__})")
        return table
    if problem:
        table.add_row(config.lake, f"[red]{problem}[/red]", sandbox_job.LOST_DATA_ADVICE.format(lake=config.lake))
    else:
        table.add_row(config.lake, "[green]consistent with its checkpoint[/green]", "-")
    return table


@app.command()
def load(
    from_dir: Path = typer.Option(None, "--from", help="Directory holding the seven real TICKIT files."),
    download: bool = typer.Option(False, help="Fetch the public tickitdb.zip first (needs internet)."),
    seed: int = typer.Option(0, help="Seed of the generated data."),
    scale: float = typer.Option(1.0, help="Size of the generated data (1.0 = the original row counts)."),
):
    """Load the source tables: a project's from its data files or generated rows; TICKIT generated by default, or
    the real files."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from cdc_sandbox.sources import tickit_download

    settings = Settings.load()
    if not settings.topology.is_tickit:
        _load_project(settings)
        return
    try:
        if download:
            from_dir = tickit_download.fetch(settings)
        source = tickit.FileRows(from_dir) if from_dir else tickit.GeneratedRows(seed=seed, scale=scale)
        console.print(f"loading {source.description}")
        started = time.monotonic()
        with Progress(TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=console) as bar:
            tasks = {p.table.name: bar.add_task(p.table.name, total=source.expected_count(p.table))
                     for p in catalog.placements(settings)}
            results = tickit.load(settings, source, lambda table, rows: bar.advance(tasks[table], rows))
    except SandboxError as exc:
        _fail(exc)
    for result in results:
        _report(result.table, f"{result.rows} rows {result.outcome}")
    console.print(f"done in {time.monotonic() - started:.1f} s")


def _load_project(settings: Settings) -> None:
    from cdc_sandbox.sources import project_data

    started = time.monotonic()
    try:
        results = project_data.load(settings)
    except SandboxError as exc:
        _fail(exc)
    for result in results:
        _report(result.table, f"{result.rows} rows {result.outcome}")
    console.print(f"done in {time.monotonic() - started:.1f} s")


mutate_app = SandboxTyper(help="Change source rows; every change is journaled with its source position.",
                          no_args_is_help=True)
app.add_typer(mutate_app, name="mutate")


def _json_arg(text: str, what: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        _fail(SandboxError(f"{what} is not JSON: {exc}", """give an object, e.g. '{"catid": 12}'"""))
    if not isinstance(value, dict):
        _fail(SandboxError(f"{what} must be a JSON object", """e.g. '{"catid": 12}'"""))
    return value


JSON_OUTPUT = typer.Option(False, "--json", help="Print the journal entries as JSON, one per line.")


def _mutate(action, as_json: bool = False) -> None:
    import psycopg2  # here and below: imported by the commands that use them, so that the others start sooner
    import pymysql

    from cdc_sandbox.sources.mutations import Mutator

    try:
        changes = action(Mutator(Settings.load()))
    except SandboxError as exc:
        _fail(exc)
    except (psycopg2.Error, pymysql.MySQLError) as exc:
        _fail(SandboxError(f"the database refused the change: {exc}".strip(), "check the table, key and values"))
    if as_json:
        for change in changes if isinstance(changes, list) else [changes]:
            print(json.dumps({"seq": change.seq, "kind": change.kind, "table": change.table, "key": change.key,
                              "new_key": change.new_key, "position": change.position}, default=_json_value))
        return
    table = Table(title="journal")
    for column in ("seq", "kind", "table", "key", "source position"):
        table.add_column(column)
    for change in changes if isinstance(changes, list) else [changes]:
        table.add_row(str(change.seq), change.kind, change.table, json.dumps(change.new_key or change.key),
                      json.dumps(change.position))
    console.print(table)


@mutate_app.command("insert")
def mutate_insert(table: str, values: str = typer.Argument(..., help="The row as a JSON object."),
                  as_json: bool = JSON_OUTPUT):
    """Insert one row."""
    _mutate(lambda m: m.insert(table, _json_arg(values, "values")), as_json)


@mutate_app.command("update")
def mutate_update(table: str, key: str = typer.Argument(..., help='e.g. \'{"catid": 1}\''),
                  values: str = typer.Argument(..., help="Columns to set, as a JSON object."),
                  as_json: bool = JSON_OUTPUT):
    """Set columns of the row with this key."""
    _mutate(lambda m: m.update(table, _json_arg(key, "key"), _json_arg(values, "values")), as_json)


@mutate_app.command("delete")
def mutate_delete(table: str, key: str, as_json: bool = JSON_OUTPUT):
    """Delete the row with this key."""
    _mutate(lambda m: m.delete(table, _json_arg(key, "key")), as_json)


@mutate_app.command("update-key")
def mutate_update_key(table: str, key: str, new_key: str, as_json: bool = JSON_OUTPUT):
    """Change the primary key of a row (Debezium sends a delete of the old key and a create of the new one)."""
    _mutate(lambda m: m.update_key(table, _json_arg(key, "key"), _json_arg(new_key, "new key")), as_json)


@mutate_app.command("add-column")
def mutate_add_column(table: str, column: str, column_type: str = typer.Argument(..., metavar="TYPE"),
                      as_json: bool = JSON_OUTPUT):
    """Add a nullable column of this SQL type to the source table."""
    _mutate(lambda m: m.add_column(table, column, column_type), as_json)


@mutate_app.command("drop-column")
def mutate_drop_column(table: str, column: str, as_json: bool = JSON_OUTPUT):
    """Drop a column from the source table (silver keeps it: NULL in rows written after the drop)."""
    _mutate(lambda m: m.drop_column(table, column), as_json)


@mutate_app.command("truncate")
def mutate_truncate(table: str, as_json: bool = JSON_OUTPUT):
    """Empty the table with TRUNCATE (silver keeps its rows as deleted rows, or drops them with hard deletes)."""
    _mutate(lambda m: m.truncate(table), as_json)


@mutate_app.command("random")
def mutate_random(count: int = typer.Option(10, help="How many changes."), seed: int = typer.Option(0),
                  table: list[str] = typer.Option(None, help="Limit to these tables (repeatable)."),
                  as_json: bool = JSON_OUTPUT):
    """Random inserts, updates and deletes across the tables, reproducible by seed."""
    _mutate(lambda m: m.random_batch(count, seed, table or None), as_json)


def _tables_table(settings: Settings) -> Table:
    table = Table(title="captured tables")
    for column in ("table", "lives in", "topic", "rows"):
        table.add_column(column)
    for placement in catalog.placements(settings):
        captured = placement.captured
        where = f"{captured.source} {captured.namespace}"
        if captured.stand_in:
            where += " [yellow](stand-in for SQL Server)[/yellow]"
        count = tickit.row_count(settings, placement)
        table.add_row(placement.table.name, where, settings.topology.topic(captured.namespace, placement.table.name),
                      "-" if count is None else str(count))
    return table


job_app = SandboxTyper(help="The PySpark Hudi job: Kafka change events into bronze and silver on S3.",
                       no_args_is_help=True)
app.add_typer(job_app, name="job")


@job_app.command("run")
def job_run(
    continuous: bool = typer.Option(False, "--continuous", help="Keep running micro-batches; Ctrl-C or SIGTERM "
                                    "stops between two of them."),
    merge_on_read: bool = typer.Option(False, "--merge-on-read", help="Merge-on-Read silver tables with compaction."),
    hard_deletes: bool = typer.Option(False, help="Remove deleted rows instead of keeping soft deletes."),
    lake: str = typer.Option(None, help="Base URI of the lake (default s3a://<lake bucket>)."),
    table: list[str] = typer.Option(None, help="Only these tables (repeatable; default every captured table). A lake "
                                    "keeps the tables it was started with: its checkpoint knows only their topics."),
    from_scratch: bool = typer.Option(False, "--from-scratch", help="Delete the lake (silver, bronze, checkpoints) "
                                      "first and read every topic from its earliest offset."),
    sync: bool = typer.Option(True, help="Sync the silver tables into the metastore (the sandbox's own lake only)."),
    master: str = typer.Option(None, help="Submit to a Spark cluster, spark://HOST:PORT, instead of local mode "
                               "(`sandbox up --with spark-cluster` runs one; `sandbox status` shows its URL)."),
):
    """Run the job with spark-submit: --once by default (process what is in Kafka, then exit). On the sandbox's own
    lake it syncs every silver table into the metastore (database tickit_cdc_hudi) for `sandbox sql`."""
    from cdc_sandbox.sources import topics

    settings = Settings.load()
    captured = [t.name for t in settings.topology.tables]
    unknown = [t for t in table or [] if t not in captured]
    if unknown:
        _fail(SandboxError(f"unknown table {', '.join(unknown)}", "choose from: " + ", ".join(captured)))
    sync = sync and not lake  # a table of the same name would point at another lake
    config = sandbox_job.job_config(settings, lake=lake, only=table or None, hard_deletes=hard_deletes,
                            table_type="MERGE_ON_READ" if merge_on_read else "COPY_ON_WRITE",
                            metastore_uri=thrift_uri(settings) if sync else None)
    try:
        if sync:
            require_metastore(settings, "start it with `sandbox up`, or run the job with --no-sync")
        sandbox_job.check_lake_bucket(settings, config)
        if not from_scratch:
            sandbox_job.check_lake_holds_its_checkpoint(settings, config)
        # Right after `sandbox up` or a load Debezium may still be creating topics, which Spark's Kafka source
        # refuses to read.
        topics.wait_for_topics(settings.endpoint("kafka").address, [spec.topic for spec in config.tables])
    except SandboxError as exc:
        _fail(exc)
    if from_scratch:
        console.print(f"deleted {sandbox_job.delete_lake(settings, config)} objects of {config.lake}", highlight=False)
    raise typer.Exit(sandbox_job.run(settings, config, once=not continuous, master=master))


scenario_app = SandboxTyper(help="Scenario files: replay a production CDC bug and check what silver must show.",
                            no_args_is_help=True)
app.add_typer(scenario_app, name="scenario")


@scenario_app.command("list")
def scenario_list():
    """The scenarios that come with the sandbox (run one by name: `sandbox scenario run edge-values`)."""
    from cdc_sandbox.harness.driving import scenario

    for name in scenario.shipped_names():
        path = scenario.SHIPPED / f"{name}.yaml"
        spec = scenario.validate(scenario.read(path), path, home=True)
        console.print(f"{name:32} {spec.name}", highlight=False, soft_wrap=True)


@scenario_app.command("validate")
def scenario_validate(files: list[str] = typer.Argument(..., help="Scenario files, or names of shipped ones.")):
    """Check scenario files without running them (the file, line and reason of the first problem of each); a
    shipped one is bound to the project's tables first, read from its sources (the sandbox must be up)."""
    from cdc_sandbox.harness.driving import binding, scenario

    failed = False
    for path in files:
        try:
            spec = binding.load(scenario.find(path))
            console.print(f"[green]ok[/green] {path}: {spec.name} ({len(spec.steps)} steps)", highlight=False)
        except SandboxError as exc:
            errors.print(f"[red]error:[/red] {exc.message}", highlight=False, soft_wrap=True)
            if exc.hint:
                errors.print(f"[yellow]what to do:[/yellow] {exc.hint}", highlight=False, soft_wrap=True)
            failed = True
    raise typer.Exit(1 if failed else 0)


@scenario_app.command("bind")
def scenario_bind(name: str = typer.Argument(..., help="The name of a shipped scenario (`sandbox scenario list`)."),
                  out: Path = typer.Option(None, help="Write the file here (default: print it).")):
    """A shipped scenario written on this project's tables, as `sandbox catalogue` runs it: a file to keep, edit and
    run as the team's own."""
    from cdc_sandbox.harness.driving import binding, scenario

    try:
        settings = Settings.load()
        text = scenario.dump(binding.bound_raw(scenario.find(name), settings))
    except SandboxError as exc:
        _fail(exc)
    if out is None:
        print(text, end="")
    else:
        out.write_text(text, encoding="utf-8")
        console.print(f"wrote {out}", highlight=False)


@app.command()
def catalogue(job: str = typer.Option("builtin", help="The job under test: 'builtin' or a job file "
                                                      "(examples/team_job/sandbox-job.yaml)."),
              report: Path = typer.Option(Path("reports/catalogue.md"), help="The Markdown report."),
              junit: Path = typer.Option(Path("reports/catalogue.xml"), help="The JUnit report."),
              select: str = typer.Option(None, "-k", help="Only the incidents whose names match this pytest -k "
                                                          "expression."),
              teeth: bool = typer.Option(False, help="Also run each broken variant of the built-in job against the "
                                                     "scenario that must catch it, on the project's tables.")):
    """Run the shipped incident catalogue on this project's tables and job: each incident passed, failed (the
    oracle's finding) or not applicable (what the tables lack), in the terminal, a Markdown report and JUnit."""
    import subprocess

    from cdc_sandbox.harness.driving.scenario import SHIPPED

    try:
        Settings.load()  # a project file that does not load is said so here, not in a test session's traceback
    except SandboxError as exc:
        _fail(exc)
    ini = _pytest_ini(Path.cwd())  # the project's own pytest settings, never those of the package's checkout
    command = [sys.executable, "-m", "pytest", str(SHIPPED), "--sandbox-catalogue", "-p", "no:cacheprovider",
               "-c", ini, "--rootdir", ".", f"--sandbox-job={job}", f"--sandbox-catalogue-report={report}",
               f"--junitxml={junit}", "-rfs", *(["-k", select] if select else []),
               *(["--sandbox-catalogue-teeth"] if teeth else [])]
    raise typer.Exit(subprocess.call(command))


def _pytest_ini(directory: Path) -> str:
    """The file pytest itself would take its settings from in this directory (an empty one where there is none)."""
    sections = {"pytest.ini": "", ".pytest.ini": "", "pyproject.toml": "[tool.pytest.ini_options]",
                "tox.ini": "[pytest]", "setup.cfg": "[tool:pytest]"}
    for name, section in sections.items():
        path = directory / name
        if path.is_file() and section in path.read_text(errors="replace"):
            return str(path)
    return os.devnull


@scenario_app.command("run")
def scenario_run(file: str = typer.Argument(..., help="A scenario file, or the name of a shipped one "
                                                   "(`sandbox scenario list`)."),
                 lake: str = typer.Option(None, help="Base URI of the lake (default: a new one)."),
                 job: str = typer.Option("builtin", help="The job under test: 'builtin' or a job file "
                                                         "(examples/team_job/sandbox-job.yaml)."),
                 as_json: bool = typer.Option(False, "--json", help="The outcome as one JSON object (the steps' "
                                              "lines on stderr).")):
    """Run one scenario against the sandbox, on a fresh lake over the scenario's tables."""
    import uuid

    from cdc_sandbox.harness.running import job_adapters
    from cdc_sandbox.harness.driving import binding, scenario
    from cdc_sandbox.harness.checking.oracle import RUN_STATS, Oracle
    from cdc_sandbox.harness.running.pipeline import Pipeline
    from cdc_sandbox.sources.mutations import Mutator

    try:
        file = scenario.find(file)
        spec = binding.load(file)
        settings = Settings.load()
        if reason := scenario.unavailable(spec, settings):
            raise SandboxError(f"{file} cannot run on this sandbox: nothing was run", reason)
        options = scenario.pipeline_options(spec, spec.job)
        lake = lake or f"s3a://{settings.topology.lake_bucket}/scenario-{file.stem}-{uuid.uuid4().hex[:6]}"
        pipe = Pipeline.start(settings, lake=lake, job_under_test=job_adapters.load(job), only=spec.tables, **options)
        mutator = Mutator(settings)
        oracle = Oracle(settings, pipe, mutator)
        try:
            say = (errors if as_json else console).print
            result = scenario.run(spec, pipe, mutator, oracle, say=lambda line: say(line, highlight=False))
        finally:
            pipe.stop()
    except SandboxError as exc:
        _fail(exc)
    except AssertionError as exc:
        if as_json:
            finding = getattr(exc, "finding", None)
            print(json.dumps({"scenario": spec.name, "lake": lake, "passed": False, "failure": str(exc),
                              "verdict": type(exc).__name__, "finding": str(finding) if finding else None}))
        errors.print(f"[red]scenario failed:[/red] {exc}", highlight=False)
        raise typer.Exit(1)
    checks = [{"check": entry.label, "table": table, "commit": entry.commit.instant,
               "source_position": entry.commit.max_source_position, "rows": len(entry.state)}
              for table, entries in oracle.recorded.items() for entry in entries]
    if as_json:
        print(json.dumps({"scenario": spec.name, "lake": lake, "passed": True, "checks": checks,
                          "time_travel_instants": len(RUN_STATS.time_travel_instants),
                          "incremental_ranges": RUN_STATS.incremental_ranges}, default=str))
        return
    out = Table(title=f"{spec.name}: passed ({lake})")
    for column in ("check", "table", "commit", "source position", "rows"):
        out.add_column(column)
    for check in checks:
        position = check["source_position"]
        out.add_row(check["check"], check["table"], check["commit"], "-" if position is None else str(position),
                    str(check["rows"]))
    console.print(out)
    console.print(f"{result.checks} checks, {result.expectations} explicit expectations, "
                  f"{len(RUN_STATS.time_travel_instants)} time-travel instants and {RUN_STATS.incremental_ranges} "
                  f"incremental ranges checked through Spark and hudi-rs")


@app.command()
def record(
    topics: list[str] = typer.Option(None, "--topic", "-t", help="A topic to record (repeat it); default: every "
                                     "table's topic."),
    out: Path = typer.Option(None, "--out", "-o", help="The archive to write (default: incident-<time>.tar.gz)."),
    from_offset: int = typer.Option(None, help="Start each partition at this offset (default: its start)."),
    since: str = typer.Option(None, help="Start each partition at its first message at or after this time "
                                         "(ISO 8601, e.g. 2026-11-29T14:00:00Z)."),
    as_json: bool = typer.Option(False, "--json", help="Print the archive's manifest as JSON."),
    from_bronze: str = typer.Option(None, help="Record from the bronze files of this lake (s3a://bucket/lake) "
                                               "instead of Kafka: the messages the job kept as it read them."),
):
    """Record topics' messages with the schemas they name and the connectors' configs into an incident archive."""
    from cdc_sandbox.replay import archive
    from cdc_sandbox.sources.registry import RegistryClient
    from cdc_sandbox.stack.connectors import ConnectClient, redacted

    try:
        settings = Settings.load()
        start = archive.Range(from_offset=from_offset, from_time_ms=_epoch_ms(since) if since else None)
        target = out or Path(f"incident-{time.strftime('%Y%m%dT%H%M%S')}.tar.gz")
        registry = RegistryClient(settings.registry_api_url)
        if from_bronze:
            manifest = _record_bronze(settings, from_bronze, registry, target, topics, start)
        else:
            client = ConnectClient(settings.url("connect"))
            configs = {name: redacted(client.registered_config(name) or {}) for name in client.connectors()}
            manifest = archive.record(settings.endpoint("kafka").address, registry,
                                      topics or settings.topology.topics(), target, start, configs)
    except SandboxError as exc:
        _fail(exc)
    if as_json:
        print(json.dumps(manifest, indent=2))
        return
    counts = sum(p["messages"] for partitions in manifest["topics"].values() for p in partitions.values())
    console.print(f"recorded {counts:,} messages of {len(manifest['topics'])} topics, {len(manifest['schemas'])} "
                  f"schemas and {len(manifest['connectors'])} connector configs into {target}", highlight=False,
                  soft_wrap=True)


@app.command()
def replay(
    archive_file: Path = typer.Argument(..., metavar="ARCHIVE", help="An archive `sandbox record` wrote."),
    name: str = typer.Option(None, help="The replay's name: its topics are replay.<name>.<topic> (default: the "
                                        "archive's name and the time)."),
    batch_messages: int = typer.Option(None, help="At most this many messages per micro-batch (default: all); for "
                                                  "a job file's job, this many more of each partition per run."),
    job: str = typer.Option("builtin", help="The job under test: 'builtin' or a job file "
                                            "(examples/team_job/sandbox-job.yaml)."),
):
    """Replay an incident archive: its messages into topics of their own, the job over them on a new lake, and
    every commit checked against the recorded events; exits 1 naming the first event whose effect is wrong."""
    from cdc_sandbox.harness.running import job_adapters
    from cdc_sandbox.replay.run import replay as run_replay

    name = name or f"{archive_file.name.split('.')[0]}-{time.strftime('%Y%m%dT%H%M%S')}"
    try:
        verdict = run_replay(Settings.load(), archive_file, name, batch_messages, job_under_test=job_adapters.load(job))
    except SandboxError as exc:
        _fail(exc)
    for table in verdict.tables:
        outcome = "[green]as recorded[/green]" if not table.problems else "[red]WRONG[/red]"
        console.print(f"  {table.table:<12} {table.events:>8,} events, {table.commits} commits checked: {outcome}",
                      highlight=False)
        for problem in table.problems:
            console.print(f"    {escape(problem)}", highlight=False, soft_wrap=True)
    console.print(f"lake: {verdict.lake}; topics: {', '.join(verdict.topics.values())}", highlight=False,
                  soft_wrap=True)
    raise typer.Exit(0 if verdict.passed else 1)


def _record_bronze(settings: Settings, lake: str, registry, target: Path, topics: list[str] | None, start) -> dict:
    from cdc_sandbox.harness.running import sandbox_job
    from cdc_sandbox.replay.bronze import from_bronze

    if start.from_offset is not None or start.from_time_ms is not None:
        raise SandboxError("--from-offset and --since choose where to read Kafka, not bronze",
                           "record the whole bronze of the lake (`--from-bronze` alone), or record from Kafka")
    bronze_path = sandbox_job.job_config(settings, lake=lake.rstrip("/")).bronze_path
    return from_bronze(sandbox_s3(settings), bronze_path, registry, target, topics)


def _epoch_ms(text: str) -> int:
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise SandboxError(f"--since {text!r} is no time", "give an ISO 8601 time: 2026-11-29T14:00:00Z") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp() * 1000)


@app.command()
def sql(
    statement: str = typer.Argument(None, help="The SQL to run; without it, a shell (end each statement with ;)."),
    database: str = typer.Option(None, help="The database to start in (default: tickit_cdc_hudi)."),
    limit: int = typer.Option(100, help="Rows to show per result."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per statement: columns and rows, or error."),
):
    """SQL over silver through the metastore: time travel (TIMESTAMP AS OF) and Hudi's table-valued functions too.
    Without a statement it reads statements from the terminal, or from standard input when that is not one."""
    from cdc_sandbox.harness.checking import catalog_sql

    settings = Settings.load()
    try:
        with console.status("starting Spark on the metastore…"):
            spark = catalog_sql.catalog_session(settings, database)
    except SandboxError as exc:
        _fail(exc)
    show = _print_json if as_json else _print_result
    if statement is not None:
        raise typer.Exit(0 if _run_sql(spark, statement, limit, show) else 1)
    interactive = sys.stdin.isatty()
    if interactive:
        console.print("SQL on the silver tables; end a statement with ;, leave with Ctrl-D")
    failed = [not _run_sql(spark, text, limit, show)
              for text in catalog_sql.statements(_typed_lines() if interactive else sys.stdin)]
    raise typer.Exit(1 if any(failed) and not interactive else 0)


def _typed_lines():
    importlib.import_module("readline")  # line editing and history for input()
    prompt = "sql> "
    while True:
        try:
            line = input(prompt)
        except EOFError:
            console.print()
            return
        prompt = "sql> " if line.rstrip().endswith(";") else "   > "
        yield line


def _run_sql(spark, statement: str, limit: int, show) -> bool:
    """Run one statement and show its result; an error is shown and a shell goes on."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from cdc_sandbox.harness.checking import catalog_sql
    from cdc_sandbox.spark_jobs.failures import cause_line

    started = time.monotonic()
    try:
        result = catalog_sql.run(spark, statement, limit)
    except (PySparkException, Py4JJavaError) as exc:
        show(statement, None, cause_line(exc), 0)  # the stack trace is in Spark's log: .sandbox/logs/sql.log
        return False
    show(statement, result, None, time.monotonic() - started)
    return True


def _print_result(statement: str, result, error: str | None, seconds: float) -> None:
    if result is None:
        errors.print(f"[red]error:[/red] {escape(error)}", highlight=False)
        return
    out = Table(*map(escape, result.columns))
    for row in result.rows:  # values as they are: a `[b]` in a row is no markup
        out.add_row(*("NULL" if value is None else escape(str(value)) for value in row))
    console.print(out)
    more = " (more not shown: --limit)" if result.truncated else ""
    console.print(f"{len(result.rows)} rows{more} in {seconds:.1f} s", highlight=False)


def _print_json(statement: str, result, error: str | None, seconds: float) -> None:
    from cdc_sandbox.harness.checking import catalog_sql

    print(catalog_sql.as_json(statement, result, error), flush=True)


QUERY_ENGINES = ("hudi-rs", "spark")


@app.command()
def query(
    table: str,
    as_of: str = typer.Option(None, help="Time travel: the table as of this commit instant."),
    after: str = typer.Option(None, help="Incremental: changes of commits completed after this time ('000' = all)."),
    until: str = typer.Option(None, help="Incremental: up to this completion time (default: the latest)."),
    timeline: bool = typer.Option(False, help="List the commits with the source position each one reached."),
    limit: int = typer.Option(20, help="Rows to show."),
    lake: str = typer.Option(None, help="Base URI of the lake (default s3a://<lake bucket>)."),
    engine: str = typer.Option("hudi-rs", help="hudi-rs (no JVM: quick) or spark (Hudi's own reader)."),
    meta: bool = typer.Option(False, "--meta", help="Also Hudi's, Kafka's and Debezium's columns."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per row (per commit with --timeline)."),
):
    """Read a silver table: snapshot (default), time travel, incremental, or its commit timeline. The table's own
    columns and `__deleted` (true for a soft-deleted row) unless --meta."""
    if engine not in QUERY_ENGINES:
        _fail(SandboxError(f"unknown engine {engine}", "choose " + " or ".join(QUERY_ENGINES)))
    settings = Settings.load()
    config = sandbox_job.job_config(settings, lake=lake or f"s3a://{settings.topology.lake_bucket}")
    if table not in {spec.table for spec in config.tables}:
        _fail(SandboxError(f"unknown table {table}", "choose from: " + ", ".join(s.table for s in config.tables)))
    try:
        if timeline:
            _print_timeline(table, S3Timelines(sandbox_s3(settings)).read(config.silver_path(table)),
                            as_json)
            return
        rows = _read_silver(settings, config, table, engine, as_of, after, until, limit)
    except SandboxError as exc:
        _fail(exc)
    except (BotoCoreError, ClientError, OSError) as exc:
        _fail(SandboxError(f"cannot read {config.silver_path(table)}: {' '.join(str(exc).split())}",
                           "check that the sandbox runs (`sandbox status`) and the job wrote the table"))
    if not meta:
        rows = rows.select([c for c in rows.column_names if c == "__deleted" or not c.startswith(JOB_COLUMN_PREFIXES)])
    _print_rows(rows.slice(0, limit), as_json)


JOB_COLUMN_PREFIXES = ("_hoodie_", "_kafka_", "_source_", "__")  # what Hudi, Kafka and Debezium add to a row


def _read_silver(settings: Settings, config, table: str, engine: str, as_of, after, until, limit: int):
    """The rows as an Arrow table, through hudi-rs (at least `limit` of them) or Spark."""
    import pyarrow as pa

    path = config.silver_path(table)
    unreadable = f"{engine} cannot read {path}"
    hint = "has the job written it? `sandbox query TABLE --timeline` lists its commits; `sandbox job run` writes it"
    if engine == "hudi-rs":
        from cdc_sandbox.harness.checking.silver import RustSilver

        try:
            batches = RustSilver(config).read(table, as_of=as_of, after=after, until=until, limit=limit)
        except Exception as exc:  # hudi-rs raises its HudiCoreError, which it does not export
            if type(exc).__name__ != "HudiCoreError":
                raise
            raise SandboxError(f"{unreadable}: {str(exc).splitlines()[0]}", hint) from None
        return pa.Table.from_batches(batches) if batches else pa.table({})
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from cdc_sandbox.harness.checking.catalog_sql import command_session
    from cdc_sandbox.spark_jobs import queries
    from cdc_sandbox.spark_jobs.failures import cause_line

    spark = command_session(settings, config)
    try:
        frame = queries.incremental(spark, path, after, until) if after else \
            queries.time_travel(spark, path, as_of) if as_of else queries.snapshot(spark, path)
        batches = frame._collect_as_arrow()
    except (PySparkException, Py4JJavaError) as exc:
        raise SandboxError(f"{unreadable}: {cause_line(exc)}", hint) from None
    return pa.Table.from_batches(batches) if batches else pa.table({})


def _print_timeline(table: str, commits, as_json: bool) -> None:
    rows = [{"instant": c.instant, "completed": c.completed, "action": c.action,
             "max_source_position": c.max_source_position, "batch": c.batch_id} for c in commits]
    if as_json:
        for row in rows:
            print(json.dumps(row, default=str))
        return
    out = Table(title=f"{table} commits")
    for column in ("instant", "completed", "action", "max source position", "batch"):
        out.add_column(column)
    for row in rows:
        out.add_row(*(str(value) for value in row.values()))
    console.print(out)


def _print_rows(rows, as_json: bool) -> None:
    records = rows.to_pylist()
    if as_json:
        for record in records:
            print(json.dumps(record, default=_json_value))
        return
    out = Table(*map(escape, rows.column_names))
    for record in records:
        out.add_row(*("NULL" if value is None else escape(str(value)) for value in record.values()))
    console.print(out)


def _json_value(value):
    return value.hex() if isinstance(value, bytes) else str(value)


@app.command()
def init(directory: Path = typer.Argument(Path("."), help="The repository to start a project in.")):
    """Write a starter project: the project file with a table of its DDL, a test module running one oracle round, a
    GitHub Actions workflow, and the state directory in .gitignore. Files already there are left as they are."""
    from cdc_sandbox import starter

    directory.mkdir(parents=True, exist_ok=True)
    outcomes = starter.init(directory)
    for path, outcome in outcomes:
        _report(path, outcome)
    if all(outcome in (starter.UNCHANGED, starter.KEPT) for _, outcome in outcomes):
        console.print("nothing to do: every file of the starter is there")
    else:
        console.print(f"next: cd {directory} && sandbox up && sandbox load && pytest tests", highlight=False,
                      soft_wrap=True)


@app.command()
def restart(services: list[str] = typer.Argument(..., metavar="SERVICE...", help="e.g. connect, or kafka connect")):
    """Stop these services gracefully and start them again; the connectors are registered as by `up`."""
    try:
        settings = Settings.load()
        with console.status("working…"):
            backends.of(settings).restart(settings, services, _report)
    except SandboxError as exc:
        _fail(exc)


@app.command()
def env():
    """Print every service's connection settings as shell assignments: `eval "$(sandbox env)"` points psql, mysql,
    boto3, the AWS CLI and Kafka's tools at the sandbox."""
    try:
        values = connection_env(Settings.load())
    except SandboxError as exc:
        _fail(exc)
    for name, value in values.items():
        print(f"export {name}={shlex.quote(value)}")


@app.command()
def logs(service: str, lines: int = typer.Option(50, "--tail", "-n", help="How many lines from the end."),
         follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines.")):
    """Print the log of one service."""
    settings = Settings.load()
    try:
        code = backends.of(settings).logs(settings, service, lines, follow)
    except SandboxError as exc:
        _fail(exc)
    sys.exit(code)


@app.command()
def reset(yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask.")):
    """Stop everything and delete the state directory (data, logs, secrets). Installed tools stay."""
    settings = Settings.load()
    if not yes and not typer.confirm(f"delete {settings.state_dir} and all data in it?"):
        raise typer.Exit(1)
    try:
        backends.of(settings).reset(settings, _report)
    except SandboxError as exc:
        _fail(exc)
    shutil.rmtree(settings.state_dir, ignore_errors=True)
    console.print(f"removed {settings.state_dir}")


if __name__ == "__main__":
    app()
