"""Public sample schemas as their projects publish them, unedited (`examples/sample_schemas/`): Sakila's on MariaDB
and Pagila's on Postgres each go up, load generated rows, and pass the oracle over an insert, an update, a key update
and a delete on every table, with time travel."""

from __future__ import annotations

import os
import random
import secrets
import shutil
from pathlib import Path

import pytest
import yaml

from cdc_sandbox.config import Settings
from cdc_sandbox.sources.mutations import Mutator, random_value
from cdc_sandbox.stack.catalog import table_schema
from cdc_sandbox.stack.databases import connection
from tests import PROJECT_ROOT
from tests.e2e.conftest import job_on_a_new_lake, project_settings, sandbox_cli, stop_connectors

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SAMPLES = PROJECT_ROOT / "examples" / "sample_schemas"
TABLES = {
    "sakila": {"actor", "address", "category", "city", "country", "customer", "film", "film_actor", "film_category",
               "film_text", "inventory", "language", "payment", "rental", "staff", "store"},
    "pagila": {"actor", "address", "category", "city", "country", "customer", "film", "film_actor", "film_category",
               "inventory", "language", "payment", "rental", "staff", "store"},
}
# Tables another table's triggers write (the oracle reads them from the source after each round), and that table:
# keyed alike, each key the writer's changes touch changes in the written table too.
WRITTEN_BY_TRIGGERS = {"sakila": {"film_text": "film"}, "pagila": {}}


def _copy(sample: str, tmp_path: Path, run_id: str) -> Path:
    """The example project in a directory of its own, with topics and a connector of this run's own (a database
    dropped and made again leaves its old rows in its topics); Pagila in a database of its own too (Sakila's file
    makes `sakila` itself)."""
    directory = tmp_path / sample
    shutil.copytree(SAMPLES / sample, directory)
    project = yaml.safe_load((directory / "cdc-sandbox.yaml").read_text())
    project["topic_prefix"] = f"{sample}_{run_id}"
    for source in project["sources"].values():
        source["connector"] = f"{source['connector']}-{run_id}"
        if sample == "pagila":
            source["database"] = f"pagila_{run_id}"
    (directory / "cdc-sandbox.yaml").write_text(yaml.safe_dump(project))
    return directory


def _drop(sandbox: Settings, sample: str, database: str) -> None:
    if sample == "sakila":
        with connection(sandbox, "mysql") as conn, conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
        return
    with connection(sandbox, "postgres", "postgres") as conn, conn.cursor() as cur:
        conn.autocommit = True
        cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = %s",
                    (database,))
        cur.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _change_every_way(mutator: Mutator, table: str, rng: random.Random) -> None:
    """An insert, an update of columns that are neither key nor reference, a key update and a delete, each on a
    row of the test's own (a row others reference would take its references along: ON UPDATE CASCADE)."""
    key_of = lambda row: {name: row[name] for name in mutator.placement(table).table.primary_key}  # noqa: E731
    row = mutator.new_row(table, rng)
    mutator.insert(table, row)
    free = mutator.changeable_columns(table)
    if free:
        mutator.update(table, key_of(row), {c.name: random_value(c, rng) for c in rng.sample(free, min(2, len(free)))})
    moved = key_of(mutator.new_row(table, rng))
    mutator.update_key(table, key_of(row), moved)
    gone = mutator.new_row(table, rng)
    mutator.insert(table, gone)
    mutator.delete(table, key_of(gone))


@pytest.mark.parametrize("sample", sorted(TABLES))
def test_a_published_sample_schema_goes_up_loads_and_passes_the_oracle_on_every_table(sandbox, spark, request,
                                                                                       tmp_path, sample):
    run_id = secrets.token_hex(3)
    directory = _copy(sample, tmp_path, run_id)
    database = "sakila" if sample == "sakila" else f"pagila_{run_id}"
    env = {k: v for k, v in os.environ.items() if k != "SANDBOX_PROJECT"} | {"SANDBOX_STATE_DIR": str(sandbox.state_dir)}
    _drop(sandbox, sample, database)
    try:
        for command in (["up", "--skip-install"], ["load"]):
            done = sandbox_cli(directory, env, *command)
            assert done.returncode == 0, done.stdout + done.stderr
        settings = project_settings(sandbox, directory)
        assert {t.name for t in settings.topology.tables} == TABLES[sample]
        assert {name for name in TABLES[sample] if table_schema(settings, name).written_by_triggers} == \
            set(WRITTEN_BY_TRIGGERS[sample])
        followed = sorted(TABLES[sample])
        with job_on_a_new_lake(request, settings, spark) as (_, mutator, oracle):
            oracle.track(followed)
            rng = random.Random(run_id)
            for table in followed:
                _change_every_way(mutator, table, rng)
            oracle.round("an insert, an update, a key update and a delete on every table")
            for table, writer in WRITTEN_BY_TRIGGERS[sample].items():  # the writer's rows live after the round
                writes, written = oracle.recorded[writer][-1], oracle.recorded[table][-1].changed
                live = {key for key in writes.changed if key in writes.state}
                assert live and live <= written, (live, written)
            oracle.verify_history()
    finally:
        stop_connectors(sandbox, directory)
        _drop(sandbox, sample, database)
