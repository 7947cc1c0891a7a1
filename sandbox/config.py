"""Where the sandbox keeps its state, which ports it uses, and the CDC topology it sets up.

Resolution order for every setting: environment variable, then what the sandbox recorded when it was first
brought up (`<state>/ports.json`), then the default. Environment variables:

- `SANDBOX_STATE_DIR`   state directory (default `<project>/.sandbox`)
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

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

import yaml

from sandbox.errors import SandboxError
from tickit_data import TABLE_NAMES

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TOPOLOGY_FILE = PROJECT_ROOT / "fixtures" / "topology.yaml"
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
}
SERVICES = ("postgres", "mysql", "kafka", "connect", "apicurio", "localstack", "metastore")
BACKENDS = ("native", "compose")


ENGINES = ("postgres", "mariadb", "mysql", "sqlserver")  # MariaDB speaks MySQL's SQL (`tickit_data.ddl.dialect_of`)


@dataclass(frozen=True)
class CapturedTable:
    source: str  # the source service holding it: postgres, mysql, mssql
    namespace: str  # schema (Postgres, SQL Server) or database (MySQL)
    name: str
    stand_in: bool = False  # placed on another engine because its own is not available


@dataclass(frozen=True)
class Source:
    name: str
    engine: str
    database: str
    connector: str
    tables: tuple[CapturedTable, ...]
    stand_in_for: tuple[str, ...] = ()  # sources whose tables this one holds

    @property
    def namespaces(self) -> list[str]:
        return list(dict.fromkeys(t.namespace for t in self.tables))


@dataclass(frozen=True)
class Topology:
    topic_prefix: str
    lake_bucket: str
    probe_table: str
    sources: dict[str, Source]

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

    def topics(self) -> list[str]:
        return [self.topic(t.namespace, t.name) for t in self.tables]

    def probe_topics(self) -> list[str]:
        return [self.topic(src.namespaces[0], self.probe_table) for src in self.sources.values()]


def load_topology(path: Path = TOPOLOGY_FILE, available: set[str] | None = None,
                  engines: dict[str, str] | None = None) -> Topology:
    """Read the topology; sources not in `available` hand their tables to their declared stand-in.

    `engines` replaces the engine of some sources (compose runs MySQL 8 where the native backend runs MariaDB).
    """
    try:
        raw = yaml.safe_load(path.read_text())
        specs = raw["sources"]
        sources = {name: _source(name, spec | {"engine": (engines or {}).get(name, spec["engine"])})
                   for name, spec in specs.items()}
        _check_placement(path, sources)
        for name, spec in specs.items():
            if available is not None and name not in available:
                sources = _hand_over(sources, name, spec["stand_in"])
        return Topology(raw["topic_prefix"], raw["lake_bucket"], raw["probe_table"], sources)
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
        raise SandboxError(
            f"topology file {path} is unreadable or incomplete: {exc!r}",
            "each source needs engine, database, connector and tables by namespace (and stand_in where it may be "
            "absent); see fixtures/topology.yaml in git",
        ) from exc


def _check_placement(path: Path, sources: dict[str, Source]) -> None:
    """This file is the one place that says where a table lives: every TICKIT table once, on a known engine."""
    for source in sources.values():
        if source.engine not in ENGINES:
            raise SandboxError(f"{path}: source {source.name} has engine {source.engine!r}",
                               f"use one of {', '.join(ENGINES)}")
    placed = [t.name for source in sources.values() for t in source.tables]
    problems = [f"{name} is no TICKIT table" for name in dict.fromkeys(placed) if name not in TABLE_NAMES]
    problems += [f"{name} is placed {placed.count(name)} times" for name in TABLE_NAMES if placed.count(name) != 1]
    if problems:
        raise SandboxError(f"{path}: " + "; ".join(problems), "list each of the seven TICKIT tables under exactly one "
                           "source: " + ", ".join(TABLE_NAMES))


def _source(name: str, spec: dict) -> Source:
    tables = tuple(CapturedTable(name, namespace, table) for namespace, names in spec["tables"].items()
                   for table in names)
    return Source(name=name, engine=spec["engine"], database=spec["database"], connector=spec["connector"],
                  tables=tables)


def _hand_over(sources: dict[str, Source], absent: str, stand_in: str) -> dict[str, Source]:
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
        state_dir = Path(env.get("SANDBOX_STATE_DIR", PROJECT_ROOT / ".sandbox")).resolve()
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
        topology = load_topology(available=available, engines=engines)
        return cls(state_dir=state_dir, tools_dir=tools_dir, ports=ports, external_hosts=external,
                   topology=topology, env=env, backend=backend)

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
