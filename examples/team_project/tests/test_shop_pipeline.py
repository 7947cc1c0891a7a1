"""The shop's own tables under the sandbox's oracle: every kind of change on each table, a partition change, and
every commit checked through both readers (time travel, incremental reads, the latest snapshot)."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pytest

TABLES = ["accounts", "shipments", "ledger_entries"]
# New York's clocks go back an hour on 1 November 2026: 05:30 and 06:30 UTC both show 01:30 there. On 8 March they
# skip from 02:00 to 03:00. A job that passes a time through the session zone's wall clock gets the first wrong.
SECOND_ONE_THIRTY = dt.datetime(2026, 11, 1, 6, 30, 0, 250000, tzinfo=dt.timezone.utc)
CLOCKS_SKIP = dt.datetime(2026, 3, 8, 7, 0, tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module", autouse=True)
def job_session_in_new_york(spark):
    """The job's Spark session runs in New York's zone, as the team's cluster does: silver must hold the same
    instants as in UTC."""
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    yield
    spark.conf.set("spark.sql.session.timeZone", before)


def test_every_kind_of_change_on_the_shops_tables_reaches_silver_exactly(oracle, mutator):
    oracle.track(TABLES, label="load")
    changes = mutator.random_batch(24, seed=1, tables=TABLES)
    assert {c.kind for c in changes} == {"insert", "update", "delete"}
    oracle.round("random changes")
    rng = random.Random(7)

    account = mutator.sample_row("accounts", rng)
    key = {"tenant": account["tenant"], "account_no": account["account_no"]}
    mutator.update("accounts", key, {"balance": Decimal("123456789012345678.0123456789"),
                                     "risk_score": Decimal("-0.000000000000000000001"),
                                     "opened_at": dt.datetime(2026, 3, 29, 1, 30, tzinfo=dt.timezone.utc)})
    mutator.update_key("accounts", key, {"tenant": key["tenant"][:14] + "-moved", "account_no": -key["account_no"]})

    shipment = mutator.sample_row("shipments", rng)
    moved_to = _another_day(shipment["ship_date"])  # another partition of silver
    mutator.update("shipments", {"shipment_id": shipment["shipment_id"]},
                   {"ship_date": moved_to, "updated_at": SECOND_ONE_THIRTY})
    other = mutator.sample_row("shipments", rng)
    mutator.update("shipments", {"shipment_id": other["shipment_id"]}, {"updated_at": CLOCKS_SKIP})

    entry = mutator.sample_row("ledger_entries", rng)
    mutator.update("ledger_entries", {"entry_id": entry["entry_id"]},
                   {"region": "apac" if entry["region"] != "apac" else "emea", "currency": "JPY", "amount": Decimal("99999999999999999999.9999999999")})
    top = {"entry_id": 2**64 - 1}  # the largest bigint unsigned
    if mutator.read_row("ledger_entries", top) is None:
        mutator.insert("ledger_entries", entry | top | {"checksum": b"\x00\xff" * 16})
    else:
        mutator.update("ledger_entries", top, {"checksum": b"\x00\xff" * 16})
    oracle.round("key update, partition changes, the types' edges, New York's clock changes")

    mutator.delete("shipments", {"shipment_id": shipment["shipment_id"]})
    mutator.delete("ledger_entries", {"entry_id": 2**64 - 1})
    oracle.round("deletes after partition changes")
    oracle.verify_history()


def _another_day(day: dt.date) -> dt.date:
    """45 days later, or earlier for the generated rows' last dates."""
    return day + dt.timedelta(days=45 if day.year < 9999 else -45)
