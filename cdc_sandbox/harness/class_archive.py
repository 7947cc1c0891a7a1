"""Java class-data sharing for the Spark driver: a JVM maps the classes an earlier job run loaded, already parsed and
verified, instead of reading them from some 300 jars again (docs/reference/job-settings.md).

The first `sandbox job run` on a machine records the archive as it exits; later driver JVMs (job runs and the
harness's Spark sessions, of every sandbox and checkout on the machine) start from it. The JVM refuses an archive
whose recorded jar paths are gone, as a removed checkout's virtualenv is: the drivers run from a Spark home in the
machine's tools directory (`spark_home`), whose jars keep one path. The archive's name carries a fingerprint of the
JDK and every jar on the driver's classpath, so a new JDK or a changed jar records a new one instead of meeting an
archive the JVM would refuse.
"""

from __future__ import annotations

import os

from cdc_sandbox.config import Settings
from cdc_sandbox.spark_jobs.job_config import JobConfig
from cdc_sandbox.stack.class_sharing import ServiceArchive
from cdc_sandbox.stack.spark_home import spark_home

ARCHIVE_NAME = "spark-driver"


def driver_classpath(settings: Settings, config: JobConfig) -> str:
    """The driver's classpath as Spark's launcher composes it: the job's jars, the conf directory, Spark's jars."""
    home = spark_home(settings)
    return os.pathsep.join([*config.jars, f"{home}/conf/", f"{home}/jars/*"])


def archive(settings: Settings, config: JobConfig) -> ServiceArchive:
    return ServiceArchive(settings, ARCHIVE_NAME, driver_classpath(settings, config))


def java_options(settings: Settings, config: JobConfig, record: bool) -> tuple[str, ServiceArchive | None]:
    """The driver's option for the archive, and the archive to keep once its JVM exited well (None when nothing is
    recorded). A recording is written in the sandbox's state and moved into the tools directory by `keep_recording`."""
    driver = archive(settings, config)
    if driver.path.exists():
        return f"-XX:SharedArchiveFile={driver.path}", None
    if not record:
        return "", None
    (option,) = driver.java_options()
    return option, driver


def keep_recording(recorded: ServiceArchive | None) -> None:
    if recorded is not None:
        recorded.keep_recording()
