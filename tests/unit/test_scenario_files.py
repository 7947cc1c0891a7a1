"""Scenario files: the shipped ones load, and a malformed one fails with the file, the line and the reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_sandbox.config import PACKAGE_DIR, Settings
from cdc_sandbox.harness.driving import scenario
from cdc_sandbox.sources import signals
from cdc_sandbox.sources.changes import ChangeEvent
from tests import PROJECT_ROOT

pytest_plugins = ["pytester"]

SHIPPED = sorted((PACKAGE_DIR / "fixtures" / "scenarios").glob("*.yaml"))
GOOD = """\
name: ok
tables: [category]
steps:
  - check: start
  - update: {table: category, key: {catid: 1}, set: {catdesc: x}}
  - check: end
"""

OUTAGE = GOOD.replace("  - check: end\n", "  - registry_outage:\n  - check: end\n")
DATES = """\
name: rewound
tables: [date]
steps:
  - check: start
  - update: {table: date, key: {dateid: 1}, set: {holiday: true}}
  - check: middle
  - rewind_connector: {table: date, to: start}
  - check: end
"""


CATALOGUE_SIZE = 28  # the incident scenarios the documentation lists


def test_the_whole_catalogue_ships_and_every_scenario_loads():
    assert len(SHIPPED) >= CATALOGUE_SIZE
    names = [scenario.load(path).name for path in SHIPPED]
    assert len(set(names)) == len(names), "each scenario has a name of its own (its test id)"


def loaded(tmp_path, text: str) -> scenario.Scenario:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return scenario.load(path)


def test_a_valid_scenario_becomes_steps_with_their_lines(tmp_path):
    spec = loaded(tmp_path, GOOD)
    assert [(s.kind, s.line) for s in spec.steps] == [("check", 4), ("update", 5), ("check", 6)]
    assert spec.labels == ["start", "end"]


def test_a_snapshot_holds_its_changes_and_a_given_key_they_insert_is_cleared_first(tmp_path):
    spec = loaded(tmp_path, GOOD.replace("- check: end", "- snapshot_table:\n      table: category\n      while:\n"
                                         "        - insert: {table: category, row: {catid: 77, catgroup: g}}\n"
                                         "  - check: end"))
    step = spec.steps[2]
    assert (step.kind, step.args["table"], [c.kind for c in step.args["while"]]) == ("snapshot_table", "category",
                                                                                     ["insert"])
    assert ("category", {"catid": 77}) in scenario._claimed_keys(spec)


def test_a_connectors_offsets_tell_an_unfinished_incremental_snapshot():
    streaming = [{"partition": {"server": "tickit"}, "offset": {"lsn": 123, "txId": 9}}]
    snapshotting = [{"partition": {"server": "tickit"}, "offset": {"lsn": 130, "incremental_snapshot_collections":
                                                                   "[...]", "incremental_snapshot_primary_key": "x"}}]
    initial = [{"partition": {"server": "tickit"}, "offset": {"lsn": 140, "snapshot": True,
                                                              "last_snapshot_record": False}}]
    assert not signals.snapshot_in_progress(streaming) and not signals.snapshot_in_progress([])
    assert signals.snapshot_in_progress(snapshotting) and signals.snapshot_in_progress(initial)


def test_only_an_incremental_snapshots_completion_notice_counts():
    def notice(**value):
        return ChangeEvent("n", 0, 0, None, value, None)

    assert signals.completed(notice(aggregate_type="Incremental Snapshot", type="COMPLETED", id="x"))
    assert not signals.completed(notice(aggregate_type="Incremental Snapshot", type="IN_PROGRESS"))
    assert not signals.completed(notice(aggregate_type="Initial Snapshot", type="COMPLETED"))
    assert not signals.completed(ChangeEvent("n", 0, 0, None, None, None))


def test_a_rewind_has_its_check_note_where_the_binlog_ends(tmp_path):
    steps = loaded(tmp_path, DATES).steps
    assert [(s.kind, s.line) for s in steps][-2:] == [("rewind_connector", 7), ("check", 8)]
    assert steps[0].args["marks"] == ["date"] and "marks" not in steps[2].args


def test_a_partitioned_table_gets_a_global_index_unless_the_scenario_names_one(tmp_path):
    spec = loaded(tmp_path, GOOD.replace("steps:", "silver: {category: {partition_by: [catgroup]}}\nsteps:"))
    assert spec.silver == {"category": {"partition_by": ["catgroup"], "index": "global_simple"}}
    assert scenario.pipeline_options(spec, spec.job)["table_settings"] == spec.silver


def test_a_registry_outage_runs_the_job_after_a_change(tmp_path):
    assert [(s.kind, s.line) for s in loaded(tmp_path, OUTAGE).steps][-2:] == [("registry_outage", 6), ("check", 7)]


@pytest.mark.parametrize("text, line, reason", [
    (GOOD.replace("update: {table: category, key: {catid: 1}, set:", "update: {table: category, key: {catid: 1}, values:"),
     5, "update takes key, set, table, not 'values'"),
    (GOOD.replace("- check: end", "- wait: 5"), 6, "unknown step 'wait'"),
    (GOOD.replace("catdesc: x", "colour: x"), 5, "category has no column 'colour'"),
    (GOOD.replace("tables: [category]", "tables: [categories]"), 2, "unknown table 'categories'"),
    (GOOD.replace("key: {catid: 1}", "key: {catname: x}"), 5, "a key of category names exactly catid"),
    (GOOD.replace("update: {table: category,", "update: {table: venue,"), 5, "table 'venue' is not in this scenario"),
    (GOOD.replace("  - check: end\n", "  - check: end\n   bad: [\n"), 7, "not valid YAML"),
    (GOOD.replace("name: ok\n", ""), 1, "missing 'name'"),
    (GOOD + "tables: [venue]\n", 7, "duplicate key 'tables'"),
    (GOOD.replace("- check: start", "- transaction: {update: 1}"), 4, "a transaction is a list of changes"),
    (GOOD.replace("- check: start", "- source_clock: yesterday"), 4, "source_clock is a timestamp"),
    (GOOD.replace("  - check: start\n", "  - check: start\n  - registry_outage:\n"), 5,
     "registry_outage runs the job once over the changes since the previous check, but no change since"),
    (OUTAGE.replace("update: {table: category, key: {catid: 1}, set: {catdesc: x}}",
                    "add_column: {table: category, column: note, type: text}"), 6, "but no change since"),
    (OUTAGE.replace("steps:", "job: {continuous: true}\nsteps:"), 7, "but the job runs continuously"),
    (OUTAGE.replace("  - update:", "  - pause:\n  - update:"), 7, "but the job is paused"),
    (OUTAGE.replace("  - check: end\n", "  - pause:\n  - resume:\n  - check: end\n"), 7,
     "a pause after registry_outage needs a run: or check: between them"),
    (GOOD.replace("- check: end", "- grow_topic: {table: category, key: {catid: 1}}"), 6,
     "grow_topic takes set, table, not 'key'"),
    (GOOD.replace("steps:", "given: [{catid: 1}]\nsteps:"), 3, "given is a mapping of table names"),
    (GOOD.replace("- check: end", "- check: {label: end, expect: {category: {deleted: {catid: 1}}}}"), 6,
     "expect.category.deleted is a list of rows"),
    (GOOD.replace("- check: end", "- check: {label: end, expect: {category: {rows: [{catdesc: x}]}}}"), 6,
     "an expected row of category names its key: catid"),
    (GOOD.replace("key: {catid: 1}", "key: {catid: one}"), 5, "category.catid is smallint, not 'one'"),
    (GOOD.replace("key: {catid: 1}", "key: {catid: 40000}"), 5, "category.catid is smallint, not 40000"),
    (GOOD.replace("set: {catdesc: x}", "set: {catdesc: 5}"), 5, "category.catdesc is str, not 5"),
    (GOOD.replace("tables: [category]", "tables: [category]\nsource: oracle"), 3, "unknown source 'oracle'"),
    (GOOD.replace("steps:", "job: {session_zone: Mars/Olympus}\nsteps:"), 3, "session_zone 'Mars/Olympus' is no time"),
    (GOOD.replace("update: {table: category, key: {catid: 1}, set: {catdesc: x}}",
                  "alter_column: {table: category, column: catdesc, type: long_text}"), 5,
     "alter_column changes a column an earlier add_column of category added, not 'catdesc'"),
    (GOOD.replace("update: {table: category, key: {catid: 1}, set: {catdesc: x}}",
                  "add_column: {table: category, column: n, type: int}\n  - alter_column: {table: category, column: n, "
                  "type: huge}"), 6, "unknown column type 'huge'"),
    (GOOD.replace("- check: end", "- redeliver: {table: category}"), 6, "redeliver needs 'key'"),
    (GOOD.replace("- check: end", "- redeliver: {table: category, key: {catname: x}}"), 6,
     "a key of category names exactly catid"),
    (GOOD.replace("tables: [category]", "tables: [category]\nreplica_identity: nothing"), 3,
     "replica_identity is default or full, not 'nothing'"),
    (GOOD.replace("tables: [category]", "tables: [date]\nreplica_identity: default").replace("category", "date")
     .replace("catid", "dateid").replace("catdesc", "day"), 3, "none of this scenario's tables is on Postgres"),
    (GOOD.replace("set: {catdesc: x}", "set: {catdesc: !random_text {length: 0}}"), 5, "!random_text takes"),
    (GOOD.replace("set: {catdesc: x}", "set: {catdesc: !random_text {size: 10}}"), 5, "!random_text takes"),
    (GOOD.replace("key: {catid: 1}", "key: {catid: !random_text {length: 3}}"), 5, "category.catid is smallint"),
    (GOOD.replace("tables: [category]", "tables: [category]\nsource: mssql"), 3,
     "category not on source 'mssql' in cdc_sandbox/fixtures/topology.yaml"),
    (GOOD.replace("- check: end", "- rewind_connector: {table: category, to: start}"), 6,
     "category is on postgres: only a binlog connector (MariaDB, MySQL) can be set back"),
    (GOOD.replace("steps:", "debezium: {snapshot.mode: always}\nsteps:"), 3,
     "debezium sets `snapshot.mode: always`: the oracle compares silver with everything the source holds"),
    (GOOD.replace("steps:", "debezium: {value.converter: json}\nsteps:"), 3,
     "debezium sets `value.converter`, which the sandbox sets itself"),
    (GOOD.replace("steps:", "debezium: [tombstones.on.delete]\nsteps:"), 3, "debezium is a mapping of Debezium"),
    (GOOD.replace("steps:", "silver: {category: {partition_by: [colour]}}\nsteps:"), 3,
     "partition_by is a list of category's columns"),
    (GOOD.replace("steps:", "silver: {category: {partition_by: [catgroup], index: simple}}\nsteps:"), 3,
     "index is one of bucket, global_simple"),
    (GOOD.replace("steps:", "silver: {category: {table_type: MERGE_ON_READ}}\nsteps:"), 3,
     "silver.category takes partition_by, hive_style, index"),
    (DATES.replace("to: start", "to: later"), 7, "rewind_connector: no check labelled 'later' before it"),
    (DATES.replace("to: start", "position: 4"), 7, "rewind_connector takes table (its connector is rewound) and to"),
    (GOOD.replace("- check: end", "- snapshot_table: {table: category}"), 6,
     "snapshot_table takes table (snapshotted incrementally), while"),
    (GOOD.replace("- check: end", "- snapshot_table: {table: category, chunk_rows: 0, while: [{delete: {table: "
                                  "category, key: {catid: 1}}}]}"), 6, "chunk_rows is a number of rows"),
    (GOOD.replace("- check: end", "- snapshot_table: {table: category, while: []}"), 6, "while is a list of changes"),
    (GOOD.replace("- check: end", "- snapshot_table: {table: category, while: [{check: x}]}"), 6,
     "while holds row changes only"),
    (GOOD.replace("tables: [category]", "tables: [category, venue]").replace(
        "- check: end", "- snapshot_table: {table: category, while: [{delete: {table: venue, key: {venueid: 1}}}]}"),
     6, "one of them to category"),
    (GOOD.replace("tables: [category]", "tables: [category, user]").replace(
        "- check: end", "- snapshot_table: {table: user, while: [{delete: {table: user, key: {userid: 1}}}]}"),
     6, "user is on sqlserver: the sandbox signals incremental snapshots on Postgres, MariaDB and MySQL"),
    (DATES.replace("rewind_connector: {table: date, to: start}", "reset_connector: {table: date}"), 7,
     "date is on mariadb: reset_connector resets a Postgres connector"),
    (GOOD.replace("- check: end", "- reset_connector: {table: category, to: start}"), 6,
     "reset_connector takes table"),
])
def test_a_malformed_scenario_names_file_line_and_reason(tmp_path, text, line, reason):
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(scenario.ScenarioError) as error:
        scenario.load(path)
    assert error.value.line == line, error.value.message
    assert reason in error.value.reason
    assert error.value.message.startswith(f"{path}:{line}: ")


def test_random_text_is_the_same_for_a_seed_and_a_scenario_with_default_identity_tells_the_job(tmp_path):
    path = tmp_path / "identity.yaml"
    path.write_text(GOOD.replace("tables: [category]", "tables: [category]\nreplica_identity: default")
                    .replace("set: {catdesc: x}", "set: {catdesc: !random_text {length: 40, seed: 3}}"))
    spec = scenario.load(path)
    written = scenario._values(spec.steps[1].args["set"])["catdesc"]
    assert len(written) == 40 and written.isalnum()
    assert written == scenario.RandomText(40, 3).text() != scenario.RandomText(40, 4).text()
    assert scenario.pipeline_options(spec, {"continuous": True, "table_type": "MERGE_ON_READ"}) == \
        {"table_type": "MERGE_ON_READ", "key_only_deletes": True}
    assert scenario.pipeline_options(scenario.load(SHIPPED[0]), {"continuous": True}) == {}


def test_cli_validate_reports_the_problem_and_fails(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("- check: end", "- wait: 5"))
    result = subprocess.run([sys.executable, "-m", "cdc_sandbox.cli", "scenario", "validate", str(SHIPPED[0]), str(bad)],
                            capture_output=True, text=True, cwd=PROJECT_ROOT, env={**os.environ, "COLUMNS": "400"})
    assert result.returncode == 1
    assert f"ok {SHIPPED[0]}" in result.stdout.replace("\n", " ")
    assert f"{bad}:6: unknown step 'wait'" in result.stderr.replace("\n", "")


def test_a_shipped_scenario_is_found_by_its_name_and_a_wrong_name_lists_them(tmp_path):
    run = [sys.executable, "-m", "cdc_sandbox.cli", "scenario"]
    listed = subprocess.run([*run, "list"], capture_output=True, text=True, cwd=tmp_path, check=True).stdout
    assert [line.split()[0] for line in listed.splitlines()] == [path.stem for path in SHIPPED]
    result = subprocess.run([*run, "validate", "edge-values", "edge-valeus"], capture_output=True, text=True,
                            cwd=tmp_path, env={**os.environ, "COLUMNS": "400"})
    assert result.returncode == 1
    assert "ok edge-values: NULLs, unicode" in result.stdout
    assert "no shipped scenario of that name" in result.stderr and "edge-values" in result.stderr


def test_pytest_collects_scenarios_and_reports_a_malformed_one(pytester):
    scenarios_dir = pytester.mkdir("scenarios")
    (scenarios_dir / "good.yaml").write_text(GOOD)
    (scenarios_dir / "bad.yaml").write_text(GOOD.replace("catdesc: x", "colour: x"))
    pytester.makeini("[pytest]\nsandbox_scenarios = scenarios\n")
    result = pytester.runpytest_subprocess("--collect-only", "-q", "scenarios")
    output = result.stdout.str()
    assert "scenarios/good.yaml::ok" in output
    assert f"{Path(scenarios_dir, 'bad.yaml')}:5: category has no column 'colour'" in output.replace("\n", "")
    assert result.ret != 0


def test_a_scenario_bound_to_a_source_runs_only_where_that_source_holds_its_tables(tmp_path):
    path = tmp_path / "mssql.yaml"
    path.write_text(GOOD.replace("category", "user").replace("catid", "userid").replace("catdesc", "city")
                    .replace("tables: [user]", "tables: [user]\nsource: mssql"))
    spec = scenario.load(path)
    assert spec.source == "mssql"
    with_sql_server = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path), "SANDBOX_BACKEND": "compose"})
    native = Settings.load({"SANDBOX_STATE_DIR": str(tmp_path), "SANDBOX_BACKEND": "native"})
    assert "mssql" in with_sql_server.topology.sources and "mssql" not in native.topology.sources
    assert scenario.unavailable(spec, with_sql_server) is None
    assert "needs the mssql source" in scenario.unavailable(spec, native)
    assert scenario.unavailable(scenario.load(SHIPPED[0]), native) is None, "an unbound scenario runs anywhere"


def test_cli_run_with_a_missing_job_file_says_so_and_runs_nothing(tmp_path):
    result = subprocess.run([sys.executable, "-m", "cdc_sandbox.cli", "scenario", "run", str(SHIPPED[0]), "--job",
                             str(tmp_path / "no-job.yaml")], capture_output=True, text=True, cwd=PROJECT_ROOT,
                            env={**os.environ, "COLUMNS": "400", "SANDBOX_STATE_DIR": str(tmp_path)})
    assert result.returncode == 1
    assert f"no job file {tmp_path / 'no-job.yaml'}" in result.stderr.replace("\n", "")
