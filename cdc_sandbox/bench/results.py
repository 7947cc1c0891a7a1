"""What one `make bench` measured: each figure printed as it is taken and kept, then written to
`reports/bench/results.json` with a chart (`reports/bench/figures.svg`), and copied beside the documentation page
that is generated from them (`docs/operations/benchmarks.md`), so the page shows the latest run and git keeps the
history.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

REPORTS = Path("reports") / "bench"  # beside the other reports of the directory `make bench` runs in
RESULTS_FILE = "results.json"
CHART_FILE = "figures.svg"
SPEED_LOOP = 5_000_000
SPEED_SAMPLES = 7  # one timing alone is too noisy to read a run by; their median is steadier


@dataclass(frozen=True)
class Figure:
    """One measured quantity: `key` stays the same from run to run, `label` says what it is."""

    section: str
    key: str
    label: str
    value: float
    unit: str  # "s", "MiB", "rows/s", "events/s" or "count"


@dataclass
class Results:
    """The figures of one run, printed through `echo` as they are added."""

    echo: Callable[[str], None] = print
    figures: list[Figure] = field(default_factory=list)

    def say(self, text: str) -> None:
        self.echo(text)

    def add(self, section: str, key: str, label: str, value: float, unit: str, text: str | None = None) -> None:
        """Keep a figure; print `text` (the figure in a sentence) when given."""
        self.figures.append(Figure(section, key, label, float(value), unit))
        if text is not None:
            self.echo(text)

    def as_json(self, machine: dict) -> dict:
        return {"taken_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "machine": machine,
                "figures": [asdict(f) for f in self.figures]}


def loop_seconds() -> float:
    """Seconds this interpreter takes to add up the numbers below `SPEED_LOOP` one at a time: how fast the machine
    is now, which changes within minutes here, and against which every timing is read."""
    started = time.perf_counter()
    total = 0
    for number in range(SPEED_LOOP):
        total += number
    return time.perf_counter() - started


def machine_speed() -> list[float]:
    return [loop_seconds() for _ in range(SPEED_SAMPLES)]


def machine(project_root: Path) -> dict:
    """The facts a figure is read against: the machine's speed and size, and the commit measured."""
    samples = machine_speed()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=project_root, capture_output=True,
                            text=True).stdout.strip()
    return {"cores": os.cpu_count(), "python": platform.python_version(), "commit": commit or "unknown",
            "loop_seconds": round(statistics.median(samples), 3)}


def write(results: dict, directory: Path = REPORTS) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / RESULTS_FILE
    data.write_text(json.dumps(results, indent=2) + "\n")
    chart = draw(results, directory / CHART_FILE)
    return data, chart


def publish(data: Path, chart: Path, docs_page: Path) -> None:
    """Copy one run's results beside the documentation page and render the page from them."""
    from cdc_sandbox.bench import page

    shutil.copyfile(data, docs_page.with_suffix(".json"))
    shutil.copyfile(chart, docs_page.with_suffix(".svg"))
    docs_page.write_text(page.render(json.loads(data.read_text()), docs_page.with_suffix(".svg").name))


CHARTED_UNITS = {"s": "seconds", "MiB": "MiB resident"}


def draw(results: dict, path: Path) -> Path:
    """One panel per charted unit: each figure of that unit as a bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "cdc-sandbox-bench"  # the same run draws the same file
    panels = [(unit, [f for f in results["figures"] if f["unit"] == unit]) for unit in CHARTED_UNITS]
    panels = [(unit, figures) for unit, figures in panels if figures]
    heights = [max(1.5, 0.32 * len(figures) + 0.8) for _, figures in panels] or [1.5]
    fig, axes = plt.subplots(len(heights), 1, figsize=(10, sum(heights)), gridspec_kw={"height_ratios": heights},
                             squeeze=False)
    for ax, (unit, figures) in zip(axes[:, 0], panels):
        labels = [f["label"] for f in figures][::-1]
        values = [f["value"] for f in figures][::-1]
        ax.barh(labels, values, color="#4c72b0")
        for y, value in enumerate(values):
            ax.annotate(f"{value:,.2f}" if value < 10 else f"{value:,.0f}", (value, y), xytext=(3, 0),
                        textcoords="offset points", va="center", fontsize=7)
        ax.set_xlabel(CHARTED_UNITS[unit])
        ax.tick_params(axis="y", labelsize=7)
    fig.suptitle(f"make bench at {results['machine'].get('commit', '?')} ({results['taken_at']})", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return path
