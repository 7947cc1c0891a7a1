"""Figures for the Hudi job (printed by `make bench`, never asserted).

- initial load: the job on a fresh lake processes every change event in Kafka (full TICKIT and its history) into
  the seven silver tables; events/s and seconds;
- latency: with the job in continuous mode, single-row updates one after another; for each, the time from the
  source commit to the completion of the Hudi commit whose recorded source position covers it (p50, p95), and
  where that time goes, phase by phase, from the job's own batch summaries and the table's timeline: printed as a
  table and drawn as a stacked bar chart (`reports/bench/job-latency-phases.png`);
- the job's peak resident memory (the Spark driver JVM's VmHWM);
- the initial load and the latency again with the job on the sandbox's Spark cluster, and the resident memory of
  its master and workers while idle.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random
import statistics
import time
from pathlib import Path

from cdc_sandbox.bench.results import REPORTS, Results
from cdc_sandbox.config import Settings
from cdc_sandbox.spark_jobs.lake_layout import delete_prefix
from cdc_sandbox.harness.running.pipeline import Pipeline
from cdc_sandbox.harness.running.timeline import Commit
from cdc_sandbox.sources.mutations import Change, Mutator
from cdc_sandbox.stack.services.localstack import sandbox_s3
from cdc_sandbox.wait import wait_until

LATENCY_CHANGES = 40
CLUSTER_LATENCY_CHANGES = 20
TABLE = "category"
CHART = REPORTS / "job-latency-phases.png"
PHASES = [  # (name, what it covers)
    ("capture", "source commit -> Kafka (Debezium)"),
    ("to batch", "Kafka -> micro-batch start (trigger interval, offsets)"),
    ("read", "micro-batch read and cached"),
    ("decode", "schemas fetched, Avro decode planned"),
    ("prepare", "source position, in-batch reduction"),
    ("hudi start", "upsert call -> commit instant (write client set-up)"),
    ("hudi write", "instant -> commit completed (index lookup, file writes, commit)"),
]


@dataclasses.dataclass(frozen=True)
class Where:
    """Where the job ran, as a figure's key and as its label say it."""

    key: str
    label: str


LOCAL = Where("job", "job")
PARALLEL = ("bronze", "bronze Parquet write, beside decode, the quarantine check and the upserts")


def instant_time(instant: str) -> dt.datetime:
    return dt.datetime.strptime(instant, "%Y%m%d%H%M%S%f").replace(tzinfo=dt.timezone.utc)


def epoch(instant: str) -> float:
    return instant_time(instant).timestamp()


def initial_load(pipe: Pipeline) -> tuple[float, int]:
    started = time.monotonic()
    summaries = pipe.run_once()
    events = sum(t.get("rows", 0) for s in summaries for t in s.get("tables", {}).values())
    return time.monotonic() - started, events


@dataclasses.dataclass
class Probe:
    change: Change
    commit: Commit


def probes(pipe: Pipeline, settings: Settings, trigger_seconds: float, changes: int = LATENCY_CHANGES) -> list[Probe]:
    pipe.config = dataclasses.replace(pipe.config, trigger_seconds=trigger_seconds)
    query = pipe.job.start(pipe.spark, pipe.config, False, pipe.reports.append)
    mutator = Mutator(settings)
    rng = random.Random(99)
    results = []
    try:
        for n in range(changes):
            # A change arrives at any point of the trigger's cycle. Issued as soon as the previous commit is seen,
            # every probe would meet the cycle at the same phase, and all would measure the same wait.
            time.sleep(rng.uniform(0, trigger_seconds))
            row = mutator.sample_row(TABLE, rng)
            change = mutator.update(TABLE, {"catid": row["catid"]}, {"catdesc": f"latency probe {n} {time.time()}"})
            commit = wait_until(
                lambda: next((c for c in pipe.timeline(TABLE)
                              if (c.max_source_position or 0) >= change.position["lsn_from"]), None),
                120, f"the Hudi commit holding change {change.seq}", interval=0.1)
            results.append(Probe(change, commit))
    finally:
        query.stop()
    return results


def latency(probe: Probe) -> float:
    return epoch(probe.commit.completed) - dt.datetime.fromisoformat(probe.change.at).timestamp()


def phases(probe: Probe, summaries: list[dict]) -> dict[str, float] | None:
    """Seconds per phase of one change's way into silver; None if its batch held other changes too."""
    batch = next((s for s in summaries if TABLE in s.get("tables", {})
                  and s["tables"][TABLE].get("max_source_position", 0) >= probe.change.position["lsn_from"]), None)
    if batch is None or batch["tables"][TABLE]["rows"] != 1:
        return None
    table = batch["tables"][TABLE]
    committed = dt.datetime.fromisoformat(probe.change.at).timestamp()
    requested, completed = epoch(probe.commit.instant), epoch(probe.commit.completed)
    upsert_started = table["upsert_ended_at"] - table["seconds"]["upsert"]
    return {
        "capture": table["kafka_timestamp_max"] - committed,
        "to batch": batch["started_at"] - table["kafka_timestamp_max"],
        "read": batch["phases"].get("read", 0.0),
        "decode": batch["phases"].get("decode", 0.0),
        "prepare": table["seconds"]["prepare"],
        "hudi start": requested - upsert_started,
        "hudi write": completed - requested,
        "bronze": batch["phases"].get("bronze", 0.0),
    }


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[int(fraction * (len(ordered) - 1))]


