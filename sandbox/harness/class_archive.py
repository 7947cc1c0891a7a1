"""Java class-data sharing for the Spark driver: a JVM maps the classes an earlier job run loaded, already parsed and
verified, instead of reading them from some 300 jars again (a job run's start 8 s -> 5 s, README "The job's settings").

The first `sandbox job run` records the archive as it exits; later driver JVMs (job runs and the harness's Spark
session) start from it. Its name carries a fingerprint of the JDK and every jar on the driver's classpath, so a new
JDK or a changed jar records a new one instead of meeting an archive the JVM would refuse.
"""

from __future__ import annotations

from pathlib import Path

from sandbox.config import Settings
from sandbox.stack import class_sharing, jvm
from spark_jobs.job_config import JobConfig


def archive_path(settings: Settings, config: JobConfig) -> Path:
    return settings.state_dir / "jvm" / f"spark-driver-{fingerprint(config)}.jsa"


def fingerprint(config: JobConfig) -> str:
    import pyspark

    java = Path(jvm.java_binary()).resolve()
    return class_sharing.fingerprint(
        [java, *sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar")), *map(Path, config.jars)])


def java_options(settings: Settings, config: JobConfig, record: bool) -> tuple[str, Path | None]:
    """The driver's option for the archive, and where a recording will land (None when nothing is recorded).
    A recording is written beside the archive and moved into place by `keep_recording` once its JVM exited well."""
    archive = archive_path(settings, config)
    if archive.exists():
        return f"-XX:SharedArchiveFile={archive}", None
    if not record:
        return "", None
    archive.parent.mkdir(parents=True, exist_ok=True)
    recording = archive.with_suffix(".recording")
    return f"-XX:ArchiveClassesAtExit={recording}", recording


def keep_recording(recording: Path | None) -> None:
    if recording is not None and recording.exists():
        recording.rename(recording.with_suffix(".jsa"))
