"""Deliberately broken variants of the Hudi job, to show that the suites fail when the pipeline is wrong.

Each variant patches the in-process job the way a real bug would change it. `SANDBOX_BROKEN_JOB=<variant>` applies
one to a whole pytest run (see the project's conftest.py); `python -m tests.broken_variants` (`make
broken-variants`) runs the oracle suites and the scenarios once per variant and reports which tests caught it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import Window, functions as F

from spark_jobs import cdc_hudi_job, queries

SUITES = ["tests/e2e/test_oracle_suites.py", "tests/e2e/test_property_sequences.py", "fixtures/scenarios"]


def order_by_timestamp(patch: pytest.MonkeyPatch) -> None:
    """Orders changes by the source timestamp alone (as a precombine on `ts_ms` does): ties and a clock that
    steps back pick the wrong change."""
    original_options = cdc_hudi_job.hudi_options

    def options(config, spec, max_position, batch_id):
        return original_options(config, spec, max_position, batch_id) | {
            "hoodie.datasource.write.precombine.field": "__source_ts_ms"}

    def latest_per_key(rows, spec):
        order = Window.partitionBy(*[F.col(k) for k in spec.key]).orderBy(F.desc("__source_ts_ms"))
        return rows.withColumn("_rank", F.row_number().over(order)).filter("_rank = 1").drop("_rank")

    patch.setattr(cdc_hudi_job, "hudi_options", options)
    patch.setattr(cdc_hudi_job, "latest_per_key", latest_per_key)


def drop_deletes(patch: pytest.MonkeyPatch) -> None:
    """Filters delete events out before writing silver."""
    original = cdc_hudi_job.write_silver

    def write_silver(spark, config, spec, changes, batch_id):
        return original(spark, config, spec, changes.filter("__op != 'd'"), batch_id)

    patch.setattr(cdc_hudi_job, "write_silver", write_silver)


def skip_table(patch: pytest.MonkeyPatch, table: str = "venue") -> None:
    """Never writes one table (a topic missing from the job's table list)."""
    original = cdc_hudi_job.write_silver

    def write_silver(spark, config, spec, changes, batch_id):
        return {"rows": 0} if spec.table == table else original(spark, config, spec, changes, batch_id)

    patch.setattr(cdc_hudi_job, "write_silver", write_silver)


def off_by_one_commit(patch: pytest.MonkeyPatch) -> None:
    """The timeline gives each commit the source position of the next one, so time travel to "the commit that
    reached position P" lands one commit early."""
    original = queries.timeline

    def timeline(spark, path):
        commits = original(spark, path)
        shifted = [replace(c, max_source_position=n.max_source_position) for c, n in zip(commits, commits[1:])]
        return shifted + commits[-1:]

    patch.setattr(queries, "timeline", timeline)


def offset_in_key(patch: pytest.MonkeyPatch) -> None:
    """The record key includes the Kafka offset (a key made "unique"): each change of a row lands as a row of its
    own, so silver holds the key several times."""
    original = cdc_hudi_job.hudi_options

    def options(config, spec, max_position, batch_id):
        return original(config, spec, max_position, batch_id) | {
            "hoodie.datasource.write.recordkey.field": ",".join([*spec.key, "_kafka_offset"])}

    patch.setattr(cdc_hudi_job, "hudi_options", options)


def widened_integers(patch: pytest.MonkeyPatch) -> None:
    """Writes every integer column of the source as bigint (a cast to long "to be safe"): the values are right,
    the types are not."""
    original = cdc_hudi_job.write_silver

    def write_silver(spark, config, spec, changes, batch_id):
        source = [f.name for f in changes.schema.fields if f.dataType.typeName() == "integer"
                  and not f.name.startswith("_")]
        widened = changes.select(*[F.col(c).cast("long").alias(c) if c in source else F.col(c)
                                   for c in changes.columns])
        return original(spark, config, spec, widened, batch_id)

    patch.setattr(cdc_hudi_job, "write_silver", write_silver)


def insert_not_upsert(patch: pytest.MonkeyPatch) -> None:
    """Writes silver with Hudi's `insert` instead of `upsert` (no index lookup, no merge): a key changed again lands
    a second time."""
    original = cdc_hudi_job.hudi_options

    def options(config, spec, max_position, batch_id):
        return original(config, spec, max_position, batch_id) | {"hoodie.datasource.write.operation": "insert"}

    patch.setattr(cdc_hudi_job, "hudi_options", options)


def zone_shifted_times(patch: pytest.MonkeyPatch, zone: str = "America/New_York") -> None:
    """Reads the source's UTC timestamps and dates as if they were in a local zone (a session time zone left at
    the machine's): every timestamp moves by hours, and a date to the day before."""
    original = cdc_hudi_job.write_silver

    def write_silver(spark, config, spec, changes, batch_id):
        kinds = {f.name: f.dataType.typeName() for f in changes.schema.fields if not f.name.startswith("_")}
        shifted = changes.select(*[
            F.from_utc_timestamp(c, zone).alias(c) if kinds.get(c) == "timestamp"
            else F.to_date(F.from_utc_timestamp(F.col(c).cast("timestamp"), zone)).alias(c) if kinds.get(c) == "date"
            else F.col(c) for c in changes.columns])
        return original(spark, config, spec, shifted, batch_id)

    patch.setattr(cdc_hudi_job, "write_silver", write_silver)


VARIANTS = {"order-by-timestamp": order_by_timestamp, "drop-deletes": drop_deletes, "skip-table": skip_table,
            "off-by-one-commit": off_by_one_commit, "offset-in-key": offset_in_key,
            "widened-integers": widened_integers, "insert-not-upsert": insert_not_upsert,
            "zone-shifted-times": zone_shifted_times}


def break_job(name: str) -> pytest.MonkeyPatch:
    if name not in VARIANTS:
        raise SystemExit(f"SANDBOX_BROKEN_JOB={name!r} is not a variant; choose one of: {', '.join(VARIANTS)}")
    patch = pytest.MonkeyPatch()
    VARIANTS[name](patch)
    return patch


def failed_tests(junit: Path) -> list[str]:
    failed = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{case.get('classname')}::{case.get('name')}")
    return failed


def main(argv: list[str]) -> int:
    """Run the suites once per variant; print which tests caught it; fail if a variant went uncaught."""
    parser = argparse.ArgumentParser(description="Run the suites against each broken variant of the job.")
    parser.add_argument("variants", nargs="*", help=f"default: all of {', '.join(VARIANTS)}")
    parser.add_argument("--suite", action="append", help=f"test paths (repeatable; default: {' '.join(SUITES)})")
    args = parser.parse_args(argv)
    for name in args.variants:
        if name not in VARIANTS:
            parser.error(f"no variant {name!r}; choose from {', '.join(VARIANTS)}")
    reports = Path("reports/broken-variants")
    reports.mkdir(parents=True, exist_ok=True)
    uncaught = []
    for name in args.variants or list(VARIANTS):
        junit = reports / f"{name}.xml"
        print(f"--- {name}: {VARIANTS[name].__doc__.strip().splitlines()[0]}", flush=True)
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "pytest", *(args.suite or SUITES), "-q", "-p", "no:cacheprovider",
                        "--oracle-timeout", "120", f"--junitxml={junit}", f"--sandbox-summary={reports / name}.txt"],
                       env={**os.environ, "SANDBOX_BROKEN_JOB": name}, stdout=subprocess.DEVNULL)
        caught = failed_tests(junit)
        print(f"{name}: caught by {len(caught)} of {count_tests(junit)} tests in {time.monotonic() - started:.0f} s"
              + "".join(f"\n    {t}" for t in caught), flush=True)
        if not caught:
            uncaught.append(name)
    if uncaught:
        print(f"NOT caught: {', '.join(uncaught)}")
    return 1 if uncaught else 0


def count_tests(junit: Path) -> int:
    return sum(1 for _ in ET.parse(junit).getroot().iter("testcase"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
