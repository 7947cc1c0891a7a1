"""The topology places the seven TICKIT tables; the DDL quotes reserved names on every engine."""

from __future__ import annotations

import pytest

from cdc_sandbox.config import TOPOLOGY_FILE, load_topology
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.sources.mutations import _add_column_sql
from cdc_sandbox.stack.catalog import Placement
from cdc_sandbox.tickit_data import TABLES, get_table
from cdc_sandbox.tickit_data.ddl import create_table, dialect_of, qualified


def test_all_sources_present_place_user_in_sql_server():
    topology = load_topology()
    assert topology.table("user").source == "mssql" and not topology.table("user").stand_in
    assert topology.topic("crm", "user") == "tickit.crm.user"


def test_without_sql_server_user_lives_in_postgres_crm_as_declared_stand_in():
    topology = load_topology(available={"postgres", "mysql"})
    user = topology.table("user")
    assert (user.source, user.namespace, user.stand_in) == ("postgres", "crm", True)
    assert topology.sources["postgres"].namespaces == ["ems", "crm"]
    assert topology.sources["postgres"].stand_in_for == ("mssql",)
    assert "mssql" not in topology.sources
    assert sorted(topology.topics()) == sorted([
        "tickit.ems.category", "tickit.ems.event", "tickit.ems.venue", "tickit.crm.user",
        "tickit.ecomm.date", "tickit.ecomm.listing", "tickit.ecomm.sale",
    ])


def test_topology_places_each_tickit_table_once_on_its_engine():
    topology = load_topology()
    placed = {t.name: (topology.sources[t.source].engine, topology.sources[t.source].database, t.namespace)
              for t in topology.tables}
    assert len(topology.tables) == len(placed) == len(TABLES)
    assert placed == {
        "category": ("postgres", "tickit", "ems"), "event": ("postgres", "tickit", "ems"),
        "venue": ("postgres", "tickit", "ems"), "date": ("mariadb", "ecomm", "ecomm"),
        "listing": ("mariadb", "ecomm", "ecomm"), "sale": ("mariadb", "ecomm", "ecomm"),
        "user": ("sqlserver", "tickit", "crm"),
    }


@pytest.mark.parametrize(("dialect", "expected"), [
    ("postgres", '"crm"."user"'), ("mysql", "`crm`.`user`"), ("sqlserver", "[crm].[user]"),
])
def test_reserved_names_are_quoted(dialect, expected):
    assert qualified(dialect, "crm", "user") == expected
    ddl = create_table(dialect, "crm", "user")
    assert expected in ddl
    assert qualified(dialect, "ecomm", "date") in create_table(dialect, "ecomm", "date")


def test_types_follow_the_original_ddl():
    sale = create_table("postgres", "ecomm", "sale")
    assert '"pricepaid" decimal(8,2)' in sale and '"saletime" timestamp' in sale
    assert '"salesid" integer NOT NULL' in sale and 'PRIMARY KEY ("salesid")' in sale
    user = create_table("mysql", "crm", "user")
    assert "`likesports` boolean" in user and "`username` char(8)" in user
    assert "[likesports] bit" in create_table("sqlserver", "crm", "user")
    assert "[caldate] date NOT NULL" in create_table("sqlserver", "ecomm", "date")


def test_engine_names_map_to_dialects():
    assert dialect_of("mariadb") == "mysql" and dialect_of("sqlserver") == "sqlserver"


@pytest.mark.parametrize("present", [False, True])
def test_adding_a_column_on_mysql_uses_no_syntax_mysql_8_lacks(present):
    """MariaDB has ADD COLUMN IF NOT EXISTS; MySQL 8.0 (the compose backend) does not."""
    placement = Placement(get_table("sale"), load_topology().table("sale"), "mysql")
    expected = "DO 0" if present else "ALTER TABLE `ecomm`.`sale` ADD COLUMN `note` varchar(100) NULL"
    assert _add_column_sql(placement, "note", "varchar(100)", present=present) == expected


def test_adding_a_column_on_sql_server_gives_the_table_a_new_capture_instance_in_the_same_batch():
    """CDC keeps capturing an instance's columns: the new column needs a new instance (Debezium's online schema
    update), and the older of two instances is retired first (a table holds at most two)."""
    placement = Placement(get_table("user"), load_topology().table("user"), "sqlserver")
    sql = _add_column_sql(placement, "note", "varchar(100)")
    assert sql.startswith("IF COL_LENGTH(N'[crm].[user]', N'note') IS NULL\nBEGIN\nALTER TABLE [crm].[user] ADD [note]")
    assert "OBJECT_ID(N'[crm].[user]')" in sql
    assert sql.endswith("END")
    retire, enable = sql.index("sys.sp_cdc_disable_table"), sql.index("sys.sp_cdc_enable_table")
    assert sql.index("ALTER TABLE") < retire < enable
    assert "@capture_instance = @retired" in sql and "@capture_instance = @instance" in sql
    assert "N'crm_user_' + FORMAT(SYSUTCDATETIME()" in sql
    assert "@role_name = N'cdc_reader', @filegroup_name = N'cdc'" in sql, "gated and placed as the first instance"


@pytest.mark.parametrize(("edit", "says"), [
    (lambda text: text.replace("ems: [category, event, venue]", "ems: [category, event, venue, sale]"),
     "sale is placed 2 times"),
    (lambda text: text.replace("ems: [category, event, venue]", "ems: [category, event, venue, tickets]"),
     "tickets is no TICKIT table"),
    (lambda text: text.replace("crm: [user]", "crm: []"), "user is placed 0 times"),
    (lambda text: text.replace("engine: sqlserver", "engine: mssql"), "engine 'mssql'"),
])
def test_the_topology_is_the_one_place_a_table_lives_and_says_what_is_wrong(tmp_path, edit, says):
    path = tmp_path / "topology.yaml"
    path.write_text(edit(TOPOLOGY_FILE.read_text()))
    with pytest.raises(SandboxError, match=says):
        load_topology(path)
