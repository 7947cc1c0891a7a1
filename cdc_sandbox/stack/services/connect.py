"""Kafka Connect, distributed worker, with the Debezium plugins and the Apicurio converter on its plugin path.

Connector passwords are read by the worker through Kafka's FileConfigProvider from the sandbox's credentials file.
"""

from __future__ import annotations

import requests

from cdc_sandbox.stack import jvm
from cdc_sandbox.stack.services.base import JvmService
from cdc_sandbox.stack.services.kafka import write_log4j2


class KafkaConnect(JvmService):
    name = "connect"
    start_timeout = 180

    def worker_properties(self) -> dict[str, object]:
        return {
            "bootstrap.servers": self.settings.endpoint("kafka").address,
            "group.id": "sandbox-connect",
            "listeners": self.url,
            "rest.advertised.host.name": self.endpoint.host,
            "rest.advertised.port": self.endpoint.port,
            "plugin.path": str(jvm.artifacts_dir(self.settings) / "connect-plugins"),
            # The plugins carry ServiceLoader manifests (`jvm.sync_plugin_manifests`): no scan of every class.
            "plugin.discovery": "service_load",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "config.storage.topic": "_connect-configs",
            "offset.storage.topic": "_connect-offsets",
            "status.storage.topic": "_connect-status",
            "config.storage.replication.factor": 1,
            "offset.storage.replication.factor": 1,
            "status.storage.replication.factor": 1,
            "offset.storage.partitions": 5,
            # Kafka Connect's default: after a crash Debezium re-sends what it delivered since the last flush, as
            # in production, and the fault suite proves the job idempotent against those real duplicates.
            "offset.flush.interval.ms": 60000,
            "offset.flush.timeout.ms": 5000,  # Kafka's defaults, named: the compose worker sets them too
            "task.shutdown.graceful.timeout.ms": 5000,
            # A worker killed without leaving its group keeps its place there until its session expires, and the
            # restarted worker is let in only then, so a short session gets its connectors running sooner. This is
            # the shortest the broker allows (`group.min.session.timeout.ms`).
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 2000,
            "config.providers": "file",
            "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
            # A connector submitted through the REST API reads the sandbox's secrets and nothing else (KIP-993).
            "config.providers.file.param.allowed.paths": str(self.settings.secrets_file.parent),
        }

    def prepare(self) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        props = self.conf_dir / "connect-distributed.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in self.worker_properties().items()))
        write_log4j2(self.conf_dir)

    def classpath(self) -> str:
        return jvm.classpath(jvm.artifacts_dir(self.settings) / "kafka")

    def command(self) -> list[str]:
        return self.java("-Xms256m", "-Xmx1g", *jvm.service_options(busy=True),
                         f"-Dlog4j2.configurationFile={self.conf_dir / 'log4j2.properties'}") + [
            "org.apache.kafka.connect.cli.ConnectDistributed", str(self.conf_dir / "connect-distributed.properties")]

    def is_ready(self) -> bool:
        return requests.get(f"{self.url}/connectors", timeout=3).status_code == 200

    def version(self) -> str:
        return requests.get(self.url, timeout=3).json()["version"]
