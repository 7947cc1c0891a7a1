"""SQL Server: the CDC set-up script and the connector generated from the topology, the DSN (its LSN positions:
test_positions.py)."""

from __future__ import annotations

import re

import pytest

from cdc_sandbox.config import TOPOLOGY_FILE, Settings, load_topology, parse_dsn
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.running import sandbox_job
from cdc_sandbox.stack.connectors import connector_config
from cdc_sandbox.stack.services.sqlserver_cdc import (
    INIT_SCRIPT_FILE,
    init_script,
    split_batches,
    substitute_variables,
)
from cdc_sandbox.tickit_data import get_table

DSN = "mssql://cdc%40admin:p%40ss%3Aword-1A@sql.example:14330/tickit"


def test_the_committed_script_is_the_generated_one():
    assert INIT_SCRIPT_FILE.read_text() == init_script(), "regenerate it: cdc_sandbox.stack.services.sqlserver_cdc.init_script()"


def batches() -> list[str]:
    return split_batches(init_script())


def index_of(text: str) -> int:
    return next(i for i, batch in enumerate(batches()) if text in batch)


def test_the_script_creates_everything_in_order():
    order = ["CREATE DATABASE [tickit]", "ADD FILEGROUP [cdc]", "USE [tickit]", "CREATE SCHEMA [crm]",
             "CREATE TABLE [crm].[user]", "EXEC sys.sp_cdc_enable_db", "EXEC sys.sp_cdc_enable_table",
             "CREATE LOGIN [$(CAPTURE_USER)]", "ALTER ROLE [cdc_reader] ADD MEMBER", "GRANT SELECT ON SCHEMA::[cdc]"]
    positions = [index_of(text) for text in order]
    assert positions == sorted(positions)


def test_change_tables_go_to_their_own_filegroup():
    enable = batches()[index_of("sp_cdc_enable_table")]
    assert "@source_schema = N'crm'" in enable and "@source_name = N'user'" in enable
    assert "@filegroup_name = N'cdc'" in enable and "@role_name = N'cdc_reader'" in enable
    filegroup = batches()[index_of("ADD FILEGROUP")]
    assert "TO FILEGROUP [cdc]" in filegroup and "InstanceDefaultDataPath" in filegroup


def test_the_user_table_has_the_tickit_columns_in_order():
    create = batches()[index_of("CREATE TABLE [crm].[user]")]
    columns = re.findall(r"^\s+\[(\w+)\] ", create, flags=re.M)
    assert columns == list(get_table("user").column_names)
    assert "PRIMARY KEY ([userid])" in create and "[likesports] bit" in create and "[firstname] nvarchar(30)" in create


def test_user_is_always_bracketed():
    script = init_script()
    without_literals = re.sub(r"N'(?:[^']|'')*'", "", script)
    without_identifiers = re.sub(r"\[[^\]]*\]", "", without_literals)
    assert not re.search(r"\buser\b", without_identifiers), "an unquoted `user` (a reserved word) in the script"
    assert "OBJECT_ID(N'[crm].[user]', N'U')" in script


def test_the_script_is_idempotent_by_construction():
    for batch in batches():
        first = batch.split()[0].upper()
        assert first in ("IF", "USE", "GRANT", "ALTER"), batch
        if first == "ALTER":
            assert batch.startswith("ALTER ROLE"), batch  # adding an existing member is a no-op


def test_the_script_follows_the_topology(tmp_path):
    topology_file = tmp_path / "topology.yaml"
    text = TOPOLOGY_FILE.read_text().replace("      crm: [user]\n", "      crm: [user]\n      ops: [category]\n") \
        .replace("ems: [category, event, venue]", "ems: [event, venue]")  # a table lives in one place
    topology_file.write_text(text)
    script = init_script(load_topology(topology_file))
    assert "CREATE SCHEMA [ops]" in script and "CREATE TABLE [ops].[category]" in script
    assert "@source_schema = N'ops', @source_name = N'category'" in script
    assert "GRANT SELECT ON SCHEMA::[ops]" in script


