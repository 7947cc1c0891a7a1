"""The fuzzer's drawing and shrinking, without services: examples are valid scenario files, keys stay in their
range and type, and shrinking finds the smallest failing sequence a replay confirms."""

from __future__ import annotations

import datetime as dt
import random
import time
from pathlib import Path
from types import SimpleNamespace
from decimal import Decimal

import pytest

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.harness.driving import fuzz
from cdc_sandbox.harness.driving.scenario import ScenarioError
from cdc_sandbox.harness.checking.verdict import Finding, OracleMismatch
from cdc_sandbox.schema import DECIMAL, INTEGER_RANGES, Column, Table
from cdc_sandbox.tickit_data.ddl import MYSQL, POSTGRES
from cdc_sandbox.tickit_data.schema import get_table

SOURCES = {"category": POSTGRES, "venue": POSTGRES, "event": POSTGRES, "user": POSTGRES,
           "date": MYSQL, "listing": MYSQL, "sale": MYSQL}
SEEDS = range(60)
SMALL = frozenset({"category", "venue", "date"})  # TICKIT's tables of at most `fuzz.TRUNCATED_ROWS_MAX` rows


def changes(raw: dict):
    for step in raw["steps"]:
        yield from step.get("transaction") or [step]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_drawn_example_is_a_valid_scenario_file(seed, tmp_path):
    raw = fuzz.draw_example(seed, 1, SOURCES)
    spec = fuzz.write(raw, tmp_path / "example.yaml")
    assert spec.steps[-1].kind == "check"
    assert fuzz._well_formed(raw["steps"][:-1])


def test_drawing_is_fixed_by_seed_and_number():
    assert fuzz.draw_example(7, 3, SOURCES) == fuzz.draw_example(7, 3, SOURCES)
    assert fuzz.draw_example(7, 3, SOURCES) != fuzz.draw_example(7, 4, SOURCES)


def test_keys_stay_in_the_fuzz_range_and_inside_their_type():
    for seed in SEEDS:
        raw = fuzz.draw_example(seed, 2, SOURCES)
        rows = [(t, row) for t, given in raw["given"].items() for row in given]
        for change in changes(raw):
            (kind, args), = change.items()
            rows += [(args["table"], args[k]) for k in ("key", "new_key", "row") if isinstance(args, dict) and k in args]
        for table, row in rows:
            schema = get_table(table)
            (pk,) = schema.primary_key
            low, high = INTEGER_RANGES[schema.column(pk).type]
            assert (row[pk],) in fuzz.fuzz_keys(schema) and low <= row[pk] <= high


def test_the_draws_cover_what_the_issue_of_fuzzing_asks_for():
    """Over a few dozen examples: every table, NULLs, edges, transactions over two tables, added columns,
    restarts with a continuous job, pauses, key updates."""
    raws = [fuzz.draw_example(seed, 1, SOURCES) for seed in SEEDS]
    kinds = {next(iter(step)) for raw in raws for step in raw["steps"]}
    assert {"pause", "resume", "restart", "run", "transaction", "add_column", "update_key", "delete",
            "insert", "update"} <= kinds | {next(iter(c)) for raw in raws for c in changes(raw)}
    assert {t for raw in raws for t in raw["tables"]} == set(SOURCES)
    values = [v for raw in raws for c in changes(raw) for args in c.values() if isinstance(args, dict)
              for v in (args.get("set") or args.get("row") or {}).values()]
    assert None in values and "" in values and 2**15 - 1 in values
    assert {"two\nlines", "\x01\x1f\x7f"} <= set(values), "control characters"
    keys = {k for raw in raws for rows in raw["given"].values() for row in rows for k in row.values()
            if isinstance(k, int)}
    assert {-(2**15), -(2**31)} <= keys and any(-30005 <= k <= -30000 for k in keys), "keys below zero"
    added = {c["add_column"]["type"] for seed in range(200) for c in changes(fuzz.draw_example(seed, 1, SOURCES))
             if "add_column" in c and c["add_column"]["column"] in fuzz.ADDED_COLUMNS}
    assert added == set(fuzz.ADDED_COLUMNS.values()) == {"text", "decimal", "bool", "date", "timestamp", "int"}
    assert any(len({args["table"] for c in step["transaction"] for args in c.values()}) > 1
               for raw in raws for step in raw["steps"] if "transaction" in step)


