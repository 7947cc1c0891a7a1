"""Loading an archive, without Kafka: each message's framing takes the schema id the registry gives its schema
again, under the replay topic's artifact; bytes of no schema stay as they are."""

from __future__ import annotations

import base64
import json
import struct

import pytest

from cdc_sandbox.errors import SandboxError
from cdc_sandbox.replay import load, run
from cdc_sandbox.replay.archive import Archive
from cdc_sandbox.sources.registry import frame_global_id
from tests.unit.http_fake import serve


def framed(global_id: int, body: bytes = b"\x02") -> bytes:
    return struct.pack(">bq", 0, global_id) + body


def test_a_message_takes_its_schemas_new_id_and_keeps_its_body():
    assert load.reframed(framed(7, b"body"), 1234) == framed(1234, b"body")
    assert frame_global_id(load.reframed(framed(7), 2**40)) == 2**40
    assert load.reframed(b'{"json": 1}', None) == b'{"json": 1}'
    assert load.reframed(None, 5) is None


def test_each_schema_is_used_by_its_topic_and_role():
    line = {"key": base64.b64encode(framed(7)).decode(), "value": base64.b64encode(framed(8)).decode()}
    tombstone = {"key": base64.b64encode(framed(7)).decode(), "value": None}
    archive = Archive({}, {"t": {0: [line, tombstone]}, "u": {0: [{"key": None, "value": line["value"]}]}})
    assert load.schema_uses(archive) == {("t", "key", 7), ("t", "value", 8), ("u", "value", 8)}


def test_a_schema_is_registered_under_the_replay_topics_artifact():
    seen = []

    def answer(method, path):
        seen.append((method, path))
        return 200, json.dumps({"globalId": 41}).encode()

    server = serve(answer)
    try:
        url = f"http://127.0.0.1:{server.server_port}/apis/registry/v2"
        assert load.register(url, "replay.x.tickit.ems.category-value", '{"type": "string"}') == 41
    finally:
        server.shutdown()
    assert seen[0][0] == "POST" and seen[0][1].startswith("/apis/registry/v2/groups/default/artifacts?ifExists=")


def test_a_schema_the_registry_refuses_is_named():
    server = serve(lambda method, path: (409, b'{"message": "incompatible"}'))
    try:
        with pytest.raises(SandboxError, match="refused schema replay.x.t-value: HTTP 409"):
            load.register(f"http://127.0.0.1:{server.server_port}", "replay.x.t-value", "{}")
    finally:
        server.shutdown()


def test_replay_topics_are_apart_from_the_live_ones():
    assert load.replay_topic("incident-42", "tickit.ems.category") == "replay.incident-42.tickit.ems.category"


def test_a_team_jobs_replay_writes_each_partition_in_steps_of_its_messages():
    archive = Archive({}, {"t": {0: [{}] * 5, 1: [{}] * 2}, "u": {0: [{}]}})
    assert run.steps(archive, 2) == [{"t": {0: 2, 1: 2}, "u": {0: 1}}, {"t": {0: 4, 1: 2}, "u": {0: 1}},
                                     {"t": {0: 5, 1: 2}, "u": {0: 1}}]
    assert run.steps(archive, None) == [{"t": {0: 5, 1: 2}, "u": {0: 1}}]
    assert run.steps(Archive({}, {"t": {0: []}}), None) == []
