"""Configuration, connector rendering, Maven error parsing and wire-format framing, without services."""

from __future__ import annotations

import struct

import pytest

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.sources.registry import WireFormatError, frame_global_id
from cdc_sandbox.stack import install, jvm
from cdc_sandbox.stack.connectors import connector_config, render
from cdc_sandbox.stack.jvm import unresolved_artifacts


@pytest.fixture
def settings(tmp_path):
    return Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "state"), "SANDBOX_KAFKA_PORT": "19092"})


def test_ports_come_from_env_then_defaults(settings):
    assert settings.ports["kafka"] == 19092
    assert settings.ports["postgres"] == 5432
    assert settings.endpoint("kafka").address == "127.0.0.1:19092"


def test_recorded_ports_are_reused(tmp_path, settings):
    settings.record_ports()
    again = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "state")})
    assert again.ports["kafka"] == 19092


def test_a_bad_port_is_refused_with_advice(tmp_path):
    with pytest.raises(SandboxError, match="SANDBOX_MYSQL_PORT='db'"):
        Settings.load({"SANDBOX_STATE_DIR": str(tmp_path), "SANDBOX_MYSQL_PORT": "db"})


def test_a_host_makes_a_service_external(tmp_path):
    settings = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path), "SANDBOX_POSTGRES_HOST": "staging.example",
                              "SANDBOX_POSTGRES_USER": "replicator", "SANDBOX_POSTGRES_PASSWORD": "s3cret"})
    assert settings.endpoint("postgres").external and settings.endpoint("postgres").host == "staging.example"
    config = connector_config(settings, settings.topology.sources["postgres"])
    assert config["database.hostname"] == "staging.example" and config["database.user"] == "replicator"
    assert "s3cret" not in str(config)


def test_connector_configs_reference_passwords_by_file(settings):
    for source in settings.topology.sources.values():
        config = connector_config(settings, source)
        assert config["database.password"] == f"${{file:{settings.secrets_file}:{source.name}.debezium.password}}"
        assert "{{" not in str(config)
        assert config["topic.prefix"] == "tickit"
        assert config["transforms.unwrap.type"] == "io.debezium.transforms.ExtractNewRecordState"
        assert config["value.converter.apicurio.registry.auto-register"] == "true"
    secrets = settings.secrets_file.read_text()
    assert settings.secrets_file.stat().st_mode & 0o077 == 0, "the credentials file is private"
    assert "postgres.debezium.password=" in secrets


def test_unknown_placeholder_is_an_error():
    with pytest.raises(SandboxError, match="nope"):
        render({"a": "{{nope}}"}, {})


def test_maven_output_names_unresolved_artifacts():
    output = (
        "[ERROR] Failed to execute goal on project x: Could not resolve dependencies for project a:b:pom:1: "
        "Failed to read artifact descriptor for io.apicurio:apicurio-registry-utils-converter:jar:3.0.9: "
        "Could not find artifact io.apicurio:apicurio-registry:pom:3.0.9 in central (https://repo)\n"
        "[ERROR] Unable to find/resolve artifact. The following artifacts could not be resolved: "
        "io.debezium:debezium-connector-postgres:tar.gz:plugin:0.1 (absent): Could not find it\n"
    )
    assert unresolved_artifacts(output) == [
        "io.apicurio:apicurio-registry:pom:3.0.9",
        "io.debezium:debezium-connector-postgres:tar.gz:plugin:0.1",
    ]


def test_wire_format_header():
    assert frame_global_id(struct.pack(">bq", 0, 42) + b"body") == 42
    with pytest.raises(WireFormatError, match="magic byte"):
        frame_global_id(b"\x01" + bytes(8))
    with pytest.raises(WireFormatError, match="shorter"):
        frame_global_id(b"\x00\x01")


def test_tools_are_shared_through_the_user_cache_and_named_after_what_they_were_built_from(tmp_path):
    settings = Settings.load({"XDG_CACHE_HOME": str(tmp_path / "cache"), "SANDBOX_STATE_DIR": str(tmp_path / "s")})
    assert settings.tools_dir == tmp_path / "cache" / "cdc-sandbox" / "tools"
    assert jvm.artifacts_dir(settings).name == f"jvm-{jvm.pom_fingerprint()[:12]}"
    assert install.localstack_venv(settings).name == f"localstack-{install.localstack_fingerprint()[:12]}"
    chosen = Settings.load({"SANDBOX_TOOLS_DIR": str(tmp_path / "mine"), "SANDBOX_STATE_DIR": str(tmp_path / "s")})
    assert jvm.artifacts_dir(chosen).parent == tmp_path / "mine"
