"""A team's project file read without any service: its sources, the tables its DDL creates, its silver settings;
the SQL type mapping, the statement splitter, and what connector settings make of values."""

from __future__ import annotations

import datetime as dt
import ipaddress
import random
import re
import shutil
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from xml.etree import ElementTree

import pyarrow as pa
import pytest

from cdc_sandbox import config, debezium_settings
from cdc_sandbox.config import CapturedTable, Settings, load_topology, project_file
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.checking.silver import arrow_type
from cdc_sandbox.schema import BIGINT, BOOL, BYTES, DECIMAL, DOUBLE, FLOAT, INT, JSON, NUMBER, SMALLINT, STR, TIMESTAMP
from cdc_sandbox.schema import INTERVAL, TIME, TIMESTAMPTZ, TIMETZ, UUID, Column
from cdc_sandbox.schema import Table
from cdc_sandbox.sources.mutations import parameters, random_value, same_key
from cdc_sandbox.sources.normalize import normalize_row
from cdc_sandbox.spark_jobs.cdc_hudi_job import hudi_options
from cdc_sandbox.spark_jobs.job_config import JobConfig, TableSpec
from cdc_sandbox.stack import ddl_client
from cdc_sandbox.stack.catalog import Placement, Uncomparable, as_carried, logical_column
from cdc_sandbox.stack.connectors import connector_config, server_id
from cdc_sandbox.sql_text import statements
from tests import PROJECT_ROOT

EXAMPLE = PROJECT_ROOT / "examples" / "team_project"


@pytest.fixture
def team(tmp_path):
    directory = tmp_path / "shop"
    shutil.copytree(EXAMPLE, directory)
    return directory


def test_the_project_file_is_found_by_variable_or_in_the_working_directory(team, tmp_path):
    assert project_file({"SANDBOX_PROJECT": str(team)}) == team / "cdc-sandbox.yaml"
    assert project_file({}, cwd=team) == (team / "cdc-sandbox.yaml").resolve()
    assert project_file({}, cwd=tmp_path).name == "topology.yaml"  # TICKIT's, the default


def test_the_tables_come_from_the_ddl_files_with_their_silver_settings(team):
    topology = load_topology(team / "cdc-sandbox.yaml")
    assert not topology.is_tickit
    assert [(t.source, t.namespace, t.name) for t in topology.tables] == [
        ("postgres", "public", "accounts"), ("postgres", "public", "shipments"),
        ("mysql", "shop_ledger", "ledger_entries")]
    shipments = topology.silver_of("shipments")
    assert (shipments.partition_by, shipments.hive_style, shipments.index) == (("ship_date",), True, "global_simple")
    ledger = topology.silver_of("ledger_entries")
    assert (ledger.table_type, ledger.hard_deletes, ledger.partition_by) == ("MERGE_ON_READ", True,
                                                                             ("region", "currency"))
    assert topology.silver_of("accounts").record_key == ()  # the primary key
    assert topology.sources["mysql"].debezium == {"bigint.unsigned.handling.mode": "precise"}
    assert topology.catalog_database == "shop_cdc_hudi"


@pytest.mark.parametrize("setting, message", [
    ("  accounts: {partition_by: day, deletes: sometimes}", "deletes is soft or hard"),
    ("  accounts: {index: bloom}", "index is one of bucket, global_simple"),
    ("  accounts: {table_type: MERGE}", "table_type is one of"),
    ("  accounts: {partitions: [day]}", "unknown settings partitions"),
    ("  accounts: {ordering: opened_at}", "`ordering` is not taken: the oracle holds silver to the source's last"),
    ("  orders: {}", "orders, which no DDL file creates"),
])
def test_a_wrong_silver_setting_names_the_file_and_the_table(team, setting, message):
    """A table name is judged once the files ran (a file's tables are what its catalog then holds)."""
    path = team / "cdc-sandbox.yaml"
    text = path.read_text().split("tables:")[0] + "tables:\n" + setting + "\n"
    path.write_text(text)
    ran = {config.ddl_run_key(source, database): config.DdlRun(config.file_digest(team / "ddl" / file), tables)
           for source, database, file, tables in [
               ("postgres", "shop", "postgres.sql", (("public", "accounts"), ("public", "shipments"))),
               ("mysql", "shop_ledger", "mariadb.sql", (("shop_ledger", "ledger_entries"),))]}
    with pytest.raises(SandboxError) as error:
        load_topology(path, ddl_runs=ran)
    assert str(path) in str(error.value) and message in str(error.value)


