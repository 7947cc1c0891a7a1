"""A team's own project, in a directory outside the checkout, on the session's stack: `sandbox up` runs its DDL
and registers its connectors beside TICKIT's, `sandbox load` fills its tables, and its own test module passes under
the plugin's oracle (composite text-and-integer key, partition changes, Postgres and MariaDB types at their edges,
the job's session in New York's zone). Then the job's bugs that only such tables show are caught on them."""

from __future__ import annotations

import datetime as dt
import os
import random
import string
import subprocess
import sys
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest

from cdc_sandbox.harness.driving import fuzz
from cdc_sandbox.harness.driving import scenario as scenarios
from cdc_sandbox.sources.mutations import Mutator
from tests.broken_variants import VARIANTS, Catch, expect_catch
from tests.e2e.conftest import TEAM_PROJECT, job_on_a_new_lake, sandbox_cli

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NEW_YORK = "America/New_York"


def test_the_team_suite_passes_from_its_own_directory(team_dir, sandbox, tmp_path):
    """`pytest` as the team runs it: its test module, and each of its scenario files (collected by the plugin, as its
    pytest.ini asks) in every job mode the file declares, under the oracle."""
    env = {k: v for k, v in os.environ.items() if k not in ("SANDBOX_PROJECT", "SANDBOX_BROKEN_JOB")}
    env["SANDBOX_STATE_DIR"] = str(sandbox.state_dir)
    report = tmp_path / "team-junit.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
                          cwd=team_dir, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    passed = [case.get("classname") for case in ET.parse(report).iter("testcase")
              if not any(part.tag in ("failure", "error", "skipped") for part in case)]
    assert sum("test_shop_pipeline" in name for name in passed) == 1, passed
    for path in (team_dir / "scenarios").glob("*.yaml"):
        assert any(path.stem in name for name in passed), f"{path.name} did not run and pass: {passed}"
    assert "commits checked by time travel: 0;" not in done.stdout, "the team's suite checked its history"
    assert "DeprecationWarning" not in done.stdout
    left = sorted(set(os.listdir(team_dir)) - set(os.listdir(TEAM_PROJECT)))
    assert not left, f"the run left {left} in the team's directory"


def test_the_team_scenarios_are_valid_on_its_tables(team_dir, sandbox):
    """Checked against the tables as the source's catalog describes them, as `sandbox scenario validate` checks
    them from the team's directory (the team's `pytest` above runs them)."""
    env = {k: v for k, v in os.environ.items() if k != "SANDBOX_PROJECT"} | {"SANDBOX_STATE_DIR": str(sandbox.state_dir)}
    for path in sorted((team_dir / "scenarios").glob("*.yaml")):
        done = sandbox_cli(team_dir, env, "scenario", "validate", str(path))
        assert done.returncode == 0 and done.stdout.startswith("ok "), done.stdout + done.stderr


def _update_an_account(mutator: Mutator, values: dict) -> dict:
    """Update an account drawn at random; returns its key."""
    row = mutator.sample_row("accounts", random.Random())
    key = {"tenant": row["tenant"], "account_no": row["account_no"]}
    mutator.update("accounts", key, values)
    return key


def _balance(mutator: Mutator) -> None:
    _update_an_account(mutator, {"balance": Decimal("123456789012345678.0123456789")})


def _reschedule(mutator: Mutator) -> None:
    row = mutator.sample_row("shipments", random.Random())
    mutator.update("shipments", {"shipment_id": row["shipment_id"]},
                   {"ship_date": row["ship_date"] + dt.timedelta(days=45 if row["ship_date"].year < 9999 else -45),
                    "updated_at": dt.datetime.now(dt.timezone.utc).replace(microsecond=654321)})


def _sign(mutator: Mutator) -> None:
    _update_an_account(mutator, {"signature": random.Random().randbytes(16)})


def _second_account(mutator: Mutator) -> None:
    """Another account of a tenant that has one."""
    row = mutator.sample_row("accounts", random.Random())
    new_key = mutator.new_key("accounts", random.Random())
    mutator.insert("accounts", row | {"account_no": new_key["account_no"]})


def _blank_owner(mutator: Mutator) -> None:
    _update_an_account(mutator, {"owner": ""})


def _delete_shipment(mutator: Mutator) -> None:
    """A shipment deleted, its values kept under a new key (whatever earlier runs left). The copy goes in first: a
    new key is the highest plus one, which, after the highest row's delete, would be the deleted key again."""
    row = mutator.sample_row("shipments", random.Random())
    mutator.insert("shipments", row | mutator.new_key("shipments", random.Random()))
    mutator.delete("shipments", {"shipment_id": row["shipment_id"]})


def _second_one_thirty(mutator: Mutator) -> None:
    """06:30 UTC on New York's fall-back day: its clocks show 01:30 for the second time."""
    row = mutator.sample_row("shipments", random.Random())
    mutator.update("shipments", {"shipment_id": row["shipment_id"]},
                   {"updated_at": dt.datetime(2026, 11, 1, 6, 30, tzinfo=dt.timezone.utc)})