def incidents(seeds) -> list[dict]:
    return [fuzz.draw_example(seed, number, SOURCES, small=SMALL) for seed in seeds for number in (1, 2)]


@pytest.mark.parametrize("raw", incidents(range(40)), ids=lambda raw: raw["name"])
def test_examples_with_incidents_are_valid_scenario_files(raw, tmp_path):
    fuzz.write(raw, tmp_path / "example.yaml")


def test_the_draws_hold_every_kind_of_incident_where_the_example_allows_it():
    raws = incidents(range(400))  # a rewind needs a binlog table, a check before it and Copy-on-Write: rare
    kinds = {next(iter(step)) for raw in raws for step in raw["steps"]}
    assert {"truncate", "source_clock", "alter_column", "drop_column", "registry_outage", "rewind_connector",
            "redeliver"} <= kinds
    for raw in raws:
        for step in raw["steps"]:
            (kind, args), = step.items()
            if kind == "truncate":
                assert args["table"] in SMALL
            if kind == "rewind_connector":
                assert SOURCES[args["table"]] == MYSQL
            if kind in ("rewind_connector", "redeliver"):  # a late older event: Copy-on-Write only
                assert raw["job"].get("table_type") != "MERGE_ON_READ"
            if kind == "registry_outage":
                assert not raw["job"].get("continuous")
                assert raw["steps"][raw["steps"].index(step) + 1] == {"run": None}, "the outage's batch replayed"
    skewed = [raw["steps"][i + 1] for raw in raws for i, step in enumerate(raw["steps"])
              if step.get("source_clock") is not None]
    assert skewed and all(SOURCES[next(iter(step.values()))["table"]] == MYSQL for step in skewed)
    migrated = [step["add_column"]["column"] for raw in raws for step in raw["steps"] if "add_column" in step
                and step["add_column"]["column"].startswith(("fuzz_wide_", "fuzz_gone_", "fuzz_default_"))]
    dropped = [step["drop_column"]["column"] for raw in raws for step in raw["steps"] if "drop_column" in step]
    assert migrated and sorted(migrated) == sorted(dropped), "a migrated column leaves the source as it came"
    defaults = {step["add_column"]["type"]: step["add_column"]["default"] for raw in raws for step in raw["steps"]
                if step.get("add_column", {}).get("column", "").startswith("fuzz_default_")}
    assert defaults == fuzz.NULLABLE_DEFAULTS, "each kind of nullable column with a default"
    nulled = [(kind, name) for raw in raws for step in raw["steps"] for kind, args in step.items()
              if kind in ("insert", "update") for name, value in (args.get("row") or args.get("set")).items()
              if name.startswith("fuzz_default_") and value is None]
    assert {kind for kind, _ in nulled} == {"insert", "update"}, "NULLs inserted into it and updated to"


def test_an_example_without_small_tables_truncates_nothing():
    assert not any("truncate" in step for seed in range(150) for step in fuzz.draw_example(seed, 1, SOURCES)["steps"])


def test_a_transaction_stays_in_one_source_database():
    for seed in SEEDS:
        raw = fuzz.draw_example(seed, 5, SOURCES)
        for step in raw["steps"]:
            if "transaction" in step:
                tables = {args["table"] for c in step["transaction"] for args in c.values()}
                assert len({SOURCES[t] for t in tables}) == 1


def test_a_continuous_job_is_restarted_never_run_once_and_a_batch_job_the_other_way():
    for seed in SEEDS:
        raw = fuzz.draw_example(seed, 1, SOURCES)
        kinds = {next(iter(step)) for step in raw["steps"]}
        assert ("run" not in kinds) if raw["job"].get("continuous") else ("restart" not in kinds)


def test_shrinking_keeps_only_the_steps_the_failure_needs():
    raw = fuzz.draw_example(11, 1, SOURCES)
    raw["steps"][-1:-1] = [{"delete": {"table": "category", "key": {"catid": 30005}}}]
    culprit = raw["steps"][-2]

    def reproduces(candidate):  # the failure needs the delete and the final check
        return culprit in candidate["steps"] and candidate["steps"][-1] == raw["steps"][-1]

    smallest = fuzz.shrink(raw, reproduces, time.monotonic() + 30)
    assert smallest["steps"] == [culprit, raw["steps"][-1]]