def test_a_source_must_be_named_after_its_service_and_have_create_table_statements(team):
    path = team / "cdc-sandbox.yaml"
    path.write_text(path.read_text().replace("  postgres:\n    engine: postgres", "  pg:\n    engine: postgres"))
    with pytest.raises(SandboxError, match="name it postgres"):
        load_topology(path)
    (team / "ddl" / "mariadb.sql").write_text("-- nothing yet\n")
    path.write_text(path.read_text().replace("  pg:\n", "  postgres:\n"))
    with pytest.raises(SandboxError, match="has no CREATE TABLE statement"):
        load_topology(path)


def test_debezium_settings_are_merged_into_the_connector_and_each_binlog_connector_has_its_own_server_id(team):
    settings = Settings.load({"SANDBOX_PROJECT": str(team), "SANDBOX_STATE_DIR": str(team / ".sandbox"),
                              "SANDBOX_BACKEND": "native"})
    postgres = connector_config(settings, settings.topology.sources["postgres"])
    assert postgres["decimal.handling.mode"] == "precise" and postgres["database.dbname"] == "shop"
    assert postgres["topic.prefix"] == "shop" and postgres["slot.name"] == "dbz_shop"
    mariadb = connector_config(settings, settings.topology.sources["mysql"])
    assert mariadb["database.server.id"] == str(server_id("shop-mariadb")) != str(server_id("tickit-mysql"))
    assert mariadb["database.include.list"] == "shop_ledger"


@pytest.mark.parametrize("setting, message", [
    ("snapshot.mode: initial_only", "`snapshot.mode: initial_only`: the oracle compares"),
    ("transforms.unwrap.delete.tombstone.handling.mode: drop", "silver would keep deleted rows live"),
    ("skipped.operations: d", "a skipped operation never reaches silver"),
    ("value.converter: org.apache.kafka.connect.json.JsonConverter", "which the sandbox sets itself"),
    ("database.server.id: 7", "which the sandbox sets itself"),
    ("column.exclude.list: public.accounts.signature", "silver would lack the columns left out"),
    ("message.key.columns: 'public.accounts:owner'", "keys silver by each table's primary key or `record_key`"),
    ("column.mask.with.4.chars: public.accounts.owner", "silver would hold masked values"),
    ("column.truncate.to.10.chars: public.accounts.owner", "silver would hold cut values"),
    ("event.processing.failure.handling.mode: skip", "an event the connector skips never reaches silver"),
])
def test_a_debezium_setting_the_harness_cannot_follow_is_refused_with_why(team, setting, message):
    path = team / "cdc-sandbox.yaml"
    path.write_text(path.read_text().replace("      binary.handling.mode: bytes\n",
                                             f"      binary.handling.mode: bytes\n      {setting}\n"))
    with pytest.raises(SandboxError) as error:
        load_topology(path)
    assert str(path) in str(error.value) and message in str(error.value) and "source postgres" in str(error.value)


def test_debezium_settings_the_harness_follows_are_kept():
    followed = {"snapshot.mode": "no_data", "tombstones.on.delete": "true",
                "transforms.unwrap.delete.tombstone.handling.mode": "rewrite-with-tombstone"}
    debezium_settings.check(Path("p.yaml"), "postgres", followed)


def test_the_statement_splitter_keeps_quoted_semicolons_and_reports_each_statements_line():
    text = ("-- a comment; with a semicolon\nCREATE TABLE a (x text DEFAULT ';');\n/* block;\n comment */\n"
            "CREATE FUNCTION f() RETURNS trigger AS $body$ BEGIN RETURN NULL; END; $body$ LANGUAGE plpgsql;\n"
            "INSERT INTO a VALUES ('it''s; fine')")
    assert statements(text) == [
        (2, "CREATE TABLE a (x text DEFAULT ';')"),
        (5, "CREATE FUNCTION f() RETURNS trigger AS $body$ BEGIN RETURN NULL; END; $body$ LANGUAGE plpgsql"),
        (6, "INSERT INTO a VALUES ('it''s; fine')")]


