"""The compose backend: the stack of `cdc_sandbox/compose/docker-compose.yml` (generated: `compose_file`) on a Docker
engine.

Docker runs the servers; everything inside them is set up by the same Python code as natively (Postgres roles,
schemas and publication, the MySQL database, the lake bucket, the TICKIT tables, the connectors from
`cdc_sandbox/fixtures/connectors/`), against the published ports on 127.0.0.1. Connectors name the services by their
container names, as the Kafka Connect worker sees them inside the Docker network.

Per sandbox, `<state>/compose/` holds `sandbox.env` (project name, ports, generated passwords; private) and a copy of
the capture logins' passwords the worker reads through FileConfigProvider.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import port_for

from cdc_sandbox.config import DEFAULT_PORTS, REGISTRY_API, Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import databases, declarations, install, jvm, source_tables
from cdc_sandbox.stack.backends import compose_file, native
from cdc_sandbox.stack.backends.compose_file import COMPOSE_FILE, CONNECT_SECRETS, INTERNAL_KAFKA
from cdc_sandbox.stack.backends.compose_cli import compose_command, docker_command_for_testcontainers
from cdc_sandbox.stack.backends.select import require_engine
from cdc_sandbox.stack.connectors import WorkerView, register_all
from cdc_sandbox.stack.credentials import ensure_credentials, login
from cdc_sandbox.stack.services import bucket_snapshot
from cdc_sandbox.stack.services.base import ServiceStatus
from cdc_sandbox.stack.services.localstack import LocalStack
from cdc_sandbox.stack.services.mariadb import create_database_and_fixtures
from cdc_sandbox.stack.services.metastore import (
    DATABASE as METASTORE_DATABASE,
    create_database as create_metastore_database,
    schema_dir,
    site_properties,
    write_site,
)
from cdc_sandbox.stack.services.postgres import Postgres
from cdc_sandbox.wait import wait_until

COMPOSE_DIR = COMPOSE_FILE.parent
SERVICES = tuple(compose_file.SERVICES)
PUBLISHED_PORTS = {name: DEFAULT_PORTS[name] for name in SERVICES}  # container port of each published service
DATABASE_SOURCES = ("postgres", "mysql", "mssql")
# The logins the containers get through the env file: (database service, role, variable label).
COMPOSE_LOGINS = (*((db, role, label) for db in DATABASE_SOURCES
                    for role, label in (("admin", "ADMIN"), ("debezium", "CAPTURE"))),
                  ("postgres", "metastore", "METASTORE"))
# --- per-sandbox files -------------------------------------------------------------------------------------
def project_name(settings: Settings) -> str:
    """One Compose project per state directory, so sandboxes (and test stacks) never share containers."""
    return "cdc-sandbox-" + hashlib.sha256(str(settings.state_dir).encode()).hexdigest()[:10]


def files_dir(settings: Settings) -> Path:
    return settings.state_dir / "compose"


def env_file(settings: Settings) -> Path:
    return files_dir(settings) / "sandbox.env"


def env_values(settings: Settings) -> dict[str, str]:
    """What the compose file interpolates: project name, ports, logins, the worker's credentials file, the S3
    journal's directory and the host account that must own what the journal writes there."""
    values = {"COMPOSE_PROJECT_NAME": project_name(settings),
              "SANDBOX_CONNECT_CREDENTIALS": str(files_dir(settings) / "connect-credentials.properties"),
              "SANDBOX_S3_JOURNAL_DIR": str(LocalStack(settings).journal_dir),
              "SANDBOX_S3_JOURNAL_OWNER": f"{os.getuid()}:{os.getgid()}"}
    values |= {f"SANDBOX_{name.upper()}_PORT": str(settings.ports[name]) for name in SERVICES}
    for db, role, label in COMPOSE_LOGINS:
        who = login(settings, db, role)
        values[f"{db.upper()}_{label}_USER"] = who.user
        values[f"{db.upper()}_{label}_PASSWORD"] = who.password
    plugins = jvm.artifacts_dir(settings) / "connect-plugins"
    values |= {"SANDBOX_CONNECT_TRUNCATES": str(plugins / "sandbox-truncates"),
               "SANDBOX_CONNECT_CONVERTER": str(plugins / "apicurio-converter" / declarations.CONNECT_CONVERTER_JAR),
               "SANDBOX_METASTORE_JARS": str(jvm.artifacts_dir(settings) / "metastore"),
               "SANDBOX_METASTORE_SCHEMA": str(schema_dir(settings)),
               "SANDBOX_METASTORE_CONF": str(metastore_conf_dir(settings))}
    return values


