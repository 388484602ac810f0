"""A local stand-in for an OpenAI-compatible server, for the failure cases a real
``vllm serve`` does not produce on demand (a server that answers 5xx). Every success path
is tested against a real ``vllm serve``: tests/serve/."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (path, raw request body) → (content type, response bytes)
Answer = Callable[[str, bytes], tuple[str, bytes]]


def json_answer(payload: Any) -> Answer:
    """Answer every POST with the same JSON document."""
    data = json.dumps(payload).encode()
    return lambda _path, _body: ("application/json", data)


@contextmanager
def fake_server(answer: Answer, *, status: int = 200) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Serve POSTs on 127.0.0.1 with ``answer`` and HTTP ``status``; yields (base URL
    ending in /v1, the requests seen as {"path", "body", "auth"})."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(
                {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
            )
            kind, data = answer(self.path, body)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    finally:
        httpd.shutdown()
