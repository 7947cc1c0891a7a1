"""A real HTTP server on a free local port for the unit tests of the sandbox's HTTP clients."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(answer: Callable[[str, str], tuple[int, bytes]]) -> ThreadingHTTPServer:
    """Serve GET, POST and PUT with `answer(method, path) -> (status, body)`; `shutdown()` the server when done."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self._reply("GET")

        def do_POST(self):
            self._reply("POST")

        def do_PUT(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._reply("PUT")

        def _reply(self, method: str):
            status, body = answer(method, self.path)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
