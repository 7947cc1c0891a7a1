"""The compose backend's file, generated from the services' declarations (`cdc_sandbox.stack.declarations`): the same
releases, server settings, heaps and ports as the native backend, in each image's own terms, plus SQL Server 2022
with the Agent and CDC for the `mssql` source (see docs/operations/backends.md).

`python -m cdc_sandbox.stack.backends.compose_file` writes `cdc_sandbox/compose/docker-compose.yml`; a unit test fails
when the committed file is not what the declarations make. `sandbox up` runs it with a per-sandbox project name and
env file (<state>/compose/sandbox.env: the ports, and the passwords generated into <state>/secrets). Ports bind to
127.0.0.1 and follow SANDBOX_<SERVICE>_PORT. Users, schemas, publication, bucket and connectors are then set up by
the same Python code as natively.
"""

from __future__ import annotations

import sys

import yaml

from cdc_sandbox.config import DEFAULT_PORTS, PACKAGE_DIR
from cdc_sandbox.stack import declarations as declared

COMPOSE_FILE = PACKAGE_DIR / "compose" / "docker-compose.yml"
INTERNAL_KAFKA = "kafka:19092"
CONNECT_SECRETS = "/run/secrets/connect-credentials"
# The image formats storage with CLUSTER_ID and falls back to one fixed id its docs say to replace (apache/kafka
# docker/resources/common-scripts/configureDefaults): one of the sandbox's own, base64url of 16 random bytes as
# `kafka-storage.sh random-uuid` prints.
KAFKA_CLUSTER_ID = "mAT0mwlQRO2GDj4JPGP1fQ"
# The Debezium Connect image's variables for worker settings (debezium/container-images,
# connect-base/<version>/docker-entrypoint.sh): these few by name, with the defaults it gives the ones marked so;
# beyond them only CONNECT_<NAME> sets <name> (lower case, `_` -> `.`).
CONNECT_IMAGE_SETTINGS = {
    "BOOTSTRAP_SERVERS": "bootstrap.servers", "GROUP_ID": "group.id",
    "CONFIG_STORAGE_TOPIC": "config.storage.topic", "OFFSET_STORAGE_TOPIC": "offset.storage.topic",
    "STATUS_STORAGE_TOPIC": "status.storage.topic",
    "OFFSET_FLUSH_INTERVAL_MS": "offset.flush.interval.ms", "OFFSET_FLUSH_TIMEOUT_MS": "offset.flush.timeout.ms",
    "SHUTDOWN_TIMEOUT": "task.shutdown.graceful.timeout.ms",
    "KEY_CONVERTER": "key.converter", "VALUE_CONVERTER": "value.converter",
}
CONNECT_IMAGE_DEFAULTS = {"GROUP_ID": "1", "OFFSET_FLUSH_INTERVAL_MS": "60000", "OFFSET_FLUSH_TIMEOUT_MS": "5000",
                          "SHUTDOWN_TIMEOUT": "10000", "KEY_CONVERTER": "org.apache.kafka.connect.json.JsonConverter",
                          "VALUE_CONVERTER": "org.apache.kafka.connect.json.JsonConverter"}
FROM_SANDBOX_UP = "run `sandbox up`, it writes the env file"
HEADER = """\
# Generated from the services' declarations by `python -m cdc_sandbox.stack.backends.compose_file`; edit
# cdc_sandbox/stack/declarations.py or cdc_sandbox/stack/backends/compose_file.py instead, where each setting says why.
"""


def required(variable: str) -> str:
    """A value of the env file `sandbox up` writes; without it Compose refuses to start, saying to run it."""
    return f"${{{variable}:?{FROM_SANDBOX_UP}}}"


def published(service: str) -> list[str]:
    """The service's port on 127.0.0.1, the native default unless SANDBOX_<SERVICE>_PORT says otherwise."""
    port = DEFAULT_PORTS[service]
    return [f"127.0.0.1:${{SANDBOX_{service.upper()}_PORT:-{port}}}:{port}"]


def health(test: list[str], interval: str, timeout: str, retries: int, start_period: str | None = None) -> dict:
    check = {"test": test, "interval": interval, "timeout": timeout, "retries": retries}
    return check | ({"start_period": start_period} if start_period else {})


