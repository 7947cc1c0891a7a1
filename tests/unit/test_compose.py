"""The compose files: generated from the services' declarations, validated by a real Compose (the pinned build)."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from pathlib import PurePosixPath

import pytest
import yaml

from cdc_sandbox.config import PACKAGE_DIR, Settings
from cdc_sandbox.stack import jvm
from cdc_sandbox.stack.backends import compose, compose_file, native
from cdc_sandbox.stack.backends.compose_cli import binary_path, ensure_compose_cli
from cdc_sandbox.stack.connectors import connector_config, native_view
from cdc_sandbox.stack.services.connect import KafkaConnect
from cdc_sandbox.stack.services.metastore import schema_dir

DSN = "mssql://sa:Secret-Pass1@mssql.example:1433/tickit"


@pytest.fixture(scope="session")
def compose_binary():
    ensure_compose_cli(Settings.load())
    return binary_path(Settings.load())


@pytest.fixture
def compose_settings(tmp_path) -> Settings:
    settings = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "state")}, backend="compose")
    compose.write_files(settings)
    return settings


@pytest.fixture
def native_settings(tmp_path) -> Settings:
    """The native backend with an external SQL Server, so all three sources run natively too."""
    return Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "native"), "SANDBOX_MSSQL_DSN": DSN})


def run_compose(binary, settings: Settings, *args: str, file=compose.COMPOSE_FILE):
    command = [str(binary), "-f", str(file), "--env-file", str(compose.env_file(settings)), *args]
    return subprocess.run(command, capture_output=True, text=True)


def rendered(binary, settings: Settings) -> dict:
    result = run_compose(binary, settings, "config", "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_compose_file_is_generated_from_the_declarations():
    """The one check that the compose backend runs what the native one does: both read `stack/declarations.py`."""
    assert compose.COMPOSE_FILE.read_text() == compose_file.rendered(), \
        "run `python -m cdc_sandbox.stack.backends.compose_file`"


def test_the_compose_file_validates(compose_binary, compose_settings):
    result = run_compose(compose_binary, compose_settings, "config", "--quiet")
    assert result.returncode == 0, result.stderr


def test_the_validator_rejects_what_compose_would_reject(compose_binary, compose_settings, tmp_path):
    broken = tmp_path / "docker-compose.yml"
    text = compose.COMPOSE_FILE.read_text().replace("    healthcheck:\n", "    healthchek:\n", 1)
    broken.write_text(text)
    result = run_compose(compose_binary, compose_settings, "config", "--quiet", file=broken)
    assert result.returncode != 0 and "healthchek" in result.stderr


def test_without_the_env_file_compose_says_to_run_sandbox_up(compose_binary, tmp_path):
    result = subprocess.run([str(compose_binary), "-f", str(compose.COMPOSE_FILE), "config", "--quiet"],
                            capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode != 0 and "run `sandbox up`" in result.stderr


def test_every_image_is_pinned_to_a_release_tag(compose_binary, compose_settings):
    services = rendered(compose_binary, compose_settings)["services"]
    for name, service in services.items():
        assert "build" not in service, name
        image = service["image"]
        repository, _, tag = image.rpartition(":")
        assert repository and "/" not in tag, f"{name}: {image} has no tag"
        assert tag not in ("latest", "nightly") and not tag.endswith("-latest") and re.search(r"\d", tag), image


def test_the_metastore_container_runs_the_resolved_jars_with_the_written_settings(compose_binary, compose_settings):
    metastore = rendered(compose_binary, compose_settings)["services"]["metastore"]
    mounts = {volume["target"]: volume["source"] for volume in metastore["volumes"]}
    assert mounts["/opt/metastore/lib"] == str(jvm.artifacts_dir(compose_settings) / "metastore")
    assert mounts["/opt/metastore/conf"] == str(compose.metastore_conf_dir(compose_settings))
    assert (compose.metastore_conf_dir(compose_settings) / "metastore-site.xml").exists()
    assert metastore["command"][-1] == "org.apache.hadoop.hive.metastore.HiveMetaStore"
    postgres = rendered(compose_binary, compose_settings)["services"]["postgres"]
    mounts = {volume["target"]: volume["source"] for volume in postgres["volumes"]}
    assert mounts["/opt/metastore-schema"] == str(schema_dir(compose_settings))  # for its init script


def test_every_service_has_a_health_check(compose_binary, compose_settings):
    for name, service in rendered(compose_binary, compose_settings)["services"].items():
        assert service.get("healthcheck", {}).get("test"), f"{name} has no health check"


def test_services_are_the_native_ones_plus_sql_server(compose_binary, compose_settings):
    services = set(rendered(compose_binary, compose_settings)["services"])
    assert services == {s.name for s in native.all_services(compose_settings)} | {"mssql"}
    assert set(compose.SERVICES) == services


def published(config: dict) -> dict[str, list[dict]]:
    return {name: service.get("ports", []) for name, service in config["services"].items()}


def test_ports_follow_the_same_variables_as_natively(compose_binary, tmp_path):
    env = {"SANDBOX_STATE_DIR": str(tmp_path / "s"), "SANDBOX_KAFKA_PORT": "19092", "SANDBOX_MSSQL_PORT": "11433",
           "SANDBOX_POSTGRES_PORT": "15432"}
    settings = Settings.load(env, backend="compose")
    compose.write_files(settings)
    config = rendered(compose_binary, settings)
    for name, ports in published(config).items():
        assert int(ports[0]["published"]) == settings.ports[name], name
    assert "HOST://127.0.0.1:19092" in config["services"]["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"]


def test_each_sandbox_is_its_own_compose_project(compose_binary, compose_settings, tmp_path):
    other = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "other")}, backend="compose")
    compose.write_files(other)
    names = {rendered(compose_binary, s)["name"] for s in (compose_settings, other)}
    assert len(names) == 2


def test_passwords_are_generated_per_sandbox_and_kept_private(compose_binary, compose_settings):
    config = rendered(compose_binary, compose_settings)
    env_file = compose.env_file(compose_settings)
    assert env_file.stat().st_mode & 0o077 == 0
    assert compose.files_dir(compose_settings).stat().st_mode & 0o077 == 0
    sa = config["services"]["mssql"]["environment"]["MSSQL_SA_PASSWORD"]
    assert len(sa) >= 24 and sa in compose_settings.secrets_file.read_text()
    assert re.search(r"[A-Z]", sa) and re.search(r"[a-z]", sa) and re.search(r"\d", sa)
    worker_copy = (compose.files_dir(compose_settings) / "connect-credentials.properties").read_text()
    assert "debezium.password=" in worker_copy and "admin" not in worker_copy
    assert config["secrets"]["connect-credentials"]["file"].endswith("connect-credentials.properties")


def normalized(config: dict[str, str], view) -> dict[str, str]:
    """A connector config with what differs between the worker's views replaced by names (and the login: an
    external server's comes with its DSN)."""
    replacements = {view.registry_url: "<registry>", view.kafka_bootstrap: "<kafka>", view.secrets_file: "<secrets>"}
    result = {}
    for key, value in config.items():
        for old, new in replacements.items():
            value = value.replace(old, new)
        result[key] = value
    result["database.hostname"], result["database.port"], result["database.user"] = "<host>", "<port>", "<user>"
    return result


