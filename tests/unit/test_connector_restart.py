"""Restarting a failed connector against a real HTTP server that answers as Kafka Connect does: the restart is
accepted before it happens, and the status (read back from a Kafka topic) can say FAILED for a while after."""

from __future__ import annotations

import json

import pytest

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.sources.positions import BinlogMark
from cdc_sandbox.stack.connectors import ConnectClient, rewound_offsets
from tests.unit.http_fake import serve


def status(connector: str, task: str, trace: str = "") -> dict:
    return {"name": "tickit-postgres", "connector": {"state": connector},
            "tasks": [{"id": 0, "state": task, "trace": trace}]}


class Connect:
    """Serves `/connectors/<name>/status` from `statuses` (one per GET, the last repeated) and takes restarts."""

    def __init__(self):
        self.statuses = [status("RUNNING", "FAILED", "the registry did not answer")]
        self.restarts = 0
        self.server = serve(self._answer)
        self.client = ConnectClient(f"http://127.0.0.1:{self.server.server_port}")

    def _answer(self, method: str, path: str) -> tuple[int, bytes]:
        if method == "POST":
            self.restarts += 1
            return 202, json.dumps(status("RUNNING", "RESTARTING")).encode()
        current = self.statuses[0] if len(self.statuses) == 1 else self.statuses.pop(0)
        return 200, json.dumps(current).encode()


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


class Registered:
    """Serves a connector's registered config and status, and counts the configs put."""

    def __init__(self, config: dict | None, state: str = "RUNNING"):
        self.config, self.puts, self.state, self.resumed = config, 0, state, []
        self.server = serve(self._answer)

    def _answer(self, method: str, path: str) -> tuple[int, bytes]:
        if method == "PUT" and path.endswith("/resume"):
            self.resumed.append(path.split("/")[2])
            self.state = "RUNNING"
            return 202, b""
        if method == "PUT":
            self.puts += 1
            return 200, b"{}"
        if path.endswith("/config"):
            if self.config is None:
                return 404, json.dumps({"error_code": 404, "message": "not found"}).encode()
            return 200, json.dumps({**self.config, "name": path.split("/")[2]}).encode()
        if self.state == "NEW":  # just registered: Connect has no status for it yet
            self.state = "RUNNING"
            return 404, json.dumps({"error_code": 404, "message": "no status"}).encode()
        if self.state == "STOPPED":  # a stopped connector has no tasks
            return 200, json.dumps({"name": path.split("/")[2], "connector": {"state": "STOPPED"}, "tasks": []}).encode()
        return 200, json.dumps(status(self.state, self.state)).encode()


def register_all_against(fake: Registered, monkeypatch, tmp_path) -> int:
    """`sandbox up`'s registration against the fake worker; returns how many sources the topology has."""
    from cdc_sandbox.config import Settings
    from cdc_sandbox.stack import connectors

    settings = Settings.load({"SANDBOX_CONNECT_PORT": str(fake.server.server_port), "SANDBOX_BACKEND": "native",
                              "SANDBOX_STATE_DIR": str(tmp_path)})
    monkeypatch.setattr(connectors, "connector_config", lambda settings, source, view=None: {"poll.interval.ms": "50"})
    try:
        connectors.register_all(settings)
    finally:
        fake.server.shutdown()
    return len(settings.topology.sources)


@pytest.mark.parametrize("registered, puts", [({"poll.interval.ms": "50"}, 0), ({"poll.interval.ms": "500"}, 1),
                                              (None, 1)])
def test_up_puts_a_connector_config_only_when_it_differs_from_the_registered_one(registered, puts, monkeypatch,
                                                                                 tmp_path):
    """Connect restarts a connector whose config is put again, even unchanged: `up` would pause capture."""
    fake = Registered(registered)
    sources = register_all_against(fake, monkeypatch, tmp_path)
    assert fake.puts == puts * sources


@pytest.mark.parametrize("state", ["STOPPED", "PAUSED"])
def test_up_resumes_a_connector_that_was_stopped_or_paused(state, monkeypatch, tmp_path):
    fake = Registered({"poll.interval.ms": "50"}, state)
    register_all_against(fake, monkeypatch, tmp_path)
    assert fake.resumed and fake.puts == 0


def test_up_waits_for_a_connector_just_registered_to_have_a_status(monkeypatch, tmp_path):
    fake = Registered(None, "NEW")
    sources = register_all_against(fake, monkeypatch, tmp_path)
    assert fake.puts == sources and not fake.resumed


HELD = [{"partition": {"server": "tickit"},
         "offset": {"ts_sec": 1795964130, "file": "binlog.000005", "pos": 438910, "gtids": "0-1-3134", "row": 1,
                    "server_id": 1, "event": 2}}]


@pytest.mark.parametrize("gtids, restarts_from", [("0-1-3120", {"gtids": "0-1-3120"}), ("", {})])
def test_a_rewound_binlog_offset_starts_at_the_mark_with_its_gtids_where_the_server_has_them(gtids, restarts_from):
    mark = BinlogMark("binlog.000004", 1200, gtids)
    [rewound] = rewound_offsets("tickit-mysql", HELD, mark)
    assert rewound["partition"] == {"server": "tickit"}
    assert rewound["offset"] == {"ts_sec": 1795964130, "file": "binlog.000004", "pos": 1200, "row": 0, "server_id": 1,
                                 "event": 0} | restarts_from


def test_a_connector_without_one_binlog_offset_is_not_rewound():
    with pytest.raises(SandboxError, match="holds 0 offsets, not one binlog position"):
        rewound_offsets("tickit-mysql", [], BinlogMark("binlog.000004", 4, ""))
