"""The metastore shared by every process: both jobs (the built-in one and the team's, each as its own spark-submit)
sync their silver tables into the Hive Metastore with Hudi's Hive sync, and `sandbox sql`, a third process, reads
them through it: the snapshot, time travel (`TIMESTAMP AS OF`), and Hudi's table-valued functions for the
timeline and incremental changes, each compared with the source. The team's job runs once (its table equals the
source as of then), the built-in job twice (a change between, for time travel and the incremental read)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cdc_sandbox.config import PACKAGE_DIR
from cdc_sandbox.harness.running import sandbox_job, job_adapters
from cdc_sandbox.harness.running.timeline import S3Timelines
from cdc_sandbox.stack.credentials import login
from cdc_sandbox.stack.databases import connection
from cdc_sandbox.stack.services.metastore import schema_dir, thrift_uri
from tests import PROJECT_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TEAM_JOB = PROJECT_ROOT / "examples" / "team_job" / "sandbox-job-submitted.yaml"
INIT_SCRIPT = PACKAGE_DIR / "compose" / "postgres" / "initdb" / "metastore.sh"
TABLE = "category"
COLUMNS = "catid, catgroup, catname, catdesc"


def test_both_jobs_sync_into_the_metastore_and_sandbox_sql_reads_silver_from_its_own_process(
        sandbox, lake_bucket, settle, s3):
    name = f"test_metastore_{uuid.uuid4().hex[:8]}"  # the test's database, and its lake
    lake = f"s3a://{lake_bucket}/{name}"
    builtin = sandbox_job.job_config(sandbox, lake=lake, only=[TABLE], metastore_uri=thrift_uri(sandbox),
                             catalog_database=name)
    team = sandbox_job.job_config(sandbox, lake=f"{lake}/team", only=[TABLE])
    team_job = job_adapters.load(TEAM_JOB, {"hoodie.datasource.meta.sync.enable": "true",
                                    "hoodie.datasource.hive_sync.metastore.uris": thrift_uri(sandbox),
                                    "hoodie.datasource.hive_sync.database": name})
    try:
        settle([TABLE])
        run_both(sandbox, builtin, team, team_job)
        before = source_rows(sandbox)
        settle([TABLE])  # one row changes
        assert sandbox_job.run(sandbox, builtin, True, lambda line: None) == 0, f"see {sandbox.log_file('job')}"
        after = source_rows(sandbox)
        first, second = [c.instant for c in S3Timelines(s3).read(builtin.silver_path(TABLE))][-2:]

        results = sandbox_sql(sandbox, name, [
            f"SELECT {COLUMNS} FROM {TABLE} WHERE __deleted = 'false'",
            f"SELECT {COLUMNS} FROM team_{TABLE} WHERE __deleted = 'false'",
            f"SELECT {COLUMNS} FROM {TABLE} TIMESTAMP AS OF '{first}' WHERE __deleted = 'false'",
            f"SELECT catid, catname FROM hudi_table_changes('{name}.{TABLE}', 'latest_state', '{second}')",
            f"SELECT action, state FROM hudi_query_timeline('{name}.{TABLE}', 'false')",
            f"DROP DATABASE {name} CASCADE",  # the catalog entries only: the tables are external
        ])
        kept = S3Timelines(s3).read(builtin.silver_path(TABLE))
    finally:
        sandbox_job.delete_lake(sandbox, builtin)

    snapshot, team_snapshot, as_of_first, changes, timeline, dropped = results
    changed = {key for key in after if after[key] != before.get(key)}
    assert len(changed) == 1, "settle changed one row of the source"
    assert rows_by_key(snapshot) == after, "the built-in job's table through the metastore equals the source"
    assert rows_by_key(team_snapshot) == before, "the team job's table through the metastore equals the source"
    assert rows_by_key(as_of_first) == before, "time travel to the first commit shows the source before the change"
    assert {row[0] for row in changes["rows"]} == changed, "the incremental read holds the changed row only"
    assert timeline["rows"][-2:] == [["commit", "COMPLETED"]] * 2
    assert "error" not in dropped, dropped
    assert [c.instant for c in kept][-2:] == [first, second], "dropping the catalog entries left the lake whole"


def run_both(settings, builtin, team, team_job) -> None:
    """The two jobs side by side, each a spark-submit of its own that processes what Kafka holds and exits."""
    with ThreadPoolExecutor(2) as pool:
        built = pool.submit(sandbox_job.run, settings, builtin, True, lambda line: None)
        pool.submit(team_job.start, None, team, True).result()  # raises with the job's output if it failed
        assert built.result() == 0, f"the built-in job failed: see {settings.log_file('job')}"


def source_rows(settings) -> dict[int, tuple]:
    namespace = settings.topology.table(TABLE).namespace
    with connection(settings, "postgres") as conn, conn.cursor() as cur:
        cur.execute(f"SELECT {COLUMNS} FROM {namespace}.{TABLE}")
        return {row[0]: tuple(row) for row in cur.fetchall()}


def rows_by_key(result: dict) -> dict[int, tuple]:
    assert "error" not in result, result
    assert not result["truncated"]
    return {row[0]: tuple(row) for row in result["rows"]}


def sandbox_sql(settings, database: str, statements: list[str]) -> list[dict]:
    """`sandbox sql --json` as its own process, the statements on its standard input as a shell's."""
    command = [str(Path(sys.executable).parent / "sandbox"), "sql", "--database", database, "--json",
               "--limit", "100000"]
    done = subprocess.run(command, input="".join(f"{text};\n" for text in statements), capture_output=True,
                          text=True, env={**settings.env, "SANDBOX_STATE_DIR": str(settings.state_dir)}, timeout=300)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(statements), f"sandbox sql exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return results


def test_the_compose_init_script_makes_the_metastore_login_database_and_schema(sandbox):
    """Postgres's init script on compose (`cdc_sandbox/compose/postgres/initdb/metastore.sh`), run as the image would run it, on
    the sandbox's own Postgres: a login and database of the test's, with the schema the server checks."""
    suffix = uuid.uuid4().hex[:8]
    user, database = f"hive_{suffix}", f"metastore_{suffix}"
    admin, postgres = login(sandbox, "postgres", "admin"), sandbox.endpoint("postgres")
    env = {**os.environ, "POSTGRES_USER": admin.user, "PGPASSWORD": admin.password, "PGHOST": postgres.host,
           "PGPORT": str(postgres.port), "METASTORE_DB_USER": user, "METASTORE_DB_PASSWORD": "secret-" + suffix,
           "METASTORE_DB": database, "METASTORE_SCHEMA_DIR": str(schema_dir(sandbox))}
    try:
        done = subprocess.run(["bash", str(INIT_SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        with connection(sandbox, "postgres", database) as conn, conn.cursor() as cur:
            cur.execute('SELECT "SCHEMA_VERSION" FROM "VERSION"')
            assert cur.fetchall() == [("3.1.0",)]
            cur.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner = %s", (user,))
            assert cur.fetchone()[0] >= 70, "every catalog table, owned by the metastore's login"
    finally:
        with connection(sandbox, "postgres", "postgres") as conn:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(f'DROP DATABASE IF EXISTS "{database}"')
                cur.execute(f'DROP ROLE IF EXISTS "{user}"')