def test_connector_configs_match_except_addresses(native_settings, compose_settings):
    assert native_settings.topology.sources.keys() == compose_settings.topology.sources.keys()
    for name, source in compose_settings.topology.sources.items():
        on_compose = normalized(connector_config(compose_settings, source, compose.worker_view(compose_settings)),
                                compose.worker_view(compose_settings))
        natively = normalized(connector_config(native_settings, native_settings.topology.sources[name]),
                              native_view(native_settings))
        if name == "mysql":  # MariaDB natively, MySQL 8 on compose: the one declared difference
            assert natively.pop("connector.class") == "io.debezium.connector.mariadb.MariaDbConnector"
            assert on_compose.pop("connector.class") == "io.debezium.connector.mysql.MySqlConnector"
        assert on_compose == natively, name


def test_compose_connectors_name_containers_and_the_mounted_secrets(compose_settings):
    view = compose.worker_view(compose_settings)
    config = connector_config(compose_settings, compose_settings.topology.sources["mssql"], view)
    assert (config["database.hostname"], config["database.port"]) == ("mssql", "1433")
    assert config["database.password"] == "${file:/run/secrets/connect-credentials:mssql.debezium.password}"
    assert config["value.converter.apicurio.registry.url"] == "http://apicurio:8080/apis/registry/v2"
    assert config["schema.history.internal.kafka.bootstrap.servers"] == "kafka:19092"


