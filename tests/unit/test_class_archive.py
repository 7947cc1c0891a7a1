"""The Spark driver's class archive: recorded once, used when it matches this JDK and these jars, never half-written."""

import os

from sandbox.config import Settings
from sandbox.harness import class_archive
from spark_jobs.job_config import JobConfig


def settings_in(tmp_path) -> Settings:
    return Settings.load({**os.environ, "SANDBOX_STATE_DIR": str(tmp_path / "state")})


def config_with(jar) -> JobConfig:
    return JobConfig(kafka_bootstrap="k:9092", registry_url="http://r", lake="s3a://l", tables=(), jars=(str(jar),))


def test_first_run_records_then_later_runs_share(tmp_path):
    settings, jar = settings_in(tmp_path), tmp_path / "a.jar"
    jar.write_bytes(b"classes")
    config = config_with(jar)

    assert class_archive.java_options(settings, config, record=False) == ("", None)
    option, recording = class_archive.java_options(settings, config, record=True)
    assert option == f"-XX:ArchiveClassesAtExit={recording}" and not recording.name.endswith(".jsa")
    assert class_archive.java_options(settings, config, record=False) == ("", None), "a recording is not an archive"

    recording.write_bytes(b"archive")  # what the JVM writes as it exits
    class_archive.keep_recording(recording)
    archive = class_archive.archive_path(settings, config)
    assert class_archive.java_options(settings, config, record=True) == (f"-XX:SharedArchiveFile={archive}", None)


def test_a_changed_jar_needs_a_new_archive(tmp_path):
    settings, jar = settings_in(tmp_path), tmp_path / "a.jar"
    jar.write_bytes(b"classes")
    before = class_archive.archive_path(settings, config_with(jar))
    jar.write_bytes(b"other classes")
    assert class_archive.archive_path(settings, config_with(jar)) != before
