"""The job's schema lookups against a real HTTP server: a schema not registered yet is asked again and never
remembered as missing; a registry that does not answer stops the batch instead of sending valid data to quarantine."""

from __future__ import annotations

import socket

import pytest

from cdc_sandbox.spark_jobs.decode import RegistryUnavailable, SchemaCache
from tests.unit.http_fake import serve

QUICK = (0.01, 0.01, 0.01)


class Registry:
    """Answers `/ids/globalIds/<id>` from `schemas`; `missing_for[id]` requests answer 404 first; `failing` gives 503."""

    def __init__(self):
        self.schemas: dict[int, str] = {}
        self.missing_for: dict[int, int] = {}
        self.failing = False
        self.requests: list[int] = []
        self.server = serve(self._answer)
        self.url = f"http://127.0.0.1:{self.server.server_port}/apis/registry/v2"

    def _answer(self, method: str, path: str) -> tuple[int, bytes]:
        global_id = int(path.rsplit("/", 1)[-1])
        self.requests.append(global_id)
        if self.failing:
            return 503, b"unavailable"
        if self.missing_for.get(global_id, 0) > 0 or global_id not in self.schemas:
            self.missing_for[global_id] = self.missing_for.get(global_id, 0) - 1
            return 404, b"not found"
        return 200, self.schemas[global_id].encode()


@pytest.fixture
def registry():
    served = Registry()
    yield served
    served.server.shutdown()


def test_a_schema_is_fetched_once(registry):
    registry.schemas[7] = '{"type": "record"}'
    cache = SchemaCache(registry.url, QUICK)
    assert cache.get(7) == cache.get(7) == '{"type": "record"}'
    assert registry.requests == [7]


def test_a_schema_registered_a_moment_later_is_found(registry):
    registry.schemas[8] = '{"type": "record"}'
    registry.missing_for[8] = 2
    assert SchemaCache(registry.url, QUICK).get(8) == '{"type": "record"}'
    assert registry.requests == [8, 8, 8]


def test_an_unknown_id_is_none_and_asked_again_next_time(registry):
    cache = SchemaCache(registry.url, QUICK)
    assert cache.get(9) is None
    assert len(registry.requests) == len(QUICK) + 1
    registry.schemas[9] = '{"type": "record"}'
    assert cache.get(9) == '{"type": "record"}', "a missing schema is never remembered as missing"


def test_a_failing_registry_stops_the_batch(registry):
    registry.failing = True
    with pytest.raises(RegistryUnavailable, match="HTTP 503"):
        SchemaCache(registry.url, QUICK).get(10)


def test_an_unreachable_registry_stops_the_batch():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(RegistryUnavailable, match="start the registry"):
        SchemaCache(f"http://127.0.0.1:{port}/apis/registry/v2", QUICK).get(11)
