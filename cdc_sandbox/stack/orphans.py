"""Ephemeral sandboxes whose pytest session died (SIGKILL, a cancelled CI job) are found and stopped later.

A native ephemeral sandbox registers itself in the user's cache (`cdc-sandbox/ephemeral/<name>.json`) before its
first service starts: its state directory and the pytest process that owns it, with that process's start time so
that a recycled pid is never mistaken for it. A session that ends removes its entry; the next ephemeral session
and `sandbox status` stop the processes of every entry whose owner is gone. Those are found by what they are, not
by a list kept as they start (a session killed during `up` never finished one): servers the sandbox started
(their environment names their service) running in the state directory or under it (Postgres and MariaDB move
into their data directories). That works after pytest pruned the directory too: the kernel still reports it.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import psutil

from cdc_sandbox.config import Settings, user_cache_dir
from cdc_sandbox.stack.process import SERVICE_MARK, family, kill_all

STOP_TIMEOUT = 20
REMOVED = " (deleted)"  # how Linux shows a working directory that no longer exists


def registry() -> Path:
    return user_cache_dir(os.environ) / "ephemeral"


def register(settings: Settings) -> Path:
    """Record an ephemeral sandbox as owned by this process; call it before starting any of its services."""
    entry = registry() / f"{uuid.uuid4().hex}.json"
    entry.parent.mkdir(parents=True, exist_ok=True)
    partial = entry.with_suffix(".partial")  # a reaper reading the registry never sees half an entry
    partial.write_text(json.dumps({"state_dir": str(settings.state_dir.resolve()), "owner": _identity(os.getpid())}))
    partial.rename(entry)
    return entry


def reap() -> list[str]:
    """Stop what every dead session left running; one line per sandbox stopped."""
    stopped = []
    for entry in sorted(registry().glob("*.json")):
        recorded = json.loads(entry.read_text())
        if _alive(recorded["owner"]) is not None:
            continue
        left = servers_in(Path(recorded["state_dir"]))
        names = sorted({name for _, name in left})
        _stop([process for process, _ in left])
        entry.unlink(missing_ok=True)
        if left:
            stopped.append(f"stopped an ephemeral sandbox left by dead pytest session {recorded['owner']['pid']} "
                           f"({', '.join(names)}; state was {recorded['state_dir']})")
    return stopped


def servers_in(state_dir: Path) -> list[tuple[psutil.Process, str]]:
    """The sandbox servers (with their service's name) whose working directory is `state_dir` or under it."""
    found = []
    for process in psutil.process_iter():
        try:
            cwd = Path(process.cwd().removesuffix(REMOVED))
            if cwd == state_dir or state_dir in cwd.parents:
                service = process.environ().get(SERVICE_MARK)
                if service is not None:
                    found.append((process, service))
        except psutil.Error:
            continue
    return found


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
    kill_all([member for server in processes for member in family(server)], STOP_TIMEOUT)