def metastore_conf_dir(settings: Settings) -> Path:
    return files_dir(settings) / "metastore"


def metastore_site(settings: Settings) -> dict[str, str]:
    """The metastore container's settings: the other containers by name, an external Postgres or S3 by address."""
    def address(name: str) -> str:
        endpoint = settings.endpoint(name)
        return endpoint.address if endpoint.external else f"{name}:{PUBLISHED_PORTS[name]}"

    return site_properties(settings, PUBLISHED_PORTS["metastore"],
                           f"jdbc:postgresql://{address('postgres')}/{METASTORE_DATABASE}",
                           f"http://{address('localstack')}")


def write_files(settings: Settings) -> Path:
    """Write `<state>/compose/`: the env file (private) and the capture passwords for the worker's account."""
    directory = files_dir(settings)
    directory.mkdir(parents=True, exist_ok=True)
    # The worker's copy must be readable by the container's account; the private directory guards it.
    directory.chmod(0o700)
    LocalStack(settings).journal_dir.mkdir(parents=True, exist_ok=True)  # mounted into the LocalStack container
    capture = {k: v for k, v in ensure_credentials(settings).items() if ".debezium." in k}
    _write(directory / "connect-credentials.properties", "".join(f"{k}={v}\n" for k, v in sorted(capture.items())),
           0o644)
    write_site(metastore_conf_dir(settings), metastore_site(settings))
    body = "".join(f"{key}={value}\n" for key, value in env_values(settings).items())
    _write(env_file(settings), "# generated by the sandbox for docker compose\n" + body, 0o600)
    return env_file(settings)


def _write(path: Path, text: str, mode: int) -> None:
    path.touch(mode=mode)
    path.chmod(mode)
    path.write_text(text)


def worker_view(settings: Settings) -> WorkerView:
    """The services as the Kafka Connect container reaches them: by container name, on container ports."""
    hosts = {}
    for name in settings.topology.sources:
        endpoint = settings.endpoint(name)
        hosts[name] = (endpoint.host, endpoint.port) if endpoint.external else (name, PUBLISHED_PORTS[name])
    return WorkerView(hosts, INTERNAL_KAFKA, f"http://apicurio:{PUBLISHED_PORTS['apicurio']}{REGISTRY_API}",
                      CONNECT_SECRETS)


# --- running compose ---------------------------------------------------------------------------------------
def command(settings: Settings, *args: str) -> list[str]:
    return [*compose_command(settings), "-f", str(COMPOSE_FILE), "--env-file", str(env_file(settings)), *args]


def _run(settings: Settings, *args: str, what: str) -> subprocess.CompletedProcess:
    result = subprocess.run(command(settings, *args), capture_output=True, text=True)
    if result.returncode != 0:
        raise SandboxError(f"`docker compose {' '.join(args)}` failed while {what}:\n"
                           f"{(result.stdout + result.stderr).strip()[-2000:]}",
                           "see `sandbox logs <service>`; `sandbox reset` starts from empty volumes")
    return result


def up(settings: Settings, report, skip_install: bool = False) -> None:
    require_engine(settings, "the compose backend")
    if settings.optional_services:
        raise SandboxError(f"the compose backend does not run {', '.join(settings.optional_services)} yet",
                           f"use the native backend (SANDBOX_BACKEND=native), or remove {settings.state_dir / 'with'}")
    settings.record_ports()
    settings.record_backend()
    write_files(settings)
    services = [name for name in SERVICES if not settings.is_external(name)]
    running = {name for name, row in _ps_rows(settings).items() if row.get("State") == "running"}
    native.check_free({name: [settings.ports[name]] for name in services if name not in running})
    if not skip_install:
        report("jvm artifacts", "resolved with Maven" if install.ensure_jvm_artifacts(settings) else "present")
    first = [name for name in services if name != "metastore"]
    _run(settings, "up", "--detach", "--wait", "--wait-timeout", "600", *first, what="starting the stack")
    if "metastore" in services:  # its database, made by Postgres's init script on a fresh volume only
        create_metastore_database(settings)
        _run(settings, "up", "--detach", "--wait", "--wait-timeout", "300", "metastore", what="starting the metastore")
    for name in services:
        report(name, "already running" if name in running else "started, healthy")
    prepare_services(settings, report)


