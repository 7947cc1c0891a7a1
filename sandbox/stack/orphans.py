"""Ephemeral sandboxes whose pytest session died (SIGKILL, a cancelled CI job) are found and stopped later.

A native ephemeral sandbox registers itself in the user's cache (`cdc-sandbox/ephemeral/<name>.json`): the pytest
process that owns it and each service process, every one with its start time so that a recycled pid is never
mistaken for it. A session that ends removes its entry; the next ephemeral session and `sandbox status` stop the
processes of every entry whose owner is gone. The state directory may be gone by then (pytest prunes old temporary
directories), so the entry, not the pid files, says what to stop.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import psutil

from sandbox.config import Settings, user_cache_dir

STOP_TIMEOUT = 20


def registry() -> Path:
    return user_cache_dir(os.environ) / "ephemeral"


def register(settings: Settings, services) -> Path:
    """Record the running services of an ephemeral sandbox as owned by this process."""
    entry = registry() / f"{uuid.uuid4().hex}.json"
    entry.parent.mkdir(parents=True, exist_ok=True)
    processes = [_identity(pid) | {"service": svc.name} for svc in services if (pid := svc.pid()) is not None]
    partial = entry.with_suffix(".partial")  # a reaper reading the registry never sees half an entry
    partial.write_text(json.dumps({"state_dir": str(settings.state_dir), "owner": _identity(os.getpid()),
                                   "processes": processes}))
    partial.rename(entry)
    return entry


def reap() -> list[str]:
    """Stop what every dead session left running; one line per sandbox stopped."""
    stopped = []
    for entry in sorted(registry().glob("*.json")):
        recorded = json.loads(entry.read_text())
        if _alive(recorded["owner"]) is not None:
            continue
        left = [p for p in recorded["processes"] if _alive(p) is not None]
        _stop([_alive(p) for p in left])
        entry.unlink(missing_ok=True)
        if left:
            stopped.append(f"stopped an ephemeral sandbox left by dead pytest session {recorded['owner']['pid']} "
                           f"({', '.join(p['service'] for p in left)}; state was {recorded['state_dir']})")
    return stopped


def _identity(pid: int) -> dict:
    return {"pid": pid, "started": psutil.Process(pid).create_time()}


def _alive(identity: dict) -> psutil.Process | None:
    """The process, if it still runs and is the one recorded (not a later one given the same pid)."""
    try:
        process = psutil.Process(identity["pid"])
        if process.create_time() == identity["started"] and process.status() != psutil.STATUS_ZOMBIE:
            return process
    except psutil.Error:
        pass
    return None


def _stop(processes: list[psutil.Process]) -> None:
    """SIGKILL each process and its children: an ephemeral sandbox's data is thrown away with it, so there is
    nothing to shut down cleanly for (and a Postgres asked politely waits for clients that will never leave)."""
    everything = [q for p in processes for q in [p, *_children(p)]]
    for process in everything:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(everything, timeout=STOP_TIMEOUT)


def _children(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.children(recursive=True)
    except psutil.NoSuchProcess:
        return []
