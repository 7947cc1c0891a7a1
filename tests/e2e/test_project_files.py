"""Project files beside the session's stack, each in a directory of its own: what a bad one gets from `sandbox up`
and `sandbox load` (an error naming the file, the line or table, and what to do; nothing already there lost), and
what the oracle makes of a connector's settings that change how values are carried."""

from __future__ import annotations

import datetime as dt
import os
import random
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdc_sandbox.config import Settings
from cdc_sandbox.harness.running.lakes_for_tests import finish, pipeline_on_new_lake
from cdc_sandbox.harness.checking.oracle import Oracle, RunStats
from cdc_sandbox.sources.changes import ChangeReader, end_offsets
from cdc_sandbox.sources.mutations import Mutator
from cdc_sandbox.stack import catalog
from cdc_sandbox.stack.connectors import ConnectClient
from cdc_sandbox.stack.databases import connection
from tests.e2e.conftest import project_settings, stop_connectors

pytestmark = [pytest.mark.e2e]


def project(directory: Path, name: str, ddl: str, tables: str = "", debezium: str = "", engine: str = "postgres",
            files: dict[str, str] | None = None) -> Path:
    """A one-source project `name` (its own database, connector and topics) in `directory`."""
    directory.mkdir(parents=True)
    source = "postgres" if engine == "postgres" else "mysql"
    (directory / "tables.sql").write_text(textwrap.dedent(ddl))
    (directory / "cdc-sandbox.yaml").write_text(textwrap.dedent(f"""\
        topic_prefix: {name}
        lake_bucket: tickit-lake
        sources:
          {source}:
            engine: {engine}
            database: {name}
            connector: {name}-{source}
            ddl: tables.sql
        """) + textwrap.indent(textwrap.dedent(debezium), "    ") + textwrap.dedent(tables))
    for path, text in (files or {}).items():
        (directory / path).write_text(textwrap.dedent(text))
    return directory


@pytest.fixture(autouse=True)
def connectors_stopped_afterwards(sandbox, tmp_path):
    yield
    if (tmp_path / "p" / "cdc-sandbox.yaml").exists():
        stop_connectors(sandbox, tmp_path / "p")