def test_the_connect_image_reads_the_declared_worker_from_its_environment(compose_binary, compose_settings):
    """The generator's names for the worker's settings are the ones the image's entrypoint reads."""
    environment = rendered(compose_binary, compose_settings)["services"]["connect"]["environment"]
    on_compose = compose_file.connect_worker_properties(environment)
    natively = {k: str(v) for k, v in KafkaConnect(compose_settings).worker_properties().items()}
    addresses = {"bootstrap.servers", "listeners", "rest.advertised.host.name", "rest.advertised.port", "plugin.path",
                 "config.providers.file.param.allowed.paths"}
    # Natively the plugins get ServiceLoader manifests when they are installed; the image's entrypoint puts an
    # Apicurio converter without them on the plugin path, so there the worker keeps scanning for plugins.
    native_only = {"plugin.discovery"}
    assert {k: v for k, v in on_compose.items() if k not in addresses} == \
        {k: v for k, v in natively.items() if k not in addresses | native_only}
    assert environment["ENABLE_APICURIO_CONVERTERS"] == "true"
    allowed = "config.providers.file.param.allowed.paths"
    assert on_compose[allowed] == str(PurePosixPath(compose.CONNECT_SECRETS).parent)
    assert natively[allowed] == str(compose_settings.secrets_file.parent)


def test_topics_and_topology_match(native_settings, compose_settings):
    assert sorted(native_settings.topology.topics()) == sorted(compose_settings.topology.topics())
    for settings in (native_settings, compose_settings):
        user = settings.topology.table("user")
        assert (user.source, user.namespace, user.stand_in) == ("mssql", "crm", False)
    assert compose_settings.topology.sources["mysql"].engine == "mysql"


def test_the_sql_server_container_runs_the_generated_init_script(compose_binary, compose_settings):
    mssql = rendered(compose_binary, compose_settings)["services"]["mssql"]
    mounts = {volume["target"]: volume["source"] for volume in mssql["volumes"]}
    assert mounts["/sandbox/init.sql"] == str(PACKAGE_DIR / "fixtures" / "sql" / "sqlserver" / "init.sql")
    assert mssql["environment"]["MSSQL_AGENT_ENABLED"] == "true"
    assert mssql["environment"]["CAPTURE_USER"] == "debezium"


def test_mysqls_init_script_grants_replication_outside_the_binlog():
    init_script = compose.COMPOSE_DIR / "mysql" / "initdb" / "10-sandbox-users.sh"
    init = init_script.read_text()
    assert "REPLICATION SLAVE, REPLICATION CLIENT" in init
    statements = init.split("<<SQL\n", 1)[1]
    assert statements.startswith("SET SESSION sql_log_bin = 0;"), "the logins stay out of the captured binlog"
    assert os.access(init_script, os.X_OK), "the entrypoint sources a script that is not executable"