def test_a_dumps_tables_are_its_create_table_statements_alone(tmp_path):
    """Not a string that reads like one, not a client's command line glued to the next statement, not a partition."""
    ddl = tmp_path / "dump.sql"
    ddl.write_text("\\restrict abc\nCREATE TABLE shop.orders (id int PRIMARY KEY, day date) PARTITION BY RANGE (day);\n"
                   "CREATE TABLE shop.orders_2026 PARTITION OF shop.orders FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');\n"
                   "COMMENT ON TABLE shop.orders IS 'create table phantom (id int);';\nDELIMITER ;;\n"
                   "CREATE TABLE IF NOT EXISTS `films` (id int PRIMARY KEY);;\nCREATE TABLE shop.orders_2027 (id int, day date);\n"
                   "ALTER TABLE ONLY shop.orders ATTACH PARTITION shop.orders_2027 FOR VALUES FROM ('2027-01-01') TO (MAXVALUE);\n")
    assert config.ddl_tables(ddl, {"engine": "postgres"}) == [("shop", "orders"), ("public", "films")]


def test_once_the_file_ran_its_tables_are_what_the_catalog_held_edited_since_or_not(team, tmp_path):
    """The catalog's tables replace the text's; a table left out is no table of the topology, and a `tables:`
    entry may still name it; an edited file (which `sandbox up` does not run over tables that exist) keeps them."""
    ddl = team / "ddl" / "postgres.sql"
    key = config.ddl_run_key("postgres", "shop")
    ran = config.DdlRun(config.file_digest(ddl), (("public", "accounts"), ("billing", "made_by_a_function")),
                        (("public", "shipments", "shipments.place has type point"),))
    config.record_ddl_run(tmp_path, key, ran)
    assert config.read_ddl_runs(tmp_path)[key] == ran
    topology = load_topology(team / "cdc-sandbox.yaml", ddl_runs=config.read_ddl_runs(tmp_path))
    postgres = topology.sources["postgres"]
    assert [(t.namespace, t.name) for t in postgres.tables] == [("public", "accounts"), ("billing", "made_by_a_function")]
    assert postgres.left_out == (("public", "shipments"),)
    assert connector_config(Settings.load({"SANDBOX_PROJECT": str(team), "SANDBOX_STATE_DIR": str(tmp_path)}),
                            postgres)["table.exclude.list"] == r"public\.shipments"
    ddl.write_text(ddl.read_text() + "\n-- edited\n")
    topology = load_topology(team / "cdc-sandbox.yaml", ddl_runs=config.read_ddl_runs(tmp_path))
    assert [t.name for t in topology.sources["postgres"].tables] == ["accounts", "made_by_a_function"]


def test_psql_names_the_line_a_statement_ends_on_and_the_error_names_the_line_it_begins_on():
    text = "\\restrict k\nCREATE TABLE a (x int);\n\nCREATE TABLE b (\n  y nosuchtype\n);\n"
    assert ddl_client.statement_start(text, 6) == 4
    assert ddl_client.statement_start(text, 2) == 2


