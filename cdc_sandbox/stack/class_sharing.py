"""Java class-data sharing for the services' JVMs (Kafka, Connect, Apicurio, the metastore) and the Spark driver
(`driver_java_options`): a JVM maps the classes
an earlier run of the same service loaded, already parsed and verified, instead of reading them from its jars again.

A service started without an archive records one (`-XX:ArchiveClassesAtExit`), which its JVM writes as it exits on
SIGTERM (`sandbox down`, a restart). After the stop, a JVM that must map the recording checks it, and it moves into
the machine's tools directory beside the jars, where every sandbox on the machine finds it. A killed service leaves
no recording (or half of one, which the check refuses) and the next start records again. The archive's name carries
a fingerprint of the JDK and of every jar on the classpath, so new jars record a new archive instead of meeting one
the JVM would refuse.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from cdc_sandbox.config import Settings
from cdc_sandbox.spark_jobs.job_config import JobConfig
from cdc_sandbox.stack import jvm
from cdc_sandbox.stack.spark_home import spark_home


def fingerprint(files: Iterable[Path]) -> str:
    """Short digest of the files' paths, sizes and modification times."""
    digest = hashlib.sha256()
    for file in files:
        stat = file.stat()
        digest.update(f"{file}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def classpath_jars(classpath: str) -> list[Path]:
    """The jars a `-cp` value names, wildcards expanded as the `java` launcher does; directories hold no classes here."""
    jars: list[Path] = []
    for entry in classpath.split(os.pathsep):
        if entry.endswith("*"):
            jars.extend(sorted(Path(entry[:-1]).glob("*.jar")))
        elif entry.endswith(".jar"):
            jars.append(Path(entry))
    return jars


def recording_path(settings: Settings, service: str) -> Path:
    """Where a service's JVM writes the archive it records as it exits."""
    return settings.state_dir / "jvm" / f"{service}.recording.jsa"


class ServiceArchive:
    """One JVM's archive in the machine's tools directory (a service's, or the Spark driver's: `driver_archive`), and
    its recording in the sandbox's state."""

    def __init__(self, settings: Settings, service: str, classpath: str):
        self.settings, self.service, self.classpath = settings, service, classpath
        self.recording = recording_path(settings, service)

    @functools.cached_property
    def path(self) -> Path:
        java = Path(jvm.java_binary()).resolve()
        name = f"{self.service}-{fingerprint([java, *classpath_jars(self.classpath)])}.jsa"
        return self.settings.tools_dir / "class-archives" / name

    def java_options(self) -> list[str]:
        """Map the archive if there is one; otherwise record one at exit (an older, unfinished recording goes)."""
        if self.path.exists():
            return [f"-XX:SharedArchiveFile={self.path}"]
        self.recording.parent.mkdir(parents=True, exist_ok=True)
        self.recording.unlink(missing_ok=True)
        return [f"-XX:ArchiveClassesAtExit={self.recording}"]

    def keep_recording(self) -> bool:
        """Once the service's JVM has exited: move a recording that a JVM maps whole into place. True if kept."""
        if not self.recording.exists():
            return False
        kept = self._maps(self.recording) and self._move_into_place()
        self.recording.unlink(missing_ok=True)
        return kept

    def _move_into_place(self) -> bool:
        """Copy the recording to the tools directory, whole or not at all (another sandbox may start meanwhile). An
        archive only saves time: a tools directory that cannot take it is no reason for a stop to fail."""
        if self.path.exists():
            return True
        partial = self.path.with_suffix(f".{os.getpid()}.part")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.recording, partial)
            os.replace(partial, self.path)
            return True
        except OSError:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
            return False

    def _maps(self, archive: Path) -> bool:
        # A recording cut short makes the checking JVM die of SIGBUS as it reads past the end of the mapped file:
        # that is the refusal, and its crash report would only litter the working directory.
        check = [jvm.java_binary(), "-Xshare:on", "-XX:+VerifySharedSpaces", f"-XX:SharedArchiveFile={archive}",
                 "-XX:ErrorFile=/dev/null", "-cp", self.classpath, "-version"]
        return subprocess.run(check, capture_output=True).returncode == 0


# The Spark driver's archive. The first `sandbox job run` on a machine records it as it exits; later driver JVMs (job
# runs and the harness's Spark sessions, of every sandbox and checkout on the machine) start from it. The JVM refuses
# an archive whose recorded jar paths are gone, as a removed checkout's virtualenv is: the drivers run from a Spark
# home in the machine's tools directory (`spark_home`), whose jars keep one path. The fingerprint in the archive's
# name covers the JDK and every jar on the driver's classpath, so a new JDK or a changed jar records a new archive
# instead of meeting one the JVM would refuse (docs/reference/job-settings.md).
DRIVER_ARCHIVE = "spark-driver"


def driver_classpath(settings: Settings, config: JobConfig) -> str:
    """The driver's classpath as Spark's launcher composes it: the job's jars, the conf directory, Spark's jars."""
    home = spark_home(settings)
    return os.pathsep.join([*config.jars, f"{home}/conf/", f"{home}/jars/*"])


def driver_archive(settings: Settings, config: JobConfig) -> ServiceArchive:
    return ServiceArchive(settings, DRIVER_ARCHIVE, driver_classpath(settings, config))


def driver_java_options(settings: Settings, config: JobConfig, record: bool) -> tuple[str, ServiceArchive | None]:
    """The driver's option for its archive, and the archive to keep once its JVM exited well (None when nothing is
    recorded). A recording is written in the sandbox's state and moved into the tools directory by
    `keep_driver_recording`."""
    driver = driver_archive(settings, config)
    if driver.path.exists():
        return f"-XX:SharedArchiveFile={driver.path}", None
    if not record:
        return "", None
    (option,) = driver.java_options()
    return option, driver


def keep_driver_recording(recorded: ServiceArchive | None) -> None:
    if recorded is not None:
        recorded.keep_recording()
