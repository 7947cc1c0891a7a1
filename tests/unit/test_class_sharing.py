"""The services' class archives: recorded by a JVM as it exits, kept only when a JVM maps them whole, then shared by
every later start of that service on the machine; new jars need a new archive."""

import os
import subprocess
import zipfile

from cdc_sandbox.config import Settings
from cdc_sandbox.stack import class_sharing, jvm
from cdc_sandbox.stack.class_sharing import ServiceArchive
from cdc_sandbox.stack.services.apicurio import Apicurio


def settings_in(tmp_path) -> Settings:
    return Settings.load({**os.environ, "SANDBOX_STATE_DIR": str(tmp_path / "state"),
                          "SANDBOX_TOOLS_DIR": str(tmp_path / "tools")})


def a_jar(path):
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    return path


def run_jvm(options: list[str], classpath: str) -> None:
    """A JVM that starts and exits, as a service's would under SIGTERM."""
    subprocess.run([jvm.java_binary(), *options, "-cp", classpath, "-version"], check=True, capture_output=True)


def test_a_service_records_its_archive_and_every_later_start_maps_it(tmp_path):
    settings = settings_in(tmp_path)
    classpath = str(a_jar(tmp_path / "server.jar"))
    archive = ServiceArchive(settings, "kafka", classpath)

    recording_options = archive.java_options()
    assert recording_options == [f"-XX:ArchiveClassesAtExit={archive.recording}"]
    run_jvm(recording_options, classpath)
    assert archive.keep_recording(), "a JVM maps the recording"
    assert archive.path.exists() and not archive.recording.exists()
    assert archive.path.is_relative_to(settings.tools_dir), "shared by every sandbox on the machine"

    again = ServiceArchive(settings, "kafka", classpath)
    assert again.java_options() == [f"-XX:SharedArchiveFile={archive.path}"]
    run_jvm(again.java_options(), classpath)  # the JVM starts from it
    assert not again.keep_recording(), "nothing recorded while an archive exists"


def test_a_recording_cut_short_is_refused_and_the_next_start_records_again(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = settings_in(tmp_path)
    classpath = str(a_jar(tmp_path / "server.jar"))
    archive = ServiceArchive(settings, "connect", classpath)
    run_jvm(archive.java_options(), classpath)
    whole = archive.recording.read_bytes()
    archive.recording.write_bytes(whole[: len(whole) // 2])  # the JVM killed while writing it

    assert not archive.keep_recording()
    assert not archive.path.exists() and not archive.recording.exists()
    assert not list(tmp_path.glob("hs_err_pid*")), "the checking JVM's crash report is not left behind"
    assert archive.java_options() == [f"-XX:ArchiveClassesAtExit={archive.recording}"]


def test_new_jars_or_another_service_need_an_archive_of_their_own(tmp_path):
    settings = settings_in(tmp_path)
    jar = a_jar(tmp_path / "server.jar")
    before = ServiceArchive(settings, "kafka", f"{tmp_path}/*").path
    assert ServiceArchive(settings, "connect", f"{tmp_path}/*").path != before
    jar.write_bytes(jar.read_bytes() + b"\0")
    assert ServiceArchive(settings, "kafka", f"{tmp_path}/*").path != before


def test_the_classpath_jars_are_read_as_the_java_launcher_expands_them(tmp_path):
    (tmp_path / "lib").mkdir()
    jars = [a_jar(tmp_path / "lib" / name) for name in ("b.jar", "a.jar")]
    (tmp_path / "lib" / "notes.txt").write_text("not a jar")
    conf = tmp_path / "conf"
    conf.mkdir()
    classpath = os.pathsep.join([f"{tmp_path / 'lib'}/*", str(conf), str(tmp_path / "extra.jar")])
    assert class_sharing.classpath_jars(classpath) == [*sorted(jars), tmp_path / "extra.jar"]


def test_a_tools_directory_that_cannot_take_the_archive_does_not_fail_the_stop(tmp_path):
    settings = settings_in(tmp_path)
    classpath = str(a_jar(tmp_path / "server.jar"))
    archive = ServiceArchive(settings, "apicurio", classpath)
    run_jvm(archive.java_options(), classpath)
    (settings.tools_dir / "class-archives").parent.mkdir(parents=True)
    (settings.tools_dir / "class-archives").write_text("a file where the directory should be")

    assert not archive.keep_recording()
    assert not archive.recording.exists(), "the recording is dropped; the next start records again"


def test_stopping_a_service_that_recorded_nothing_does_not_need_its_jars(tmp_path):
    """`sandbox down` must stop a service whose jars went missing meanwhile (a cleaned tools directory)."""
    settings = settings_in(tmp_path)
    registry = Apicurio(settings)  # its runner jar is not in this tools directory
    server = subprocess.Popen(["sleep", "60"])
    registry.pid_file.parent.mkdir(parents=True, exist_ok=True)
    registry.pid_file.write_text(str(server.pid))

    assert registry.stop()
    assert server.wait(10) is not None
