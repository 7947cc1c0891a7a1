"""Debezium source connectors: configs rendered from `cdc_sandbox/fixtures/connectors/*.json`, registered through the
Kafka Connect REST API, and waited on until they and their tasks run.

`common.json` holds what every connector shares (topic prefix, Apicurio Avro converters, envelope flattening);
`<engine>.json` adds the engine's part. `{{name}}` placeholders are filled from the topology and the endpoints
as the Kafka Connect worker sees them (`WorkerView`: the sandbox's own addresses natively, container names inside
the Docker network on compose). Passwords stay out of the configs: they are `${file:...}` references resolved by
the worker.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass

import requests

from cdc_sandbox.config import PACKAGE_DIR, Settings, Source
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack.credentials import login
from cdc_sandbox.wait import wait_until

TEMPLATE_DIR = PACKAGE_DIR / "fixtures" / "connectors"
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
RESTART_TIMEOUT = 30
# MySQL 8 (compose) shares the MariaDB template (the same binlog settings) and replaces its connector class.
TEMPLATE_LAYERS = {"mysql": ("mariadb", "mysql")}


@dataclass(frozen=True)
class WorkerView:
    """The addresses and the credentials file as the Kafka Connect worker reaches them."""

    hosts: dict[str, tuple[str, int]]  # source service -> (host, port)
    kafka_bootstrap: str
    registry_url: str
    secrets_file: str


def native_view(settings: Settings) -> WorkerView:
    """Natively the worker runs on this machine and sees what the sandbox sees."""
    hosts = {name: (settings.endpoint(name).host, settings.endpoint(name).port) for name in settings.topology.sources}
    return WorkerView(hosts, settings.endpoint("kafka").address, settings.registry_api_url, str(settings.secrets_file))


def render(template: dict[str, str], values: dict[str, object]) -> dict[str, str]:
    def fill(text: str) -> str:
        def value(match: re.Match) -> str:
            if match.group(1) not in values:
                raise SandboxError(f"connector template uses {{{{{match.group(1)}}}}}, which the sandbox does not set",
                                   f"fix the placeholder in {TEMPLATE_DIR}")
            return str(values[match.group(1)])

        return PLACEHOLDER.sub(value, text)

    return {key: fill(value) for key, value in template.items()}


def connector_config(settings: Settings, source: Source, view: WorkerView | None = None) -> dict[str, str]:
    view = view or native_view(settings)
    host, port = view.hosts[source.name]
    capture = login(settings, source.name, "debezium")
    values = {
        "topic_prefix": settings.topology.topic_prefix,
        "apicurio_url": view.registry_url,
        "kafka_bootstrap": view.kafka_bootstrap,
        "host": host,
        "port": port,
        "user": capture.user,
        "password_key": capture.password_key,
        "secrets_file": view.secrets_file,
        "database": source.database,
        "schemas": ",".join(source.namespaces),
        "server_id": server_id(source.connector),
    }
    template = _load("common")
    for layer in TEMPLATE_LAYERS.get(source.engine, (source.engine,)):
        template |= _load(layer)
    return render(template, values) | _left_out(source) | source.debezium


def _left_out(source: Source) -> dict[str, str]:
    """The tables capture leaves out (a column the sandbox cannot compare, another table's name), as Debezium's
    exclude list names them."""
    if not source.left_out:
        return {}
    return {"table.exclude.list": ",".join(re.escape(f"{namespace}.{name}") for namespace, name in source.left_out)}


def server_id(connector: str) -> int:
    """The binlog client's server id: each connector its own (a MariaDB primary drops a replica that connects under
    an id already connected), stable across runs."""
    return 184054 if connector == "tickit-mysql" else 100_000 + zlib.crc32(connector.encode()) % 800_000


def _load(name: str) -> dict[str, str]:
    path = TEMPLATE_DIR / f"{name}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SandboxError(f"connector template {path} is unreadable: {exc}", "restore it from git") from exc


class ConnectClient:
    """The few Kafka Connect REST calls the sandbox needs."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")

    def put_config(self, name: str, config: dict[str, str]) -> None:
        response = requests.put(f"{self.url}/connectors/{name}/config", json=config, timeout=30)
        if response.status_code >= 400:
            raise SandboxError(f"Kafka Connect rejected connector {name}: {response.text[:1500]}",
                               f"fix the `debezium:` settings of its source in the project file (the templates are in "
                               f"{TEMPLATE_DIR}); nothing was changed; `sandbox logs connect` has details")

    def delete(self, name: str) -> None:
        response = requests.delete(f"{self.url}/connectors/{name}", timeout=30)
        if response.status_code not in (204, 404):
            raise SandboxError(f"Kafka Connect could not delete {name}: {response.text[:500]}", "see `sandbox logs connect`")

    def cycle(self, name: str) -> None:
        """Stop the connector (its tasks shut down, their producers closed) and resume it with new tasks: a step
        that can be watched, where a restart may finish before its status shows it."""
        self.stop(name)
        self.resume(name)
        self.wait_running(name)

    def stop(self, name: str) -> None:
        self._put(name, "stop")
        wait_until(lambda: connector_states(self.status(name)) == ["STOPPED"], 60,
                   f"connector {name} to stop", "see `sandbox logs connect`")

    def resume(self, name: str) -> None:
        self._put(name, "resume")

    def restart_failed(self, name: str) -> None:
        """Restart the connector's failed parts (the connector, its tasks): they resume from the committed offsets.
        Returns once the status no longer says FAILED: Connect answers before it restarts them, and its status is
        read back from a Kafka topic, so a status asked for at once can still show the old failure."""
        response = requests.post(f"{self.url}/connectors/{name}/restart",
                                 params={"includeTasks": "true", "onlyFailed": "true"}, timeout=30)
        if response.status_code >= 400:
            raise SandboxError(f"Kafka Connect could not restart {name}: {response.text[:500]}",
                               "see `sandbox logs connect`")
        wait_until(lambda: "FAILED" not in connector_states(self.status(name)), RESTART_TIMEOUT,
                   f"Kafka Connect to restart the failed parts of {name}", "see `sandbox logs connect`")

    def _put(self, name: str, action: str) -> None:
        response = requests.put(f"{self.url}/connectors/{name}/{action}", timeout=30)
        if response.status_code >= 400:
            raise SandboxError(f"Kafka Connect could not {action} {name}: {response.text[:500]}",
                               "see `sandbox logs connect`")

    def offsets(self, name: str) -> list[dict]:
        """The source offsets Connect holds for the connector: [{"partition": {...}, "offset": {...}}]."""
        response = requests.get(f"{self.url}/connectors/{name}/offsets", timeout=30)
        if response.status_code >= 400:
            raise SandboxError(f"Kafka Connect could not read the offsets of {name}: {response.text[:500]}",
                               "see `sandbox logs connect`")
        return response.json()["offsets"]

    def set_offsets(self, name: str, offsets: list[dict]) -> None:
        """Replace the connector's source offsets; it must be stopped (`stop`)."""
        response = requests.patch(f"{self.url}/connectors/{name}/offsets", json={"offsets": offsets}, timeout=30)
        if response.status_code >= 400:
            raise SandboxError(f"Kafka Connect could not set the offsets of {name}: {response.text[:500]}",
                               "stop the connector first; see `sandbox logs connect`")

    def reset_offsets(self, name: str) -> None:
        """Forget the connector's source offsets, as if it had never run; it must be stopped (`stop`)."""
        response = requests.delete(f"{self.url}/connectors/{name}/offsets", timeout=30)
        if response.status_code >= 400:
            raise SandboxError(f"Kafka Connect could not reset the offsets of {name}: {response.text[:500]}",
                               "stop the connector first; see `sandbox logs connect`")

    def rewind_binlog(self, name: str, mark) -> None:
        """Set a binlog connector back to `mark` (a `positions.BinlogMark`): it reads the binlog again from there and
        sends every change since once more, as after an operator resets its offsets. The connector runs again when
        this returns."""
        rewound = rewound_offsets(name, self.offsets(name), mark)
        self.stop(name)
        try:
            self.set_offsets(name, rewound)
        finally:
            self.resume(name)
        self.wait_running(name)

    def status(self, name: str) -> dict:
        response = requests.get(f"{self.url}/connectors/{name}/status", timeout=10)
        return response.json() if response.status_code == 200 else {}

    def registered_config(self, name: str) -> dict[str, str] | None:
        """The config the connector was registered with (without the name Connect adds); None if there is none."""
        response = requests.get(f"{self.url}/connectors/{name}/config", timeout=10)
        if response.status_code == 404:
            return None
        return {key: value for key, value in response.json().items() if key != "name"}

    def connectors(self) -> list[str]:
        return requests.get(f"{self.url}/connectors", timeout=10).json()

    def plugins(self) -> list[str]:
        return [p["class"] for p in requests.get(f"{self.url}/connector-plugins", timeout=10).json()]

    def wait_running(self, name: str, timeout: float = 120) -> dict:
        """Wait until the connector and all its tasks are RUNNING; a FAILED one fails at once with its trace."""

        def running() -> dict | None:
            status = self.status(name)
            states = connector_states(status)
            if "FAILED" in states:
                raise SandboxError(f"connector {name} FAILED:\n{failure_trace(status)[:2000]}",
                                   "fix the cause, then `sandbox up` re-registers it (see `sandbox logs connect`)")
            return status if len(states) > 1 and set(states) == {"RUNNING"} else None

        return wait_until(running, timeout, f"connector {name} and its tasks to be RUNNING", "see `sandbox logs connect`")


