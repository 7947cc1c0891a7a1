"""The linters the CI-file tests run: actionlint (built from its Go module) and gitlab-ci-local (from npm; it
validates against GitLab's schema), each installed into the user's cache once per machine.

`python -m tests.ci_linters` installs both side by side; `make test` runs it beside `sandbox up` and the Compose
build, so a new machine's installs overlap instead of following one another."""

from __future__ import annotations

import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cdc_sandbox.config import user_cache_dir
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack.install import run_install

ACTIONLINT = "github.com/rhysd/actionlint/cmd/actionlint"
ACTIONLINT_VERSION = "v1.7.12"
# The last release without the native `re2` module: from 4.56 on, npm compiles re2's C++ on a machine that cannot
# download its prebuilt binary (61 s of a new machine's time, against 3 s). Releases after 4.60 need Node 22.
GITLAB_CI_LOCAL_VERSION = "4.55.0"
INSTALL_TIMEOUT = 600
REACHABLE = "check that the Go module proxy and the npm registry are reachable, then run it again"


def actionlint() -> Path:
    binary = user_cache_dir(dict(os.environ)) / f"actionlint-{ACTIONLINT_VERSION}" / "actionlint"
    if not binary.exists():
        go = _tool("go", "Go is needed to build actionlint: install Go 1.21 or later")
        run_install([go, "install", f"{ACTIONLINT}@{ACTIONLINT_VERSION}"], "building actionlint", REACHABLE,
                    env={**os.environ, "GOBIN": str(binary.parent)}, timeout=INSTALL_TIMEOUT)
    return binary


def gitlab_ci_local() -> Path:
    prefix = user_cache_dir(dict(os.environ)) / f"gitlab-ci-local-{GITLAB_CI_LOCAL_VERSION}"
    binary = prefix / "node_modules" / ".bin" / "gitlab-ci-local"
    if not binary.exists():
        npm = _tool("npm", "npm (Node.js 20 or later) is needed to install gitlab-ci-local")
        run_install([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--silent",
                     f"gitlab-ci-local@{GITLAB_CI_LOCAL_VERSION}"], "installing gitlab-ci-local from npm", REACHABLE,
                    timeout=INSTALL_TIMEOUT)
    return binary


def _tool(name: str, missing: str) -> str:
    found = shutil.which(name)
    if not found:
        raise SandboxError(missing, f"install it and put `{name}` on the PATH")
    return found


def _timed(install) -> str:
    started = time.monotonic()
    binary = install()
    return f"{binary} ({time.monotonic() - started:.1f} s)"


def main() -> int:
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(_timed, install)
                   for name, install in (("actionlint", actionlint), ("gitlab-ci-local", gitlab_ci_local))}
        failed = False
        for name, future in futures.items():
            try:
                print(f"{name}: {future.result()}")
            except SandboxError as exc:
                print(f"error: {exc}", file=sys.stderr)
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
