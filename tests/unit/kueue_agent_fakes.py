"""A recorded Kubernetes API for the queue agent's tests: list answers from tests/fixtures/kueue_api/,
every call kept in order, and the ledger ConfigMap kept as the API server would keep it."""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from clusterfab.scheduler.kubernetes.agent.config import Config, Team
from clusterfab.scheduler.kubernetes.agent.kube import JSON, ApiError
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "kueue_api"
CLUSTER_QUEUES = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues?limit=500"
LOCAL_QUEUES = "/apis/kueue.x-k8s.io/v1beta2/localqueues?limit=500"
WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/workloads?limit=500"
LEDGER = "/api/v1/namespaces/clusterfab-system/configmaps/clusterfab-gpu-hours"
KUEUE_METRICS = "https://kueue-controller-manager-metrics-service.kueue-system.svc:8443/metrics"
CONFIG = Config(
    cluster="a3mega",
    namespace="clusterfab-system",
    ledger_configmap="clusterfab-gpu-hours",
    teams=(Team("research", "research", 100.0), Team("infra", "infra", None)),
    kueue_metrics_url=KUEUE_METRICS,
)
"""research has a budget of 100 GPU-hours (small, so a test crosses it in an hour); infra none."""


def at(moment: str) -> float:
    """Seconds since the epoch of an ISO time in UTC."""
    return dt.datetime.fromisoformat(moment).replace(tzinfo=dt.UTC).timestamp()


def fixture(name: str) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return answer


def cluster_queue(answers: Mapping[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(i for i in answers[CLUSTER_QUEUES]["items"] if i["metadata"]["name"] == name)
    return found


class FakeApi:
    def __init__(self, ledger: str | None = None, metrics: str | None = None) -> None:
        self.answers: dict[str, Any] = {
            CLUSTER_QUEUES: fixture("clusterqueues.json"),
            LOCAL_QUEUES: fixture("localqueues.json"),
            WORKLOADS: fixture("workloads.json"),
        }
        if ledger is not None:
            self.answers[LEDGER] = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"ledger.json": ledger}}
        self.metrics = metrics
        self.calls: list[tuple[str, str, Any, str]] = []
        self.writes: list[tuple[str, str, Any, str]] = []
        self.fail: dict[tuple[str, str], ApiError] = {}

    def request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, content_type: str = JSON
    ) -> dict[str, Any]:
        call = (method, path, copy.deepcopy(body), content_type)
        self.calls.append(call)
        if (method, path) in self.fail:
            raise self.fail[(method, path)]
        if method == "GET":
            if path not in self.answers:
                raise ApiError(404, f'configmaps "{path.rsplit("/", 1)[-1]}" not found')
            answer: dict[str, Any] = copy.deepcopy(self.answers[path])
            return answer
        self.writes.append(call)
        if path == LEDGER and method == "PATCH":
            self.answers[LEDGER]["data"].update(body["data"] if body else {})
        elif path.endswith("/configmaps") and method == "POST" and body:
            self.answers[LEDGER] = copy.deepcopy(dict(body))
        return {}

    def scrape(self, url: str) -> str:
        self.calls.append(("SCRAPE", url, None, ""))
        if self.metrics is None:
            raise ApiError(None, "<urlopen error [Errno 111] Connection refused>")
        return self.metrics

    def stored_ledger(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.answers[LEDGER]["data"]["ledger.json"])
        return document
