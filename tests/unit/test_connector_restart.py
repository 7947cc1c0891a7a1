"""Restarting a failed connector against a real HTTP server that answers as Kafka Connect does: the restart is
accepted before it happens, and the status (read back from a Kafka topic) can say FAILED for a while after."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sandbox.connectors import ConnectClient
from sandbox.errors import SandboxError


def status(connector: str, task: str, trace: str = "") -> dict:
    return {"name": "tickit-postgres", "connector": {"state": connector},
            "tasks": [{"id": 0, "state": task, "trace": trace}]}


class Connect:
    """Serves `/connectors/<name>/status` from `statuses` (one per GET, the last repeated) and takes restarts."""

    def __init__(self):
        self.statuses = [status("RUNNING", "FAILED", "the registry did not answer")]
        self.restarts = 0
        connect = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                current = connect.statuses[0] if len(connect.statuses) == 1 else connect.statuses.pop(0)
                self._answer(200, current)

            def do_POST(self):
                connect.restarts += 1
                self._answer(202, status("RUNNING", "RESTARTING"))

            def _answer(self, code: int, body: dict):
                payload = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.client = ConnectClient(f"http://127.0.0.1:{self.server.server_port}")


@pytest.fixture
def connect():
    served = Connect()
    yield served
    served.server.shutdown()


def test_a_restart_waits_out_the_status_that_still_shows_the_old_failure(connect):
    stale = status("RUNNING", "FAILED", "the registry did not answer")
    connect.statuses = [stale, stale, status("RUNNING", "RESTARTING"), status("RUNNING", "RUNNING")]
    connect.client.restart_failed("tickit-postgres")
    assert connect.client.wait_running("tickit-postgres")["tasks"][0]["state"] == "RUNNING"
    assert connect.restarts == 1


def test_a_task_that_fails_again_after_its_restart_fails_with_its_new_trace(connect):
    connect.statuses = [status("RUNNING", "FAILED", "old"), status("RUNNING", "RESTARTING"),
                        status("RUNNING", "FAILED", "the database is still down")]
    connect.client.restart_failed("tickit-postgres")
    with pytest.raises(SandboxError, match="the database is still down"):
        connect.client.wait_running("tickit-postgres")
