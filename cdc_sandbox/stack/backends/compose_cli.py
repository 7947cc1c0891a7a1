"""The Docker Compose command the compose backend runs, and a pinned Compose built from source for machines
without one.

`docker compose` (the CLI plugin) is used when it is installed. Otherwise, and always for validating the compose
files, the sandbox uses Compose v2 built from its Go module (`github.com/docker/compose/v2`, pinned below) into
the user's cache (`$XDG_CACHE_HOME` or `~/.cache`, `cdc-sandbox/compose-<version>/`), so every clone on the machine
shares one build, as every clone shares Maven's `~/.m2`: the module proxy is reachable where Docker's downloads are not, and `compose config` needs no
Docker engine. The build needs Go 1.21+ (it fetches the Go toolchain Compose asks for through the same proxy).

`python -m cdc_sandbox.stack.backends.compose_cli` installs it (idempotent: a second run only checks the version).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cdc_sandbox.config import Settings, user_cache_dir
from cdc_sandbox.errors import SandboxError

COMPOSE_MODULE = "github.com/docker/compose/v2"
COMPOSE_VERSION = "v2.40.3"
VERSION_VARIABLE = f"{COMPOSE_MODULE}/internal.Version"


def binary_path(settings: Settings) -> Path:
    return user_cache_dir(os.environ) / f"compose-{COMPOSE_VERSION}" / "docker-compose"


def installed_version(binary: Path) -> str | None:
    if not binary.is_file():
        return None
    result = subprocess.run([str(binary), "version", "--short"], capture_output=True, text=True)
    return result.stdout.strip().lstrip("v") if result.returncode == 0 else None


def ensure_compose_cli(settings: Settings) -> bool:
    """Build the pinned Compose into the user's cache unless it is there. True if it was built."""
    binary = binary_path(settings)
    if installed_version(binary) == COMPOSE_VERSION.lstrip("v"):
        return False
    go = shutil.which("go")
    if not go:
        raise SandboxError("Go is not installed, and it is needed to build Docker Compose from source",
                           "install Go 1.21 or later (https://go.dev/dl, or your distribution's package), "
                           "or install the Docker Compose plugin")
    binary.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="compose-src-", dir=binary.parent) as scratch:
        source = _download_module(go, Path(scratch))
        partial = binary.with_suffix(".partial")
        _go(go, ["build", "-trimpath", "-ldflags", f"-s -w -X {VERSION_VARIABLE}={COMPOSE_VERSION}",
                 "-o", str(partial), "./cmd"], cwd=source, what="building Docker Compose")
        partial.replace(binary)
    return True


def _download_module(go: str, scratch: Path) -> Path:
    """The module's source, copied out of the read-only module cache: it is built as a main module, because its
    go.mod has `exclude` directives that `go install module@version` refuses."""
    result = _go(go, ["mod", "download", "-json", f"{COMPOSE_MODULE}@{COMPOSE_VERSION}"], cwd=scratch,
                 what=f"downloading {COMPOSE_MODULE}@{COMPOSE_VERSION} from the Go module proxy")
    cached = Path(json.loads(result.stdout)["Dir"])
    source = scratch / "src"
    shutil.copytree(cached, source)
    for path in [source, *source.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    return source


def _go(go: str, args: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GOFLAGS": (os.environ.get("GOFLAGS", "") + " -mod=mod").strip(), "CGO_ENABLED": "0"}
    result = subprocess.run([go, *args], cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SandboxError(f"{what} failed:\n{(result.stdout + result.stderr).strip()[-1500:]}",
                           "check that the Go module proxy is reachable (GOPROXY) and Go is 1.21 or later")
    return result


def docker_plugin_available() -> bool:
    if not shutil.which("docker"):
        return False
    result = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
    return result.returncode == 0


def compose_command(settings: Settings) -> list[str]:
    """`docker compose` if the plugin is there, else the pinned build (installed on first use)."""
    if docker_plugin_available():
        return ["docker", "compose"]
    ensure_compose_cli(settings)
    return [str(binary_path(settings))]


def docker_command_for_testcontainers(settings: Settings) -> str:
    """testcontainers runs `<docker> compose ...`: the docker CLI when it has the plugin, else a shim that hands
    the arguments to the pinned build."""
    if docker_plugin_available():
        return "docker"
    ensure_compose_cli(settings)
    shim = settings.tools_dir / "compose" / "docker-shim" / "docker"
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text(f'#!/bin/sh\n[ "$1" = compose ] && shift\nexec "{binary_path(settings)}" "$@"\n')
    shim.chmod(0o755)
    return str(shim)


def main() -> int:
    settings = Settings.load()
    try:
        built = ensure_compose_cli(settings)
    except SandboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"docker compose {COMPOSE_VERSION}: {'built' if built else 'present'} at {binary_path(settings)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