def prepare_services(settings: Settings, report) -> None:
    """What the containers do not do themselves: the same set-up as natively, through the published ports."""
    Postgres(settings).post_start()
    _prepare_mysql(settings)
    _prepare_localstack(settings)
    settings = source_tables.create_tables(settings)  # on SQL Server also the CDC set-up the container ran at its first start
    for name in register_all(settings, worker_view(settings)):
        report(f"connector {name}", "RUNNING")


def _prepare_mysql(settings: Settings) -> None:
    """The container's init script made the logins and the database; the probe table comes from the fixtures."""
    if "mysql" not in settings.topology.sources:
        return
    with databases.connection(settings, "mysql") as conn, conn.cursor() as cur:
        create_database_and_fixtures(cur, settings.topology.sources["mysql"].database)


def _prepare_localstack(settings: Settings) -> None:
    """LocalStack keeps S3 in memory: a fresh container gets back the buckets `sandbox down` saved."""
    localstack = LocalStack(settings)
    if localstack.s3().list_buckets()["Buckets"]:
        localstack.skip_restore()
    localstack.post_start()


def down(settings: Settings, report) -> None:
    """Stop the containers; volumes (and the saved lake) stay."""
    if not env_file(settings).exists():
        report("stack", "was never started")
        return
    localstack, saved = LocalStack(settings), None
    if _ps_rows(settings).get("localstack", {}).get("State") == "running":
        covered = bucket_snapshot.set_journal_aside(localstack.journal_dir)
        saved = bucket_snapshot.save(localstack.s3(), localstack.snapshot_dir)
        report("localstack", f"buckets saved ({saved.describe('downloaded')})")
    _run(settings, "stop", what="stopping the stack")
    if saved is not None:
        bucket_snapshot.settle_journal(localstack.journal_dir, covered)
    for name in SERVICES:
        report(name, "stopped")


def restart(settings: Settings, services: Sequence[str], report) -> None:
    names = native.chosen_services(services, SERVICES)
    if "localstack" in names:  # its buckets live in memory: `down` saves them and `up` loads them back
        raise SandboxError("localstack restarts with the stack alone, so that its buckets are saved and restored",
                           "run `sandbox down` and `sandbox up`")
    _run(settings, "restart", *names, what=f"restarting {', '.join(names)}")
    for name in names:
        report(name, "restarted")
    for name in register_all(settings, worker_view(settings)):
        report(f"connector {name}", "RUNNING")


def reset(settings: Settings, report) -> None:
    """Remove the containers and their volumes."""
    if env_file(settings).exists():
        _run(settings, "down", "--volumes", "--remove-orphans", what="removing the stack")
        report("containers and volumes", "removed")


def _ps_rows(settings: Settings) -> dict[str, dict]:
    """The project's containers by service, as `compose ps` reports them (none before the first `up`)."""
    if not env_file(settings).exists():
        return {}
    result = subprocess.run(command(settings, "ps", "--all", "--format", "json"), capture_output=True, text=True)
    return {row["Service"]: row for row in parse_ps(result.stdout)} if result.returncode == 0 else {}


def parse_ps(output: str) -> list[dict]:
    """`compose ps --format json` prints one object per line (newer Compose) or one array (older)."""
    text = output.strip()
    if not text:
        return []
    if text.startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def status(settings: Settings) -> tuple[list[ServiceStatus], list[tuple[str, str]]]:
    rows = _ps_rows(settings)
    statuses = [_service_status(settings, name, rows.get(name)) for name in SERVICES]
    return statuses, native.connector_status(settings, statuses)