def test_shrinking_takes_changes_out_of_a_transaction_and_drops_unnamed_given_rows():
    raw = {"name": "t", "tables": ["category", "venue"], "job": {},
           "given": {"category": [{"catid": 30001}, {"catid": 30002}], "venue": [{"venueid": 30003}]},
           "steps": [{"transaction": [{"update": {"table": "category", "key": {"catid": 30001}, "set": {"catname": "a"}}},
                                      {"delete": {"table": "category", "key": {"catid": 30002}}}]},
                     {"check": "end"}]}

    def reproduces(candidate):
        return any(next(iter(c)) == "delete" for c in changes(candidate))

    smallest = fuzz.shrink(raw, reproduces, time.monotonic() + 30)
    assert smallest["steps"] == [{"delete": {"table": "category", "key": {"catid": 30002}}}, {"check": "end"}]
    assert smallest["given"] == {"category": [{"catid": 30002}]} and smallest["tables"] == ["category"]


def test_shrinking_never_leaves_the_job_paused_or_checks_while_paused():
    steps = [{"pause": None}, {"update": {}}, {"resume": None}, {"check": "x"}]
    assert fuzz._well_formed(steps)
    assert not fuzz._well_formed(steps[:2])
    assert not fuzz._well_formed([steps[0], steps[3], steps[2]])
    assert not fuzz._well_formed(steps[1:])


def test_shrinking_stops_at_its_deadline():
    raw = fuzz.draw_example(3, 1, SOURCES)
    calls = []
    assert fuzz.shrink(raw, lambda c: calls.append(c) or True, time.monotonic() - 1) == raw
    assert calls == []


def test_shrinking_stops_after_as_many_smaller_examples_as_asked():
    raw = {"tables": [], "given": {}, "steps": [{"update": {"n": n}} for n in range(8)] + [{"check": "end"}]}
    culprit = raw["steps"][7]

    def reproduces(candidate):
        return culprit in candidate["steps"]

    sizes = [len(fuzz.shrink(raw, reproduces, time.monotonic() + 30, most_shrinks=most)["steps"])
             for most in (1, 2, None)]
    assert sizes == [5, 3, 2]


def test_a_scenario_error_is_judged_by_its_cause():
    try:
        try:
            raise AssertionError("silver differs")
        except AssertionError as inner:
            raise ScenarioError(__file__, 3, "check failed") from inner
    except ScenarioError as outer:
        assert fuzz.signature(outer) == fuzz.Signature("AssertionError")


def test_a_verdict_is_judged_by_its_check_table_and_columns_and_a_narrower_one_is_the_same_failure():
    def verdict(check="snapshot", table="category", columns=("catname", "catdesc"), keys=((1,),)):
        return fuzz.signature(OracleMismatch("silver differs", Finding(check, table, frozenset(columns),
                                                                       frozenset(keys))))

    wanted = verdict()
    assert str(wanted) == "OracleMismatch: snapshot of category (columns catdesc, catname)"
    assert wanted.covers(verdict()) and wanted.covers(verdict(columns=("catname",), keys=((2,), (3,))))
    assert not wanted.covers(verdict(columns=("catgroup",))), "another column is another bug"
    assert not wanted.covers(verdict(columns=("catname", "catgroup")))
    assert not wanted.covers(verdict(columns=()))
    assert not wanted.covers(verdict(table="venue")) and not wanted.covers(verdict(check="time travel"))
    assert not wanted.covers(fuzz.Signature("OracleMismatch")) and not wanted.covers(fuzz.Signature("SandboxError"))
    deleted = verdict(check="deletes", columns=())
    assert deleted.covers(verdict(check="deletes", columns=(), keys=((7,),)))


def test_shrinking_makes_plain_every_value_the_failure_does_not_need():
    insert = {"insert": {"table": "category", "row": {"catid": 30001, "catgroup": "a  b ", "catname": "東京",
                                                      "catdesc": "'\";\\"}}}
    update = {"update": {"table": "category", "key": {"catid": 30001}, "set": {"catdesc": "e\u0301"}}}
    raw = {"name": "t", "tables": ["category"], "job": {}, "given": {"category": [{"catid": 30001}]},
           "steps": [insert, {"transaction": [update]}, {"check": "end"}]}

    def reproduces(candidate):  # the failure needs the insert's name, whatever else there is
        return any(c.get("insert", {}).get("row", {}).get("catname") == "東京" for c in changes(candidate))

    smallest = fuzz.shrink(raw, reproduces, time.monotonic() + 30)
    assert smallest["steps"] == [{"insert": {"table": "category", "row": {"catid": 30001, "catgroup": "x",
                                                                          "catname": "東京", "catdesc": "x"}}},
                                 {"check": "end"}]
    assert raw["steps"][0] == insert, "the example shrunk is left as it was"


