"""Where the sandbox keeps its state, which ports it uses, and the CDC topology it sets up.

Resolution order for every setting: environment variable, then what the sandbox recorded when it was first
brought up (`<state>/ports.json`), then the default. Environment variables:

- `SANDBOX_STATE_DIR`   state directory (default `.sandbox` beside the project file; TICKIT's in this checkout)
- `SANDBOX_TOOLS_DIR`   installed tools: resolved jars, LocalStack's virtualenv, each in a directory named after
  what it was built from, so every checkout on the machine shares them (default `cdc-sandbox/tools` in
  `$XDG_CACHE_HOME` or `~/.cache`)
- `SANDBOX_<SERVICE>_PORT`  port of a service (`POSTGRES`, `MYSQL`, `KAFKA`, `KAFKA_CONTROLLER`, `CONNECT`,
  `APICURIO`, `LOCALSTACK`)
- `SANDBOX_<SERVICE>_HOST`  makes the service external: the sandbox does not start it and connects there
- `SANDBOX_<SERVICE>_USER` / `SANDBOX_<SERVICE>_PASSWORD`  credentials of an external database
- `SANDBOX_BACKEND`     `native` or `compose` (default: what `sandbox up` chose and recorded in `<state>/backend`,
  else compose when a Docker engine answers, native otherwise)
- `SANDBOX_MSSQL_DSN`   `mssql://user:password@host:1433/tickit`: an external SQL Server for the `mssql` source

Natively there is no SQL Server unless `SANDBOX_MSSQL_DSN` names one: the tables of the `mssql` source then live on
its declared stand-in (Postgres). On compose they live in the SQL Server container.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from urllib.parse import unquote, urlsplit

import yaml

from cdc_sandbox import debezium_settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.sql_text import statements, without_client_commands
from cdc_sandbox.tickit_data import TABLE_NAMES

# What the sandbox ships (topology, connector templates, SQL, compose files, pom files, the job) sits inside its package,
# installed as files by a wheel or an editable checkout alike.
PACKAGE_DIR = Path(str(resources.files("cdc_sandbox")))
TOPOLOGY_FILE = PACKAGE_DIR / "fixtures" / "topology.yaml"
LOCALHOST = "127.0.0.1"
REGISTRY_API = "/apis/registry/v2"  # Apicurio's v2 REST API, which its 2.x converter speaks

DEFAULT_PORTS = {
    "postgres": 5432,
    "mysql": 3306,
    "kafka": 9092,
    "kafka_controller": 9093,
    "connect": 8083,
    "apicurio": 8080,
    "localstack": 4566,
    "mssql": 1433,
    "metastore": 9083,
    # The Spark standalone cluster (`sandbox up --with spark-cluster`): each daemon's RPC port and its web UI's.
    "spark_master": 7077,
    "spark_master_ui": 8090,
    "spark_worker_1": 7078,
    "spark_worker_1_ui": 8091,
    "spark_worker_2": 7079,
    "spark_worker_2_ui": 8092,
}
SERVICES = ("postgres", "mysql", "kafka", "connect", "apicurio", "localstack", "metastore")
OPTIONAL_SERVICES = ("spark-cluster",)  # started by `sandbox up --with <name>`, and by every `sandbox up` after it
BACKENDS = ("native", "compose")


ENGINES = ("postgres", "mariadb", "mysql", "sqlserver")  # MariaDB speaks MySQL's SQL (`cdc_sandbox.tickit_data.ddl.dialect_of`)
PROJECT_FILE_NAME = "cdc-sandbox.yaml"
SIGNAL_TABLE = "cdc_signal"  # Debezium's signal table, which the sandbox creates in a captured schema when a test needs it
TABLE_TYPES = ("COPY_ON_WRITE", "MERGE_ON_READ")
INDEXES = ("bucket", "global_simple")  # Hudi's bucket index (keys never move partition), or a global one
REPLICA_IDENTITIES = ("full", "default")
SERVICE_OF_ENGINE = {"postgres": "postgres", "mariadb": "mysql", "mysql": "mysql", "sqlserver": "mssql"}


@dataclass(frozen=True)
class CapturedTable:
    source: str  # the source service holding it: postgres, mysql, mssql
    namespace: str  # schema (Postgres, SQL Server) or database (MySQL)
    name: str
    stand_in: bool = False  # placed on another engine because its own is not available


@dataclass(frozen=True)
class SilverSettings:
    """How a table's silver copy is written, as a team sets it in production (the job's per-table settings)."""

    record_key: tuple[str, ...] = ()  # empty: the table's primary key
    partition_by: tuple[str, ...] = ()
    hive_style: bool = True
    table_type: str | None = None  # None: the job's
    hard_deletes: bool | None = None  # None: the job's
    index: str = "bucket"
    replica_identity: str = "full"  # Postgres only
    data: dict = field(default_factory=dict)  # {generate: rows, seed: n} or {file: path}


@dataclass(frozen=True)
class Source:
    name: str
    engine: str
    database: str
    connector: str
    tables: tuple[CapturedTable, ...]
    stand_in_for: tuple[str, ...] = ()  # sources whose tables this one holds
    ddl: Path | None = None  # the project's CREATE TABLE statements (TICKIT's tables come from tickit_data)
    debezium: dict = field(default_factory=dict, hash=False)  # settings merged into the generated connector config
    left_out: tuple[tuple[str, str], ...] = ()  # (namespace, table) its DDL made that capture leaves out (`DdlRun`)

    @property
    def namespaces(self) -> list[str]:
        return list(dict.fromkeys(t.namespace for t in self.tables))


@dataclass(frozen=True)
class Topology:
    topic_prefix: str
    lake_bucket: str
    probe_table: str
    sources: dict[str, Source]
    file: Path = TOPOLOGY_FILE
    silver: dict[str, SilverSettings] = field(default_factory=dict)
    declared_databases: dict[str, str] = field(default_factory=dict)  # before any stand-in took tables over
    catalog_database: str = "tickit_cdc_hudi"

    @property
    def file_label(self) -> str:
        """The project file as messages name it: the shipped TICKIT file by its place in the package, else its path."""
        shipped = PACKAGE_DIR.parent
        return str(self.file.relative_to(shipped)) if self.file.is_relative_to(PACKAGE_DIR) else str(self.file)

    @property
    def is_tickit(self) -> bool:
        """TICKIT's built-in tables, rather than a project's own DDL."""
        return not any(source.ddl for source in self.sources.values())

    def topic(self, namespace: str, table: str) -> str:
        return f"{self.topic_prefix}.{namespace}.{table}"

    @property
    def tables(self) -> list[CapturedTable]:
        return [table for source in self.sources.values() for table in source.tables]

    def table(self, name: str) -> CapturedTable:
        for table in self.tables:
            if table.name == name:
                return table
        raise SandboxError(f"no table {name!r} in the topology",
                           "choose one of: " + ", ".join(t.name for t in self.tables))

    def silver_of(self, name: str) -> SilverSettings:
        return self.silver.get(name, SilverSettings())

    def topics(self) -> list[str]:
        return [self.topic(t.namespace, t.name) for t in self.tables]

    def probe_topics(self) -> list[str]:
        return [self.topic(src.namespaces[0], self.probe_table) for src in self.sources.values()]


def project_file(env: dict[str, str], cwd: Path | None = None) -> Path:
    """The project file: `SANDBOX_PROJECT` (a file or the directory holding `cdc-sandbox.yaml`), else
    `cdc-sandbox.yaml` in the working directory, else TICKIT's topology."""
    named = env.get("SANDBOX_PROJECT")
    if named:
        path = Path(named).expanduser().resolve()
        return path / PROJECT_FILE_NAME if path.is_dir() else path
    here = (cwd or Path.cwd()) / PROJECT_FILE_NAME
    return here.resolve() if here.is_file() else TOPOLOGY_FILE