# variant -> (the change that shows it, the failures it must cause one of, the job session's zone)
CAUGHT_ON_TEAM_TABLES = {
    # numeric(38,10) loses digits
    "decimals-through-double": (_balance, (Catch("snapshot", "accounts", "balance"),), "UTC"),
    "session-zone-times": (_reschedule, (Catch("snapshot", "shipments", "updated_at"),), NEW_YORK),  # moved by hours
    "partition-change-kept-twice": (_reschedule, (Catch("duplicates", "shipments"),), "UTC"),
    "money-as-double": (_balance, (Catch("types", "accounts", "balance"),), "UTC"),
    "widened-integers": (_balance, (Catch("types", "accounts", "account_no"),), "UTC"),  # a key column
    "insert-not-upsert": (_reschedule, (Catch("duplicates", "shipments"),), "UTC"),
    "zone-shifted-times": (_reschedule, (Catch("snapshot", "shipments", "ship_date"),), "UTC"),
    "empty-deletes": (_delete_shipment, (Catch("deletes", "shipments", "status"),), "UTC"),
    "millisecond-times": (_reschedule, (Catch("snapshot", "shipments", "updated_at"),), "UTC"),
    "empty-strings-as-nulls": (_blank_owner, (Catch("snapshot", "accounts", "owner"),), "UTC"),
    "wall-clock-round-trip": (_second_one_thirty, (Catch("snapshot", "shipments", "updated_at"),), NEW_YORK),
    "binary-as-text": (_sign, (Catch("types", "accounts", "signature"),), "UTC"),
    # the tenant's two accounts collapse into one record: the other is missing (named by its key), or, as the rows
    # the team suite left decide, a key is held twice
    "partial-record-key": (_second_account, (Catch("snapshot", "accounts"), Catch("duplicates", "accounts")), "UTC"),
    "hard-deletes-everywhere": (_delete_shipment, (Catch("deletes", "shipments"),), "UTC"),  # the deleted key
}


@pytest.mark.parametrize("variant", list(CAUGHT_ON_TEAM_TABLES))
def test_a_broken_job_is_caught_on_the_team_tables(request, variant, team, spark, monkeypatch):
    change, catches, zone = CAUGHT_ON_TEAM_TABLES[variant]
    table = catches[0].table
    VARIANTS[variant](monkeypatch)
    with scenarios.session_zone(spark, zone), \
            job_on_a_new_lake(request, team, spark, [table]) as (pipeline, mutator, oracle):  # the broken job writes all
        table_type = pipeline.config.table_type_of(pipeline.config.spec(table))
        judged = expect_catch(request, variant, f"team project, {table}",
                              f"run once, {table_type}, zone {zone}", catches)
        with pytest.raises(AssertionError) as caught:  # a verdict, not a time-out (SandboxError)
            oracle.track([table])
            change(mutator)
            oracle.round(variant)
    assert not (wrong := judged(caught.value)), f"{variant}: {wrong}"


@pytest.mark.parametrize("variant", [None, "placeholders-as-values"])
def test_a_table_with_replica_identity_default_keeps_what_its_events_leave_out(request, variant, team, spark,
                                                                                monkeypatch):
    """accounts runs with REPLICA IDENTITY DEFAULT (the project file says so): an update leaves out its unchanged
    jsonb and bytea where Postgres stored them out of line, and a delete carries the composite key alone, its NOT
    NULL columns too. The job keeps silver's values for both, under the oracle; the job that writes what the events
    carry is caught at the update."""
    assert team.topology.silver_of("accounts").replica_identity == "default"
    with job_on_a_new_lake(request, team, spark, ["accounts"]) as (_, mutator, oracle):  # written by the correct job
        oracle.track(["accounts"])
        if variant:
            VARIANTS[variant](monkeypatch)
        draw = random.Random(7)  # letters at random do not compress: Postgres stores them out of line
        key = _update_an_account(mutator, {"profile": {"notes": "".join(draw.choices(string.ascii_letters, k=6000))},
                                           "signature": draw.randbytes(6000)})
        oracle.round("long values written")
        mutator.update("accounts", key, {"balance": Decimal("42.5")})
        if variant:
            catches = (Catch("snapshot", "accounts", "profile"), Catch("snapshot", "accounts", "signature"))
            judged = expect_catch(request, variant, "team project, accounts", "run once, COPY_ON_WRITE", catches)
            with pytest.raises(AssertionError) as caught:
                oracle.round("updated beside them")
            assert not (wrong := judged(caught.value)), f"{variant}: {wrong}"
            return
        oracle.round("updated beside them")
        mutator.delete("accounts", key)
        oracle.round("deleted by its key alone")
        oracle.verify_history()


FUZZ_SEED = 25  # the job's default settings; its first examples draw from every table, the second from all three


def test_the_fuzzer_plays_its_examples_on_the_team_tables(request, team, spark, tmp_path):
    """The fuzzer draws from the project's own tables (a composite text-and-integer key, a partitioned table,
    dates and decimals at their edges, columns added and widened) and the oracle passes every example; the rows
    they leave are deleted after, through the source."""
    with job_on_a_new_lake(request, team, spark, **fuzz.job_mode(FUZZ_SEED)) as (pipeline, mutator, oracle):
        oracle.track([spec.table for spec in pipeline.config.tables])
        played = []
        fuzzer = fuzz.Fuzzer(pipeline, oracle, mutator, FUZZ_SEED, tmp_path, played.append)
        failure = fuzzer.run(fuzz.Budget(examples=3))
        assert failure is None, f"example {failure.number}: {failure.error}\n{fuzz.sequence(failure.raw)}"
        drawn = " ".join(played)
        assert fuzzer.examples == 3 and all(table in drawn for table in fuzzer.sources), played
        fuzzer.clear()
