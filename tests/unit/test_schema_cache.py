"""The job's schema lookups against a real HTTP server: a schema not registered yet is asked again and never
remembered as missing; a registry that does not answer stops the batch instead of sending valid data to quarantine."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from spark_jobs.decode import RegistryUnavailable, SchemaCache

QUICK = (0.01, 0.01, 0.01)


class Registry:
    """Answers `/ids/globalIds/<id>` from `schemas`; `missing_for[id]` requests answer 404 first; `failing` gives 503."""

    def __init__(self):
        self.schemas: dict[int, str] = {}
        self.missing_for: dict[int, int] = {}
        self.failing = False
        self.requests: list[int] = []
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                global_id = int(self.path.rsplit("/", 1)[-1])
                registry.requests.append(global_id)
                if registry.failing:
                    return self._answer(503, b"unavailable")
                if registry.missing_for.get(global_id, 0) > 0 or global_id not in registry.schemas:
                    registry.missing_for[global_id] = registry.missing_for.get(global_id, 0) - 1
                    return self._answer(404, b"not found")
                self._answer(200, registry.schemas[global_id].encode())

            def _answer(self, status, body):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/apis/registry/v2"


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
