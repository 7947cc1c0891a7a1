"""Bad input that needs no running sandbox fails fast with a message that names the cause, and touches no existing
data: a scratch sandbox (its own state directory and free ports) with a port taken, without Java, with its databases
down, given a wrong download; a Maven artifact that does not resolve. `make test` runs these beside the end-to-end run
(tests/full_suite.py); bad input to the running sandbox: test_bad_input.py."""

from __future__ import annotations

import os
import socket
import sys

import pytest

from sandbox.errors import SandboxError
from sandbox.stack import jvm
from tests.e2e.scratch_sandbox import nothing_runs, run_up, sandbox_command, scratch_sandbox_env

pytestmark = pytest.mark.e2e


def test_port_in_use_fails_fast_naming_port_and_process(tmp_path, sandbox_settings):
    keep = tmp_path / "state" / "data" / "postgres" / "precious.txt"
    keep.parent.mkdir(parents=True)
    keep.write_text("loaded data")
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        scratch_env = scratch_sandbox_env(tmp_path, sandbox_settings, SANDBOX_POSTGRES_PORT=str(port))
        result = run_up(scratch_env)
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 1
    assert f"port {port} (postgres) is in use by pid {os.getpid()}" in output
    assert "SANDBOX_POSTGRES_PORT" in output, "the message says how to pick another port"
    assert keep.read_text() == "loaded data"
    assert nothing_runs(scratch_env, sandbox_settings.backend)


def test_missing_java_is_named(tmp_path, sandbox_settings):
    # The native backend runs Kafka, Connect and Apicurio on the host's Java (a Docker host can choose it too).
    env = scratch_sandbox_env(tmp_path, sandbox_settings, PATH=os.path.dirname(sys.executable),
                              SANDBOX_BACKEND="native")
    env.pop("JAVA_HOME", None)
    result = run_up(env)
    output = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 1
    assert "Java was not found" in output and "openjdk-17" in output
    assert nothing_runs(env, "native")


def test_unresolvable_maven_artifact_is_named(tmp_path):
    with pytest.raises(SandboxError) as failure:
        jvm.resolve_jvm_artifacts(tmp_path / "jvm", overrides={"debezium.version": "0.0.0.NoSuchRelease"})
    message = str(failure.value)
    assert "io.debezium:debezium-connector-postgres:tar.gz:plugin:0.0.0.NoSuchRelease" in message
    assert not (tmp_path / "jvm").exists(), "a failed resolution leaves no half-filled layout"


@pytest.mark.parametrize("command", [("load",), ("mutate", "delete", "date", '{"dateid": 1}'),
                                     ("mutate", "update", "category", '{"catid": 1}', '{"catname": "x"}')])
def test_load_and_mutate_with_the_databases_down_say_which_and_what_to_do(tmp_path, sandbox_settings, command):
    env = scratch_sandbox_env(tmp_path, sandbox_settings)  # nothing listens on its ports
    code, output = sandbox_command(env, *command)
    assert code == 1 and "Traceback" not in output, output
    assert "cannot connect to" in output and "sandbox up" in output, output
    assert not (tmp_path / "state" / "journal.jsonl").exists() or \
        not (tmp_path / "state" / "journal.jsonl").read_text().strip(), "nothing journaled"


@pytest.mark.parametrize("body", [b"<html>not found</html>", "a zip without TICKIT"])
def test_download_of_something_other_than_the_tickit_zip_says_so(tmp_path, sandbox_settings, body):
    import http.server
    import io
    import threading
    import zipfile

    if isinstance(body, str):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("readme.txt", "not the sample")
        body = buffer.getvalue()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = scratch_sandbox_env(tmp_path, sandbox_settings,
                                  SANDBOX_TICKIT_URL=f"http://127.0.0.1:{server.server_port}/tickitdb.zip")
        code, output = sandbox_command(env, "load", "--download")
    finally:
        server.shutdown()
    assert code == 1 and "Traceback" not in output, output
    assert ("did not send a zip file" in output or "is not TICKIT" in output) and "sandbox load" in output, output
    assert not (tmp_path / "state" / "tickit" / "real").exists(), "nothing kept of a wrong download"
