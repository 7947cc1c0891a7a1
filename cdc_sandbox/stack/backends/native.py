"""The native backend: every service a real server process on 127.0.0.1, started and stopped by the sandbox."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import psutil

from cdc_sandbox.config import SERVICES, Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import install, jvm, process, source_tables
from cdc_sandbox.stack.connectors import ConnectClient, connector_states, register_all
from cdc_sandbox.stack.services.apicurio import Apicurio
from cdc_sandbox.stack.services.base import NativeService, ServiceStatus
from cdc_sandbox.stack.services.connect import KafkaConnect
from cdc_sandbox.stack.services.kafka import Kafka
from cdc_sandbox.stack.services.localstack import LocalStack
from cdc_sandbox.stack.services.mariadb import MariaDB
from cdc_sandbox.stack.services.metastore import Metastore
from cdc_sandbox.stack.services.postgres import Postgres
from cdc_sandbox.stack.services.spark_cluster import CLUSTER, SparkMaster, SparkWorker1, SparkWorker2

# Started together; Kafka Connect comes after them (it needs Kafka, and its connectors need everything else), and
# so does the metastore (its catalog is a Postgres database).
INDEPENDENT = (Postgres, MariaDB, Kafka, Apicurio, LocalStack)
DEPENDENT = (KafkaConnect, Metastore)
# Only the job needs S3, and LocalStack's restore of a saved lake takes a while: Connect does not wait for it.
LAKE = (LocalStack,)
# Optional services (`sandbox up --with`), each started after the others in the order given, its groups side by side.
OPTIONAL = {CLUSTER: ((SparkMaster,), (SparkWorker1, SparkWorker2))}


def all_services(settings: Settings, every_optional: bool = False) -> list[NativeService]:
    """The services this sandbox runs: the stack and the optional ones chosen for it (`sandbox up --with`,
    SANDBOX_WITH), or every optional one. An optional service a test session started for itself alone (the
    `spark_cluster` fixture) is not among them, so that another session's view of the sandbox stays its own."""
    optional = OPTIONAL if every_optional else {name: OPTIONAL[name] for name in settings.optional_services}
    return [cls(settings) for cls in (*INDEPENDENT, *DEPENDENT, *_flat(optional.values()))]


def _flat(groups) -> list[type]:
    return [cls for phases in groups for phase in phases for cls in phase]


def service(settings: Settings, name: str) -> NativeService:
    for svc in all_services(settings, every_optional=True):
        if svc.name == name:
            return svc
    names = ", ".join(s.name for s in all_services(settings, every_optional=True))
    raise SandboxError(f"unknown service {name!r}", f"choose one of: {names}")


def check_ports(services: list[NativeService]) -> None:
    check_free({svc.name: svc.ports for svc in services if not svc.external and svc.pid() is None})


def check_free(ports_by_service: dict[str, list[int]]) -> None:
    """Fail before touching anything if a port a service must bind is held by another process."""
    taken = [(name, port, holder) for name, ports in ports_by_service.items() for port in ports
             if (holder := process.process_on_port(port))]
    if taken:
        raise SandboxError(
            "cannot start: " + "; ".join(f"port {port} ({name}) is in use by {holder}" for name, port, holder in taken),
            "stop that process, or give the sandbox other ports, e.g. "
            + " ".join(f"SANDBOX_{name.upper()}_PORT=<free port>" for name, _, _ in taken[:2]) + " sandbox up",
        )


def check_java(services: list[NativeService]) -> None:
    if any(not s.external for s in services if s.name in ("kafka", "connect", "apicurio", "metastore")
           or s.name.startswith("spark_")):
        jvm.java_binary()


@dataclass
class Step:
    name: str
    outcome: str


def install_all(settings: Settings, report) -> None:
    """Install what is missing, the three steps side by side (on a new machine they are downloads from apt, Maven
    Central and PyPI); `report(name, outcome)` is told about each step."""
    native = {s.name for s in all_services(settings) if not s.external}

    def os_packages() -> str:
        installed = install.ensure_os_packages(native)
        return "installed " + ", ".join(installed) if installed else "present"

    def jvm_artifacts() -> str:
        return "resolved with Maven" if install.ensure_jvm_artifacts(settings) else "present"

    def localstack() -> str:
        installed = install.ensure_localstack(settings) | install.ensure_s3_journal(settings)
        return "installed" if installed else "present"

    steps = {"os packages": os_packages, "jvm artifacts": jvm_artifacts}
    if "localstack" in native:
        steps["localstack"] = localstack
    with install.tools_lock(settings), ThreadPoolExecutor(len(steps)) as pool:
        _report_each({name: pool.submit(step) for name, step in steps.items()}, report,
                     "fix each, then run `sandbox up` again")


def up(settings: Settings, report, skip_install: bool = False) -> None:
    services = all_services(settings)
    check_ports(services)
    check_java(services)
    if not skip_install:
        install_all(settings, report)
    settings.record_ports()
    with ThreadPoolExecutor(max_workers=len(services)) as pool:
        def start(group: tuple, but: tuple = ()) -> dict:
            return {s.name: pool.submit(s.start) for s in services if isinstance(s, group) and not isinstance(s, but)}

        lake = start(LAKE)
        _report_each(start(INDEPENDENT, but=LAKE), report)
        settings = source_tables.create_tables(settings)
        _report_each(start(DEPENDENT), report)
        _report_each(lake, report)
    for name in settings.optional_services:
        start_optional(settings, name, report)
    for name in register_all(settings):
        report(f"connector {name}", "RUNNING")


