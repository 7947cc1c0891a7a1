"""What each service is, declared once for both backends: the release it runs, its server settings and its heap.

The native services (`stack/services/`) start their binaries with these settings, adding only where this machine
keeps their files and which loopback port they bind; the compose file (`stack/backends/compose_file.py`) is
generated from the same declarations, adding the images' own ways of taking them (an environment variable per
setting, a container's network names). Nothing here depends on a sandbox's settings.
"""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET

from cdc_sandbox.config import PACKAGE_DIR

POM = PACKAGE_DIR / "stack" / "jvm" / "pom.xml"

# Postgres: logical decoding for Debezium's pgoutput slots; a small buffer pool for a laptop.
POSTGRES_SERVER = {"wal_level": "logical", "max_wal_senders": 10, "max_replication_slots": 10,
                   "shared_buffers": "128MB"}
POSTGRES_IMAGE = "postgres:15.14-bookworm"

# MySQL-compatible servers (MariaDB natively, MySQL 8 on compose): ROW binlogs with full images, as Debezium needs;
# logins by address only; LOAD DATA LOCAL for the bulk loads; binlogs kept for a week of replays.
MYSQL_SERVER_ID = 1
MYSQL_SERVER_OPTIONS = ("--binlog-format=ROW", "--binlog-row-image=FULL", f"--server-id={MYSQL_SERVER_ID}",
                        "--skip-name-resolve", "--local-infile=1", "--character-set-server=utf8mb4",
                        "--collation-server=utf8mb4_unicode_ci", "--innodb-buffer-pool-size=256M")
BINLOG_RETENTION_DAYS = 7
MYSQL_IMAGE = "mysql:8.0.40"

# Kafka in KRaft mode, one process as broker and controller: single-replica internal topics, topics created on first
# use with one partition, nothing expired (Kafka keeps every change in the sandbox).
KAFKA_SERVER = {
    "process.roles": "broker,controller",
    "node.id": 1,
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "num.partitions": 1,
    "auto.create.topics.enable": "true",
    "offsets.topic.replication.factor": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "share.coordinator.state.topic.replication.factor": 1,
    "share.coordinator.state.topic.min.isr": 1,
    "group.initial.rebalance.delay.ms": 0,
    "log.retention.hours": -1,
    # A broker restarted after a crash cannot register until the controller expires its old session, hence a short
    # one; broker and controller share this one process, so that is safe.
    "broker.heartbeat.interval.ms": 500,
    "broker.session.timeout.ms": 3000,
}
KAFKA_HEAP = ("-Xms256m", "-Xmx512m")

# The Kafka Connect worker that runs Debezium.
CONNECT_WORKER = {
    "group.id": "sandbox-connect",
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "config.storage.topic": "_connect-configs",
    "offset.storage.topic": "_connect-offsets",
    "status.storage.topic": "_connect-status",
    "config.storage.replication.factor": 1,
    "offset.storage.replication.factor": 1,
    "status.storage.replication.factor": 1,
    "offset.storage.partitions": 5,
    # Kafka Connect's default: after a crash Debezium re-sends what it delivered since the last flush, as in
    # production, and the fault suite proves the job idempotent against those real duplicates.
    "offset.flush.interval.ms": 60000,
    "offset.flush.timeout.ms": 5000,
    "task.shutdown.graceful.timeout.ms": 5000,
    # A worker killed without leaving its group keeps its place there until its session expires, and the restarted
    # worker is let in only then, so a short session gets its connectors running sooner. This is the shortest the
    # broker allows (`group.min.session.timeout.ms`).
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 2000,
    # Connector passwords come from the credentials file, never inline ...
    "config.providers": "file",
    "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
}
# ... and from nowhere else: a connector naming another path is refused (KIP-993). Where the secrets are differs.
CONNECT_SECRETS_SETTING = "config.providers.file.param.allowed.paths"
CONNECT_HEAP = ("-Xms256m", "-Xmx1g")
# The connectors' converter (stack/jvm/connect-converter), which Maven lays beside Apicurio's jars in their plugin.
CONNECT_CONVERTER_JAR = "sandbox-null-keeping-converter.jar"

APICURIO_HEAP = ("-Xms128m", "-Xmx512m")
METASTORE_HEAP = ("-Xms64m", "-Xmx512m")
METASTORE_SERVER_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
METASTORE_JRE_IMAGE = "eclipse-temurin:17.0.13_11-jre"
MSSQL_IMAGE = "mcr.microsoft.com/mssql/server:2022-CU20-ubuntu-22.04"


@functools.cache
def pom_versions() -> dict[str, str]:
    """The releases the JVM services' jars are resolved at (the pom's properties): the images run the same ones."""
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    properties = ET.parse(POM).getroot().find("m:properties", namespace)
    return {child.tag.split("}")[1]: child.text for child in properties}


def localstack_version() -> str:
    from cdc_sandbox.stack.install import LOCALSTACK_REQUIREMENTS

    return next(r for r in LOCALSTACK_REQUIREMENTS if r.startswith("localstack-core")).split("==")[1]


def images() -> dict[str, str]:
    """The compose backend's image of each service, at the release the native backend installs where it has one."""
    versions = pom_versions()
    return {"postgres": POSTGRES_IMAGE, "mysql": MYSQL_IMAGE, "mssql": MSSQL_IMAGE,
            "kafka": f"apache/kafka:{versions['kafka.version']}",
            "apicurio": f"apicurio/apicurio-registry-kafkasql:{versions['apicurio.version']}",
            "connect": f"quay.io/debezium/connect:{versions['debezium.version']}",
            "localstack": f"localstack/localstack:{localstack_version()}",
            "metastore": METASTORE_JRE_IMAGE}