@pytest.mark.parametrize("dialect, sql_type, logical, options", [
    ("postgres", "numeric(38,10)", DECIMAL, {"precision": 38, "scale": 10}),
    ("postgres", "numeric", NUMBER, {}),
    ("postgres", "timestamp with time zone", TIMESTAMPTZ, {}),
    ("postgres", "timestamp(3) without time zone", TIMESTAMP, {}),
    ("postgres", "jsonb", JSON, {}),
    ("postgres", "uuid", UUID, {}),
    ("postgres", "bytea", BYTES, {}),
    ("postgres", "bigint", BIGINT, {}),
    ("postgres", "character(2)", STR, {"max_length": 2, "fixed_length": True}),
    ("mysql", "bigint(20) unsigned", DECIMAL, {"precision": 20, "scale": 0, "unsigned": True}),
    ("mysql", "int(10) unsigned", BIGINT, {"unsigned": True}),
    ("mysql", "datetime(6)", TIMESTAMP, {}),
    ("mysql", "timestamp(6)", TIMESTAMPTZ, {}),
    ("mysql", "decimal(30,10)", DECIMAL, {"precision": 30, "scale": 10}),
    ("mysql", "tinyint(1)", BOOL, {}),
    ("mysql", "varbinary(32)", BYTES, {}),
    ("mysql", "enum('EUR','it''s')", STR, {"labels": ("EUR", "it's")}),
    ("postgres", "real", FLOAT, {}),
    ("postgres", "double precision", DOUBLE, {}),
    ("mysql", "double", DOUBLE, {}),
    ("mysql", "tinyint(4)", SMALLINT, {"limits": (-128, 127)}),
    ("mysql", "tinyint(3) unsigned", SMALLINT, {"limits": (0, 255)}),
    ("mysql", "smallint(5) unsigned", INT, {"limits": (0, 65535)}),
    ("mysql", "mediumint(8) unsigned", INT, {"limits": (0, 16777215)}),
    ("mysql", "year(4)", INT, {"limits": (1901, 2155)}),
    ("postgres", "time without time zone", TIME, {"carried": ""}),
    ("postgres", "time(3) without time zone", TIME, {"carried": "millis"}),
    ("postgres", "time(6) with time zone", TIMETZ, {}),
    ("postgres", "inet", STR, {"form": "inet"}),
    ("postgres", "macaddr8", STR, {"form": "macaddr8"}),
    ("postgres", "citext", STR, {"form": ""}),
    ("postgres", "xml", STR, {"form": "xml"}),
    ("mysql", "time(3)", TIME, {"carried": ""}),
    ("mysql", "float", FLOAT, {}),
    ("mysql", "float(30)", DOUBLE, {}),
    ("mysql", "bit(1)", BOOL, {}),
    ("postgres", "bit(1)", BOOL, {}),
    ("postgres", "bit(10)", BYTES, {"carried": "bits", "bit_length": 10}),
    ("postgres", "bit varying", BYTES, {"carried": "bits", "bit_length": None}),
    ("mysql", "bit(8)", BYTES, {"carried": "padded bits", "bit_length": 8}),
    ("postgres", "tsrange", STR, {"form": "tsrange"}),
    ("mysql", "set('trailers','deleted scenes')", STR, {"form": "set", "labels": ("trailers", "deleted scenes")}),
])
def test_each_catalog_type_has_one_logical_type(dialect, sql_type, logical, options):
    column = logical_column(dialect, "t", "c", sql_type, True)
    assert column.type == logical and column.sql_type == sql_type
    assert all(getattr(column, name) == value for name, value in options.items())


@pytest.mark.parametrize("dialect, sql_type", [("postgres", "box"), ("postgres", "point"),
                                               ("mysql", "geometry"), ("mysql", "decimal(65,30)")])
def test_a_type_the_sandbox_cannot_compare_exactly_is_named_with_its_table(dialect, sql_type):
    with pytest.raises(Uncomparable, match=r"t\.c has type"):
        logical_column(dialect, "t", "c", sql_type, True)


def test_times_addresses_and_sets_compare_whichever_way_they_arrive():
    """A driver's objects, Debezium's counts and texts, and the journal's texts of one value compare equal."""
    table = Table("t", (Column("at", TIME), Column("at3", TIME, carried="millis"), Column("tz", TIMETZ),
                        Column("ip", STR, form="inet"), Column("net", STR, form="cidr"),
                        Column("extras", STR, form="set", labels=("trailers", "commentaries", "deleted scenes"))), ())
    driver = (dt.time(23, 59, 59, 999999), dt.timedelta(hours=-1, milliseconds=5),
              dt.time(1, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))), ipaddress.ip_address("::ffff:1.2.3.4"),
              ipaddress.ip_network("10.0.0.0/8"), {"deleted scenes", "trailers"})
    silver = (86_399_999_999, -3_599_995, "23:30:00Z", "::ffff:1.2.3.4", "10.0.0.0/8", "trailers,deleted scenes")
    journal = ("23:59:59.999999", "-0:59:59.995000", "01:30:00+02:00", "::ffff:102:304", "10.0.0.0/8",
               "deleted scenes,trailers")
    assert normalize_row(table, driver) == normalize_row(table, silver) == normalize_row(table, journal)
    assert normalize_row(table, driver) != normalize_row(table, (86_399_999_998, *silver[1:]))
    assert [arrow_type(c, "postgres") for c in table.columns[:3]] == [pa.int64(), pa.int32(), pa.string()]


@pytest.mark.parametrize("column", [Column("a", STR, form="inet"), Column("c", STR, form="cidr"),
                                    Column("m", STR, form="macaddr"), Column("x", STR, form="xml"),
                                    Column("t", TIME, carried="millis"), Column("z", TIMETZ)])