def default_state_dir(project: Path, env: dict[str, str]) -> Path:
    """`.sandbox` beside the project file: a team's sandbox lives in its repository. TICKIT's, the default when no
    project file is found, lives in the checkout the package runs from, or else in the user's state directory
    (`$XDG_STATE_HOME/cdc-sandbox/tickit`, or under `~/.local/state`): never inside an installed package."""
    if project != TOPOLOGY_FILE:
        return project.parent / ".sandbox"
    checkout = PACKAGE_DIR.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / ".git").exists():
        return checkout / ".sandbox"
    return Path(env.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "cdc-sandbox" / "tickit"


@dataclass(frozen=True)
class DdlRun:
    """What a source's catalog held after its DDL file ran: the file's digest (an edited file is noticed by it),
    each table (namespace, name) in the order the file created them, and the tables left out of capture, each with
    why (a column of a type the sandbox cannot compare)."""

    digest: str
    tables: tuple[tuple[str, str], ...] = ()
    left_out: tuple[tuple[str, str, str], ...] = ()  # (namespace, name, why)


def ddl_run_key(source: str, database: str) -> str:
    return f"{source}/{database}"


def file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise SandboxError(f"DDL file {path} is unreadable: {exc.strerror}", "fix the `ddl:` path in the project file") \
            from None


def ddl_runs_file(state_dir: Path) -> Path:
    return state_dir / "ddl-runs.json"


def read_ddl_runs(state_dir: Path) -> dict[str, DdlRun]:
    """Each source's last DDL run (`ddl_run_key`); a record from before tables were kept holds a digest alone."""
    try:
        raw = json.loads(ddl_runs_file(state_dir).read_text())
    except (OSError, ValueError):
        return {}
    return {key: DdlRun(value) if isinstance(value, str) else
            DdlRun(value["digest"], tuple(tuple(t) for t in value["tables"]),
                   tuple(tuple(t) for t in value.get("left_out", ())))
            for key, value in raw.items()}


def record_ddl_run(state_dir: Path, key: str, run: DdlRun) -> None:
    runs = {name: dataclasses.asdict(recorded) for name, recorded in read_ddl_runs(state_dir).items()}
    runs[key] = dataclasses.asdict(run)
    state_dir.mkdir(parents=True, exist_ok=True)
    ddl_runs_file(state_dir).write_text(json.dumps(runs, indent=2, sort_keys=True) + "\n")


def load_topology(path: Path = TOPOLOGY_FILE, available: set[str] | None = None,
                  engines: dict[str, str] | None = None, ddl_runs: dict[str, DdlRun] | None = None) -> Topology:
    """Read the topology; sources not in `available` hand their tables to their declared stand-in.

    `engines` replaces the engine of some sources (compose runs MySQL 8 where the native backend runs MariaDB);
    `ddl_runs` (`read_ddl_runs`) gives a source whose DDL file ran the tables its catalog then held.
    """
    try:
        raw = yaml.safe_load(path.read_text())
        specs = raw["sources"]
        sources = {name: _source(path, name, spec | {"engine": (engines or {}).get(name, spec["engine"])})
                   for name, spec in specs.items()}
        sources = _as_ran(sources, ddl_runs or {})
        if not any(source.ddl for source in sources.values()):
            _check_placement(path, sources)
        declared = {name: source.database for name, source in sources.items()}
        for name, spec in specs.items():
            if available is not None and name not in available:
                sources = _hand_over(path, sources, name, spec.get("stand_in"))
        silver = {name: _silver_settings(path, name, spec or {}) for name, spec in (raw.get("tables") or {}).items()}
        _check_silver_tables(path, sources, silver, ddl_runs or {})
        return Topology(raw["topic_prefix"], raw["lake_bucket"], raw.get("probe_table", "cdc_probe"), sources,
                        file=path, silver=silver, declared_databases=declared,
                        catalog_database=raw.get("catalog_database", f"{raw['topic_prefix']}_cdc_hudi"))
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
        raise SandboxError(
            f"project file {path} is unreadable or incomplete: {exc!r}",
            "each source needs engine, database, connector and either its tables by namespace (TICKIT) or `ddl`, a "
            "file of CREATE TABLE statements; see cdc_sandbox/fixtures/topology.yaml and examples/team_project/cdc-sandbox.yaml",
        ) from exc


def _as_ran(sources: dict[str, Source], ddl_runs: dict[str, DdlRun]) -> dict[str, Source]:
    """Each source whose DDL file ran with the tables its catalog then held (and those capture leaves out)."""
    result = {}
    for name, source in sources.items():
        ran = _run_of(source, ddl_runs)
        if ran is not None:
            source = replace(source, tables=tuple(CapturedTable(name, namespace, table) for namespace, table in ran.tables),
                             left_out=tuple((namespace, table) for namespace, table, _ in ran.left_out))
        result[name] = source
    return result


def _run_of(source: Source, ddl_runs: dict[str, DdlRun]) -> DdlRun | None:
    """The record of the source's DDL file's last run: its tables are the database's, the file edited since or not
    (`sandbox up` says when it was)."""
    ran = ddl_runs.get(ddl_run_key(source.name, source.database)) if source.ddl else None
    return ran if ran is not None and ran.tables else None


def _check_placement(path: Path, sources: dict[str, Source]) -> None:
    """This file is the one place that says where a table lives: every TICKIT table once, on a known engine."""
    placed = [t.name for source in sources.values() for t in source.tables]
    problems = [f"{name} is no TICKIT table" for name in dict.fromkeys(placed) if name not in TABLE_NAMES]
    problems += [f"{name} is placed {placed.count(name)} times" for name in TABLE_NAMES if placed.count(name) != 1]
    if problems:
        raise SandboxError(f"{path}: " + "; ".join(problems), "list each of the seven TICKIT tables under exactly one "
                           "source: " + ", ".join(TABLE_NAMES))


def _source(path: Path, name: str, spec: dict) -> Source:
    if spec["engine"] not in ENGINES:
        raise SandboxError(f"{path}: source {name} has engine {spec['engine']!r}", f"use one of {', '.join(ENGINES)}")
    if SERVICE_OF_ENGINE[spec["engine"]] != name:
        raise SandboxError(f"{path}: source {name} (engine {spec['engine']}) must be named after the service that "
                           f"runs it", f"name it {SERVICE_OF_ENGINE[spec['engine']]}")
    ddl = (path.parent / spec["ddl"]).resolve() if spec.get("ddl") else None
    if ddl is not None:
        tables = tuple(CapturedTable(name, namespace, table) for namespace, table in ddl_tables(ddl, spec))
    else:
        tables = tuple(CapturedTable(name, namespace, table) for namespace, names in spec["tables"].items()
                       for table in names)
    debezium = spec.get("debezium") or {}
    if not isinstance(debezium, dict):
        raise SandboxError(f"{path}: `debezium` of source {name} is not a mapping", "give it as setting: value lines")
    debezium = debezium_settings.as_settings(debezium)
    debezium_settings.check(path, name, debezium)
    return Source(name=name, engine=spec["engine"], database=spec["database"], connector=spec["connector"],
                  tables=tables, ddl=ddl, debezium=debezium)


CREATE_TABLE = re.compile(r"create\s+(?:unlogged\s+)?table\s+(?:if\s+not\s+exists\s+)?"
                          r"((?:[`\"\[]?[\w$]+[`\"\]]?\s*\.\s*)?[`\"\[]?[\w$]+[`\"\]]?)", re.IGNORECASE)
PARTITION_OF = re.compile(r"\bpartition\s+of\b", re.IGNORECASE)
ATTACH_PARTITION = re.compile(r"alter\s+table\s+(?:only\s+)?\S+\s+attach\s+partition\s+([`\"\w$.]+)", re.IGNORECASE)


def ddl_tables(ddl: Path, spec: dict) -> list[tuple[str, str]]:
    """(namespace, table) of each statement of a DDL file that creates a table, in order: the tables the source
    captures until the file has run (then its catalog says, `DdlRun`). A name without a schema lands in `public` on
    Postgres and in the source's database on MariaDB/MySQL; a partition is captured as its parent (the publication
    publishes through the root)."""
    try:
        text = ddl.read_text()
    except OSError as exc:
        raise SandboxError(f"DDL file {ddl} is unreadable: {exc.strerror}", "fix the `ddl:` path in the project file") \
            from None
    default = "public" if spec["engine"] == "postgres" else spec["database"]

    def named(name: str) -> tuple[str, str]:
        parts = [part.strip().strip('`"[]') for part in name.split(".")]
        return (parts[0], parts[1]) if len(parts) == 2 else (default, parts[0])

    found, partitions = [], set()
    for _, statement in statements(without_client_commands(text)):
        attached = ATTACH_PARTITION.match(statement)
        if attached:  # pg_dump creates a partition as a table, then attaches it
            partitions.add(named(attached.group(1)))
        match = CREATE_TABLE.match(statement)
        if match and not PARTITION_OF.search(statement):
            found.append(named(match.group(1)))
    found = [table for table in found if table not in partitions]
    if not found:
        raise SandboxError(f"DDL file {ddl} has no CREATE TABLE statement", "write the tables the source captures")
    return found


def _silver_settings(path: Path, table: str, spec: dict) -> SilverSettings:
    def listed(name: str) -> tuple[str, ...]:
        value = spec.get(name) or ()
        return (value,) if isinstance(value, str) else tuple(value)

    if "ordering" in spec:
        raise SandboxError(f"{path}: table {table}: `ordering` is not taken: the oracle holds silver to the source's "
                           "last write, and an ordering column makes Hudi keep an older version wherever the column's "
                           "values go backwards (a clock set back, a batch replayed)",
                           "remove `ordering`: the job orders a key's versions by their source position, which only "
                           "moves forward")
    unknown = set(spec) - {"record_key", "partition_by", "hive_style", "table_type", "deletes", "index",
                           "replica_identity", "data"}
    checks = [(not unknown, f"unknown settings {', '.join(sorted(unknown))}"),
              (spec.get("table_type", TABLE_TYPES[0]) in TABLE_TYPES, f"table_type is one of {', '.join(TABLE_TYPES)}"),
              (spec.get("deletes", "soft") in ("soft", "hard"), "deletes is soft or hard"),
              (spec.get("index", "bucket") in INDEXES, f"index is one of {', '.join(INDEXES)}"),
              (spec.get("replica_identity", "full") in REPLICA_IDENTITIES, "replica_identity is full or default")]
    for ok, rule in checks:
        if not ok:
            raise SandboxError(f"{path}: table {table}: {rule}", "fix the table's entry under `tables:`")
    partition_by = listed("partition_by")
    index = spec.get("index", "global_simple" if partition_by else "bucket")
    return SilverSettings(record_key=listed("record_key"), partition_by=partition_by,
                          hive_style=bool(spec.get("hive_style", True)), table_type=spec.get("table_type"),
                          hard_deletes=None if "deletes" not in spec else spec["deletes"] == "hard", index=index,
                          replica_identity=spec.get("replica_identity", "full"), data=dict(spec.get("data") or {}))


def check_silver_tables(topology: Topology, ddl_runs: dict[str, DdlRun]) -> None:
    """`tables:` names only tables the sources capture or leave out; not before every DDL file ran as it is now
    (a file's tables are what its catalog holds then)."""
    _check_silver_tables(topology.file, topology.sources, topology.silver, ddl_runs)


def _check_silver_tables(path: Path, sources: dict[str, Source], silver: dict[str, SilverSettings],
                         ddl_runs: dict[str, DdlRun]) -> None:
    runs = [_run_of(source, ddl_runs) for source in sources.values() if source.ddl]
    if any(run is None or run.digest != file_digest(source.ddl)
           for run, source in zip(runs, [s for s in sources.values() if s.ddl])):
        return  # a file not run as it is now: its tables are what its catalog holds once it has
    captured = {t.name for source in sources.values() for t in source.tables}
    left_out = {name for run in runs for _, name, _ in run.left_out}
    unknown = sorted(set(silver) - captured - left_out)
    if unknown:
        raise SandboxError(f"{path}: `tables:` names {', '.join(unknown)}, which no DDL file creates",
                           "choose from: " + ", ".join(sorted(captured)))


def _hand_over(path: Path, sources: dict[str, Source], absent: str, stand_in: str | None) -> dict[str, Source]:
    if stand_in is None:
        raise SandboxError(f"{path}: source {absent} is not available here and names no stand_in",
                           "give it `stand_in: postgres`, or run its engine (SANDBOX_MSSQL_DSN for SQL Server)")
    host = sources[stand_in]
    moved = tuple(CapturedTable(stand_in, t.namespace, t.name, stand_in=True) for t in sources[absent].tables)
    sources = {name: src for name, src in sources.items() if name != absent}
    sources[stand_in] = replace(host, tables=host.tables + moved, stand_in_for=host.stand_in_for + (absent,))
    return sources


@dataclass(frozen=True)
class Endpoint:
    service: str
    host: str
    port: int
    external: bool = False

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class Settings:
    state_dir: Path
    tools_dir: Path
    ports: dict[str, int]
    topology: Topology
    external_hosts: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    backend: str | None = None  # native | compose; None until `sandbox up` has chosen one

    @classmethod
    def load(cls, env: dict[str, str] | None = None, backend: str | None = None) -> "Settings":
        """`backend` overrides SANDBOX_BACKEND and the recorded choice (used once `sandbox up` has chosen)."""
        env = dict(os.environ if env is None else env)
        project = project_file(env)
        state_dir = Path(env.get("SANDBOX_STATE_DIR") or default_state_dir(project, env)).resolve()
        tools_dir = Path(env.get("SANDBOX_TOOLS_DIR") or user_cache_dir(env) / "tools").resolve()
        backend = backend or _backend_from_env(env) or _read_recorded_backend(state_dir)
        recorded = _read_recorded_ports(state_dir)
        ports = {name: _port_from_env(env, name, recorded.get(name, default)) for name, default in DEFAULT_PORTS.items()}
        external = {
            name: env[f"SANDBOX_{name.upper()}_HOST"] for name in SERVICES if env.get(f"SANDBOX_{name.upper()}_HOST")
        }
        available = {"postgres", "mysql"}
        if env.get("SANDBOX_MSSQL_DSN") and backend != "compose":
            _use_external_mssql(env, ports, external)
            available.add("mssql")
        if backend == "compose":
            available.add("mssql")
        engines = {"mysql": "mysql"} if backend == "compose" else None
        topology = load_topology(project, available=available, engines=engines, ddl_runs=read_ddl_runs(state_dir))
        return cls(state_dir=state_dir, tools_dir=tools_dir, ports=ports, external_hosts=external,
                   topology=topology, env=env, backend=backend)

    def with_ddl_runs(self) -> "Settings":
        """These settings with the tables each source's catalog held after its DDL file last ran (`DdlRun`)."""
        runs = read_ddl_runs(self.state_dir)
        return replace(self, topology=replace(self.topology, sources=_as_ran(self.topology.sources, runs)))

    def endpoint(self, service: str) -> Endpoint:
        host = self.external_hosts.get(service, LOCALHOST)
        return Endpoint(service, host, self.ports[service], external=service in self.external_hosts)

    def url(self, service: str) -> str:
        """Base URL of a service that speaks HTTP (Connect, Apicurio, LocalStack)."""
        return f"http://{self.endpoint(service).address}"

    @property
    def registry_api_url(self) -> str:
        return self.url("apicurio") + REGISTRY_API

    def is_external(self, service: str) -> bool:
        return service in self.external_hosts

    def record_ports(self) -> None:
        """Pin the ports of this sandbox so later commands (status, tests, down) find the same services."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "ports.json").write_text(json.dumps(self.ports, indent=2, sort_keys=True) + "\n")

    def record_backend(self) -> None:
        """Remember which backend runs this sandbox, so later commands (status, down, logs) use the same one."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "backend").write_text(f"{self.backend}\n")

    @property
    def optional_services(self) -> tuple[str, ...]:
        """The optional services this sandbox runs (`sandbox up --with`, or SANDBOX_WITH for one command), in the
        order of `OPTIONAL_SERVICES`."""
        recorded = self.state_dir / "with"
        chosen = set(recorded.read_text().split()) if recorded.exists() else set()
        given = set(self.env.get("SANDBOX_WITH", "").replace(",", " ").split())
        if unknown := sorted(given - set(OPTIONAL_SERVICES)):
            raise SandboxError(f"SANDBOX_WITH names no optional service {', '.join(unknown)}",
                               "choose among: " + ", ".join(OPTIONAL_SERVICES))
        return tuple(name for name in OPTIONAL_SERVICES if name in chosen | given)

    def record_optional_services(self, names: list[str]) -> None:
        """Add these to the optional services this sandbox runs (until `sandbox reset` removes its state)."""
        unknown = sorted(set(names) - set(OPTIONAL_SERVICES))
        if unknown:
            raise SandboxError(f"no optional service named {', '.join(unknown)}",
                               "choose among: " + ", ".join(OPTIONAL_SERVICES))
        if not names:
            return
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "with").write_text("".join(f"{name}\n" for name in {*self.optional_services, *names}))

    # Paths inside the state directory.
    def data_dir(self, service: str) -> Path:
        return self.state_dir / "data" / service

    def conf_dir(self, service: str) -> Path:
        return self.state_dir / "conf" / service

    def log_file(self, service: str) -> Path:
        return self.state_dir / "logs" / f"{service}.log"

    def pid_file(self, service: str) -> Path:
        return self.state_dir / "run" / f"{service}.pid"

    @property
    def secrets_file(self) -> Path:
        return self.state_dir / "secrets" / "credentials.properties"