def kafka_environment() -> dict:
    """The broker's settings as the apache/kafka image takes them: KAFKA_<NAME>, `.` -> `_`."""
    addresses = {
        # PLAINTEXT inside the Docker network (Connect, Apicurio), HOST for clients on this machine.
        "controller.quorum.voters": "1@kafka:9093",
        "listeners": "PLAINTEXT://:19092,CONTROLLER://:9093,HOST://:9092",
        "advertised.listeners": f"PLAINTEXT://{INTERNAL_KAFKA},HOST://127.0.0.1:${{SANDBOX_KAFKA_PORT:-9092}}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,HOST:PLAINTEXT",
        "log.dirs": "/var/lib/kafka/data",
    }
    settings = {f"KAFKA_{name.upper().replace('.', '_')}": value
                for name, value in (declared.KAFKA_SERVER | addresses).items()}
    return settings | {"KAFKA_HEAP_OPTS": " ".join(declared.KAFKA_HEAP), "CLUSTER_ID": KAFKA_CLUSTER_ID}


def connect_environment() -> dict:
    """The worker's settings as the Debezium Connect image takes them (`CONNECT_IMAGE_SETTINGS`, else CONNECT_*)."""
    by_property = {prop: var for var, prop in CONNECT_IMAGE_SETTINGS.items()}
    worker = declared.CONNECT_WORKER | {"bootstrap.servers": INTERNAL_KAFKA,
                                        declared.CONNECT_SECRETS_SETTING: CONNECT_SECRETS.rsplit("/", 1)[0]}
    environment = {by_property.get(name, f"CONNECT_{name.upper().replace('.', '_')}"): value
                   for name, value in worker.items()}
    # The image's entrypoint puts its Apicurio converter on the plugin path.
    return environment | {"ENABLE_APICURIO_CONVERTERS": "true", "HEAP_OPTS": " ".join(declared.CONNECT_HEAP)}


def connect_worker_properties(environment: dict[str, str]) -> dict[str, str]:
    """The worker properties a Connect container's environment sets, as its image's entrypoint reads them."""
    named = CONNECT_IMAGE_DEFAULTS | environment
    properties = {prop: str(named[var]) for var, prop in CONNECT_IMAGE_SETTINGS.items() if var in named}
    for var, value in environment.items():
        if var.startswith("CONNECT_"):
            properties[var.removeprefix("CONNECT_").lower().replace("_", ".")] = str(value)
    return properties


def postgres(image: str) -> dict:
    command = ["postgres"]
    for name, value in declared.POSTGRES_SERVER.items():
        command += ["-c", f"{name}={value}"]
    return {
        "image": image,
        "command": command,
        "environment": {
            "POSTGRES_USER": required("POSTGRES_ADMIN_USER"),
            "POSTGRES_PASSWORD": required("POSTGRES_ADMIN_PASSWORD"),
            "POSTGRES_DB": "tickit",
            "POSTGRES_INITDB_ARGS": "-E UTF8 --locale=C.UTF-8",
            "METASTORE_DB_USER": required("POSTGRES_METASTORE_USER"),
            "METASTORE_DB_PASSWORD": required("POSTGRES_METASTORE_PASSWORD"),
        },
        "ports": published("postgres"),
        "volumes": ["postgres-data:/var/lib/postgresql/data", "./postgres/initdb:/docker-entrypoint-initdb.d:ro",
                    f"{required('SANDBOX_METASTORE_SCHEMA')}:/opt/metastore-schema:ro"],
        # Over TCP: during initialisation the server listens on its socket only.
        "healthcheck": health(["CMD-SHELL", 'pg_isready -h 127.0.0.1 -U "$$POSTGRES_USER" -d tickit'], "2s", "5s", 60),
    }


