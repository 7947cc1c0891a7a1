"""Which backend runs the sandbox, and why.

`SANDBOX_BACKEND=native|compose` decides; otherwise the choice `sandbox up` recorded in the state directory;
otherwise compose when a Docker engine answers, native when none does. Asking for compose without an engine is an
error raised before anything is touched.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError

ENGINE_TIMEOUT = 15


@dataclass(frozen=True)
class EngineStatus:
    reachable: bool
    detail: str  # the engine's version, or why it cannot be reached


@dataclass(frozen=True)
class Choice:
    backend: str
    reason: str

    def describe(self) -> str:
        return f"{self.backend} backend ({self.reason})"


def docker_engine(env: dict[str, str] | None = None) -> EngineStatus:
    """Ask the Docker CLI for the engine's version: that honours DOCKER_HOST, contexts and the socket."""
    if not shutil.which("docker"):
        return EngineStatus(False, "no `docker` command on PATH")
    try:
        result = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                                timeout=ENGINE_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return EngineStatus(False, f"`docker info` did not answer within {ENGINE_TIMEOUT} s")
    version = result.stdout.strip()
    if result.returncode == 0 and version:
        return EngineStatus(True, f"Docker engine {version}")
    reason = (result.stderr.strip().splitlines() or ["`docker info` failed"])[-1]
    return EngineStatus(False, reason)


def choose(settings: Settings) -> Choice:
    """The backend for this sandbox; the Docker engine is asked only when the choice depends on it."""
    explicit = settings.env.get("SANDBOX_BACKEND", "").strip().lower()
    if explicit == "native":
        return Choice("native", "SANDBOX_BACKEND=native")
    if explicit == "compose":
        return Choice("compose", f"SANDBOX_BACKEND=compose; {require_engine(settings, 'SANDBOX_BACKEND=compose')}")
    if settings.backend == "native":
        return Choice("native", f"recorded in {settings.state_dir / 'backend'}")
    if settings.backend == "compose":
        where = f"recorded in {settings.state_dir / 'backend'}"
        return Choice("compose", f"{where}; {require_engine(settings, where)}")
    status = docker_engine(settings.env)
    if status.reachable:
        return Choice("compose", f"{status.detail} is reachable")
    return Choice("native", f"no Docker engine reachable: {status.detail}")


def require_engine(settings: Settings, why: str) -> str:
    """The engine's description; a SandboxError saying what to do when none answers."""
    status = docker_engine(settings.env)
    if not status.reachable:
        raise SandboxError(
            f"the compose backend needs a Docker engine, and none is reachable ({status.detail}); "
            f"the compose backend was asked for by {why}",
            "start Docker (or point DOCKER_HOST at an engine), or use the native backend: SANDBOX_BACKEND=native "
            "sandbox up (after a compose sandbox, `sandbox reset` first)",
        )
    return status.detail


def settings_for(choice: Choice, env: dict[str, str] | None = None) -> Settings:
    """Settings with the chosen backend's topology (on compose `crm.user` lives in SQL Server)."""
    return Settings.load(env, backend=choice.backend)
