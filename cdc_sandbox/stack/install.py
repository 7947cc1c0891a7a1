"""Installing what the native backend needs, each step idempotent (a second run only checks).

- OS packages (PostgreSQL and MariaDB servers): through apt when running as root on Debian/Ubuntu; elsewhere the
  error names the packages to install.
- JVM artifacts: Maven from the pinned pom (`cdc_sandbox.stack.jvm`).
- LocalStack: a virtualenv of its own, because its pins clash with the project's, with the sandbox's S3 journal hook.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError
from cdc_sandbox.stack import jvm

# What provides each server binary on Debian/Ubuntu.
OS_PACKAGES = {"postgres": "postgresql", "mariadbd": "mariadb-server"}

LOCALSTACK_REQUIREMENTS = [
    "localstack-core[runtime]==4.12.0",
    # Newer releases of these break localstack-core 4.12 on Python 3.11.
    "cbor2<5.7",
    "cryptography<44",
    "pyOpenSSL<24.3",
    "service_identity<24.3",
]
S3_JOURNAL_PLUGIN = Path(__file__).parent / "services" / "s3_journal"


def missing_os_packages() -> list[str]:
    missing = []
    if not glob.glob("/usr/lib/postgresql/*/bin/postgres") and not shutil.which("postgres"):
        missing.append(OS_PACKAGES["postgres"])
    if not shutil.which("mariadbd") and not Path("/usr/sbin/mariadbd").exists():
        missing.append(OS_PACKAGES["mariadbd"])
    return missing


def ensure_os_packages(needed_services: set[str]) -> list[str]:
    """Install the database servers that native services need. Returns what was installed."""
    wanted = {"postgres": "postgresql", "mysql": "mariadb-server"}
    missing = [pkg for pkg in missing_os_packages() if any(wanted[s] == pkg for s in needed_services if s in wanted)]
    if not missing:
        return []
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SandboxError(
            "missing OS packages: " + ", ".join(missing),
            "install them (Debian/Ubuntu: `sudo apt-get install -y " + " ".join(missing) + "`; "
            "elsewhere the PostgreSQL 15+ server and MariaDB 10.11+ server), or run `sandbox up` as root",
        )
    _apt_install(missing)
    return missing


def _apt_install(packages: list[str]) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # Keep the packages' maintainer scripts from starting system-wide servers on our ports.
    policy = Path("/usr/sbin/policy-rc.d")
    created_policy = not policy.exists()
    if created_policy:
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
    try:
        for command in (["apt-get", "update", "-q"],
                        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]):
            result = subprocess.run(command, env=env, capture_output=True, text=True)
            if result.returncode != 0:
                raise SandboxError(f"`{' '.join(command)}` failed:\n{result.stderr.strip()[-1500:]}",
                                   "fix apt (network, sources) or install the packages by hand, then run `sandbox up`")
    finally:
        if created_policy:
            policy.unlink(missing_ok=True)


def ensure_jvm_artifacts(settings: Settings) -> bool:
    """Resolve the pinned jars unless the layout already matches the pom. True if Maven ran."""
    if jvm.jvm_artifacts_current(jvm.artifacts_dir(settings)):
        return False
    jvm.resolve_jvm_artifacts(jvm.artifacts_dir(settings))
    return True


def localstack_fingerprint() -> str:
    return hashlib.sha256("\n".join(LOCALSTACK_REQUIREMENTS).encode()).hexdigest()


def localstack_venv(settings: Settings) -> Path:
    """LocalStack's own virtualenv, named after its pinned packages (shared by the machine's checkouts)."""
    return settings.tools_dir / f"localstack-{localstack_fingerprint()[:12]}"


@contextmanager
def tools_lock(settings: Settings):
    """One install at a time into the tools directory every checkout on the machine shares."""
    settings.tools_dir.mkdir(parents=True, exist_ok=True)
    with open(settings.tools_dir / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure_localstack(settings: Settings) -> bool:
    """Create LocalStack's own virtualenv with its pinned packages, once. True if it installed."""
    venv = localstack_venv(settings)
    stamp = venv / ".requirements-sha256"
    fingerprint = localstack_fingerprint()
    if stamp.exists() and stamp.read_text().strip() == fingerprint:
        return False
    shutil.rmtree(venv, ignore_errors=True)
    run_install([sys.executable, "-m", "venv", str(venv)], "creating LocalStack's virtualenv")
    run_install([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *LOCALSTACK_REQUIREMENTS],
         "installing LocalStack from PyPI")
    stamp.write_text(fingerprint + "\n")
    return True


def ensure_s3_journal(settings: Settings) -> bool:
    """Install the S3 journal hook (cdc_sandbox/stack/services/s3_journal) into LocalStack's virtualenv, again whenever its
    files change. True if it installed."""
    stamp = localstack_venv(settings) / ".s3-journal-sha256"
    files = sorted(p for p in S3_JOURNAL_PLUGIN.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    fingerprint = hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()
    if stamp.exists() and stamp.read_text().strip() == fingerprint:
        return False
    with tempfile.TemporaryDirectory() as build:  # a build writes into its source tree: keep the checkout clean
        source = Path(build) / S3_JOURNAL_PLUGIN.name
        shutil.copytree(S3_JOURNAL_PLUGIN, source, ignore=shutil.ignore_patterns("__pycache__"))
        run_install([str(localstack_venv(settings) / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
              "--no-deps", "--force-reinstall", str(source)], "installing the S3 journal into LocalStack")
    stamp.write_text(fingerprint + "\n")
    return True


def run_install(command: list[str], what: str, hint: str = "check that PyPI is reachable, then run `sandbox up` again",
                env: dict | None = None, timeout: float | None = None) -> None:
    """Run an install step; a failure raises `SandboxError` with the end of its output and `hint`."""
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    if result.returncode != 0:
        raise SandboxError(f"{what} failed:\n{(result.stdout + result.stderr).strip()[-1500:]}", hint)