def mysql(image: str) -> dict:
    retention = f"--binlog-expire-logs-seconds={declared.BINLOG_RETENTION_DAYS * 86400}"
    return {
        "image": image,
        "command": ["--log-bin=binlog", *declared.MYSQL_SERVER_OPTIONS, retention],
        "environment": {
            "MYSQL_ROOT_PASSWORD": required("MYSQL_ADMIN_PASSWORD"),
            "SANDBOX_ADMIN_USER": required("MYSQL_ADMIN_USER"),
            "SANDBOX_ADMIN_PASSWORD": "${MYSQL_ADMIN_PASSWORD}",
            "SANDBOX_CAPTURE_USER": required("MYSQL_CAPTURE_USER"),
            "SANDBOX_CAPTURE_PASSWORD": required("MYSQL_CAPTURE_PASSWORD"),
        },
        "ports": published("mysql"),
        "volumes": ["mysql-data:/var/lib/mysql", "./mysql/initdb:/docker-entrypoint-initdb.d:ro"],
        # Over TCP: the initialisation server runs with networking off. No password on a command line: `ping` exits
        # 0 for any server that answers, even one that refuses the login.
        "healthcheck": health(["CMD", "mysqladmin", "ping", "-h", "127.0.0.1", "--silent"], "2s", "5s", 90),
    }


def mssql(image: str) -> dict:
    return {
        "image": image,
        "entrypoint": ["/bin/bash", "/sandbox/entrypoint.sh"],
        "environment": {
            "ACCEPT_EULA": "Y",
            "MSSQL_PID": "Developer",
            "MSSQL_AGENT_ENABLED": "true",  # the Agent's capture job fills the CDC change tables
            "MSSQL_SA_PASSWORD": required("MSSQL_ADMIN_PASSWORD"),
            "CAPTURE_USER": required("MSSQL_CAPTURE_USER"),
            "CAPTURE_PASSWORD": required("MSSQL_CAPTURE_PASSWORD"),
        },
        "ports": published("mssql"),
        "volumes": ["mssql-data:/var/opt/mssql", "./sqlserver/entrypoint.sh:/sandbox/entrypoint.sh:ro",
                    "../fixtures/sql/sqlserver/init.sql:/sandbox/init.sql:ro"],
        # Healthy once the init script has enabled CDC, not merely when the server answers.
        "healthcheck": health(["CMD", "/bin/bash", "/sandbox/entrypoint.sh", "health"], "5s", "10s", 60, "30s"),
    }


def kafka(image: str) -> dict:
    # docker exec passes the container's KAFKA_HEAP_OPTS on, and kafka-run-class.sh would give this client the
    # broker's heap: a small one of its own.
    probe = f"KAFKA_HEAP_OPTS=-Xmx64m /opt/kafka/bin/kafka-broker-api-versions.sh --bootstrap-server {INTERNAL_KAFKA}"
    return {
        "image": image,
        "environment": kafka_environment(),
        "ports": published("kafka"),
        "volumes": ["kafka-data:/var/lib/kafka/data"],
        "healthcheck": health(["CMD-SHELL", f"{probe} > /dev/null"], "5s", "20s", 30),
    }


def apicurio(image: str) -> dict:
    # No HTTP client is certain in this image (UBI-based, Quarkus): bash's /dev/tcp asks the readiness endpoint.
    ready = ("exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /health/ready HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' "
             ">&3 && head -n 1 <&3 | grep -q ' 200 '")
    return {
        # Registry 2.6 (the v2 API the native converter and the job speak); schemas are kept in a Kafka topic, so
        # they outlive a restart as natively (Kafka messages refer to them by global id).
        "image": image,
        "environment": {"KAFKA_BOOTSTRAP_SERVERS": INTERNAL_KAFKA, "JAVA_OPTS_APPEND": " ".join(declared.APICURIO_HEAP)},
        "ports": published("apicurio"),
        "depends_on": {"kafka": {"condition": "service_healthy"}},
        "healthcheck": health(["CMD", "bash", "-c", ready], "3s", "5s", 60),
    }


def connect(image: str) -> dict:
    return {
        "image": image,
        "environment": connect_environment(),
        "ports": published("connect"),
        # The predicate that keeps truncate events out of the flattening transform
        # (cdc_sandbox/fixtures/connectors/common.json), built by Maven like the native worker's plugins.
        # The Apicurio converter that keeps an explicit NULL (the connectors' converter class): the image's entrypoint
        # links everything in its Apicurio directory into each connector's plugin directory.
        "volumes": [f"{required('SANDBOX_CONNECT_TRUNCATES')}:/kafka/connect/sandbox-truncates:ro",
                    f"{required('SANDBOX_CONNECT_CONVERTER')}:/kafka/external_libs/apicurio/{declared.CONNECT_CONVERTER_JAR}:ro"],
        "secrets": ["connect-credentials"],
        "depends_on": {"kafka": {"condition": "service_healthy"}, "apicurio": {"condition": "service_healthy"}},
        # curl is in the image: Debezium's connect-base entrypoint fetches plugins with it.
        "healthcheck": health(["CMD-SHELL", "curl -fsS http://localhost:8083/connectors > /dev/null"], "3s", "5s", 60,
                              "20s"),
    }


