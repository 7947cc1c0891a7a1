"""The quick tier (`make check`): one oracle round over every table on a lake branched from the baseline: a change
on each table, then snapshot, time travel and incremental reads through Spark and hudi-rs."""

from __future__ import annotations

import pytest

from cdc_sandbox.tickit_data import TABLE_NAMES

pytestmark = [pytest.mark.e2e, pytest.mark.smoke]

ALL_TABLES = list(TABLE_NAMES)


def test_a_round_on_every_table_reaches_silver_exactly(oracle, mutator):
    oracle.track(ALL_TABLES, label="smoke baseline")
    for table in ALL_TABLES:
        mutator.touch(table)
    recorded = oracle.round("smoke round")
    assert set(recorded) == set(ALL_TABLES)
    oracle.verify_history()
