"""Figures for the Hudi job (printed by `make bench`, never asserted).

- initial load: the job on a fresh lake processes every change event in Kafka (full TICKIT and its history) into
  the seven silver tables; events/s and seconds;
- latency: with the job in continuous mode, 50 single-row updates one after another; for each, the time from the
  source commit to the completion of the Hudi commit whose recorded source position covers it (p50, p95);
- the job's peak resident memory (the Spark driver JVM's VmHWM).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
import statistics
import time

from sandbox.config import Settings
from sandbox.mutations import Mutator
from sandbox.pipeline import Pipeline
from sandbox.wait import wait_until

LATENCY_CHANGES = 50


def instant_time(instant: str) -> dt.datetime:
    return dt.datetime.strptime(instant, "%Y%m%d%H%M%S%f").replace(tzinfo=dt.timezone.utc)


def initial_load(pipe: Pipeline) -> tuple[float, int]:
    started = time.monotonic()
    summaries = pipe.run_once()
    events = sum(t.get("rows", 0) for s in summaries for t in s.get("tables", {}).values())
    return time.monotonic() - started, events


def latencies(pipe: Pipeline, settings: Settings, table: str = "category") -> list[float]:
    from spark_jobs import cdc_hudi_job

    pipe.config = dataclasses.replace(pipe.config, trigger_seconds=1.0)
    query = cdc_hudi_job.start(pipe.spark, pipe.config, once=False, report=pipe.reports.append)
    mutator = Mutator(settings)
    rng = random.Random(99)
    results = []
    try:
        for n in range(LATENCY_CHANGES):
            row = mutator.sample_row(table, rng)
            change = mutator.update(table, {"catid": row["catid"]}, {"catdesc": f"latency probe {n} {time.time()}"})
            committed_at = dt.datetime.fromisoformat(change.at)
            commit = wait_until(
                lambda: next((c for c in pipe.timeline(table)
                              if (c.max_source_position or 0) >= change.position["lsn_from"]), None),
                120, f"the Hudi commit holding change {change.seq}", interval=0.1)
            results.append((instant_time(commit.completed) - committed_at).total_seconds())
    finally:
        query.stop()
    return results


def peak_memory_mb(pipe: Pipeline) -> float:
    pid = pipe.spark.sparkContext._gateway.proc.pid
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def report(settings: Settings, print_line) -> None:
    pipe = Pipeline.start(settings, lake=f"s3a://{settings.topology.lake_bucket}/bench-job-{int(time.time())}")
    try:
        seconds, events = initial_load(pipe)
        print_line(f"job initial load into 7 silver tables: {events} rows in {seconds:.1f} s "
                   f"({events / seconds:,.0f} rows/s)")
        values = sorted(latencies(pipe, settings))
        p95 = values[int(0.95 * (len(values) - 1))]
        print_line(f"source commit -> Hudi commit, continuous mode, {len(values)} changes: "
                   f"p50 {statistics.median(values):.2f} s, p95 {p95:.2f} s, max {values[-1]:.2f} s")
        print_line(f"job peak resident memory (driver JVM): {peak_memory_mb(pipe):.0f} MiB")
    finally:
        pipe.stop()
