"""The harness's model of truncates and of columns dropped or added with a default: how a truncate event is read,
what the oracle expects after a truncate or a drop, how a default is written and read, and the one-line cause of a
failure."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from cdc_sandbox.harness.driving import scenario
from cdc_sandbox.harness.checking.expected import ExpectedState
from cdc_sandbox.harness.checking.silver import Shape
from cdc_sandbox.harness.checking.verdict import deleted_row_problems
from cdc_sandbox.sources.changes import flattened
from cdc_sandbox.sources.mutations import Change, _default_clause
from cdc_sandbox.spark_jobs.avro_schema import column_defaults, is_envelope
from cdc_sandbox.spark_jobs.failures import cause_line
from cdc_sandbox.tickit_data.ddl import MYSQL, POSTGRES, SQLSERVER
from cdc_sandbox.tickit_data.schema import get_table

CATEGORY = Shape(get_table("category"))


def test_a_truncate_envelope_reads_as_its_operation_and_source_position():
    value = {"before": None, "after": None, "op": "t", "ts_ms": 5,
             "source": {"lsn": 42, "ts_ms": 4, "db": "tickit", "table": "category"}}
    assert flattened(value) == {"__op": "t", "__lsn": 42, "__ts_ms": 4, "__db": "tickit", "__table": "category"}
    row = {"catid": 1, "__op": "u", "__lsn": 41}
    assert flattened(row) is row


def test_a_truncate_event_is_its_journal_entry_by_position_alone():
    change = Change(seq=1, kind="truncate", table="category", topic="t", key={}, debezium_ops=["t"],
                    position={"lsn_from": 40, "lsn_to": 50})
    assert change.produced_by({"__op": "t", "__lsn": 45}, None, "t")
    assert not change.produced_by({"__op": "t", "__lsn": 51}, None, "t")
    assert not change.produced_by({"__op": "d", "__lsn": 45}, None, "t")


def test_only_debeziums_envelope_is_an_envelope():
    assert is_envelope('{"type": "record", "name": "Envelope", "fields": [{"name": "before", "type": "null"}, '
                       '{"name": "after", "type": "null"}, {"name": "source", "type": "null"}, '
                       '{"name": "op", "type": "string"}]}')
    assert not is_envelope('{"type": "record", "name": "Value", "fields": [{"name": "op", "type": "string"}]}')


def expected_category(rows: dict[tuple, tuple]) -> ExpectedState:
    expected = ExpectedState(read_rows=lambda table, shape, keys: [row for key, row in rows.items()
                                                                   if keys is None or key in keys])
    expected.follow("category", CATEGORY)
    return expected


def test_a_truncate_deletes_every_row_with_the_values_it_held_then():
    expected = expected_category({(1,): (1, "Shows", "Opera", "a"), (2,): (2, "Shows", "Jazz", "b")})
    expected.pending["category"] = {(2,), (3,)}  # 2 updated, 3 inserted and deleted again before the truncate
    removed = [{"catid": 1, "catgroup": "Shows", "catname": "Opera", "catdesc": "a"},
               {"catid": 2, "catgroup": "Shows", "catname": "Blues", "catdesc": "b"}]
    truncate = Change(seq=5, kind="truncate", table="category", topic="t", key={}, removed=removed)
    expected._truncate(truncate, {(3,): {"catid": 3, "catgroup": "Plays", "catname": "Gone", "catdesc": None}})
    assert expected.states["category"] == {}
    assert expected.deleted["category"] == {(1,): (1, "Shows", "Opera", "a"), (2,): (2, "Shows", "Blues", "b"),
                                          (3,): (3, "Plays", "Gone", None)}
    assert expected.truncated["category"] == {(1,), (2,)}, "3 was deleted by its delete, not the truncate"
    assert expected.settled["category"] == {(1,), (2,), (3,)} and expected.pending["category"] == set()


def test_a_truncated_row_must_say_t():
    row = (1, "Shows", "Opera", "a")
    assert deleted_row_problems(CATEGORY, (1,), row, (row, "t"), hard=False, want_op="t") == []
    assert deleted_row_problems(CATEGORY, (1,), row, (row, "d"), hard=False, want_op="t") == [
        "key catid=1: deleted row's __op: expected 't', actual 'd'"]


def test_a_dropped_column_reads_null_from_the_source_and_is_left_out_of_the_comparison_with_it():
    shape = Shape(get_table("category"), dropped=frozenset({"catdesc"}))
    assert shape.source_columns == ["catid", "catgroup", "catname"]
    assert shape.from_source((1, "Shows", "Opera")) == (1, "Shows", "Opera", None)
    assert shape.without_dropped({(1,): (1, "Shows", "Opera", "kept"), (2,): None}) == {
        (1,): (1, "Shows", "Opera", None), (2,): None}


GOOD = """\
name: ok
tables: [category]
job: [{continuous: true, table_type: MERGE_ON_READ}, {hard_deletes: true}]
steps:
  - check: start
  - add_column: {table: category, column: note, type: text}
  - update: {table: category, key: {catid: 1}, set: {note: x}}
  - drop_column: {table: category, column: note}
  - truncate: {table: category}
  - check: {label: end, expect: {category: {rows: [{catid: 1, note: x}]}}}
