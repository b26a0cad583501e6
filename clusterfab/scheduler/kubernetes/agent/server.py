"""The agent's loop thread and its HTTP server: /metrics answers the last round's text at once (a scrape
never waits on the API server), /healthz says whether the loop still runs rounds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .rounds import Agent

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Served:
    """The latest metrics text and when the loop last finished a round, shared by the two threads."""

    def __init__(self, stale_after: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._text = ""
        self._last_round = clock()  # a starting agent counts as healthy for one stale_after
        self.stale_after = stale_after

    def update(self, text: str) -> None:
        with self._lock:
            self._text, self._last_round = text, self._clock()

    def text(self) -> str:
        with self._lock:
            return self._text

    def healthy(self) -> bool:
        """A round failing against the API is healthy (restarting would not help); a loop that stopped
        finishing rounds is not, and the kubelet's liveness probe restarts the pod."""
        with self._lock:
            return self._clock() - self._last_round <= self.stale_after


def handler(served: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/metrics":
                self._answer(200, served.text(), CONTENT_TYPE)
            elif self.path == "/healthz":
                ok = served.healthy()
                self._answer(200 if ok else 503, "ok\n" if ok else "no round finished lately\n")
            else:
                self.send_error(404)

        def _answer(self, status: int, text: str, content_type: str = "text/plain; charset=utf-8") -> None:
            body = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass  # a scrape every 15 s would drown the log

    return Handler


def loop(agent: Agent, served: Served, interval: float, stop: threading.Event) -> None:
    """Round after round, `interval` seconds apart, until `stop` is set. Agent.round never raises, and the
    ledger measures the real time between rounds, so a slow round costs no accuracy."""
    while not stop.is_set():
        served.update(agent.round())
        stop.wait(interval)


class Service:
    """The loop thread and the HTTP server together; `start` returns once both run."""

    def __init__(self, agent: Agent, address: str, port: int, interval: float) -> None:
        # Three missed rounds, and at least two minutes, before /healthz fails: a slow API is not a hang.
        self.served = Served(stale_after=max(3 * interval, 120.0))
        self.server = ThreadingHTTPServer((address, port), handler(self.served))
        self.stop = threading.Event()
        self._threads = [
            threading.Thread(target=loop, args=(agent, self.served, interval, self.stop), daemon=True),
            threading.Thread(target=self.server.serve_forever, daemon=True),
        ]

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
        for thread in self._threads:
            thread.join(timeout=10)

    def wait(self) -> None:
        """Until the loop thread ends (never, unless closed)."""
        self._threads[0].join()
