"""`make bench`: figures about the running stack, printed, never asserted.

- time from `up` (nothing to install) to every service and connector ready, after a `down`;
- resident memory of each service once idle;
- disk used by the state directory and by the resolved jars;
- full TICKIT generated and bulk-loaded into empty tables of all sources (in `_bench` schemas/databases);
- Debezium's initial snapshot of those seven tables into Kafka, by temporary connectors (rows/s);
- the job's latency per change (`job_latency`), and `sandbox query sale` as a user runs it;
- `sandbox record` and `sandbox replay` of 100,000 messages (`archives`);
- the cost of a verdict: core-seconds and wall time of a Spark session, an oracle round, a scenario in each job mode,
  a broken variant caught and a replay (`verdict_cost`);
- the S3 requests a commit makes, by operation, with the job's Hudi settings and with Hudi's defaults
  (`s3_requests`).

`python -m cdc_sandbox.bench SECTION...` prints some sections alone (stack, sources, cost, s3, job, query, archives),
and `catalogue`, run only when named: the whole incident catalogue on the example team project (`catalogue_cost`).

Every figure is also kept (`results`): written to `reports/bench/` as JSON and a chart, and rendered into the
documentation's benchmarks page.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cdc_sandbox.bench import archives, catalogue_cost, job_latency, s3_requests, snapshot, verdict_cost
from cdc_sandbox.bench.results import Results, machine, publish, write
from cdc_sandbox.config import Settings
from cdc_sandbox.sources import tickit
from cdc_sandbox.stack import backends, jvm, process
from cdc_sandbox.stack.backends import native

console = Console()
PROJECT_ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS_PAGE = PROJECT_ROOT / "docs" / "operations" / "benchmarks.md"


def disk_usage_mb(path: Path) -> float:
    # Allocated blocks, not apparent sizes: Kafka preallocates sparse index files.
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20


def restart_seconds(settings: Settings) -> float:
    backend = backends.of(settings)
    backend.down(settings, lambda *_: None)
    started = time.monotonic()
    backend.up(settings, lambda *_: None, skip_install=True)
    return time.monotonic() - started


def memory_table(settings: Settings, results: Results) -> Table:
    table = Table(title="resident memory, idle")
    table.add_column("service")
    table.add_column("RSS MiB", justify="right")
    total = 0.0
    if settings.backend == "compose":
        table.caption = "the compose backend's containers: `docker stats`"
        return table
    for svc in native.all_services(settings):
        pid = svc.pid()
        rss = process.resident_memory_mb(pid) if pid else 0.0
        total += rss
        results.add("Idle stack", f"rss.{svc.name}", f"{svc.name} resident, idle", rss, "MiB")
        table.add_row(svc.name, f"{rss:.0f}")
    results.add("Idle stack", "rss.total", "all services resident, idle", total, "MiB")
    table.add_row("[bold]total[/bold]", f"[bold]{total:.0f}[/bold]")
    return table


def load_seconds(settings: Settings) -> tuple[float, int]:
    snapshot.drop_namespaces(settings)
    started = time.monotonic()
    results = tickit.load(settings, tickit.GeneratedRows(seed=0, scale=1.0), namespace_suffix=snapshot.SUFFIX)
    return time.monotonic() - started, sum(r.rows for r in results)


def query_seconds(table: str = "sale", runs: int = 5) -> list[float] | None:
    """Wall seconds of `sandbox query TABLE` (20 rows through hudi-rs, as a user types it), each run a new process;
    None when the sandbox's own lake has no such table yet."""
    times = []
    for _ in range(runs):
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "cdc_sandbox", "query", table], capture_output=True, text=True)
        if done.returncode != 0:
            return None
        times.append(time.monotonic() - started)
    return sorted(times)


def stack_figures(settings: Settings, results: Results) -> None:
    seconds = restart_seconds(settings)
    results.add("Stack", "up.seconds", "down, then up to every service and connector ready", seconds, "s",
                f"down, then up to all services and connectors ready: [bold]{seconds:.1f} s[/bold]")
    console.print(memory_table(settings, results))
    state, jars = disk_usage_mb(settings.state_dir), disk_usage_mb(jvm.artifacts_dir(settings))
    results.add("Stack", "disk.state", "state directory on disk", state, "MiB")
    results.add("Stack", "disk.jars", "resolved jars on disk", jars, "MiB",
                f"disk: state {settings.state_dir} {state:.0f} MiB; resolved jars {jvm.artifacts_dir(settings)} "
                f"{jars:.0f} MiB")


def source_figures(settings: Settings, results: Results) -> None:
    seconds, rows = load_seconds(settings)
    results.add("Sources", "load.seconds", f"TICKIT generated and loaded into empty tables ({rows:,} rows)", seconds,
                "s", f"TICKIT generated and loaded into empty tables: [bold]{rows} rows in {seconds:.1f} s[/bold] "
                f"({rows / seconds:,.0f} rows/s)")
    try:
        seconds = snapshot.snapshot_seconds(settings, rows)
        results.add("Sources", "snapshot.seconds", f"Debezium's initial snapshot of the seven tables ({rows:,} rows)",
                    seconds, "s", f"Debezium initial snapshot of the seven tables into Kafka: [bold]{rows} rows in "
                    f"{seconds:.1f} s[/bold] ({rows / seconds:,.0f} rows/s)")
    finally:
        snapshot.clean_up(settings)
        snapshot.drop_namespaces(settings)


def query_figures(settings: Settings, results: Results) -> None:
    times = query_seconds()
    if times is None:
        results.say("`sandbox query sale`: the sandbox's lake has no silver sale yet (`sandbox job run` writes it)")
    else:
        median = statistics.median(times)
        results.add("Reading silver", "query.sale.seconds", "`sandbox query sale`, a new process (median)", median,
                    "s", f"`sandbox query sale` (hudi-rs, a new process each): median [bold]{median:.2f} s[/bold] "
                    f"of {len(times)} ({times[0]:.2f}-{times[-1]:.2f} s)")


SECTIONS = {"stack": stack_figures, "sources": source_figures, "cost": verdict_cost.report,
            "s3": s3_requests.report, "job": job_latency.report, "query": query_figures, "archives": archives.report,
            "catalogue": catalogue_cost.report}
OPT_IN = {"catalogue"}  # the whole catalogue takes tens of minutes: run when named


def main(chosen: list[str]) -> None:
    """Every section, or the `chosen` ones alone (printed; the kept figures and the page are written for a whole
    run only)."""
    unknown = [name for name in chosen if name not in SECTIONS]
    if unknown:
        sys.exit(f"unknown section {', '.join(unknown)}: choose from {', '.join(SECTIONS)}")
    settings = Settings.load()
    results = Results(console.print)
    for name, section in SECTIONS.items():
        if name in chosen or (not chosen and name not in OPT_IN):
            section(settings, results)
    if chosen:
        return
    data, chart = write(results.as_json(machine(PROJECT_ROOT)))
    console.print(f"results: {data}, chart: {chart}")
    if BENCHMARKS_PAGE.parent.is_dir():  # a checkout of the sandbox, not an installed package
        publish(data, chart, BENCHMARKS_PAGE)
        console.print(f"page: {BENCHMARKS_PAGE} (commit it with the change it measured)")


if __name__ == "__main__":
    main(sys.argv[1:])
