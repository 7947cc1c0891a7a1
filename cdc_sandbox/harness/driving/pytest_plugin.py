"""pytest fixtures for tests against the sandbox (registered as the `cdc_sandbox` plugin entry point, so any suite
in an environment with this package installed gets them).

`--sandbox=attach` (the default) uses the sandbox of the current project (what `sandbox up` started), bringing it up
if it is not running; `SANDBOX_STATE_DIR` and the port variables point it at another one. `--sandbox=ephemeral`
starts a sandbox of its own for the test session, on free ports in a temporary directory, and removes it after.

Scenario files (`*.yaml` in the directories of the `sandbox_scenarios` ini option, `cdc_sandbox/fixtures/scenarios` by
default) are collected as tests. After the run a summary of what the oracles checked is printed, and written to
`--sandbox-summary PATH` when given: nothing lands in a team's directory unless asked.
"""

from __future__ import annotations

import inspect
import os
import time
from pathlib import Path

import port_for
import pytest

from cdc_sandbox.config import DEFAULT_PORTS, Settings
from cdc_sandbox.harness.running.lakes_for_tests import KEPT_LAKES, SESSION_BRANCHES, finish, pipeline_on_new_lake
from cdc_sandbox.harness.checking.oracle import RUN_STATS, Oracle
from cdc_sandbox.sources import tickit
from cdc_sandbox.sources.mutations import Mutator
from cdc_sandbox.sources.registry import RegistryClient
from cdc_sandbox.stack import catalog, databases
from cdc_sandbox.stack.connectors import ConnectClient
from cdc_sandbox.stack.cpu_account import CpuAccount, by_cost, own_and_services, spent_between
from cdc_sandbox.stack.services.localstack import sandbox_s3

STARTED = time.monotonic()
SERVICES_OF_THIS_RUN: list[Path] = []  # the state directories of the sandboxes this run uses
CPU = CpuAccount(ours=own_and_services(SERVICES_OF_THIS_RUN))
TEST_COSTS: dict[str, tuple[float, float]] = {}  # test -> (core-seconds, wall seconds)


