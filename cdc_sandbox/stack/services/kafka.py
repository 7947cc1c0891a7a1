"""Kafka 4.x as a single KRaft node (broker and controller in one process), from the jars Maven resolved."""

from __future__ import annotations

import base64
import subprocess
import uuid

from confluent_kafka.admin import AdminClient

from cdc_sandbox import kafka_clients
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import declarations, jvm
from cdc_sandbox.stack.services.base import JvmService

LOG4J2 = """\
status = warn
appender.file.type = Console
appender.file.name = stdout
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = stdout
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
"""


def write_log4j2(conf_dir) -> str:
    path = conf_dir / "log4j2.properties"
    path.write_text(LOG4J2)
    return str(path)


class Kafka(JvmService):
    name = "kafka"
    start_timeout = 120

    @property
    def controller_port(self) -> int:
        return self.settings.ports["kafka_controller"]

    @property
    def ports(self) -> list[int]:
        return [self.endpoint.port, self.controller_port]

    @property
    def bootstrap(self) -> str:
        return self.endpoint.address

    def server_properties(self) -> dict[str, object]:
        host = self.endpoint.host
        return {
            **declarations.KAFKA_SERVER,
            "controller.quorum.voters": f"1@{host}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{host}:{self.endpoint.port},CONTROLLER://{host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{host}:{self.endpoint.port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
        }

    def prepare(self) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        props = self.conf_dir / "server.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in self.server_properties().items()))
        write_log4j2(self.conf_dir)
        if not (self.data_dir / "meta.properties").exists():
            self._format_storage(props)

    def _format_storage(self, props) -> None:
        tool = [jvm.java_binary(), *self._options(), "-cp", self.classpath(), "kafka.tools.StorageTool"]
        result = subprocess.run(
            tool + ["format", "--cluster-id", cluster_id(), "--config", str(props)],
            capture_output=True, text=True,
        )
        if result.returncode != 0:
            raise SandboxError(f"formatting Kafka's storage failed: {(result.stdout + result.stderr)[-800:]}",
                               f"check {props}; `sandbox reset` starts from empty state")

    def _options(self) -> list[str]:
        return [*declarations.KAFKA_HEAP, *jvm.service_options(),
                f"-Dlog4j2.configurationFile={self.conf_dir / 'log4j2.properties'}"]

    def classpath(self) -> str:
        return jvm.classpath(jvm.artifacts_dir(self.settings) / "kafka")

    def command(self) -> list[str]:
        return self.java(*self._options()) + ["kafka.Kafka", str(self.conf_dir / "server.properties")]

    def admin(self) -> AdminClient:
        return kafka_clients.admin(self.bootstrap, {"socket.timeout.ms": 3000})

    def is_ready(self) -> bool:
        metadata = self.admin().list_topics(timeout=3)
        return bool(metadata.brokers)

    def version(self) -> str:
        return jvm.jar_version(jvm.artifacts_dir(self.settings) / "kafka", "kafka-clients")


def cluster_id() -> str:
    """A random Kafka cluster id: a UUID in URL-safe base64. One in 64 begins with '-', which the storage tool's
    argument parser takes for an option (an ephemeral sandbox once failed to start on it); Kafka's own
    `Uuid.randomUuid` draws again then, and so does this."""
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not candidate.startswith("-"):
            return candidate