def test_localstack_journals_s3_into_the_sandbox_state_as_natively(compose_binary, compose_settings):
    localstack = rendered(compose_binary, compose_settings)["services"]["localstack"]
    mounts = {volume["target"]: volume["source"] for volume in localstack["volumes"]}
    journal = localstack["environment"]["SANDBOX_S3_JOURNAL"]
    assert mounts[journal] == str(compose_settings.data_dir("localstack") / "journal")
    script = mounts["/etc/localstack/init/start.d/s3-journal.py"]
    assert script == str(compose.COMPOSE_DIR / "localstack" / "s3-journal.py")
    package = PACKAGE_DIR / "stack" / "services" / "s3_journal" / "sandbox_s3_journal"
    assert mounts["/opt/sandbox/sandbox_s3_journal"] == str(package)
    assert "from sandbox_s3_journal import install_journal" in (compose.COMPOSE_DIR / "localstack" / "s3-journal.py").read_text()
    assert localstack["environment"]["SANDBOX_S3_JOURNAL_OWNER"] == f"{os.getuid()}:{os.getgid()}"
    health = " ".join(localstack["healthcheck"]["test"])
    assert "/_localstack/init/start" in health and '\"name\": \"s3-journal.py\", \"state\": \"SUCCESSFUL\"' in health


def test_kafka_formats_with_a_cluster_id_of_its_own_and_checks_health_on_a_small_heap(compose_binary,
                                                                                       compose_settings):
    kafka = rendered(compose_binary, compose_settings)["services"]["kafka"]
    cluster_id = kafka["environment"]["CLUSTER_ID"]
    assert len(cluster_id) == 22 and len(base64.urlsafe_b64decode(cluster_id + "==")) == 16, "a Kafka Uuid"
    assert cluster_id != "5L6g3nShT-eMCtK--X86sw", "not the image's fallback"
    assert kafka["healthcheck"]["test"][1].startswith("KAFKA_HEAP_OPTS=-Xmx64m ")


def test_compose_ps_output_of_either_format_is_read():
    line = {"Service": "kafka", "State": "running", "Health": "healthy"}
    assert compose.parse_ps(json.dumps(line) + "\n") == [line]
    assert compose.parse_ps(json.dumps([line])) == [line]
    assert compose.parse_ps("") == []


def test_the_testcontainers_stack_runs_the_same_files_and_ports(compose_binary, tmp_path):
    settings = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "s"), "SANDBOX_MSSQL_PORT": "21433"},
                             backend="compose")
    config = compose.testcontainers_stack(settings).get_config()
    assert config["name"] == compose.project_name(settings)
    assert set(config["services"]) == set(compose.SERVICES)
    assert config["services"]["mssql"]["ports"][0]["published"] == "21433"


PASSWORD_ARGUMENT = re.compile(r"""(?:\s-p|\s-P|--password)[ =]?["']?\$+\{?\w*PASSWORD""")


def test_no_password_is_put_on_a_command_line(compose_binary, compose_settings):
    """Any local user can read a process's arguments: passwords reach commands through files or the environment."""
    scripts = [compose.COMPOSE_FILE, *sorted((PACKAGE_DIR / "compose").rglob("*.sh"))]
    for script in scripts:
        for line in script.read_text().splitlines():
            assert not PASSWORD_ARGUMENT.search(line), f"{script.name}: a password as an argument: {line.strip()}"
    for name, service in rendered(compose_binary, compose_settings)["services"].items():
        passwords = [v for k, v in (service.get("environment") or {}).items() if "PASSWORD" in k and v]
        arguments = json.dumps([service.get("command"), service.get("entrypoint"),
                                service.get("healthcheck", {}).get("test")])
        assert passwords == [] or not any(p in arguments for p in passwords), f"{name}: a password in its commands"


@pytest.mark.parametrize("status, healthy", [(200, True), (503, False)])
def test_apicurios_health_check_needs_only_bash_and_asks_the_readiness_endpoint(status, healthy):
    from tests.unit.http_fake import serve

    asked = []
    server = serve(lambda method, path: asked.append(path) or (status, b'{"status": "UP"}'))
    try:
        test = yaml.safe_load(compose.COMPOSE_FILE.read_text())["services"]["apicurio"]["healthcheck"]["test"]
        port = server.server_address[1]
        command = [part.replace("/8080", f"/{port}") for part in test[1:]]
        result = subprocess.run(command, capture_output=True, text=True, timeout=10, env={"PATH": "/usr/bin:/bin"})
    finally:
        server.shutdown()
    assert (result.returncode == 0) == healthy, result.stderr
    assert asked == ["/health/ready"]
