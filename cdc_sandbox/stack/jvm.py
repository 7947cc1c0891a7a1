"""The JVM side: finding Java, and resolving every pinned jar through Maven into `<tools>/jvm`.

`cdc_sandbox/stack/jvm/pom.xml` pins Kafka, Kafka Connect, the Debezium connector plugins, the Apicurio Registry server and
converter, the jars the Spark job needs and the Hive Metastore. Maven resolves them with the machine's own settings
and `~/.m2` cache; the result is laid out one directory per service (`kafka/`, `connect-plugins/`, `apicurio/`,
`spark/`, `metastore/`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from cdc_sandbox.config import Settings
from cdc_sandbox.errors import SandboxError

POM_DIR = Path(__file__).resolve().parent / "jvm"
MIN_JAVA = 17

# The services serve a few clients on a machine whose cores the job needs: the serial collector has no concurrent
# threads, and the quick compiler alone stops compiling once a service is warm, so a restarted stack is back sooner.
# Connect keeps the optimizing compiler, since Debezium converts every row of a bulk load.
QUIET_SERVICE_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
BUSY_SERVICE_OPTIONS = ("-XX:+UseSerialGC",)


def service_options(busy: bool = False) -> list[str]:
    """JVM options of a service: `QUIET_SERVICE_OPTIONS`, or `BUSY_SERVICE_OPTIONS` for one that converts every
    change (Connect)."""
    return list(BUSY_SERVICE_OPTIONS if busy else QUIET_SERVICE_OPTIONS)


def java_binary() -> str:
    """The `java` to run servers with: `$JAVA_HOME/bin/java`, else the one on PATH; must be Java 17 or newer."""
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home and (Path(home) / "bin" / "java").exists() else shutil.which("java")
    if not candidate:
        raise SandboxError(
            "Java was not found (no $JAVA_HOME/bin/java, no `java` on PATH); Kafka, Connect and Apicurio need Java 17+",
            "install it, e.g. `apt-get install openjdk-17-jdk-headless`, or set JAVA_HOME",
        )
    major = java_major_version(candidate)
    if major < MIN_JAVA:
        raise SandboxError(f"{candidate} is Java {major}; Java {MIN_JAVA} or newer is needed",
                           "install openjdk-17-jdk-headless (or newer) and put it first on PATH or in JAVA_HOME")
    return candidate


@functools.cache  # asked once per JVM start and check; a binary's version does not change under a running sandbox
def java_major_version(java: str) -> int:
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        raise SandboxError(f"cannot tell the version of {java}: {out.strip()[:200]}", "check the Java installation")
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 else major  # "1.8" style


def maven_binary() -> str:
    mvn = shutil.which("mvn")
    if not mvn:
        raise SandboxError("Maven (`mvn`) was not found on PATH; it resolves the sandbox's pinned jars",
                           "install it, e.g. `apt-get install maven`")
    return mvn


def pom_fingerprint(pom_dir: Path = POM_DIR) -> str:
    """The poms and the Java sources Maven builds with them: a change to either lays the artifacts out anew."""
    digest = hashlib.sha256()
    for pom in sorted([*pom_dir.rglob("pom.xml"), *pom_dir.rglob("*.java")]):
        digest.update(pom.relative_to(pom_dir).as_posix().encode())
        digest.update(pom.read_bytes())
    return digest.hexdigest()


def artifacts_dir(settings: Settings) -> Path:
    """The resolved jars, in a directory named after the poms they came from (shared by the machine's checkouts)."""
    return settings.tools_dir / f"jvm-{_pom_build()}"


@functools.cache
def _pom_build() -> str:
    return pom_fingerprint()[:12]


def jvm_artifacts_current(jvm_dir: Path) -> bool:
    stamp = jvm_dir / ".pom-sha256"
    return stamp.exists() and stamp.read_text().strip() == pom_fingerprint()


def resolve_jvm_artifacts(jvm_dir: Path, overrides: dict[str, str] | None = None, pom_dir: Path = POM_DIR) -> None:
    """Run Maven on the pinned pom and lay the result out in `jvm_dir` (replaced whole, so no stale jar stays).

    `overrides` sets pom properties (`-Dkey=value`), e.g. a version, for trying another release.
    """
    java_binary()
    staging = jvm_dir.with_name(jvm_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    log = jvm_dir.with_name("maven.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [maven_binary(), "-B", "-ntp", "-f", str(pom_dir / "pom.xml"), "package", f"-Dsandbox.jvm.dir={staging}"]
    command += [f"-D{key}={value}" for key, value in (overrides or {}).items()]
    result = subprocess.run(command, capture_output=True, text=True)
    log.write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise maven_failure(result.stdout + result.stderr, log)
    sync_plugin_manifests(staging, log)
    if not overrides:
        (staging / ".pom-sha256").write_text(pom_fingerprint(pom_dir) + "\n")
    shutil.rmtree(jvm_dir, ignore_errors=True)
    staging.rename(jvm_dir)


def sync_plugin_manifests(jvm_dir: Path, log: Path) -> None:
    """Give every Connect plugin ServiceLoader manifests (Kafka's `connect-plugin-path sync-manifests`), so the worker
    finds them with `plugin.discovery=service_load` instead of scanning every class: its start 11.4 s -> 2.7 s.
    The Debezium connectors ship manifests; the Apicurio converter gets a shim jar with its own."""
    command = [java_binary(), "-cp", classpath(jvm_dir / "kafka"), "org.apache.kafka.tools.ConnectPluginPath",
               "sync-manifests", "--plugin-path", str(jvm_dir / "connect-plugins")]
    result = subprocess.run(command, capture_output=True, text=True)
    with open(log, "a") as out:
        out.write(result.stdout + result.stderr)
    if result.returncode != 0:
        raise SandboxError(f"writing the Connect plugins' manifests failed (exit {result.returncode})",
                           f"see {log}; `sandbox up` tries again")


def maven_failure(output: str, log: Path) -> SandboxError:
    """Turn Maven's output into an error naming the artifacts it could not resolve."""
    missing = unresolved_artifacts(output)
    if missing:
        return SandboxError(
            "Maven could not resolve: " + ", ".join(missing),
            f"check the version in cdc_sandbox/stack/jvm/pom.xml and that Maven can reach its repository (log: {log})",
        )
    errors = [line for line in output.splitlines() if line.startswith("[ERROR]")][:8]
    return SandboxError("Maven failed:\n" + "\n".join(errors), f"full log: {log}")


_ARTIFACT = r"([\w.\-]+:[\w.\-]+(?::[\w.\-]+){1,3})"


def unresolved_artifacts(output: str) -> list[str]:
    found = re.findall(r"Could not find artifact " + _ARTIFACT, output)
    found += re.findall(r"Failure to find " + _ARTIFACT, output)
    for listing in re.findall(r"The following artifacts could not be resolved: ([^\]]+?)(?::\s*Could|\s*\[|$)", output, re.M):
        found += re.findall(_ARTIFACT, listing)
    return list(dict.fromkeys(a.rstrip(".,") for a in found))


def classpath(directory: Path) -> str:
    if not directory.is_dir():
        raise SandboxError(f"{directory} is missing", "run `sandbox up` (it resolves the jars through Maven)")
    return str(directory / "*")


def jar_version(directory: Path, artifact: str) -> str:
    for jar in directory.glob(f"{artifact}-*.jar"):
        return jar.stem[len(artifact) + 1 :]
    return "?"
