"""The Spark driver's class archive: recorded once per machine, used when it matches this JDK and these jars, by
drivers launched from the machine's Spark home, whose jar paths outlive any checkout's virtualenv."""

import os
import subprocess
from pathlib import Path

import pyspark

from cdc_sandbox.config import Settings
from cdc_sandbox.stack import class_sharing
from cdc_sandbox.stack.spark_home import spark_home
from cdc_sandbox.spark_jobs.job_config import JobConfig
from cdc_sandbox.stack import jvm


def settings_in(tmp_path) -> Settings:
    return Settings.load({**os.environ, "SANDBOX_STATE_DIR": str(tmp_path / "state"),
                          "SANDBOX_TOOLS_DIR": str(tmp_path / "tools")})


def config_with(jar) -> JobConfig:
    return JobConfig(kafka_bootstrap="k:9092", registry_url="http://r", lake="s3a://l", tables=(), jars=(str(jar),))


def test_the_spark_home_holds_the_installed_pyspark_once_per_machine(tmp_path):
    settings = settings_in(tmp_path)
    home = spark_home(settings)
    installed = Path(pyspark.__file__).parent
    assert home.is_relative_to(settings.tools_dir) and spark_home(settings) == home
    assert sorted(p.name for p in (home / "jars").glob("*.jar")) == sorted(p.name for p in installed.glob("jars/*.jar"))
    core = next((home / "jars").glob("spark-core_*.jar"))
    assert core.stat().st_ino == (installed / "jars" / core.name).stat().st_ino, "hard-linked, not copied"
    assert os.access(home / "bin" / "spark-submit", os.X_OK)
    assert not list(settings.tools_dir.glob("*.part")), "assembled whole, then moved into place"


def test_first_run_records_then_every_later_driver_maps_it(tmp_path):
    settings, jar = settings_in(tmp_path), tmp_path / "a.jar"
    jar.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip: a jar without classes
    config = config_with(jar)

    assert class_sharing.driver_java_options(settings, config, record=False) == ("", None), "only a job run records"
    option, recorded = class_sharing.driver_java_options(settings, config, record=True)
    assert option == f"-XX:ArchiveClassesAtExit={recorded.recording}"
    assert recorded.recording.is_relative_to(settings.state_dir)
    classpath = class_sharing.driver_classpath(settings, config)
    subprocess.run([jvm.java_binary(), option, "-cp", classpath, "-version"], check=True, capture_output=True)
    class_sharing.keep_driver_recording(recorded)

    archive = class_sharing.driver_archive(settings, config).path
    assert archive.exists() and archive.is_relative_to(settings.tools_dir), "shared by every checkout"
    assert class_sharing.driver_java_options(settings, config, record=True) == (f"-XX:SharedArchiveFile={archive}", None)


def test_a_changed_jar_needs_a_new_archive(tmp_path):
    settings, jar = settings_in(tmp_path), tmp_path / "a.jar"
    jar.write_bytes(b"classes")
    before = class_sharing.driver_archive(settings, config_with(jar)).path
    jar.write_bytes(b"other classes")
    assert class_sharing.driver_archive(settings, config_with(jar)).path != before