def test_sqlcmd_variables_are_substituted_and_unknown_ones_refused():
    assert substitute_variables("CREATE LOGIN [$(CAPTURE_USER)]", {"CAPTURE_USER": "dbz"}) == "CREATE LOGIN [dbz]"
    with pytest.raises(SandboxError, match=r"\$\(NOPE\)"):
        substitute_variables("SELECT '$(NOPE)'", {})


def test_batches_split_on_go_lines_only():
    assert split_batches("-- c\nSELECT 1\nGO\nSELECT 'GO'\n go \n") == ["SELECT 1", "SELECT 'GO'"]


def test_a_dsn_gives_host_port_and_percent_decoded_login():
    dsn = parse_dsn(DSN)
    assert (dsn.host, dsn.port, dsn.user, dsn.password, dsn.database) == \
        ("sql.example", 14330, "cdc@admin", "p@ss:word-1A", "tickit")
    assert parse_dsn("sqlserver://sa:x@db").port == 1433


@pytest.mark.parametrize("bad", ["postgres://a:b@h/tickit", "mssql://h:1433/tickit", "mssql://a:b@:1433/x",
                                 "mssql://a:b@h:port/x"])
def test_a_bad_dsn_says_how_to_write_one(bad):
    with pytest.raises(SandboxError, match="SANDBOX_MSSQL_DSN") as error:
        parse_dsn(bad)
    assert "mssql://user:password@host:1433/tickit" in error.value.hint


@pytest.fixture
def dsn_settings(tmp_path) -> Settings:
    return Settings.load({"SANDBOX_STATE_DIR": str(tmp_path / "state"), "SANDBOX_MSSQL_DSN": DSN})


def test_with_a_dsn_user_stays_on_sql_server(dsn_settings):
    user = dsn_settings.topology.table("user")
    assert (user.source, user.stand_in) == ("mssql", False)
    assert dsn_settings.topology.sources["postgres"].namespaces == ["ems"]
    endpoint = dsn_settings.endpoint("mssql")
    assert endpoint.external and endpoint.address == "sql.example:14330"


def test_the_sql_server_connector_renders_from_the_dsn_without_its_password(dsn_settings):
    config = connector_config(dsn_settings, dsn_settings.topology.sources["mssql"])
    assert config["connector.class"] == "io.debezium.connector.sqlserver.SqlServerConnector"
    assert (config["database.hostname"], config["database.port"], config["database.user"]) == \
        ("sql.example", "14330", "cdc@admin")
    assert config["database.password"] == f"${{file:{dsn_settings.secrets_file}:mssql.debezium.password}}"
    assert "p@ss:word-1A" not in str(config) and "p@ss:word-1A" in dsn_settings.secrets_file.read_text()
    assert config["database.names"] == "tickit" and config["schema.include.list"] == "crm"
    assert set(config["transforms.unwrap.add.fields"].split(",")) >= {"commit_lsn", "change_lsn", "event_serial_no"}


def test_sql_server_topics_are_routed_to_the_topology_names(dsn_settings):
    config = connector_config(dsn_settings, dsn_settings.topology.sources["mssql"])
    assert config["transforms"] == "unwrap,topic"
    # Debezium names SQL Server topics <prefix>.<database>.<schema>.<table>; the topology drops the database.
    java_replacement = re.sub(r"\$(\d)", r"\\\1", config["transforms.topic.replacement"])
    routed = re.sub(f"^{config['transforms.topic.regex']}$", java_replacement, "tickit.tickit.crm.user")
    assert routed == dsn_settings.topology.topic("crm", "user") == "tickit.crm.user"


def test_the_job_orders_sql_server_changes_by_their_lsns(dsn_settings):
    spec = sandbox_job.job_config(dsn_settings).spec("user")
    assert (spec.topic, spec.position) == ("tickit.crm.user", "sqlserver")


def test_the_capture_job_polls_every_second_once_cdc_is_on():
    batches = split_batches(init_script())
    polling = next(i for i, b in enumerate(batches) if "sp_cdc_change_job" in b)
    assert "@pollinginterval = 1" in batches[polling] and "sp_cdc_start_job" in batches[polling]
    assert polling > max(i for i, b in enumerate(batches) if "sp_cdc_enable_table" in b)
