"""Dates before 1582 and times before 1900 (sentinels real databases hold) reach silver so that a Spark session
without the sandbox's settings, like a team's own, reads them as written: snapshot, time travel and incremental, on
Copy-on-Write and on Merge-on-Read before and after compaction. Spark refuses such values from Parquet files that
do not say which Spark wrote them (READ_ANCIENT_DATETIME)."""

from __future__ import annotations

import datetime as dt

import pytest

from cdc_sandbox.spark_jobs import queries

pytestmark = [pytest.mark.e2e]

ANCIENT = {9901: dt.date(1000, 1, 1), 9902: dt.date(1582, 10, 4), 9903: dt.date(1899, 12, 30)}
MODES = {"copy-on-write": {}, "merge-on-read": {"table_type": "MERGE_ON_READ", "compaction_delta_commits": 2}}


@pytest.fixture
def team_session(spark):
    """A session as a team's own: Spark's defaults for the Parquet calendar (the sandbox's settings undone)."""
    team = spark.newSession()
    for setting in ("spark.sql.parquet.datetimeRebaseModeInRead", "spark.sql.parquet.datetimeRebaseModeInWrite"):
        team.conf.unset(setting)
    assert team.conf.get("spark.sql.parquet.datetimeRebaseModeInRead") == "EXCEPTION"
    return team


@pytest.mark.parametrize("mode", list(MODES))
def test_a_plain_spark_session_reads_ancient_dates_as_written(mode, team_session, pipeline_factory, oracle_factory,
                                                              mutator):
    pipeline = pipeline_factory(only=["date"], **MODES[mode])
    oracle = oracle_factory(pipeline)
    for dateid in ANCIENT:
        if mutator.read_row("date", {"dateid": dateid}):
            mutator.delete("date", {"dateid": dateid})
    oracle.track(["date"])
    for dateid, day in ANCIENT.items():
        mutator.insert("date", {"dateid": dateid, "caldate": day, "day": "MO", "week": 1, "month": "JAN",
                                "qtr": "1", "year": day.year, "holiday": False})
    first = oracle.round("inserted")["date"].commit
    for dateid in ANCIENT:
        mutator.update("date", {"dateid": dateid}, {"holiday": True})
    oracle.round("updated")  # Merge-on-Read: the second delta commit, then compaction
    path = pipeline.config.silver_path("date")
    reads = {"snapshot": queries.snapshot(team_session, path),
             "time travel": queries.time_travel(team_session, path, first.instant),
             "incremental": queries.incremental(team_session, path, "000")}
    for name, frame in reads.items():
        rows = frame.filter(frame.dateid.isin(list(ANCIENT))).select("dateid", "caldate").collect()
        assert {row.dateid: row.caldate for row in rows} == ANCIENT, name