"""


def test_a_scenario_may_run_under_several_jobs_and_drop_what_it_added(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(GOOD)
    loaded = scenario.load(path)
    assert loaded.jobs == [{"continuous": True, "table_type": "MERGE_ON_READ"}, {"hard_deletes": True}]
    assert loaded.job == loaded.jobs[0]
    assert [step.kind for step in loaded.steps][-3:] == ["drop_column", "truncate", "check"]


def test_a_column_may_be_added_with_a_default_and_a_rerun_drops_it_first(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(GOOD.replace("type: text}", "type: text, default: \"it's\"}"))
    loaded = scenario.load(path)
    added = next(step for step in loaded.steps if step.kind == "add_column")
    assert added.args["default"] == "it's"

    class Recording:
        def __getattr__(self, name):
            return lambda *args: calls.append((name, *args))

    calls = []
    scenario.give(loaded, Recording())
    assert calls == [("drop_column", "category", "note"), ("read_tables_again",)]


@pytest.mark.parametrize("dialect, value, clause", [
    (POSTGRES, "it's", " DEFAULT 'it''s'"), (MYSQL, "a\\b", " DEFAULT 'a\\\\b'"), (POSTGRES, True, " DEFAULT TRUE"),
    (MYSQL, False, " DEFAULT 0"), (SQLSERVER, 7, " DEFAULT 7 WITH VALUES"), (MYSQL, Decimal("1.50"), " DEFAULT 1.50"),
    (POSTGRES, dt.date(2008, 1, 2), " DEFAULT '2008-01-02'"), (POSTGRES, None, "")])
def test_a_default_is_written_as_each_dialect_reads_its_literals(dialect, value, clause):
    assert _default_clause(dialect, value) == clause


def test_the_job_reads_a_columns_default_from_debeziums_avro_field():
    schema = json.dumps({"type": "record", "name": "Value", "fields": [
        {"name": "catid", "type": "int"},
        {"name": "catdesc", "type": ["null", "string"], "default": None},
        {"name": "region", "type": [{"type": "string", "connect.default": "EMEA"}, "null"], "default": "EMEA"},
        {"name": "priority", "type": [{"type": "int", "connect.default": 3}, "null"], "default": 3}]})
    assert column_defaults(schema) == {"region": "EMEA", "priority": 3}


@pytest.mark.parametrize("text, reason", [
    (GOOD.replace("column: note}", "column: catdesc}"), "drop_column drops a column an earlier add_column"),
    (GOOD.replace("  - truncate: {table: category}", "  - drop_column: {table: category, column: note, default: x}"),
     "drop_column takes column, table, not 'default'"),
    (GOOD.replace("  - check: {label: end", "  - update: {table: category, key: {catid: 1}, set: {note: y}}\n"
                                            "  - check: {label: end"), "category has no column 'note'"),
    (GOOD.replace("  - truncate: {table: category}", "  - transaction: [truncate: {table: category}]"),
     "a transaction holds changes only, and no truncate"),
    (GOOD.replace("job: [{continuous: true, table_type: MERGE_ON_READ}, {hard_deletes: true}]", "job: []"),
     "job is a mapping of job options, or a non-empty list"),
], ids=["drops a TICKIT column", "a default on a drop", "sets a dropped column", "truncates in a transaction",
        "no job"])
def test_a_malformed_step_of_these_kinds_says_why(tmp_path, text, reason):
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(scenario.ScenarioError) as error:
        scenario.load(path)
    assert reason in error.value.reason


STREAM_FAILURE = """[STREAM_FAILED] Query [id = 1] terminated with exception: An exception was raised by the Python Proxy.
Traceback (most recent call last):
  File "cdc_hudi_job.py", line 300, in on_batch
py4j.protocol.Py4JJavaError: An error occurred while calling o82.save.
: org.apache.hudi.exception.HoodieUpsertException: Failed to upsert for commit time 20261128
\tat org.apache.hudi.table.action.commit.BaseWriteHelper.write(BaseWriteHelper.java:80)
Caused by: org.apache.hudi.exception.MissingSchemaFieldException: Schema validation failed due to missing field.
\tat org.apache.hudi.avro.AvroSchemaUtils.checkSchemaCompatible(AvroSchemaUtils.java:200)
"""


@pytest.mark.parametrize("failure, cause", [
    (STREAM_FAILURE, "org.apache.hudi.exception.MissingSchemaFieldException: Schema validation failed due to "
                     "missing field."),
    ("An error occurred while calling o82.collectToPython.\n: org.apache.spark.SparkException: Job aborted: "
     "org.apache.spark.SparkUpgradeException: ancient\nCaused by: org.apache.spark.SparkUpgradeException: "
     "[READ_ANCIENT_DATETIME] reading dates", "org.apache.spark.SparkUpgradeException: [READ_ANCIENT_DATETIME] "
                                             "reading dates"),
    ("Query terminated\nTraceback (most recent call last):\n  File \"decode.py\", line 9, in get\n"
     "cdc_sandbox.spark_jobs.decode.RegistryUnavailable: the schema registry did not answer\n",
     "cdc_sandbox.spark_jobs.decode.RegistryUnavailable: the schema registry did not answer"),
    (RuntimeError("the job's own words"), "the job's own words"),
])
def test_a_failure_is_named_by_its_innermost_cause_in_one_line(failure, cause):
    assert cause_line(failure) == cause


def test_a_reader_failure_is_told_from_the_harnesss_own():
    from cdc_sandbox.harness.checking.oracle import _from_a_reader

    assert not _from_a_reader(ValueError("a harness bug"))
    assert _from_a_reader(type("HudiCoreError", (Exception,), {})("storage error"))
    assert _from_a_reader(type("Py4JJavaError", (Exception,), {"__module__": "py4j.protocol"})("o1.load"))