def user_cache_dir(env: dict[str, str]) -> Path:
    """Where what every checkout on the machine can share is kept: `$XDG_CACHE_HOME/cdc-sandbox` or
    `~/.cache/cdc-sandbox`."""
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cdc-sandbox"


def _backend_from_env(env: dict[str, str]) -> str | None:
    chosen = env.get("SANDBOX_BACKEND", "").strip().lower()
    if chosen and chosen not in BACKENDS:
        raise SandboxError(f"SANDBOX_BACKEND={chosen!r} is not a backend",
                           "use SANDBOX_BACKEND=native or SANDBOX_BACKEND=compose, or unset it to choose automatically")
    return chosen or None


def _read_recorded_backend(state_dir: Path) -> str | None:
    path = state_dir / "backend"
    recorded = path.read_text().strip() if path.exists() else ""
    return recorded if recorded in BACKENDS else None


MSSQL_DSN_SCHEMES = ("mssql", "sqlserver")


@dataclass(frozen=True)
class MssqlDsn:
    host: str
    port: int
    user: str
    password: str
    database: str | None


def parse_dsn(text: str) -> MssqlDsn:
    """`mssql://user:password@host:1433/tickit` (user and password percent-encoded)."""
    parts = urlsplit(text)
    try:
        port = parts.port or 1433
    except ValueError:
        port = None
    if parts.scheme not in MSSQL_DSN_SCHEMES or not parts.hostname or not parts.username or port is None:
        raise SandboxError("SANDBOX_MSSQL_DSN is not a SQL Server DSN",
                           "write it as mssql://user:password@host:1433/tickit (percent-encode special characters); "
                           "the login must be sysadmin to enable CDC")
    database = parts.path.lstrip("/") or None
    return MssqlDsn(parts.hostname, port, unquote(parts.username), unquote(parts.password or ""), database)


