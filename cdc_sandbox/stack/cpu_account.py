"""Where the CPU goes: core-seconds by kind of process (each sandbox service, Spark drivers, the harness), read from
the process table, for a whole run (`CpuAccount`) and between two moments of it (`CpuAccount.totals`).

A process's CPU time is read while it lives, so a process that exits between two readings loses what it spent
since the last one: the account reads every `interval` seconds, and at each `totals()`.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import psutil

from cdc_sandbox.stack.process import SERVICE_MARK

# A process seen as a shell or as `env` may yet `exec` what it starts (spark-submit, a service's start script): it is
# named again at each read until it is something else.
LAUNCHERS = {"bash", "sh", "dash", "env"}

SPARK_MAIN_CLASSES = {  # a JVM's main class -> its kind
    "org.apache.spark.deploy.SparkSubmit": "spark driver",
    "org.apache.spark.executor.CoarseGrainedExecutorBackend": "spark executor",
    "org.apache.spark.deploy.master.Master": "spark master",
    "org.apache.spark.deploy.worker.Worker": "spark worker",
}


def kind(process: psutil.Process) -> str:
    """A sandbox service by its name (a server's children too: Postgres's backends write their title over their
    environment); a Spark JVM by its part; a Python process by what it runs."""
    try:
        service = _service(process)
        if service:
            return service
        command = process.cmdline()
    except psutil.Error:
        return "gone"
    program = Path(command[0]).name if command else process.name()
    if program == "java":
        return next((name for main, name in SPARK_MAIN_CLASSES.items() if main in command), "other java")
    if program.startswith("python"):
        text = " ".join(command)
        if "pyspark" in text or "pyspark.daemon" in text or "spark_jobs" in text:
            return "spark python"
        return "pytest" if "pytest" in text else "python"
    return program


def _service(process: psutil.Process) -> str | None:
    for member in (process, *process.parents()):
        try:
            service = member.environ().get(SERVICE_MARK)
        except psutil.Error:
            continue
        if service:
            return service
    return None


@dataclass
class _Seen:
    kind: str
    first: float  # its CPU seconds when first read: 0 for one started since the account began
    last: float
    before_start: bool


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


@dataclass
class CpuAccount:
    """Core-seconds by kind of process since `start()`, of the processes `ours` accepts (every process unless
    given). Reads the process table every `interval` seconds on a thread of its own."""

    interval: float = 1.0
    ours: Callable[[psutil.Process], bool] | None = None  # asked once per process
    _at_start: dict = field(default_factory=dict)  # each process's CPU seconds when the account began
    _seen: dict = field(default_factory=dict)
    _not_ours: set = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> "CpuAccount":
        self._read(at_start=True)
        self._thread = threading.Thread(target=self._every_interval, name="cpu-account", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, float]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return self.totals()

    def totals(self) -> dict[str, float]:
        """Core-seconds by kind so far (read from the process table now)."""
        self._read()
        spent = Counter()
        for seen in self._seen.values():
            spent[seen.kind] += seen.last - seen.first
        return dict(spent)

    def started(self) -> Counter:
        """How many processes of each kind started since `start()` (those that lived to be read)."""
        return Counter(seen.kind for seen in self._seen.values() if not seen.before_start)

    def scope_changed(self) -> None:
        """`ours` may now accept processes it refused (its answer is otherwise kept)."""
        with self._lock:
            self._not_ours.clear()

    def _every_interval(self) -> None:
        while not self._stop.wait(self.interval):
            self._read()

    def _read(self, at_start: bool = False) -> None:
        with self._lock:
            for process in psutil.process_iter():
                try:
                    identity, seconds = (process.pid, process.create_time()), _cpu_seconds(process)
                except psutil.Error:
                    continue
                if at_start:
                    self._at_start[identity] = seconds
                seen = self._seen.get(identity)
                if seen is None:
                    if identity in self._not_ours or not self._is_ours(process):
                        self._not_ours.add(identity)
                        continue
                    self._seen[identity] = seen = _Seen(kind(process), self._at_start.get(identity, 0.0), seconds,
                                                        before_start=identity in self._at_start)
                elif seen.kind in LAUNCHERS:
                    seen.kind = kind(process)
                seen.last = max(seen.last, seconds)

    def _is_ours(self, process: psutil.Process) -> bool:
        try:
            return self.ours is None or bool(self.ours(process))
        except psutil.Error:
            return False


def own_and_services(state_dirs: list[Path]):
    """`CpuAccount.ours` for a pytest run: its own process and what it starts, and the sandbox services whose
    state is under one of `state_dirs` (a list the run adds to; other runs on the same stack use them too)."""
    me = os.getpid()

    def ours(process: psutil.Process) -> bool:
        if process.pid == me or any(parent.pid == me for parent in process.parents()):
            return True
        try:
            cwd = Path(process.cwd())
        except psutil.Error:
            return False
        return any(cwd == d or d in cwd.parents for d in state_dirs) and _service(process) is not None

    return ours


def spent_between(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: after[name] - before.get(name, 0.0) for name in after if after[name] > before.get(name, 0.0)}


def by_cost(totals: dict[str, float]) -> str:
    """"spark driver 1,234, kafka 210, ..." (core-seconds, largest first, those under half a second left out)."""
    shown = sorted(((k, v) for k, v in totals.items() if v >= 0.5), key=lambda item: -item[1])
    return ", ".join(f"{name} {seconds:,.0f}" for name, seconds in shown) or "none"


def busy_seconds() -> float:
    """CPU seconds this machine's cores have spent on anything but idling, since it started."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


@dataclass(frozen=True)
class Cost:
    """What a piece of work cost the machine: wall seconds, core-seconds busy (every process's, the kernel's too),
    and core-seconds by kind of process."""

    wall: float
    busy: float
    by_kind: dict[str, float]

    def __str__(self) -> str:
        return f"{self.busy:,.1f} core-s in {self.wall:,.1f} s ({by_cost(self.by_kind)})"


def measure(work: Callable[[], object]) -> tuple[object, Cost]:
    """Run `work()`; returns what it returned and its `Cost` (read on a machine doing nothing else)."""
    account, busy, started = CpuAccount(interval=0.5).start(), busy_seconds(), time.monotonic()
    try:
        result = work()
    finally:
        by_kind = account.stop()
    return result, Cost(time.monotonic() - started, busy_seconds() - busy, by_kind)