def localstack(image: str) -> dict:
    # Healthy once S3 answers and the journal's start.d script ran: LocalStack only logs a failed init script
    # (localstack-core/localstack/runtime/init.py) and reports each one's state at /_localstack/init/<stage>
    # (services/internal.py: {"stage": ..., "name": ..., "state": "SUCCESSFUL"}, json.dumps spacing).
    ready = ("curl -fsS http://localhost:4566/_localstack/health | grep -Eq '\"s3\": \"(available|running)\"' && "
             "curl -fsS http://localhost:4566/_localstack/init/start | grep -q '\"name\": \"s3-journal.py\", "
             "\"state\": \"SUCCESSFUL\"'")
    return {
        "image": image,
        "environment": {
            "SERVICES": "s3", "SKIP_SSL_CERT_DOWNLOAD": "1", "DISABLE_EVENTS": "1",
            "SANDBOX_S3_JOURNAL": "/var/lib/sandbox/s3-journal",
            # The image runs as root (its Dockerfile has no USER): the journal hands its files to the host account
            # that reads and settles them.
            "SANDBOX_S3_JOURNAL_OWNER": required("SANDBOX_S3_JOURNAL_OWNER"),
        },
        "ports": published("localstack"),
        # Every acknowledged S3 change journaled on the host (cdc_sandbox/stack/services/s3_journal): a killed
        # container comes back with the lake as of its last write.
        "volumes": ["../stack/services/s3_journal/sandbox_s3_journal:/opt/sandbox/sandbox_s3_journal:ro",
                    "./localstack/s3-journal.py:/etc/localstack/init/start.d/s3-journal.py:ro",
                    f"{required('SANDBOX_S3_JOURNAL_DIR')}:/var/lib/sandbox/s3-journal"],
        "healthcheck": health(["CMD-SHELL", ready], "2s", "5s", 60),
    }


def metastore(image: str) -> dict:
    # The jars the native backend resolves through Maven, with the settings `sandbox up` writes for the containers'
    # addresses (cdc_sandbox/stack/services/metastore.py).
    return {
        "image": image,
        "command": ["java", *declared.METASTORE_HEAP, "-XX:+UseSerialGC", "-cp",
                    "/opt/metastore/conf:/opt/metastore/lib/*", declared.METASTORE_SERVER_CLASS],
        "ports": published("metastore"),
        "volumes": [f"{required('SANDBOX_METASTORE_JARS')}:/opt/metastore/lib:ro",
                    f"{required('SANDBOX_METASTORE_CONF')}:/opt/metastore/conf:ro"],
        "depends_on": {"postgres": {"condition": "service_healthy"}, "localstack": {"condition": "service_healthy"}},
        # The server opens its port once its catalog store is set up; bash's /dev/tcp asks it.
        "healthcheck": health(["CMD", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9083"], "2s", "5s", 60),
    }


SERVICES = {"postgres": postgres, "mysql": mysql, "mssql": mssql, "kafka": kafka, "apicurio": apicurio,
            "connect": connect, "localstack": localstack, "metastore": metastore}


def document() -> dict:
    images = declared.images()
    return {
        "name": "cdc-sandbox",
        "services": {name: service(images[name]) for name, service in SERVICES.items()},
        # The capture logins' passwords (a copy of <state>/secrets readable by the worker's account).
        "secrets": {"connect-credentials": {"file": required("SANDBOX_CONNECT_CREDENTIALS")}},
        "volumes": {"postgres-data": None, "mysql-data": None, "mssql-data": None, "kafka-data": None},
    }


def rendered() -> str:
    return HEADER + yaml.safe_dump(document(), sort_keys=False, width=120, default_flow_style=False)


def main() -> int:
    COMPOSE_FILE.write_text(rendered())
    print(f"wrote {COMPOSE_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