def run(sandbox: Settings, directory: Path, *command: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SANDBOX_PROJECT"} | {"SANDBOX_STATE_DIR": str(sandbox.state_dir)}
    return subprocess.run([sys.executable, "-m", "cdc_sandbox", *command], cwd=directory, env=env, capture_output=True,
                          text=True, timeout=300)


def failed_with(done: subprocess.CompletedProcess, *parts: str) -> str:
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0, said
    assert "Traceback" not in said, said
    for part in parts:
        assert part in said, f"{part!r} not in: {said}"
    return said


def test_a_ddl_file_that_does_not_create_names_its_line_and_keeps_nothing_of_itself(sandbox, tmp_path):
    directory = project(tmp_path / "p", "bad_ddl_pg", """\
        CREATE TABLE fine (id integer PRIMARY KEY);

        CREATE TABLE broken (
            id integer PRIMARY KEY,
            price nosuchtype
        );
        """)
    failed_with(run(sandbox, directory, "up", "--skip-install"), "tables.sql, line 3", "nosuchtype", "nothing of this file was kept")
    assert catalog.read_catalog(project_settings(sandbox, directory), "postgres",
                                list(project_settings(sandbox, directory).topology.tables)) == {}


def test_a_mariadb_ddl_file_that_fails_half_way_drops_what_it_created(sandbox, tmp_path):
    directory = project(tmp_path / "m", "bad_ddl_maria", """\
        CREATE TABLE fine (id int PRIMARY KEY);
        CREATE TABLE broken (id int PRIMARY KEY, price decimal(70,2));
        """, engine="mariadb")
    failed_with(run(sandbox, directory, "up", "--skip-install"), "tables.sql, line 2", "nothing of this file was kept")
    settings = project_settings(sandbox, directory)
    assert catalog.read_catalog(settings, "mysql", list(settings.topology.tables)) == {}


def test_a_table_without_a_primary_key_is_refused(sandbox, tmp_path):
    directory = project(tmp_path / "p", "no_key_pg", "CREATE TABLE events (id integer, body text);\n")
    failed_with(run(sandbox, directory, "up", "--skip-install"), "tables.sql", "events has no primary key",
                "PRIMARY KEY")


def test_a_partition_field_that_is_no_column_names_the_table(sandbox, tmp_path):
    directory = project(tmp_path / "p", "bad_partition_pg", "CREATE TABLE orders (id integer PRIMARY KEY, day date);\n",
                        tables="tables:\n  orders: {partition_by: [region]}\n")
    failed_with(run(sandbox, directory, "up", "--skip-install"), "cdc-sandbox.yaml", "table orders", "region",
                "columns: id, day")


def test_a_debezium_setting_the_connector_rejects_is_named(sandbox, tmp_path):
    directory = project(tmp_path / "p", "bad_setting_pg", "CREATE TABLE orders (id integer PRIMARY KEY);\n",
                        debezium="debezium:\n  decimal.handling.mode: exact\n")
    said = failed_with(run(sandbox, directory, "up", "--skip-install"), "rejected connector bad_setting_pg-postgres",
                       "decimal.handling.mode", "debezium:")
    assert "bad_setting_pg-postgres" not in ConnectClient(sandbox.url("connect")).connectors(), said


def test_a_data_file_row_that_does_not_fit_names_the_file_and_keeps_the_tables_loaded_before(sandbox, tmp_path):
    directory = project(tmp_path / "p", "bad_data_pg", """\
        CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL);
        CREATE TABLE orders (id integer PRIMARY KEY, placed date NOT NULL);
        """, tables="tables:\n  customers: {data: {generate: 5}}\n  orders: {data: {file: orders.csv}}\n",
                        files={"orders.csv": "id,placed\n1,2026-01-01\n2,not a date\n"})
    assert run(sandbox, directory, "up", "--skip-install").returncode == 0  # its connector stays, as a project's does
    failed_with(run(sandbox, directory, "load"), "orders.csv", "line 3", "orders refused the file",
                "tables loaded before keep their rows")
    settings = project_settings(sandbox, directory)
    with connection(settings, "postgres", "bad_data_pg") as conn, conn.cursor() as cur:
        cur.execute("SELECT (SELECT COUNT(*) FROM customers), (SELECT COUNT(*) FROM orders)")
        assert cur.fetchone() == (5, 0)


def test_parquet_files_load_whole_and_a_row_that_does_not_fit_is_named_by_its_number(sandbox, tmp_path):
    directory = project(tmp_path / "p", "parquet_db", """\
        CREATE TABLE readings (id bigint PRIMARY KEY, taken datetime(6) NOT NULL, value decimal(12,4), note json);
        CREATE TABLE labels (id int PRIMARY KEY, label varchar(8) NOT NULL);
        """, engine="mariadb", tables="tables:\n  readings: {data: {file: readings.parquet}}\n"
                                      "  labels: {data: {file: labels.parquet}}\n")
    taken = dt.datetime(2026, 3, 29, 1, 30, 0, 123456)
    pq.write_table(pa.table({"id": list(range(1, 1001)), "taken": [taken] * 1000,
                             "value": [Decimal("-12345678.9012")] * 1000, "note": ['{"a": [1, 2]}'] * 1000}),
                   directory / "readings.parquet")
    pq.write_table(pa.table({"id": [1, 2, 3], "label": ["a", "b", "far too long"]}), directory / "labels.parquet")
    assert run(sandbox, directory, "up", "--skip-install").returncode == 0
    settings = project_settings(sandbox, directory)
    with connection(settings, "mysql", "parquet_db") as conn, conn.cursor() as cur:
        cur.execute("DELETE FROM labels")  # on a stack an earlier run of this test used
    failed_with(run(sandbox, directory, "load"), "labels.parquet, row 3", "labels refused it", "nothing of the file")
    with connection(settings, "mysql", "parquet_db") as conn, conn.cursor() as cur:
        cur.execute("SELECT (SELECT COUNT(*) FROM labels), (SELECT COUNT(*) FROM readings), "
                    "(SELECT MAX(taken) FROM readings), (SELECT MIN(value) FROM readings)")
        assert cur.fetchone() == (0, 1000, taken, Decimal("-12345678.9012"))


@pytest.mark.slow
def test_the_oracle_expects_what_the_connector_settings_make_of_decimals_binaries_and_times(sandbox, spark, request,
                                                                                           registry, tmp_path):
    """Decimals as text, binaries as base64 and times in milliseconds: silver holds them so, and the oracle compares
    them with the source's values under those settings. No snapshot, and each delete followed by a tombstone: the
    job skips the tombstones and the deleted row stays soft-deleted with its last values."""
    directory = project(tmp_path / "p", "modes_pg", """\
        CREATE TABLE readings (
            id      integer PRIMARY KEY,
            value   numeric(12,4),
            raw     bytea,
            taken   timestamp(6)
        );
        """, debezium="""\
        debezium:
          decimal.handling.mode: string
          binary.handling.mode: base64
          time.precision.mode: connect
          snapshot.mode: no_data
          tombstones.on.delete: true
          transforms.unwrap.delete.tombstone.handling.mode: rewrite-with-tombstone
        """, tables="tables:\n  readings: {data: {generate: 20, seed: 3}}\n")
    for command in (["up", "--skip-install"], ["load"]):
        done = run(sandbox, directory, *command)
        assert done.returncode == 0, done.stdout + done.stderr
    settings = project_settings(sandbox, directory)
    assert [c.carried for c in catalog.table_schema(settings, "readings").columns] == ["", "string", "base64",
                                                                                      "millis"]
    pipeline = pipeline_on_new_lake(settings, spark, None)
    try:
        pipeline.run_once()
        mutator = Mutator(settings)
        oracle = Oracle(settings, pipeline, mutator, timeout=request.config.getoption("--oracle-timeout"),
                        stats=RunStats())
        oracle.track(["readings"])
        mutator.update("readings", {"id": 1}, {"value": Decimal("-12345678.9012"), "raw": b"\x00\x01\xfe\xff"})
        kafka = settings.endpoint("kafka").address
        topic = settings.topology.topic(settings.topology.table("readings").namespace, "readings")
        before = end_offsets(kafka, [topic])[topic]  # a run before this one on the stack deleted rows too
        gone = mutator.sample_row("readings", random.Random(2))["id"]
        mutator.delete("readings", {"id": gone})
        oracle.round("values at their edges, and a delete")
        oracle.verify_history()
        with ChangeReader(kafka, topic, registry, from_offsets=before) as reader:
            tombstones = [e for e in reader.read_to_end(60) if e.value is None]
        assert [e.key for e in tombstones] == [{"id": gone}], "the delete was not followed by its tombstone"
    finally:
        finish([pipeline], failed=False)
