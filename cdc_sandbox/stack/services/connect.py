"""Kafka Connect, distributed worker, with the Debezium plugins and the Apicurio converter on its plugin path.

Connector passwords are read by the worker through Kafka's FileConfigProvider from the sandbox's credentials file.
"""

from __future__ import annotations

import requests

from cdc_sandbox.stack import declarations, jvm
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
            **declarations.CONNECT_WORKER,
            declarations.CONNECT_SECRETS_SETTING: str(self.settings.secrets_file.parent),
        }

    def prepare(self) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        props = self.conf_dir / "connect-distributed.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in self.worker_properties().items()))
        write_log4j2(self.conf_dir)

    def classpath(self) -> str:
        return jvm.classpath(jvm.artifacts_dir(self.settings) / "kafka")

    def command(self) -> list[str]:
        return self.java(*declarations.CONNECT_HEAP, *jvm.service_options(busy=True),
                         f"-Dlog4j2.configurationFile={self.conf_dir / 'log4j2.properties'}") + [
            "org.apache.kafka.connect.cli.ConnectDistributed", str(self.conf_dir / "connect-distributed.properties")]

    def is_ready(self) -> bool:
        return requests.get(f"{self.url}/connectors", timeout=3).status_code == 200

    def version(self) -> str:
        return requests.get(self.url, timeout=3).json()["version"]
