"""TICKIT in the sources: exact contents after a load, idempotent reloads, the real file formats, bad lines."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import port_for
import pytest
from confluent_kafka.admin import AdminClient

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.sources import tickit
from cdc_sandbox.stack import catalog, databases
from cdc_sandbox.tickit_data import ORIGINAL_ROW_COUNTS, TABLES, iter_table_rows
from cdc_sandbox.wait import wait_until

pytestmark = pytest.mark.e2e

REAL_FORMAT_FIXTURE = Path(__file__).parent.parent / "unit" / "fixtures" / "tickit_real_format"
SCRATCH = "_scratch"  # schemas/databases no connector captures

POSTGRES_TYPES = {"int": "integer", "smallint": "smallint", "str": ("character", "character varying"),
                  "decimal": "numeric", "date": "date", "timestamp": "timestamp without time zone",
                  "bool": "boolean"}
MYSQL_TYPES = {"int": "int", "smallint": "smallint", "str": ("char", "varchar"), "decimal": "decimal",
               "date": "date", "timestamp": "datetime", "bool": "tinyint"}


def expected_sql_type(dialect, column):
    wanted = (POSTGRES_TYPES if dialect == "postgres" else MYSQL_TYPES)[column.type]
    if column.type == "str":
        return wanted[0] if column.fixed_length else wanted[1]
    return wanted


def column_types(settings, placement) -> dict[str, tuple]:
    with databases.table_connection(settings, placement) as conn:
        with conn.cursor() as cur:
            cur.execute("SELECT column_name, data_type, numeric_precision, numeric_scale, character_maximum_length "
                        "FROM information_schema.columns WHERE table_schema = %s AND table_name = %s",
                        (placement.captured.namespace, placement.table.name))
            return {row[0]: row[1:] for row in cur.fetchall()}


class GeneratedOnce(tickit.GeneratedRows):
    """The generated rows, made once (about 3 s) for both loads and the comparison."""

    def __init__(self, seed: int, scale: float):
        super().__init__(seed, scale)
        self.by_table = {table.name: list(self.generator.iter_rows(table)) for table in TABLES}

    def rows(self, table):
        return iter(self.by_table[table.name])


def test_full_load_holds_every_generated_row_with_its_types_and_loading_again_changes_nothing(sandbox, tickit_loaded):
    generated = GeneratedOnce(seed=0, scale=1.0)
    tickit.load(sandbox, generated)  # undo what other tests mutated
    for placement in catalog.placements(sandbox):
        table = placement.table
        expected = sorted(generated.rows(table), key=lambda row: tuple(row[i] for i in table.primary_key_indexes))
        actual = tickit.typed_rows(sandbox, placement)
        assert len(actual) == ORIGINAL_ROW_COUNTS[table.name]
        assert actual == expected, f"{table.name}: typed rows differ"
        types = column_types(sandbox, placement)
        for column in table.columns:
            data_type, precision, scale, length = types[column.name]
            assert data_type == expected_sql_type(placement.dialect, column), f"{table.name}.{column.name}"
            if column.type == "decimal":
                assert (precision, scale) == (8, 2)
            if column.type == "str":
                assert length == column.max_length

    again = tickit.load(sandbox, generated)
    assert [(r.table, r.outcome, r.rows) for r in again] == [
        (name, "unchanged", count) for name, count in ORIGINAL_ROW_COUNTS.items()
        if name in {r.table for r in again}
    ]
    assert {r.table for r in again} == set(ORIGINAL_ROW_COUNTS)


def test_every_tickit_table_has_its_topic(sandbox, tickit_loaded):
    admin = AdminClient({"bootstrap.servers": sandbox.endpoint("kafka").address, "log_level": 0})
    expected = {
        "tickit.ems.category", "tickit.ems.event", "tickit.ems.venue", "tickit.ecomm.date",
        "tickit.ecomm.listing", "tickit.ecomm.sale", "tickit.crm.user",
    }
    assert set(sandbox.topology.topics()) == expected
    wait_until(lambda: expected <= set(admin.list_topics(timeout=5).topics), 120, "all seven TICKIT topics")


def test_real_file_formats_load_exactly(sandbox):
    results = tickit.load(sandbox, tickit.FileRows(REAL_FORMAT_FIXTURE), namespace_suffix=SCRATCH)
    for placement in catalog.placements(sandbox, SCRATCH):
        table = placement.table
        expected = sorted(iter_table_rows(REAL_FORMAT_FIXTURE, table),
                          key=lambda row: tuple(row[i] for i in table.primary_key_indexes))
        assert tickit.typed_rows(sandbox, placement) == expected, table.name
    assert {r.table: r.rows for r in results} == {
        t.table.name: len(list(iter_table_rows(REAL_FORMAT_FIXTURE, t.table)))
        for t in catalog.placements(sandbox, SCRATCH)
    }


def test_malformed_line_stops_the_load_and_keeps_loaded_tables(sandbox, tmp_path):
    tickit.load(sandbox, tickit.FileRows(REAL_FORMAT_FIXTURE), namespace_suffix=SCRATCH)
    scratch = {p.table.name: p for p in catalog.placements(sandbox, SCRATCH)}
    before = {name: tickit.typed_rows(sandbox, p) for name, p in scratch.items()}

    broken = tmp_path / "tickit"
    shutil.copytree(REAL_FORMAT_FIXTURE, broken)
    category = broken / "category_pipe.txt"
    category.write_bytes(category.read_bytes().replace(b"Major League Baseball", b"Baseball, renamed"))
    listings = broken / "listings_pipe.txt"
    lines = listings.read_bytes().split(b"\r\n")
    fields = lines[1].split(b"|")
    fields[4] = b"four"  # numtickets
    lines[1] = b"|".join(fields)
    listings.write_bytes(b"\r\n".join(lines))

    with pytest.raises(SandboxError) as failure:
        tickit.load(sandbox, tickit.FileRows(broken), namespace_suffix=SCRATCH)
    message = str(failure.value)
    assert "listings_pipe.txt, line 2" in message and "numtickets" in message
    after = {name: tickit.typed_rows(sandbox, p) for name, p in scratch.items()}
    assert after["listing"] == before["listing"], "the failed table keeps its previous contents"
    assert after["sale"] == before["sale"], "tables after the failure are untouched"
    assert any(row[3] == "Baseball, renamed" for row in after["category"]), "tables loaded before it stay loaded"


def test_download_offline_says_so_and_suggests_the_generator(sandbox):
    closed_port = port_for.select_random()
    env = {**sandbox.env, "SANDBOX_TICKIT_URL": f"http://127.0.0.1:{closed_port}/tickitdb.zip"}
    result = subprocess.run([sys.executable, "-m", "cdc_sandbox", "load", "--download"], env=env,
                            capture_output=True, text=True, timeout=120)
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 1
    assert "offline" in output and "sandbox load" in output and "--from DIR" in output
