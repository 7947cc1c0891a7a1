"""The shipped scenarios bound to a project's tables: who plays each table, what the rewritten file holds, and why a
scenario does not apply (no sandbox needed: the project's tables are given as the catalog would describe them)."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from cdc_sandbox.config import TOPOLOGY_FILE, load_topology
from cdc_sandbox.harness.driving import binding
from cdc_sandbox.harness.driving import scenario as scenarios
from cdc_sandbox.schema import BIGINT, BOOL, DATE, DECIMAL, INT, STR, TIMESTAMPTZ, Column, ForeignKey, Table

ACCOUNTS = Table("accounts", (
    Column("tenant", STR, nullable=False, max_length=20), Column("account_no", INT, nullable=False),
    Column("owner", STR, nullable=False), Column("region", STR, nullable=False, labels=("emea", "amer")),
    Column("balance", DECIMAL, nullable=False, precision=12, scale=2), Column("visits", BIGINT),
    Column("customer_id", INT, nullable=False), Column("opened_at", TIMESTAMPTZ, nullable=False),
    Column("email", STR, nullable=False, max_length=60, unique=True)),
    ("tenant", "account_no"), (ForeignKey("customer_id", "customers", "id"),))
CUSTOMERS = Table("customers", (Column("id", INT, nullable=False), Column("name", STR, max_length=8),
                                Column("since", DATE), Column("vip", BOOL)), ("id",))


def _candidates(*tables: Table, engine: str = "postgres") -> list[binding.Candidate]:
    referenced = {fk.references_table for t in tables for fk in t.foreign_keys}
    return [binding.Candidate(t.name, t, engine, "shop", t.name in referenced,
                              {"customer_id": 7} if t.name == "accounts" else {},
                              tuple(("acme", n) if len(t.primary_key) == 2 else (n,) for n in range(1, 9)))
            for t in tables]


def _bind(name: str, candidates: list[binding.Candidate]) -> dict:
    raw = scenarios.read(scenarios.SHIPPED / f"{name}.yaml")
    homes, engines = binding.home_tables(raw)
    return binding.bind(raw, homes, engines, candidates)


def _steps(raw: dict, kind: str) -> list[dict]:
    return [args for step in raw["steps"] for k, args in step.items() if k == kind]


def test_a_scenario_is_rewritten_on_the_table_that_holds_its_values():
    """delete-then-reinsert sets and checks venuename (text) and venueseats (a count, NULL when left out): the
    project's accounts take them in owner and visits; its keys are keys no loaded row uses; every other NOT NULL
    column gets a value (a referenced row's for the reference, a value of its own for a UNIQUE one)."""
    bound = _bind("delete-then-reinsert", _candidates(ACCOUNTS, CUSTOMERS))
    assert bound["tables"] == ["accounts"]
    given = bound["given"]["accounts"]
    assert [(row["owner"], row["visits"]) for row in given] == [("Old Hall", 1200), ("Short Lived", 10)]
    assert all(row["tenant"].startswith("fuzz-") for row in given)
    assert len({(row["tenant"], row["account_no"]) for row in given}) == 2
    assert all(row["customer_id"] == 7 and row["region"] in ("emea", "amer") for row in given)
    assert len({row["email"] for row in given}) == 2
    inserted = [args["row"] for args in _steps(bound, "insert")]
    assert inserted[-1]["owner"] == "Newest Hall" and inserted[-1]["visits"] is None  # left out: NULL
    first_key = {c: given[0][c] for c in ("tenant", "account_no")}
    assert _steps(bound, "delete")[0]["key"] == first_key
    last_check = _steps(bound, "check")[-1]
    assert last_check["expect"]["accounts"]["rows"] == [first_key | {"owner": "Newest Hall", "visits": None}]


def test_a_row_the_scenario_reads_and_did_not_write_is_a_loaded_row_of_the_project():
    """column-added-with-default checks the default on a TICKIT row it never wrote: bound, on a loaded row."""
    raw = scenarios.read(scenarios.SHIPPED / "column-added-with-default.yaml")
    bound = _bind("column-added-with-default", _candidates(ACCOUNTS, CUSTOMERS))
    written = {(row["tenant"], row["account_no"]) for row in bound["given"]["accounts"] + [
        args["row"] for args in _steps(bound, "insert") if args["table"] == "accounts"]}
    checked = [(row["tenant"], row["account_no"]) for args in _steps(bound, "check") if isinstance(args, dict)
               for row in args["expect"].get("accounts", {}).get("rows", [])]
    read_only = [key for key in checked if key not in written]
    assert read_only and all(tenant == "acme" for tenant, _ in read_only), (raw["given"], checked)


def test_the_binding_is_the_same_in_every_run():
    for name in ("delete-then-reinsert", "null-in-a-column-with-a-default"):
        assert _bind(name, _candidates(ACCOUNTS, CUSTOMERS)) == _bind(name, _candidates(ACCOUNTS, CUSTOMERS))


def test_on_tickit_each_table_plays_itself_with_its_own_keys():
    """TICKIT is a project like any other: bound to its own tables, a scenario keeps its tables, keys and values."""
    topology = load_topology(TOPOLOGY_FILE)
    tickit = [binding.Candidate(t.name, scenarios.home_schema(t.name), topology.sources[t.source].engine, t.source)
              for t in topology.tables]
    raw = scenarios.read(scenarios.SHIPPED / "two-table-transaction.yaml")
    bound = _bind("two-table-transaction", tickit)
    assert bound["tables"] == raw["tables"]
    for table, rows in raw["given"].items():
        for mine, theirs in zip(bound["given"][table], rows):
            assert {c: v for c, v in mine.items() if c in theirs} == {c: v for c, v in theirs.items()
                                                                          if c in mine}
            assert mine[scenarios.home_schema(table).primary_key[0]] == theirs[
                scenarios.home_schema(table).primary_key[0]]


def test_a_scenario_no_table_can_play_says_what_the_tables_lack():
    with pytest.raises(binding.NotApplicable) as caught:
        _bind("binlog-column-added", _candidates(ACCOUNTS, CUSTOMERS))
    assert "needs a table on mariadb or mysql" in caught.value.reason
    assert "accounts: on postgres" in caught.value.reason and "customers: on postgres" in caught.value.reason
    with pytest.raises(binding.NotApplicable) as caught:
        _bind("delete-then-reinsert", _candidates(Table("tags", (Column("id", INT, nullable=False),), ("id",))))
    assert "tags: no column that holds venuename's values (Old Hall, Short Lived, New Hall); no nullable column " \
           "that holds venueseats's values (1200, 10, 1500)" in caught.value.reason


def test_the_columns_a_scenario_adds_are_its_own():
    """Named apart from the table's (a team's `visits` is not the scenario's), and left out of what plays its
    columns when an earlier run left them."""
    bound = _bind("column-added-mid-stream", _candidates(ACCOUNTS, CUSTOMERS))
    added = [args["column"] for args in _steps(bound, "add_column")]
    assert added and all(column.startswith(binding.ADDED) for column in added)
    assert all(column.startswith(binding.ADDED) for args in _steps(bound, "update") for column in args["set"]
               if column not in {c.name for c in ACCOUNTS.columns})
    with_left_over = Table("accounts", (*ACCOUNTS.columns, Column(binding.ADDED + "note", STR)),
                           ACCOUNTS.primary_key, ACCOUNTS.foreign_keys)
    assert binding.ADDED + "note" not in [c.name for c in binding._free_columns(None, _candidates(with_left_over)[0])]


def test_a_table_with_a_reference_to_it_is_not_truncated():
    raw = scenarios.read(scenarios.SHIPPED / "truncate-mid-stream.yaml")
    roles = binding.roles(raw, *binding.home_tables(raw))
    customers, accounts = _candidates(CUSTOMERS, ACCOUNTS)
    truncated = next(role for role in roles.values() if role.truncated)
    assert binding._cannot_play(truncated, customers, {}, []) == \
        "another table references it, so it cannot be truncated"
    assert binding._cannot_play(truncated, accounts, {}, []) == ""


def test_a_column_of_another_kind_plays_with_distinct_stand_ins_unless_the_values_are_the_point():
    """venueseats (a count) played by a date column: each count by a date of its own, equal counts by equal dates,
    NULL by NULL; edge-values, whose values are the point, takes columns of their own kind only."""
    dated = Table("visits", (Column("id", INT, nullable=False), Column("label", STR), Column("on_day", DATE)),
                  ("id",))
    bound = _bind("delete-then-reinsert", _candidates(dated))
    seats = [row["on_day"] for row in bound["given"]["visits"]] + [
        args["row"]["on_day"] for args in _steps(bound, "insert")]
    assert len(set(seats[:3])) == 3 and all(isinstance(day, dt.date) for day in seats[:3]) and seats[3] is None
    stand_ins = binding._stand_ins(Column("on_day", DATE), [1200, 10, 1200, None], same_kind=False, salt="x")
    assert set(stand_ins) == {1200, 10} and len(set(stand_ins.values())) == 2
    with pytest.raises(binding.NotApplicable) as caught:
        _bind("edge-values", _candidates(ACCOUNTS, CUSTOMERS, dated))
    assert "its values as they are" in caught.value.reason


def test_text_stand_ins_are_distinct_values_the_column_holds():
    labels = Column("region", STR, labels=("emea", "amer", "apac"))
    assert binding._stand_ins(labels, ["Shows", "Plays", "Shows", None, "amer"]) == {"Shows": "emea",
                                                                                  "Plays": "apac"}
    assert binding._stand_ins(labels, ["a", "b", "c", "emea"]) is None  # three misfits, two labels free
    short = Column("code", STR, max_length=6)
    stand_ins = binding._stand_ins(short, ["Opera House", "Opera Hall", "Opera"])
    assert stand_ins == {"Opera House": "Oper~0", "Opera Hall": "Oper~1"}
    assert binding._stand_ins(Column("n", INT), ["text"]) is None


@pytest.mark.parametrize("value, holds", [("12345678901.12", False), ("9999999999.99", True), ("1.005", False),
                                          (12, True), ("1E+10", False), ("0.5", True)])
def test_a_decimal_column_holds_what_its_precision_and_scale_allow(value, holds):
    assert binding._holds(Column("amount", DECIMAL, precision=12, scale=2), value) is holds


def test_steps_that_need_engines_excluding_each_other_apply_nowhere():
    raw = {"name": "both", "tables": ["venue"],
           "steps": [{"reset_connector": {"table": "venue"}}, {"rewind_connector": {"table": "venue", "to": "x"}}]}
    with pytest.raises(binding.NotApplicable) as caught:
        binding.bind(raw, {"venue": scenarios.home_schema("venue")}, {"venue": "postgres"},
                     _candidates(ACCOUNTS) + _candidates(CUSTOMERS, engine="mariadb"))
    assert binding.NO_ENGINE in caught.value.reason


def test_the_catalogue_takes_pytest_settings_from_the_file_pytest_would(tmp_path):
    from cdc_sandbox.cli import _pytest_ini

    (tmp_path / "tox.ini").write_text("[tox]\nenvlist = py311\n")
    assert _pytest_ini(tmp_path) == os.devnull
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\nmarkers = []\n")
    assert _pytest_ini(tmp_path) == str(tmp_path / "pyproject.toml")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    assert _pytest_ini(tmp_path) == str(tmp_path / "pytest.ini")
