"""The metastore's settings file, per backend, and how `sandbox sql` splits what is typed into statements."""

from __future__ import annotations

import stat
import xml.etree.ElementTree as ET

from cdc_sandbox.config import Settings
from cdc_sandbox.harness.checking.catalog_sql import Result, as_json, statements
from cdc_sandbox.stack.backends import compose
from cdc_sandbox.stack.credentials import login
from cdc_sandbox.stack.services.metastore import Metastore, site_properties, write_site


def site(conf_dir) -> dict[str, str]:
    root = ET.parse(conf_dir / "metastore-site.xml").getroot()
    return {prop.findtext("name"): prop.findtext("value") for prop in root}


def test_the_settings_file_is_private_and_holds_the_metastore_login_escaped(tmp_path):
    settings = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "state")})
    properties = site_properties(settings, 9083, "jdbc:postgresql://h:5432/hive_metastore?a=1&b=<2>", "http://s3")
    write_site(tmp_path / "conf", properties)
    assert stat.S_IMODE((tmp_path / "conf" / "metastore-site.xml").stat().st_mode) == 0o600
    read_back = site(tmp_path / "conf")
    assert read_back == properties
    who = login(settings, "postgres", "metastore")
    assert (read_back["javax.jdo.option.ConnectionUserName"], read_back["javax.jdo.option.ConnectionPassword"]) == \
        (who.user, who.password)
    assert who.user != login(settings, "postgres", "admin").user


def test_native_settings_name_the_sandboxs_ports_and_compose_settings_the_containers(tmp_path):
    env = {"SANDBOX_STATE_DIR": str(tmp_path / "native"), "SANDBOX_METASTORE_PORT": "19083",
           "SANDBOX_POSTGRES_PORT": "15432"}
    native = Settings.load(env)
    metastore = Metastore(native)
    jdbc_url = "jdbc:postgresql://127.0.0.1:15432/x"
    write_site(metastore.conf_dir, site_properties(native, metastore.endpoint.port, jdbc_url, native.url("localstack")))
    assert site(metastore.conf_dir)["metastore.thrift.port"] == "19083"

    on_compose = Settings.load({**env, "SANDBOX_STATE_DIR": str(tmp_path / "compose")}, backend="compose")
    compose.write_files(on_compose)
    values = site(compose.metastore_conf_dir(on_compose))
    assert values["metastore.thrift.port"] == "9083"  # inside the container; the host port is published
    assert values["javax.jdo.option.ConnectionURL"] == "jdbc:postgresql://postgres:5432/hive_metastore"
    assert values["fs.s3a.endpoint"] == "http://localstack:4566"
    env_values = compose.env_values(on_compose)
    assert env_values["SANDBOX_METASTORE_PORT"] == "19083"
    assert env_values["POSTGRES_METASTORE_PASSWORD"] == values["javax.jdo.option.ConnectionPassword"]


def test_statements_end_with_a_semicolon_at_the_end_of_a_line():
    typed = ["SELECT 1;\n", "SELECT a,\n", "  b FROM t\n", "WHERE c = ';' ;\n", "\n", ";\n", "SHOW TABLES"]
    assert list(statements(typed)) == ["SELECT 1", "SELECT a,\n  b FROM t\nWHERE c = ';'", "SHOW TABLES"]


def test_a_result_or_an_error_is_one_json_line():
    line = as_json("SELECT d", Result(["d"], [(1,)], truncated=True))
    assert line == '{"statement": "SELECT d", "columns": ["d"], "rows": [[1]], "truncated": true}'
    assert as_json("SELECT x", error="no x") == '{"statement": "SELECT x", "error": "no x"}'