def _use_external_mssql(env: dict[str, str], ports: dict[str, int], external: dict[str, str]) -> None:
    """SANDBOX_MSSQL_DSN makes SQL Server an external service; its login is that of the DSN."""
    dsn = parse_dsn(env["SANDBOX_MSSQL_DSN"])
    external["mssql"] = dsn.host
    ports["mssql"] = dsn.port
    env.setdefault("SANDBOX_MSSQL_USER", dsn.user)
    env.setdefault("SANDBOX_MSSQL_PASSWORD", dsn.password)


def _read_recorded_ports(state_dir: Path) -> dict[str, int]:
    path = state_dir / "ports.json"
    if not path.exists():
        return {}
    try:
        return {k: int(v) for k, v in json.loads(path.read_text()).items()}
    except (ValueError, AttributeError) as exc:
        raise SandboxError(f"{path} is corrupt: {exc}", f"delete {path}; the defaults will be used again") from exc


def _port_from_env(env: dict[str, str], service: str, fallback: int) -> int:
    raw = env.get(f"SANDBOX_{service.upper()}_PORT")
    if raw is None:
        return fallback
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise SandboxError(
            f"SANDBOX_{service.upper()}_PORT={raw!r} is not a port number", "give a number between 1 and 65535"
        )
    return int(raw)