def test_generated_values_keep_to_their_forms_grammar(column):
    rng = random.Random(7)
    for value in (random_value(replace(column, nullable=False), rng) for _ in range(200)):
        if column.form in ("inet", "cidr"):
            (ipaddress.ip_interface if "/" in value else ipaddress.ip_address)(value)
        elif column.form == "macaddr":
            assert re.fullmatch(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", value)
        elif column.form == "xml":
            ElementTree.fromstring(value)
        else:
            assert isinstance(value, dt.time) and (column.type == TIME) == (value.tzinfo is None)
            assert column.type != TIME or value.microsecond % 1000 == 0  # time(3): milliseconds


def test_connector_modes_change_what_silver_holds_and_how_values_compare():
    table = Table("t", (Column("id", BIGINT), Column("price", DECIMAL, precision=12, scale=4),
                        Column("raw", BYTES), Column("taken", TIMESTAMP),
                        Column("n", DECIMAL, precision=20, scale=0, unsigned=True, sql_type="bigint unsigned")), ("id",))
    carried = as_carried(table, {"decimal.handling.mode": "string", "binary.handling.mode": "base64",
                                 "time.precision.mode": "connect"})
    assert [c.carried for c in carried.columns] == ["", "string", "base64", "millis", ""]
    assert [arrow_type(c, "postgres") for c in carried.columns] == [
        pa.int64(), pa.string(), pa.string(), pa.timestamp("us", tz="UTC"), pa.decimal128(20, 0)]
    source = (1, Decimal("12.5000"), b"\x00\xff", dt.datetime(2026, 1, 2, 3, 4, 5, 678901), 2**64 - 1)
    silver = (1, "12.5", "AP8=", dt.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc), Decimal(2**64 - 1))
    assert normalize_row(carried, source) == normalize_row(carried, silver)
    assert normalize_row(table, source) != normalize_row(table, silver)


def test_values_of_json_uuid_and_any_scale_compare_as_values():
    table = Table("t", (Column("doc", JSON), Column("id", UUID), Column("n", NUMBER)), ("id",))
    import uuid

    assert normalize_row(table, ({"a": [1, 2]}, uuid.UUID(int=5), Decimal("1.50"))) == \
        normalize_row(table, ('{"a": [1, 2]}', "00000000-0000-0000-0000-000000000005", "1.5"))


def test_generated_values_keep_to_their_types_limits_and_reach_the_edges():
    rng = random.Random(1)
    wide = Column("amount", DECIMAL, nullable=False, precision=38, scale=10)
    unsigned = Column("id", DECIMAL, nullable=False, precision=20, scale=0, unsigned=True, sql_type="bigint unsigned")
    values = [random_value(wide, rng) for _ in range(300)]
    largest = Decimal(f"{10**38 - 1}E-10")  # copy_abs: abs() would round to 28 digits
    assert all(v.copy_abs() <= largest and v.as_tuple().exponent == -10 for v in values)
    assert max(v.copy_abs() for v in values) == largest
    ids = [random_value(unsigned, rng) for _ in range(300)]
    assert min(ids) >= 0 and max(ids) == 2**64 - 1
    enum = Column("currency", STR, nullable=False, labels=("EUR", "USD"))
    assert {random_value(enum, rng) for _ in range(50)} == {"EUR", "USD"}


def test_a_journaled_key_matches_its_events_key_across_the_journals_text_forms():
    assert same_key({"id": Decimal("18446744073709551615")}, {"id": "18446744073709551615"})
    assert same_key({"tenant": "a", "no": 1}, {"no": 1, "tenant": "a"})
    assert same_key({"k": b"\x00\xff"}, {"k": "AP8="})
    assert not same_key({"id": Decimal(2)}, {"id": "3"}) and not same_key(None, {"id": 1})


