"""A fake cloud API behind a real HTTP server: the fakes of this package answer requests with a
`handle(method, path, headers, body)` of their own; this serves it on a threaded server (a real socket, as
the programs under test open one) and turns a bug of the fake into a recorded violation and a 500."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, Any] | tuple[int, Any, Mapping[str, str]]
"""A status, a JSON answer (None: no body) and, optionally, headers."""
Handle = Callable[[str, str, dict[str, str], bytes | None], Answer]


class JsonServer:
    """`handle` behind a real HTTP server at `url`; `fault(error)` answers an exception of the fake's."""

    def __init__(
        self,
        handle: Handle,
        *,
        violations: list[str],
        fault: Callable[[Exception], Any],
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                try:
                    status, answer, *more = handle(self.command, self.path, dict(self.headers.items()), body)
                except Exception as error:  # the fake's own bug: recorded, never swallowed
                    violations.append(f"{self.command} {self.path}: {error!r}")
                    status, answer, more = 500, fault(error), []
                data = json.dumps(answer).encode() if answer is not None else b""
                self.send_response(status)
                for name, value in (more[0] if more else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def do_PUT(self) -> None:
                self._answer()

            def do_PATCH(self) -> None:
                self._answer()

            def do_DELETE(self) -> None:
                self._answer()

            def log_message(self, *_: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        address, bound = self._server.server_address[:2]
        self.url = f"http://{address!s}:{bound}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