@pytest.mark.parametrize("value, plain", [
    (True, False), (-32768, 0), (Decimal("-999999.99"), Decimal(0)), (2.5e300, 0.0), ("\u0000" * 300, "x"),
    (b"\xff\x00", b"x"), (dt.date(1000, 1, 1), dt.date(2008, 1, 1)), ({"a": [1]}, {}),
    (dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(2008, 1, 1)),
    (dt.datetime(2026, 3, 29, 1, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))),
     dt.datetime(2008, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=2)))), (None, None)])
def test_the_plainest_value_keeps_the_kind(value, plain):
    assert fuzz.plainest(value) == plain and type(fuzz.plainest(value)) is type(plain)


def test_a_time_budget_is_spent_by_the_clock_and_an_example_budget_by_count():
    assert fuzz.Budget(examples=2).spent(2) and not fuzz.Budget(examples=2).spent(1)
    assert not fuzz.Budget(minutes=1).spent(100)
    assert fuzz.Budget(minutes=1, started=time.monotonic() - 61).spent(0)


def test_examples_on_a_projects_tables_use_keys_of_any_shape_and_values_of_every_type():
    """A composite text-and-integer key and the types teams have: the drawn scenario validates against them."""
    from cdc_sandbox.schema import BYTES, DECIMAL, JSON, NUMBER, STR, TIMESTAMPTZ, UUID, Column, Table

    accounts = Table("accounts", (Column("tenant", STR, nullable=False, max_length=20),
                                  Column("account_no", "int", nullable=False),
                                  Column("balance", DECIMAL, precision=38, scale=10), Column("risk", NUMBER),
                                  Column("profile", JSON), Column("external_id", UUID), Column("signature", BYTES),
                                  Column("opened_at", TIMESTAMPTZ)), ("tenant", "account_no"))
    keys = fuzz.fuzz_keys(accounts)
    assert len(set(keys)) == len(keys) and all(tenant.startswith("fuzz-") for tenant, _ in keys)
    seen_types = set()
    for seed in SEEDS:
        raw = fuzz.draw_example(seed, 1, {"accounts": "postgres"}, {"accounts": accounts})
        for row in raw["given"]["accounts"]:
            assert (row["tenant"], row["account_no"]) in keys
            seen_types |= {type(value).__name__ for value in row.values() if value is not None}
        for change in changes(raw):
            (kind, args), = change.items()
            if isinstance(args, dict) and "key" in args:
                assert set(args["key"]) == {"tenant", "account_no"}
    assert {"str", "int", "dict", "bytes", "datetime"} <= seen_types


def test_each_run_plays_every_example_in_one_job_mode_drawn_from_its_seed():
    modes = {str(fuzz.job_mode(seed)) for seed in SEEDS}
    assert modes == {str(mode) for mode in fuzz.JOB_MODES}, "over many runs, every mode"
    for seed in (41, 42):
        assert {str({k: v for k, v in fuzz.draw_example(seed, n, SOURCES)["job"].items() if k != "continuous"})
                for n in range(1, 6)} == {str(fuzz.job_mode(seed))}


def test_a_pipeline_in_another_mode_than_the_seeds_is_refused():
    seed = next(seed for seed in SEEDS if fuzz.job_mode(seed).get("hard_deletes"))
    pipeline = SimpleNamespace(config=SimpleNamespace(table_type="COPY_ON_WRITE", hard_deletes=False, tables=[]))
    with pytest.raises(SandboxError, match="fuzz.job_mode"):
        fuzz.Fuzzer(pipeline, None, None, seed, Path("."))


def test_a_wide_decimals_edges_stay_inside_its_range():
    """Decimal arithmetic rounds to 28 digits: decimal(30,10)'s largest value, negated or scaled, became 1E+20."""
    column = Column("amount", DECIMAL, precision=30, scale=10)
    drawn = {fuzz.edge_value(column, random.Random(seed)) for seed in range(60)}
    assert {str(value) for value in drawn} >= {"99999999999999999999.9999999999", "-99999999999999999999.9999999999"}
    unsigned = Column("id", DECIMAL, precision=20, scale=0, unsigned=True)
    assert fuzz.fuzz_keys(Table("t", (unsigned,), ("id",)))[0] == ("18446744073709551615",)
