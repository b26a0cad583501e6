"""The agent over HTTP: its server end to end on a free port, the in-cluster client's token and calls
against a local API server, and the relay of Kueue's metrics from a local (plain HTTP) endpoint."""

from __future__ import annotations

import dataclasses
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from clusterfab.scheduler.kubernetes.agent.kube import MERGE_PATCH, ApiError, InCluster, list_items
from clusterfab.scheduler.kubernetes.agent.rounds import Agent
from clusterfab.scheduler.kubernetes.agent.server import Served, Service
from tests.unit.kueue_agent_fakes import CONFIG, FIXTURES, FakeApi


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


def test_the_server_serves_the_rounds_metrics_and_its_health() -> None:
    api = FakeApi(metrics=(FIXTURES / "metrics.txt").read_text())
    agent = Agent(CONFIG, api, clock=lambda: 1795168800.0)
    service = Service(agent, "127.0.0.1", 0, interval=3600)
    service.start()
    try:
        base = f"http://127.0.0.1:{service.port}"
        for _ in range(200):  # the loop's first round lands within milliseconds
            status, kind, text = _get(f"{base}/metrics")
            if text:
                break
            threading.Event().wait(0.01)
        assert (status, kind) == (200, "text/plain; version=0.0.4; charset=utf-8")
        assert text == agent.round()
        assert 'clusterfab_kueue_team_gpus_in_use{cluster_queue="research",team="research"} 24\n' in text
        assert _get(f"{base}/healthz") == (200, "text/plain; charset=utf-8", "ok\n")
        assert _get(f"{base}/other")[0] == 404
    finally:
        service.close()


def test_health_fails_when_no_round_finished_lately() -> None:
    now = [0.0]
    served = Served(stale_after=120, clock=lambda: now[0])
    now[0] = 120.0
    assert served.healthy()
    now[0] = 121.0
    assert not served.healthy()
    served.update("x 1\n")
    assert served.healthy()


class Recorder(BaseHTTPRequestHandler):
    """A local stand-in for the API server and Kueue's metrics endpoint: answers from `answers`, records
    each request (method, path, Authorization, Content-Type, body)."""

    answers: ClassVar[dict[str, tuple[int, str]]] = {}
    seen: ClassVar[list[tuple[str, str, str | None, str | None, Any]]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.seen.append(
            (self.command, self.path, self.headers["Authorization"], self.headers["Content-Type"], body)
        )
        status, text = self.answers.get(self.path, (404, '{"kind": "Status", "reason": "NotFound"}'))
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer()

    def do_PATCH(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    Recorder.answers, Recorder.seen = {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_client_rereads_its_rotating_token_and_sends_merge_patches(
    local_server: str, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text("first-token\n")
    client = InCluster(local_server, token_path=str(token), ca_path=None)
    Recorder.answers["/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research"] = (
        200,
        '{"kind": "ClusterQueue"}',
    )
    assert client.request("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research") == {
        "kind": "ClusterQueue"
    }
    token.write_text("rotated-token\n")
    patch = {"spec": {"stopPolicy": "Hold"}}
    client.request("PATCH", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research", patch, MERGE_PATCH)
    assert Recorder.seen == [
        ("GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research", "Bearer first-token", None, None),
        (
            "PATCH",
            "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research",
            "Bearer rotated-token",
            "application/merge-patch+json",
            patch,
        ),
    ]
    with pytest.raises(ApiError) as refused:
        client.request("GET", "/api/v1/namespaces/clusterfab-system/configmaps/clusterfab-gpu-hours")
    assert refused.value.status == 404


def test_a_list_is_read_page_by_page(local_server: str, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t")
    client = InCluster(local_server, token_path=str(tmp_path / "token"), ca_path=None)
    path = "/apis/kueue.x-k8s.io/v1beta2/workloads"
    Recorder.answers[f"{path}?limit=500"] = (200, '{"metadata": {"continue": "c2"}, "items": [{"n": 1}]}')
    Recorder.answers[f"{path}?limit=500&continue=c2"] = (200, '{"metadata": {}, "items": [{"n": 2}]}')
    assert list_items(client, path) == [{"n": 1}, {"n": 2}]


def test_the_relay_reads_kueues_endpoint_with_the_token_and_keeps_its_families(
    local_server: str, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text("agent-token")
    client = InCluster(local_server, token_path=str(tmp_path / "token"), ca_path=None)
    Recorder.answers["/metrics"] = (200, (FIXTURES / "metrics.txt").read_text())
    config = dataclasses.replace(CONFIG, kueue_metrics_url=f"{local_server}/metrics")
    relayed, ok = Agent(config, client)._relay()
    assert ok is True
    assert relayed.splitlines()[-3:] == [
        "# TYPE kueue_pending_workloads gauge",
        'kueue_pending_workloads{cluster_queue="research",replica_role="standalone",status="active"} 2',
        'kueue_pending_workloads{cluster_queue="research",replica_role="standalone",status="inadmissible"} 0',
    ]
    assert "go_goroutines" not in relayed
    assert "controller_runtime" not in relayed
    assert Recorder.seen == [("GET", "/metrics", "Bearer agent-token", None, None)]
