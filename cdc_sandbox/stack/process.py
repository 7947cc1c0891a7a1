"""Starting, finding and stopping the native server processes.

Each server is started detached (its own session, output to `<state>/logs/<service>.log`) so it outlives the
command that started it; its pid goes to `<state>/run/<service>.pid`. Readiness is a real check of the service
(a query, an HTTP endpoint), polled through mirakuru until it answers or the process dies.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Callable
from pathlib import Path

import psutil
from mirakuru import Executor
from mirakuru.base import ENV_UUID
from mirakuru.exceptions import ProcessExitedWithError, TimeoutExpired

from cdc_sandbox.errors import SandboxError

# Every server's environment names its service: a sandbox's processes are found by it even before a pid file is
# written (`orphans.reap`).
SERVICE_MARK = "SANDBOX_SERVICE"


class DetachedExecutor(Executor):
    """A mirakuru executor for a server that must keep running after this Python process exits."""

    def __init__(self, command: list[str], ready: Callable[[], bool], log_file: Path, **kwargs):
        self._ready = ready
        self._log = open(log_file, "ab")  # noqa: SIM115 - handed to the child, closed after start
        super().__init__(command, stdin=None, stdout=self._log, stderr=self._log, **kwargs)

    @property
    def envvars(self) -> dict[str, str]:
        env = super().envvars
        # mirakuru marks children to kill them when Python exits; these servers must survive the CLI.
        env.pop(ENV_UUID, None)
        return env

    def pre_start_check(self) -> bool:
        return False

    def after_start_check(self) -> bool:
        return quietly(self._ready)


def start_detached(
    service: str,
    command: list[str],
    ready: Callable[[], bool],
    log_file: Path,
    pid_file: Path,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 180,
    user: str | None = None,
) -> int:
    """Start a server, wait until `ready()` answers True, record its pid. Fails with the log's tail."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    popen_kwargs = run_as_kwargs(user)
    executor = DetachedExecutor(
        command, ready, log_file, envvars={**(env or {}), SERVICE_MARK: service}, cwd=str(cwd) if cwd else None,
        timeout=timeout, sleep=0.25, popen_kwargs=popen_kwargs,
    )
    try:
        executor.start()
    except ProcessExitedWithError as exc:
        raise SandboxError(
            f"{service} exited during start-up (exit code {exc.exit_code}). Last lines of {log_file}:\n{tail(log_file)}",
            f"fix the cause above, then run `sandbox up` again (full log: sandbox logs {service})",
        ) from None
    except TimeoutExpired:
        executor.kill()
        raise SandboxError(
            f"{service} did not become ready within {timeout:.0f} s and was stopped. Last lines of {log_file}:\n"
            f"{tail(log_file)}",
            f"see `sandbox logs {service}`; `sandbox down` stops the services that did start",
        ) from None
    finally:
        executor._log.close()
    pid = executor.process.pid
    pid_file.write_text(f"{pid}\n")
    executor.process = None  # detach: mirakuru kills the process of an executor that is garbage-collected
    return pid


def run_as_kwargs(user: str | None) -> dict:
    """subprocess arguments that run a child as `user` with that account's own groups (not root's)."""
    if not user:
        return {}
    account = pwd.getpwnam(user)
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def running_pid(pid_file: Path) -> int | None:
    """The pid recorded in `pid_file` if that process is still alive (and not a zombie)."""
    try:
        pid = int(pid_file.read_text().strip())
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return pid
    except (FileNotFoundError, ValueError, psutil.NoSuchProcess):
        return None


def stop_process(pid_file: Path, timeout: float = 60) -> bool:
    """Stop the process recorded in `pid_file` (SIGTERM, then SIGKILL after `timeout`). True if one was running."""
    pid = running_pid(pid_file)
    if pid is None:
        pid_file.unlink(missing_ok=True)
        return False
    members = family(psutil.Process(pid))
    for member in members:
        quietly(member.terminate)
    kill_all(wait_gone(members, timeout), 10)
    pid_file.unlink(missing_ok=True)
    return True


def family(proc: psutil.Process) -> list[psutil.Process]:
    """The process and every process under it (those that are still there)."""
    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return [proc]


def kill_all(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """SIGKILL each process (one that has ended meanwhile is where the kill would put it); those not yet reaped after
    `timeout`. A killed process counts only once it is reaped: until then its pid still answers as alive, and a server
    started again on the same data (Postgres, through postmaster.pid) refuses to start beside it."""
    for proc in procs:
        quietly(proc.kill)
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return alive


def wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait until every process has exited; those still alive after `timeout`. A server started by an earlier
    command is no child of ours: once it exits it stays a zombie until init reaps it, which some inits (containers,
    CI runners) do only every few seconds, so a zombie counts as gone (psutil.wait_procs waits for the reaping)."""
    deadline = time.monotonic() + timeout
    alive = list(procs)
    while alive:
        alive = [proc for proc in alive if not exited(proc)]
        if not alive or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return alive


def exited(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def process_on_port(port: int) -> str | None:
    """Describe the process listening on a TCP port ("pid 123: postgres -D ..."), or None if the port is free."""
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
            return describe_pid(conn.pid)
    return None


def describe_pid(pid: int | None) -> str:
    if pid is None:
        return "a process this user cannot see"
    try:
        cmd = " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        cmd = "?"
    return f"pid {pid}: {cmd[:160]}"


def resident_memory_mb(pid: int) -> float:
    """Resident memory of a process and its children, in MiB."""
    proc = psutil.Process(pid)
    total = proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))
    return total / 2**20


def tail(path: Path, lines: int = 25) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 16384))
            return "\n".join(handle.read().decode(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def quietly(func: Callable):
    try:
        return func()
    except Exception:  # readiness probes and signals to vanished processes fail routinely
        return False