def test_a_table_spec_round_trips_its_silver_settings_and_they_become_hudi_options():
    spec = TableSpec("shop.public.shipments", "shipments", ("shipment_id",), "lsn", partition_by=("ship_date",),
                     hive_style=True, table_type="MERGE_ON_READ", hard_deletes=True, index="global_simple")
    config = JobConfig("k:9092", "http://r", "s3a://lake", (spec,))
    assert JobConfig.from_dict(config.to_dict()) == config
    options = hudi_options(config, spec, 10, 1)
    assert options["hoodie.datasource.write.partitionpath.field"] == "ship_date"
    assert options["hoodie.datasource.write.keygenerator.class"].endswith("ComplexKeyGenerator")
    assert options["hoodie.datasource.write.hive_style_partitioning"] == "true"
    assert (options["hoodie.index.type"], options["hoodie.simple.index.update.partition.path"]) == \
        ("GLOBAL_SIMPLE", "true")
    assert options["hoodie.datasource.write.table.type"] == "MERGE_ON_READ" and config.hard_deletes_of(spec)
    plain = TableSpec("t", "t", ("a", "b"), "binlog")
    assert hudi_options(config, plain, 10, 1)["hoodie.index.type"] == "BUCKET"
    with pytest.raises(ValueError, match="unknown settings"):
        TableSpec.from_dict({"topic": "t", "table": "t", "key": ["a"], "position": "lsn", "partitions": ["x"]})


def test_a_read_at_some_keys_of_a_composite_key_holds_those_keys_alone():
    from cdc_sandbox.harness.checking.silver import Shape, arrow_rows

    shape = Shape(Table("accounts", (Column("tenant", STR), Column("no", "int"), Column("owner", STR)),
                        ("tenant", "no")))
    batch = pa.record_batch({"tenant": ["a", "a", "b"], "no": [1, 2, 1], "owner": ["x", "y", "z"],
                             "__deleted": ["false"] * 3, "_hoodie_commit_time": ["1"] * 3, "__op": ["c"] * 3})
    assert arrow_rows(shape, [batch], {("a", 1)}) == {("a", 1): ("a", 1, "x")}
    assert len(arrow_rows(shape, [batch])) == 3


def test_a_silver_date_python_cannot_hold_is_reported_as_a_difference_not_a_crash():
    from cdc_sandbox.harness.checking.silver import Shape, arrow_rows
    from cdc_sandbox.schema import DATE

    shape = Shape(Table("shipments", (Column("id", "int"), Column("day", DATE)), ("id",)))
    batch = pa.record_batch({"id": [1], "day": pa.array([-719163 - 1], pa.date32()), "__deleted": ["false"],
                             "_hoodie_commit_time": ["1"], "__op": ["u"]})
    ((key, row),) = arrow_rows(shape, [batch]).items()
    assert key == (1,) and row[1] != dt.date(1, 1, 1) and "outside Python's dates" in repr(row[1])


def test_the_state_lives_beside_the_project_and_tickits_never_in_an_installed_package(tmp_path, monkeypatch):
    team = tmp_path / "team" / "cdc-sandbox.yaml"
    assert config.default_state_dir(team, {}) == team.parent / ".sandbox"
    assert config.default_state_dir(config.TOPOLOGY_FILE, {}) == PROJECT_ROOT / ".sandbox"  # this checkout's
    installed = tmp_path / "venv" / "lib" / "site-packages" / "cdc_sandbox"
    monkeypatch.setattr(config, "PACKAGE_DIR", installed)
    assert config.default_state_dir(config.TOPOLOGY_FILE, {"XDG_STATE_HOME": str(tmp_path / "state")}) == \
        tmp_path / "state" / "cdc-sandbox" / "tickit"


@pytest.mark.parametrize("sql_type", ["tinyint(4)", "tinyint(3) unsigned", "mediumint(8) unsigned", "year(4)"])
def test_generated_integers_keep_to_their_source_types_range(sql_type):
    column = logical_column("mysql", "t", "c", sql_type, False)
    low, high = column.value_range
    drawn = {random_value(column, random.Random(seed)) for seed in range(300)}
    assert all(low <= value <= high for value in drawn) and {low, high} <= drawn


def test_mariadb_reads_a_float_as_the_double_that_holds_it_beside_every_other_column():

    table = Table("t", (Column("id", INT), Column("w", FLOAT), Column("d", DOUBLE)), ("id",))
    maria = Placement(table, CapturedTable("mysql", "db", "t"), "mysql")
    assert maria.select_list() == "*, CAST(`w` AS DOUBLE) AS `w`"  # a row's dictionary keeps the second `w`
    assert maria.select_list(["w", "d"]) == "CAST(`w` AS DOUBLE) AS `w`, `d`"
    assert Placement(table, CapturedTable("postgres", "s", "t"), "postgres").select_list() == "*"