def draw(breakdowns: list[dict[str, float]], path: Path = CHART) -> Path:
    """The median of each phase stacked from the source commit; bronze as a bar of its own where it runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    medians = {name: statistics.median(b[name] for b in breakdowns) for name in [n for n, _ in PHASES] + ["bronze"]}
    fig, ax = plt.subplots(figsize=(10, 3.2))
    colors = iter(plt.cm.tab10.colors)
    left = bronze_start = 0.0
    for name, _ in PHASES:
        ax.barh(["critical path"], [medians[name]], left=left, color=next(colors), label=f"{name} {medians[name]:.2f} s")
        if name == "decode":
            bronze_start = left
        left += medians[name]
    ax.barh(["in parallel"], [medians["bronze"]], left=bronze_start, color=next(colors),
            label=f"bronze {medians['bronze']:.2f} s")
    ax.set_xlabel("seconds from the source commit (medians)")
    ax.set_title(f"A single-row change on {TABLE} into silver: {len(breakdowns)} changes, phase by phase")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=4, fontsize=8, frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def peak_memory_mb(pipe: Pipeline) -> float:
    pid = pipe.spark.sparkContext._gateway.proc.pid
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def report(settings: Settings, results: Results, trigger_seconds: float = 1.0) -> None:
    pipe = Pipeline.start(settings, lake=_bench_lake(settings, "job"))
    try:
        measured = _load_and_latency(pipe, settings, results, trigger_seconds, LOCAL)
        summaries = [json.loads(line) for line in pipe.reports]
        breakdowns = [b for b in (phases(p, summaries) for p in measured) if b]
        if breakdowns:
            print_phases(breakdowns, results)
            results.say(f"phases drawn: {draw(breakdowns)}")
        peak = peak_memory_mb(pipe)
        results.add("The job", "job.peak_rss", "the job's peak resident memory (driver JVM)", peak, "MiB",
                    f"job peak resident memory (driver JVM): {peak:.0f} MiB")
        _on_the_cluster(pipe, settings, results, trigger_seconds)
    finally:
        pipe.stop()
        delete_prefix(sandbox_s3(settings), pipe.config.lake)  # every restart would restore it


def _bench_lake(settings: Settings, name: str) -> str:
    return f"s3a://{settings.topology.lake_bucket}/bench-{name}-{int(time.time())}"


def _load_and_latency(pipe: Pipeline, settings: Settings, results: Results, trigger_seconds: float, where: Where,
                      changes: int = LATENCY_CHANGES) -> list[Probe]:
    seconds, events = initial_load(pipe)
    results.add("The job", f"{where.key}.backlog.seconds", f"{where.label}: TICKIT's backlog into 7 silver tables",
                seconds, "s", f"{where.label} initial load into 7 silver tables: {events} rows in {seconds:.1f} s "
                f"({events / seconds:,.0f} rows/s)")
    measured = probes(pipe, settings, trigger_seconds, changes)
    values = [latency(p) for p in measured]
    p50, p95 = statistics.median(values), percentile(values, 0.95)
    results.add("The job", f"{where.key}.latency.p50", f"{where.label}: source commit -> Hudi commit, p50", p50, "s")
    results.add("The job", f"{where.key}.latency.p95", f"{where.label}: source commit -> Hudi commit, p95", p95, "s",
                f"{where.label}: source commit -> Hudi commit, continuous mode ({trigger_seconds:g} s trigger), "
                f"{len(values)} changes: p50 {p50:.2f} s, p95 {p95:.2f} s, max {max(values):.2f} s")
    return measured


def _on_the_cluster(local: Pipeline, settings: Settings, results: Results, trigger_seconds: float) -> None:
    """The same figures with the job submitted to the sandbox's Spark cluster (started for them if it is down), and
    what its master and workers hold resident while idle."""
    from cdc_sandbox.harness.running import sandbox_job, job_adapters
    from cdc_sandbox.stack import process
    from cdc_sandbox.stack.backends import native
    from cdc_sandbox.stack.services import spark_cluster

    started = native.start_optional(settings, spark_cluster.CLUSTER, lambda *_: None)
    daemons = [cls(settings) for phase in native.OPTIONAL[spark_cluster.CLUSTER] for cls in phase]
    try:
        resident = {daemon.name: process.resident_memory_mb(daemon.pid()) for daemon in daemons}
        each = ", ".join(f"{name} {mb:.0f} MiB" for name, mb in resident.items())
        for name, mb in resident.items():
            results.add("The job", f"cluster.rss.{name}", f"Spark cluster: {name} resident, idle", mb, "MiB")
        results.add("The job", "cluster.rss.total", "Spark cluster: master and workers resident, idle",
                    sum(resident.values()), "MiB",
                    f"Spark cluster resident memory, idle: {each}; total {sum(resident.values()):.0f} MiB")
        master = spark_cluster.master_url(settings)
        pipe = Pipeline(settings, sandbox_job.job_config(settings, lake=_bench_lake(settings, "cluster")), local.spark,
                        owns_session=False, job=job_adapters.builtin_submitted(master))
        try:
            _load_and_latency(pipe, settings, results, trigger_seconds, Where("cluster", f"on the cluster ({master})"),
                              changes=CLUSTER_LATENCY_CHANGES)
        finally:
            delete_prefix(sandbox_s3(settings), pipe.config.lake)
    finally:
        for daemon in reversed(started):
            daemon.stop()


def print_phases(breakdowns: list[dict[str, float]], results: Results) -> None:
    results.say(f"where a change's time goes ({len(breakdowns)} single-change batches), seconds:")
    results.say(f"  {'phase':<12} {'p50':>6} {'p95':>6}  what")
    for name, what in [*PHASES, PARALLEL]:
        values = [b[name] for b in breakdowns]
        median = statistics.median(values)
        results.add("Where a change's time goes", f"phase.{name}", f"{name}: {what} (p50)", median, "s",
                    f"  {name:<12} {median:>6.2f} {percentile(values, 0.95):>6.2f}  {what}")