def _service_status(settings: Settings, name: str, row: dict | None) -> ServiceStatus:
    address = settings.endpoint(name).address
    if settings.is_external(name):
        return ServiceStatus(name, "external", address, None, "-")
    if row is None:
        return ServiceStatus(name, "stopped", address, None, "-")
    health = row.get("Health", "")
    state = {"running": "starting" if health and health != "healthy" else "running"}.get(row.get("State", ""),
                                                                                          "stopped")
    return ServiceStatus(name, state, address, None, row.get("Image", "-"))


def logs(settings: Settings, service_name: str, lines: int, follow: bool) -> int:
    if service_name not in SERVICES:
        raise SandboxError(f"unknown service {service_name!r}", "choose one of: " + ", ".join(SERVICES))
    return subprocess.call(command(settings, "logs", "--tail", str(lines), *(["--follow"] if follow else []),
                                   service_name))


def instances(settings: Settings) -> dict[str, str | None]:
    """A service's instance is its container's process: container id, host pid and start time."""
    running = {name: row["ID"] for name, row in _ps_rows(settings).items() if row.get("State") == "running"}
    found = dict.fromkeys(SERVICES)
    if running:
        result = subprocess.run(["docker", "inspect", "--format", "{{.Id}} {{.State.Pid}} {{.State.StartedAt}}",
                                 *running.values()], capture_output=True, text=True)
        if result.returncode != 0:
            raise SandboxError(f"`docker inspect` of the running containers failed: {result.stderr.strip()[-500:]}",
                               "check the Docker client (`docker info`)")
        started = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
        for name, container in running.items():
            found[name] = next((line for full_id, line in started.items() if full_id.startswith(container)), None)
    return found


def process_user(settings: Settings, service_name: str) -> str:
    """The UID column of `compose top` for the container's first process (its entrypoint drops privileges by
    exec, so that is the server): a name where the host knows the account, else the number."""
    return first_process_user(_run(settings, "top", service_name, what=f"listing {service_name}'s processes").stdout)


def first_process_user(top_output: str) -> str:
    lines = [line.split() for line in top_output.splitlines() if line.strip()]
    header = next((i for i, fields in enumerate(lines) if fields[:1] == ["UID"]), None)
    if header is None or header + 1 >= len(lines):
        raise SandboxError(f"`compose top` listed no process:\n{top_output[-500:]}", "see `sandbox status`")
    return lines[header + 1][0]


def kill(settings: Settings, services: Sequence[str]) -> None:
    _run(settings, "kill", "--signal", "SIGKILL", *services, what="killing " + ", ".join(services))
    wait_until(lambda: not any(_ps_rows(settings).get(name, {}).get("State") == "running" for name in services),
               30, f"{', '.join(services)} to stop after SIGKILL", "see `sandbox status`")


# --- an ephemeral stack for a test session -----------------------------------------------------------------
@contextmanager
def ephemeral_stack(base: Settings | None = None) -> Iterator[Settings]:
    """Start the whole compose stack on free ports in a temporary state directory for one test session, with
    testcontainers; yields Settings pointing at it (compose backend, `crm.user` in SQL Server, connectors running),
    and removes containers, volumes and the directory afterwards."""
    base = base or Settings.load()
    require_engine(base, "ephemeral_stack")
    tools_dir = base.tools_dir
    with tempfile.TemporaryDirectory(prefix="cdc-sandbox-") as state_dir:
        env = {**os.environ, "SANDBOX_STATE_DIR": state_dir, "SANDBOX_TOOLS_DIR": str(tools_dir),
               "SANDBOX_BACKEND": "compose"}
        env |= {f"SANDBOX_{name.upper()}_PORT": str(port_for.select_random()) for name in SERVICES}
        settings = Settings.load(env, backend="compose")
        settings.record_ports()
        settings.record_backend()
        with testcontainers_stack(settings):
            prepare_services(settings, lambda name, outcome: None)
            yield settings


def testcontainers_stack(settings: Settings):
    """The stack as a testcontainers `DockerCompose` (`up --wait` on enter, `down --volumes` on exit)."""
    from testcontainers.compose import DockerCompose

    return DockerCompose(context=str(COMPOSE_DIR), compose_file_name=COMPOSE_FILE.name,
                         env_file=str(write_files(settings)), wait=True,
                         docker_command_path=docker_command_for_testcontainers(settings))