def pytest_addoption(parser):
    group = parser.getgroup("cdc_sandbox", "CDC sandbox")
    group.addoption("--sandbox", choices=("attach", "ephemeral"), default=os.environ.get("SANDBOX_TESTS", "attach"),
                    help="attach to the project's sandbox (default) or start an ephemeral one on free ports")
    group.addoption("--sandbox-summary", default=None, metavar="PATH",
                    help="also write the summary of what the oracles checked to this file (it is always printed)")
    group.addoption("--sandbox-job", default=os.environ.get("SANDBOX_JOB", "builtin"),
                    help="the job under test: 'builtin' (the sandbox's own) or a YAML file describing a team's job "
                         "(cdc_sandbox/harness/running/job_adapters.py; examples/team_job/sandbox-job.yaml)")
    group.addoption("--sandbox-job-set", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting of the job file's job (its `settings`), e.g. ordering=source_sequence")
    group.addoption("--sandbox-tickit-scale", type=float, default=1.0,
                    help="size of the generated TICKIT an ephemeral sandbox loads (1.0 = the original row counts, "
                         "430,000 rows; 0.01 loads and streams through Debezium in a moment); an attached sandbox "
                         "always holds the original")
    group.addoption("--oracle-timeout", type=float, default=240.0,
                    help="seconds the oracle waits for the pipeline to reach a source position")
    group.addoption("--sandbox-catalogue", action="store_true",
                    help="also run the shipped incident catalogue, each scenario bound to the project's tables (or "
                         "reported as not applicable, with what the tables lack)")
    group.addoption("--sandbox-catalogue-teeth", action="store_true",
                    help="with --sandbox-catalogue: also run each broken variant of the built-in job against the "
                         "scenario that declares it catches it, on the project's tables: each must be caught")
    group.addoption("--sandbox-catalogue-report", default="reports/catalogue.md", metavar="PATH",
                    help="with --sandbox-catalogue: where the Markdown report of each incident's verdict goes")
    parser.addini("sandbox_scenarios", "directories whose *.yaml scenario files are collected as tests",
                  type="paths", default=["cdc_sandbox/fixtures/scenarios"])


# --- the sandbox ---------------------------------------------------------------------------------------------
def pytest_configure(config):
    """The marks the plugin puts on what it collects, known in any project that installs it. pytest-xdist's workers
    would each bring up and load one sandbox, and their oracles would read one another's changes: refused."""
    if getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput"):
        raise pytest.UsageError("the cdc_sandbox plugin runs its tests in one process: the sandbox's sources and "
                                "lakes are shared, so parallel workers would read one another's changes. "
                                "Run without -n (pytest-xdist), or with -p no:xdist")
    for mark, meaning in (("e2e", "end-to-end against the running sandbox (real services)"),
                          ("slow", "long-running end-to-end suites")):
        config.addinivalue_line("markers", f"{mark}: {meaning}")
    CPU.start()
    if config.getoption("--sandbox-catalogue", False):
        from cdc_sandbox.harness.driving.scenario import SHIPPED

        if not any(Path(arg).resolve() == SHIPPED.resolve() for arg in config.args):
            config.args.append(str(SHIPPED))


@pytest.fixture(scope="session")
def cdc_sandbox_settings(request, tmp_path_factory) -> Settings:
    """The settings of the sandbox the session uses, before it is brought up (`sandbox` gives it running)."""
    if request.config.getoption("--sandbox") == "ephemeral":
        settings = ephemeral_settings(tmp_path_factory.mktemp("sandbox"))
    else:
        settings = Settings.load()
    SERVICES_OF_THIS_RUN.append(settings.state_dir)
    CPU.scope_changed()
    return settings


def ephemeral_settings(state_dir: Path) -> Settings:
    """Settings of a new native sandbox in `state_dir`, every service on a free port (tools are shared)."""
    env = dict(os.environ, SANDBOX_STATE_DIR=str(state_dir), SANDBOX_BACKEND="native")
    taken = set(DEFAULT_PORTS.values())  # leave the ports of a `sandbox up` sandbox alone
    for name in DEFAULT_PORTS:
        port = port_for.select_random(exclude_ports=taken)
        taken.add(port)
        env[f"SANDBOX_{name.upper()}_PORT"] = str(port)
    return Settings.load(env)


@pytest.fixture(scope="session")
def cdc_sandbox(request, cdc_sandbox_settings: Settings):
    """A running sandbox. Attach: the project's (started, without installing, if it is down). Ephemeral: a new
    stack for this session on free ports, with testcontainers where a Docker engine answers, natively otherwise;
    removed afterwards."""
    from cdc_sandbox.stack import backends, orphans
    from cdc_sandbox.stack.backends import compose, native, select

    quiet = lambda name, outcome: None  # noqa: E731
    if request.config.getoption("--sandbox") == "ephemeral":
        if select.docker_engine().reachable:
            with compose.ephemeral_stack() as settings:
                yield settings
            return
        orphans.reap()  # what sessions that were killed left running
        entry = orphans.register(cdc_sandbox_settings)
        try:
            native.up(cdc_sandbox_settings, quiet)
            yield cdc_sandbox_settings
        finally:
            native.down(cdc_sandbox_settings, quiet)
            entry.unlink(missing_ok=True)
        return
    backend = backends.of(cdc_sandbox_settings)
    statuses, connectors = backend.status(cdc_sandbox_settings)
    healthy = all(s.state in ("running", "external") for s in statuses)
    if not healthy or any(state != "RUNNING" for _, state in connectors):
        backend.up(cdc_sandbox_settings, quiet, skip_install=True)
    yield cdc_sandbox_settings


def _source_client(settings: Settings, engines: tuple[str, ...], missing: str):
    """A connection to the database of the project's first table on one of these engines; the test is skipped,
    saying `missing`, when it has none."""
    topology = settings.topology
    table = next((t for t in topology.tables if topology.sources[t.source].engine in engines), None)
    if table is None:
        pytest.skip(missing)
    with databases.table_connection(settings, catalog.placement_of(settings, table.name)) as conn:
        if topology.sources[table.source].engine in ("mariadb", "mysql"):  # its tables unqualified, as in its client
            conn.select_db(table.namespace)
        yield conn


@pytest.fixture
def cdc_postgres_client(cdc_sandbox: Settings, cdc_tickit_loaded):
    """A DB-API connection to the project's Postgres source database (closed after the test)."""
    yield from _source_client(cdc_sandbox, ("postgres",), "the project has no table on Postgres")


@pytest.fixture
def cdc_mysql_client(cdc_sandbox: Settings, cdc_tickit_loaded):
    """A DB-API connection to the project's MySQL-compatible source database (closed after the test)."""
    yield from _source_client(cdc_sandbox, ("mariadb", "mysql"), "the project has no table on MariaDB or MySQL")


@pytest.fixture
def cdc_mssql_client(cdc_sandbox: Settings, cdc_tickit_loaded):
    """A DB-API connection to the project's SQL Server database; the test is skipped when the sandbox has none."""
    yield from _source_client(cdc_sandbox, ("sqlserver",),
                              "no SQL Server table here: set SANDBOX_MSSQL_DSN (native backend) or use the compose "
                              "backend (TICKIT's crm.user lives on its Postgres stand-in without one)")


@pytest.fixture(scope="session")
def cdc_kafka_bootstrap(cdc_sandbox: Settings) -> str:
    """Kafka's bootstrap address (host:port)."""
    return cdc_sandbox.endpoint("kafka").address


@pytest.fixture(scope="session")
def cdc_connect_client(cdc_sandbox: Settings) -> ConnectClient:
    """A client of Kafka Connect's REST API: connectors, their status, restarts."""
    return ConnectClient(cdc_sandbox.url("connect"))


@pytest.fixture(scope="session")
def cdc_registry(cdc_sandbox: Settings) -> RegistryClient:
    """A client of Apicurio Registry: the Avro schemas of the change events, and their decoding."""
    return RegistryClient(cdc_sandbox.registry_api_url)


@pytest.fixture(scope="session")
def cdc_s3(cdc_sandbox: Settings):
    """A boto3 S3 client of LocalStack, where the lakes live."""
    return sandbox_s3(cdc_sandbox)


@pytest.fixture(scope="session")
def cdc_lake_bucket(cdc_sandbox: Settings) -> str:
    """The bucket of the project's lakes."""
    return cdc_sandbox.topology.lake_bucket


@pytest.fixture(scope="session")
def cdc_tickit_loaded(request, cdc_sandbox: Settings):
    """The source databases hold the project's rows: a project's data files or generated rows (a table holding
    rows keeps them); for TICKIT generated TICKIT (seed 0, original size, or `--sandbox-tickit-scale` of it in an
    ephemeral sandbox). Returns what the load did."""
    if not cdc_sandbox.topology.is_tickit:
        from cdc_sandbox.sources import project_data

        return project_data.load(cdc_sandbox)
    scale = request.config.getoption("--sandbox-tickit-scale")
    if not 0 < scale <= 1.0:
        raise pytest.UsageError(f"--sandbox-tickit-scale takes a size above 0 and up to 1.0, not {scale}")
    if scale != 1.0 and request.config.getoption("--sandbox") != "ephemeral":
        raise pytest.UsageError(f"--sandbox-tickit-scale={scale} would shrink the tables of the sandbox this session "
                                "attaches to: use it with --sandbox=ephemeral")
    return tickit.load(cdc_sandbox, tickit.GeneratedRows(seed=0, scale=scale))


@pytest.fixture
def cdc_mutator(cdc_sandbox: Settings, cdc_tickit_loaded) -> Mutator:
    """Journaled changes to the source tables: insert, update, delete, key update, columns, truncate, random."""
    return Mutator(cdc_sandbox)


# --- the pipeline and the silver tables ----------------------------------------------------------------------
@pytest.fixture(scope="session")
def cdc_spark(cdc_sandbox: Settings):
    """A Spark session with the job's jars and S3 settings (shared by every pipeline of the session)."""
    from cdc_sandbox.harness.running.pipeline import spark_for

    session = spark_for(cdc_sandbox)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def cdc_spark_cluster(cdc_sandbox: Settings) -> str:
    """The sandbox's Spark standalone cluster (a master and two workers) by its master's URL, for
    `pipeline_factory(master=...)`: started for the session unless it runs already (`sandbox up --with
    spark-cluster`), and then stopped when the session ends."""
    from cdc_sandbox.stack.backends import native
    from cdc_sandbox.stack.services import spark_cluster

    if cdc_sandbox.backend == "compose":
        pytest.skip("the compose backend runs no Spark cluster yet")
    started = native.start_optional(cdc_sandbox, spark_cluster.CLUSTER, lambda name, outcome: None)
    yield spark_cluster.master_url(cdc_sandbox)
    for daemon in reversed(started):
        daemon.stop()


@pytest.fixture(scope="session")
def job_under_test(request):
    """The job the pipelines run (`--sandbox-job`); override this fixture to put another job under test."""
    from cdc_sandbox.harness.running import job_adapters

    given = request.config.getoption("--sandbox-job-set")
    if malformed := [item for item in given if "=" not in item]:
        raise pytest.UsageError(f"--sandbox-job-set takes KEY=VALUE, not {', '.join(malformed)}")
    return job_adapters.load(request.config.getoption("--sandbox-job"), dict(item.split("=", 1) for item in given))


@pytest.fixture(scope="session")
def cdc_lake_branches(cdc_sandbox: Settings, cdc_spark):
    """Where new test lakes branch from (`cdc_sandbox.harness.running.lake_branch`); None when `SANDBOX_BRANCH_LAKES=0` or the session
    runs a deliberately broken job (its lakes must be written by that job from the first change on)."""
    from cdc_sandbox.harness.running.lake_branch import LakeBranches

    if os.environ.get("SANDBOX_BRANCH_LAKES", "1") == "0" or os.environ.get("SANDBOX_BROKEN_JOB"):
        return None
    SESSION_BRANCHES.append(LakeBranches(cdc_sandbox, cdc_spark))
    return SESSION_BRANCHES[-1]


@pytest.fixture(scope="session")
def cdc_pipeline(request, cdc_sandbox: Settings, cdc_spark, cdc_lake_branches, job_under_test):
    """The Hudi job on a lake of its own (branched from the baseline) for this test session, run in-process:
    `run_once()` or `start_continuous()`, and `wait_for_positions()` to wait until silver has reached source
    positions."""
    pipe = pipeline_on_new_lake(cdc_sandbox, cdc_spark, cdc_lake_branches, job_under_test=job_under_test)
    yield pipe
    finish([pipe], request.session.testsfailed > 0)


@pytest.fixture
def cdc_pipeline_factory(request, cdc_sandbox: Settings, cdc_spark, cdc_lake_branches, job_under_test):
    """New pipelines on new lakes (optionally over a subset of the tables), branched from the baseline unless
    `branch=False`; stopped after the test. `job=` puts another job than the session's under test; `master=` submits
    the job to that Spark cluster (`cdc_spark_cluster` gives the sandbox's)."""
    made = []

    def make(only: list[str] | None = None, branch: bool = True, job=None, master: str | None = None, **options):
        chosen = (job or job_under_test).on_cluster(master) if master else job or job_under_test
        pipe = pipeline_on_new_lake(cdc_sandbox, cdc_spark, cdc_lake_branches if branch else None, only=only,
                                    job_under_test=chosen, **options)
        made.append(pipe)
        return pipe

    yield make
    finish(made, _failed(request))


@pytest.fixture
def cdc_silver(cdc_pipeline):
    """The session pipeline's silver tables through both readers: `silver.spark` and `silver.rust`, each with
    snapshot(shape), as_of(shape, commit) and changes(shape, after, until)."""
    from types import SimpleNamespace

    from cdc_sandbox.harness.checking.silver import RustSilver, SparkSilver

    return SimpleNamespace(spark=SparkSilver(cdc_pipeline.spark, cdc_pipeline.config),
                           rust=RustSilver(cdc_pipeline.config))


@pytest.fixture
def cdc_oracle_factory(request, cdc_sandbox: Settings, cdc_mutator: Mutator):
    """Oracles over given pipelines: `oracle_factory(pipeline)`; each checks its history when the test ends."""
    timeout = request.config.getoption("--oracle-timeout")
    made: list[Oracle] = []

    def make(pipe) -> Oracle:
        made.append(Oracle(cdc_sandbox, pipe, cdc_mutator, timeout=timeout))
        return made[-1]

    yield make
    if not _failed(request):
        for oracle in made:
            oracle.verify_history()


@pytest.fixture(scope="module")
def cdc_module_pipeline(request, cdc_sandbox: Settings, cdc_spark, cdc_lake_branches, job_under_test):
    """The Hudi job on a lake of its own (branched from the baseline) for one test module (what `oracle`
    checks)."""
    failed_before = request.session.testsfailed
    pipe = pipeline_on_new_lake(cdc_sandbox, cdc_spark, cdc_lake_branches, job_under_test=job_under_test)
    yield pipe
    finish([pipe], request.session.testsfailed > failed_before)


@pytest.fixture
def cdc_oracle(cdc_oracle_factory, cdc_module_pipeline) -> Oracle:
    """An oracle over the module's pipeline (`oracle.pipeline`): `track(tables)`, mutate, `round()`; its history
    is verified again at the end of the test."""
    return cdc_oracle_factory(cdc_module_pipeline)


# --- the short names ---------------------------------------------------------------------------------------
# Each fixture above is `cdc_<name>`, and the plugin's fixtures use those names alone: a fixture of a team's own
# called `spark` or `sandbox` replaces the short name for the team's tests, never the session the pipelines run in.
SHORT_NAMES = {"sandbox_settings": "session", "sandbox": "session", "postgres_client": "function",
               "mysql_client": "function", "mssql_client": "function", "kafka_bootstrap": "session",
               "connect_client": "session", "registry": "session", "s3": "session", "lake_bucket": "session",
               "tickit_loaded": "session", "mutator": "function", "spark": "session", "lake_branches": "session",
               "pipeline": "session", "pipeline_factory": "function", "silver": "function",
               "oracle_factory": "function", "module_pipeline": "module", "oracle": "function",
               "spark_cluster": "session"}


def _short_name(name: str, scope: str):
    target = f"cdc_{name}"

    def fixture(**given):
        return given[target]

    # pytest reads a fixture's arguments from its signature: this one asks for `target` alone
    fixture.__signature__ = inspect.Signature([inspect.Parameter(target, inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    fixture.__doc__ = f"`cdc_{name}` by its short name (a fixture of your own called `{name}` replaces this one)."
    return pytest.fixture(scope=scope, name=name)(fixture)


for _name, _scope in SHORT_NAMES.items():
    globals()[f"_short_{_name}"] = _short_name(_name, _scope)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)
    entry = getattr(item, "catalogue_entry", None)
    if entry is not None and (report.when == "call" or report.failed or report.skipped):
        from cdc_sandbox.harness.driving import catalogue_report
        from cdc_sandbox.harness.driving.scenario_tests import NOT_APPLICABLE

        if entry.verdict in ("not run", "passed", "caught"):
            entry.verdict, entry.detail = catalogue_report.verdict_of(report, NOT_APPLICABLE, entry.variant)


def _failed(request) -> bool:
    report = getattr(request.node, "report_call", None)
    return report is None or report.failed


# --- scenario files ------------------------------------------------------------------------------------------
def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    directories = [Path(d).resolve() for d in parent.config.getini("sandbox_scenarios")]
    if parent.config.getoption("--sandbox-catalogue"):
        from cdc_sandbox.harness.driving.scenario import SHIPPED

        directories.append(SHIPPED.resolve())
    if any(directory in file_path.resolve().parents for directory in directories):
        from cdc_sandbox.harness.driving.scenario_tests import ScenarioFile

        return ScenarioFile.from_parent(parent, path=file_path)
    return None


# --- where the CPU went ---------------------------------------------------------------------------------------
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Each test's core-seconds: its run's processes (the harness, Spark's drivers) and the sandbox's services."""
    before, started = CPU.totals(), time.monotonic()
    yield
    TEST_COSTS[item.nodeid] = (sum(spent_between(before, CPU.totals()).values()), time.monotonic() - started)


def cpu_lines() -> list[str]:
    spent = CPU.totals()
    costliest = sorted((item for item in TEST_COSTS.items() if item[1][0] >= 1), key=lambda item: -item[1][0])[:5]
    started = CPU.started()
    return [f"core-seconds: {sum(spent.values()):,.0f} (this run's processes and its sandbox's services, which runs "
            f"beside it may share): {by_cost(spent)}",
            "processes started: " + (", ".join(f"{name} {count}" for name, count in started.most_common()
                                                if count and not name.startswith("postgres")) or "none"),
            *(f"costliest: {test} {core:,.0f} core-s in {wall:,.0f} s" for test, (core, wall) in costliest)]


# --- the catalogue's report ---------------------------------------------------------------------------------
CATALOGUE_ITEMS: list = []  # the session's scenario tests, once collected and selected


def pytest_collection_finish(session):
    CATALOGUE_ITEMS[:] = [item for item in session.items if hasattr(item, "catalogue_entry")]


def catalogue_lines(config) -> list[str]:
    """Write the catalogue's report; its lines in the summary."""
    from cdc_sandbox.config import load_topology, project_file
    from cdc_sandbox.harness.driving import catalogue_report

    entries = [item.catalogue_entry for item in CATALOGUE_ITEMS]
    path = Path(config.getoption("--sandbox-catalogue-report"))
    catalogue_report.write(path, entries, load_topology(project_file(os.environ)).file_label,
                           config.getoption("--sandbox-job"))
    return [f"incident catalogue: {catalogue_report.summary(entries)}; report: {path}"]


# --- the run's summary ---------------------------------------------------------------------------------------
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if config.option.collectonly:
        return
    stats = terminalreporter.stats
    counts = {kind: len(stats.get(kind, [])) for kind in ("passed", "failed", "error", "skipped")}
    lines = [
        f"tests: {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
        f"{counts['skipped']} skipped in {time.monotonic() - STARTED:.0f} s",
        f"tables checked: {', '.join(sorted(RUN_STATS.tables)) or 'none'}",
        f"oracle rounds: {RUN_STATS.rounds}; snapshots checked: {RUN_STATS.snapshots}; "
        f"commits checked by time travel: {len(RUN_STATS.time_travel_instants)}; "
        f"incremental ranges checked: {RUN_STATS.incremental_ranges}",
        f"rows compared (per reader and check): {RUN_STATS.rows_compared:,}",
        f"seconds waiting for the pipeline: {RUN_STATS.seconds_waiting:.0f}; reading silver: "
        + ", ".join(f"{name} {seconds:.0f} ({RUN_STATS.rows_by_reader.get(name, 0) / max(seconds, 1e-9):,.0f} rows/s)"
                    for name, seconds in RUN_STATS.seconds_by_reader.items()),
    ]
    for branches in SESSION_BRANCHES:
        lines.append(f"test lakes branched from the baseline: {branches.branches}; the baseline caught up "
                     f"{len(branches.catch_up_seconds)} times in {sum(branches.catch_up_seconds):.0f} s")
        lines += [f"the baseline was rebuilt from the topics after its job failed: {why}"
                  for why in branches.rebuilt_after]
    slowest = sorted((r for r in stats.get("passed", []) + stats.get("failed", []) if r.when == "call"),
                     key=lambda r: r.duration, reverse=True)[:5]
    lines += [f"slowest: {r.nodeid} {r.duration:.0f} s" for r in slowest]
    lines += cpu_lines()
    lines += [f"lake kept after a failure: {lake}" for lake in KEPT_LAKES]
    if config.getoption("--sandbox-catalogue"):
        lines += catalogue_lines(config)
    terminalreporter.write_sep("=", "sandbox summary")
    for line in lines:
        terminalreporter.write_line(line)
    if config.getoption("--sandbox-summary"):
        path = Path(config.getoption("--sandbox-summary"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