def test_a_bit_string_compares_as_debeziums_little_endian_bytes_whichever_way_it_arrives():
    """Postgres's text and Debezium's bytes (the fewest that hold the number), MariaDB's number read by CAST and its
    event's bytes (ceil(n/8) of them), the journal's number; any binary.handling.mode leaves them bytes."""
    postgres = logical_column("postgres", "t", "b", "bit(10)", True)
    maria = logical_column("mysql", "t", "b", "bit(16)", True)
    pg_table, maria_table = Table("t", (postgres,), ()), Table("t", (maria,), ())
    assert normalize_row(pg_table, ("1000000001",)) == normalize_row(pg_table, (b"\x01\x02",)) == (b"\x01\x02",)
    assert normalize_row(pg_table, ("0000000001",)) == (b"\x01",) and normalize_row(pg_table, (0,)) == (b"",)
    assert normalize_row(maria_table, (1,)) == normalize_row(maria_table, (b"\x01\x00",)) == (b"\x01\x00",)
    assert normalize_row(maria_table, (True,)) == (b"\x01\x00",)  # a driver's one-byte read as a boolean
    assert as_carried(pg_table, {"binary.handling.mode": "base64"}).columns[0].carried == "bits"
    assert arrow_type(postgres, "postgres") == pa.binary()
    placement = Placement(Table("t", (Column("id", INT), maria), ("id",)), CapturedTable("mysql", "db", "t"), "mysql")
    assert placement.select_list(["b"]) == "CAST(`b` AS UNSIGNED) AS `b`"
    pg_placement = Placement(Table("t", (Column("id", INT), postgres), ("id",)), CapturedTable("postgres", "s", "t"),
                             "postgres")
    drawn = [random_value(replace(postgres, nullable=False), random.Random(seed)) for seed in range(30)]
    assert all(0 <= value < 2**10 for value in drawn)
    assert parameters(pg_placement, {"id": 1, "b": 5}) == (1, "0000000101")


def test_a_real_is_compared_as_the_32_bits_that_hold_it():
    column = logical_column("postgres", "t", "c", "real", True)
    assert normalize_row(Table("t", (column,), ("c",)), [1.1]) == (1.100000023841858,)
    drawn = [random_value(column, random.Random(seed)) for seed in range(50)]
    assert all(value is None or normalize_row(Table("t", (column,), ("c",)), [value]) == (value,) for value in drawn)


def test_an_interval_compares_as_debezium_makes_it_of_the_servers_text():
    """Numeric (the default): microseconds with a month of 30.4375 days, in Debezium's floating-point steps; string:
    months, days and the seconds of the driver's double cut to 9 decimals."""
    numeric = Column("span", INTERVAL)
    text = replace(numeric, carried="string")
    assert normalize_row(Table("t", (numeric,), ()), ("1 year 2 mons 3 days 04:05:06.5",)) == (37091106500000,)
    assert normalize_row(Table("t", (numeric,), ()), (37091106500000,)) == (37091106500000,)
    assert normalize_row(Table("t", (numeric,), ()), ("-1 days +02:03:00",)) == (-79020000000,)
    as_text = Table("t", (text,), ())
    assert normalize_row(as_text, ("1 year 2 mons 3 days 04:05:06.5",)) == normalize_row(as_text,
                                                                                          ("P1Y2M3DT4H5M6.5S",))
    assert normalize_row(as_text, ("00:00:13.887759",)) == normalize_row(as_text, ("P0Y0M0DT0H0M13.887758999S",))
    assert normalize_row(as_text, ("-00:00:13.609713",)) == normalize_row(as_text, ("P0Y0M0DT0H0M-13.609713S",))
    assert as_carried(Table("t", (numeric,), ()), {"interval.handling.mode": "string"}).columns[0].carried == "string"
    assert arrow_type(numeric, "postgres") == pa.int64() and arrow_type(text, "postgres") == pa.string()


def test_a_table_with_the_name_of_one_in_another_schema_is_left_out_naming_both():
    from cdc_sandbox.stack.project_ddl import _namesakes

    why = _namesakes([("public", "users"), ("auth", "users"), ("public", "orders"), ("audit", "users")])
    assert set(why) == {("auth", "users"), ("audit", "users")}
    assert why["auth", "users"].startswith("auth.users has the name of public.users")