def rewound_offsets(name: str, held: list[dict], mark) -> list[dict]:
    """The connector's binlog offset set back to `mark`: its file and offset, nothing of the transaction there to
    skip, and the GTID position where the server has GTIDs (MariaDB's connector restarts from that alone)."""
    if len(held) != 1:
        raise SandboxError(f"connector {name} holds {len(held)} offsets, not one binlog position",
                           "rewind a MariaDB or MySQL connector that has streamed")
    offset = {key: value for key, value in held[0]["offset"].items() if key not in ("gtids", "snapshot")}
    offset.update({"file": mark.file, "pos": mark.pos, "event": 0, "row": 0})
    if mark.gtids:
        offset["gtids"] = mark.gtids
    return [{"partition": held[0]["partition"], "offset": offset}]


def failure_trace(status: dict) -> str:
    parts = [status.get("connector", {}), *status.get("tasks", [])]
    return next((part.get("trace", "") for part in parts if part.get("state") == "FAILED"), "")


def connector_states(status: dict) -> list[str]:
    if not status:
        return []
    return [status.get("connector", {}).get("state", "")] + [t.get("state", "") for t in status.get("tasks", [])]


def register_all(settings: Settings, view: WorkerView | None = None) -> list[str]:
    client = ConnectClient(settings.url("connect"))
    names = []
    for source in settings.topology.sources.values():
        config = connector_config(settings, source, view)
        # Connect restarts a connector given its config again, unchanged or not: capture would pause on every `up`.
        if client.registered_config(source.connector) != config:
            client.put_config(source.connector, config)
        names.append(source.connector)
    for name in names:
        states = connector_states(client.status(name))
        if "FAILED" in states:  # e.g. its database was gone for a while
            client.restart_failed(name)
        elif states[:1] in (["PAUSED"], ["STOPPED"]):  # `stop_all`, or by hand: `up` means capture again
            client.resume(name)  # (a connector just registered has no status yet: nothing to resume)
        client.wait_running(name)
    return names


def stop_all(settings: Settings) -> None:
    """Stop the project's connectors (their tasks shut down; offsets and replication slots kept): a connector polls
    its source many times a second even when nothing changes. `register_all` (`sandbox up`) resumes them."""
    client = ConnectClient(settings.url("connect"))
    for source in settings.topology.sources.values():
        if client.status(source.connector):
            client.stop(source.connector)


SECRET_WORDS = ("password", "secret", "credentials", "sasl.jaas.config")


def redacted(config: dict[str, str]) -> dict[str, str]:
    """A connector's config with every password and secret replaced: what can leave the cluster in an archive."""
    return {key: "<redacted>" if any(word in key.lower() for word in SECRET_WORDS) else value
            for key, value in config.items()}