def start_optional(settings: Settings, name: str, report) -> list[NativeService]:
    """Start an optional service's processes that are not running, a group after the other; returns those it
    started."""
    started = []
    for phase in OPTIONAL[name]:
        services = [cls(settings) for cls in phase]
        check_ports(services)
        with ThreadPoolExecutor(max_workers=len(services)) as pool:
            outcomes = {svc.name: pool.submit(svc.start) for svc in services}
            _report_each(outcomes, report)
        started += [svc for svc in services if outcomes[svc.name].result() == "started"]
    return started


def _report_each(futures: dict, report, hint: str = "`sandbox down` stops what did start") -> None:
    """Report each step's outcome (a service's start, an install) in order, as it completes; every failure at
    once."""
    errors = []
    for name, future in futures.items():
        try:
            report(name, future.result())
        except SandboxError as exc:
            errors.append(exc)
    if errors:
        if len(errors) == 1:
            raise errors[0]
        raise SandboxError("\n\n".join(str(e) for e in errors), hint)


def down(settings: Settings, report) -> None:
    """The optional services' workers and masters first, then Connect (it commits its offsets to Kafka as it stops),
    then the others side by side."""
    services = all_services(settings, every_optional=True)
    running_optional = [s for s in services if isinstance(s, tuple(_flat(OPTIONAL.values()))) and s.pid()]
    for phase in [phase for phases in OPTIONAL.values() for phase in reversed(phases)]:
        _stop_together([s for s in running_optional if isinstance(s, phase)], report)
    for group in (DEPENDENT, INDEPENDENT):
        _stop_together([s for s in services if isinstance(s, group)], report)


def _stop_together(services: list[NativeService], report) -> None:
    if not services:
        return

    def shut_down(svc: NativeService) -> str:
        return "external, left alone" if svc.external else svc.shut_down()

    with ThreadPoolExecutor(max_workers=len(services)) as pool:
        for svc, outcome in zip(services, pool.map(shut_down, services)):
            report(svc.name, outcome)


def restart(settings: Settings, services: Sequence[str], report) -> None:
    _stop_together([service(settings, name) for name in chosen_services(services, SERVICES)], report)
    up(settings, report, skip_install=True)


def chosen_services(names: Sequence[str], services: Sequence[str]) -> list[str]:
    """The services named, each one the backend runs."""
    unknown = [name for name in names if name not in services]
    if unknown or not names:
        raise SandboxError(f"no service named {', '.join(unknown) or '(none given)'}",
                           "choose among: " + ", ".join(services))
    return list(names)


def reset(settings: Settings, report) -> None:
    """Everything native lives in the state directory, which the caller removes."""
    down(settings, report)


def status(settings: Settings) -> tuple[list[ServiceStatus], list[tuple[str, str]]]:
    services = all_services(settings)
    with ThreadPoolExecutor(max_workers=len(services)) as pool:
        statuses = list(pool.map(lambda s: s.status(), services))
    return statuses, connector_status(settings, statuses)


def connector_status(settings: Settings, statuses: list[ServiceStatus]) -> list[tuple[str, str]]:
    connect_up = any(s.service == "connect" and s.state in ("running", "external") for s in statuses)
    rows = []
    for source in settings.topology.sources.values():
        if not connect_up:
            rows.append((source.connector, "-"))
            continue
        states = connector_states(ConnectClient(settings.url("connect")).status(source.connector))
        rows.append((source.connector, "/".join(dict.fromkeys(states)) if states else "not registered"))
    return rows


def logs(settings: Settings, service_name: str, lines: int, follow: bool) -> int:
    log_file = service(settings, service_name).log_file
    if not log_file.exists():
        raise SandboxError(f"{service_name} has no log yet at {log_file}", "run `sandbox up` first")
    return subprocess.call(["tail", "-n", str(lines), *(["-F"] if follow else []), str(log_file)])


def instances(settings: Settings) -> dict[str, str | None]:
    """A service's instance is its server process: pid and start time (a pid can be reused)."""
    found = {}
    for svc in all_services(settings):
        pid = svc.pid()
        try:
            found[svc.name] = None if pid is None else f"{pid}@{psutil.Process(pid).create_time()}"
        except psutil.NoSuchProcess:
            found[svc.name] = None
    return found


def process_user(settings: Settings, service_name: str) -> str:
    pid = service(settings, service_name).pid()
    if pid is None:
        raise SandboxError(f"{service_name} is not running", "start it with `sandbox up`")
    return psutil.Process(pid).username()


def kill(settings: Settings, services: Sequence[str]) -> None:
    processes = []
    for pid in filter(None, (service(settings, name).pid() for name in services)):
        try:
            processes.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            continue
    if alive := process.kill_all(processes, 30):
        raise SandboxError(f"still running 30 s after SIGKILL: {[p.pid for p in alive]}", "see `sandbox status`")