def test_arrays_of_dates_and_times_compare_as_debezium_counts_their_elements():
    """Inside an array Debezium carries a date as its days, a timestamp as its microseconds, a timestamptz as its
    ISO text and a time cut to whole milliseconds; the driver's objects and the journal's texts compare equal."""
    columns = [logical_column("postgres", "t", name, sql_type, True) for name, sql_type in
               (("d", "date[]"), ("m", "timestamp without time zone[]"), ("i", "timestamp with time zone[]"),
                ("s", "time without time zone[]"))]
    table = Table("t", tuple(columns), ())
    zone = dt.timezone(dt.timedelta(hours=-5))
    driver = ([dt.date(1970, 1, 2), None], [dt.datetime(1969, 12, 31, 23, 59, 59, 999999)],
              [dt.datetime(2008, 3, 9, 2, 0, tzinfo=zone)], [dt.time(0, 0, 1, 2345)])
    silver = ([1, None], [-1], ["2008-03-09T07:00:00Z"], [1_002_000])
    journal = (["1970-01-02", None], ["1969-12-31T23:59:59.999999"], ["2008-03-09T02:00:00-05:00"], ["00:00:01.002345"])
    assert normalize_row(table, driver) == normalize_row(table, silver) == normalize_row(table, journal)
    assert [arrow_type(c, "postgres") for c in columns] == [pa.list_(t) for t in (pa.int32(), pa.int64(), pa.string(),
                                                                                   pa.int64())]
    millis = logical_column("postgres", "t", "c", "timestamp(3) without time zone[]", True)
    assert normalize_row(Table("t", (millis,), ()), ([dt.datetime(1970, 1, 1, 0, 0, 1, 5000)],)) == ((1005,),)
    as_text = logical_column("postgres", "t", "c", "numeric(6,2)[]", True, decimal_mode="string")
    assert as_text.element.carried == "string" and arrow_type(as_text, "postgres") == pa.list_(pa.string())


def test_arrays_of_an_enum_and_of_uuids_and_ranges_are_read_as_text():
    moods = logical_column("postgres", "t", "moods", "mood[]", True, ("calm", 'it\'s "busy"'))
    owners = logical_column("postgres", "t", "owners", "uuid[]", True)
    assert moods.element.labels == ("calm", 'it\'s "busy"') and not moods.element.nullable  # Debezium's is required
    placement = Placement(Table("t", (Column("id", INT), moods, owners), ("id",)), CapturedTable("postgres", "s", "t"),
                          "postgres")
    assert placement.select_list(["moods", "owners"]) == 'CAST("moods" AS text[]) AS "moods", CAST("owners" AS text[]) ' \
        'AS "owners"'
    ranged = Placement(Table("t", (Column("id", INT), logical_column("postgres", "t", "r", "daterange", True)), ("id",)),
                       CapturedTable("postgres", "s", "t"), "postgres")
    assert ranged.select_list() == '*, CAST("r" AS text) AS "r"'  # the driver's would be an object
    instants = Table("t", (logical_column("postgres", "t", "r", "tstzrange", True),), ())
    assert normalize_row(instants, ('["2008-01-01 05:30:00+05:30",)',)) == \
        normalize_row(instants, ('["2008-01-01 00:00:00+00",)',)) == ("[2008-01-01T00:00:00+00:00,)",)
    assert parameters(placement, {"id": 1, "moods": ['it\'s "busy"', "calm"], "owners": [None]}) == \
        (1, '{"it\'s \\"busy\\"","calm"}', "{NULL}")


def test_a_bit_string_in_a_scenario_file_is_its_number_or_its_bits():
    from cdc_sandbox.harness.driving.scenario import fits

    column = logical_column("mysql", "t", "b", "bit(6)", True)
    assert fits(column, 63) and fits(column, "101") and not fits(column, 64) and not fits(column, "12")
    with pytest.raises(Uncomparable):  # Kafka Connect's own date inside an array: not compared yet
        logical_column("postgres", "t", "c", "date[]", True, connect_times=True)
    from cdc_sandbox.stack.project_ddl import _namesakes

    assert set(_namesakes([("public", "users")], {"users": "mysql's shop"})) == {("public", "users")}
