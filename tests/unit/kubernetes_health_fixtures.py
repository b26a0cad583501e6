"""Recorded API server answers for the deep check on Kubernetes: a cluster's nodes and pods as the API
returns them (core/v1 Node and Pod, the fields the check reads), the check's pods' logs, and a fake
KubeApi that answers from them and records every call.

The DCGM logs are nv-hostengine's start line (DCGM v4.6.0 hostengine/src/main.cpp: `Started host engine
version {} using port number: {}`) and then `dcgmi diag -r N -j`'s document as recorded under
tests/fixtures/health (SOURCES.md there says where its shape comes from). The all-reduce logs carry
NCCL's INFO line naming its network (NVIDIA/nccl src/init.cc, `INFO(NCCL_INIT, "Using network %s", ...)`,
prefixed `<host>:<pid>:<tid> [<dev>] NCCL INFO`) and the program's result line (allreduce.result).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterfab.scheduler.kubernetes.health import allreduce
from clusterfab.scheduler.kubernetes.health import objects as obj
from clusterfab.scheduler.kubernetes.health.kubeapi import ApiError
from tests.conftest import REPO

HEALTH = REPO / "tests" / "fixtures" / "health"
HOSTENGINE = "Started host engine version 4.6.0 using port number: 5555\n"


def stack_outputs(cloud: str) -> dict[str, Any]:
    """A Kubernetes stack's outputs: EKS with p5 node groups (one on EFA) or GKE with a3-mega ones."""
    aws = cloud == "aws"
    machine = "p5.48xlarge" if aws else "a3-megagpu-8g"
    fabric = "efa" if aws else "gpudirect-tcpxo"
    group = {
        "machine_type": machine,
        "min_size": 2,
        "max_size": 2,
        "capacity": "on_demand",
        "placement": "compact",
        "group": "g",
        "template": "t",
        "identity": "i",
        "interfaces": 1,
        "fabric_interfaces": 0,
    }
    groups = {
        "train" if aws else "mega": group | {"fabric": fabric},
        "spot" if aws else "plain": group | {"fabric": None},
    }
    return {
        "blueprint": {
            "name": "llm",
            "file": "bp.yaml",
            "digest": "0" * 64,
            "bundle_sha256": "1" * 64,
            "environment": "prod",
            "catalog_version": "x",
            "cloud": cloud,
            "region": "us-east-1" if aws else "us-central1",
            "zone": "use1-az6" if aws else "us-central1-a",
            "project": None if aws else "p-123456",
        },
        "network": {},
        "bucket": "b",
        "node_selector": {},
        "node_groups": groups,
        "scheduler": {
            "kind": "kubernetes",
            "controller": "llm-prod",
            "controller_address": "10.0.0.2",
            "login": [],
            "service": "EKS" if aws else "GKE",
            "location": "us-east-1",
            "version": "1.35",
            "certificate_authority": "Cg==",
        },
    }


def node(
    name: str, group: str, gpus: int = 8, *, ready: bool = True, cordoned: bool = False, version: str = "7"
) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}
    if cordoned:
        spec["unschedulable"] = True
    return {
        "metadata": {
            "name": name,
            "resourceVersion": version,
            "labels": {"kubernetes.io/hostname": name, "clusterfab.dev/node-group": group},
        },
        "spec": spec,
        "status": {
            "allocatable": {"cpu": "191450m", "nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def workload_pod(node_name: str, gpus: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"train-{node_name}", "namespace": "research"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": gpus}}}],
        },
        "status": {"phase": "Running"},
    }


def check_pod(
    job: str, phase: str, node_name: str, index: int = 0, exit_code: int = 0, waiting: str | None = None
) -> dict[str, Any]:
    """A pod of the check's Job or JobSet `job` as the API shows it in `phase`."""
    status: dict[str, Any] = {"phase": phase}
    if phase in ("Succeeded", "Failed"):
        reason = "Completed" if exit_code == 0 else "Error"
        status["containerStatuses"] = [{"state": {"terminated": {"exitCode": exit_code, "reason": reason}}}]
    if waiting == "unscheduled":
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    elif waiting is not None:
        status["containerStatuses"] = [
            {
                "image": "nvcr.io/nvidia/pytorch:25.12-py3",
                "state": {"waiting": {"reason": waiting, "message": "not found"}},
            }
        ]
    return {
        "metadata": {
            "name": f"{job}-{index}-x",
            "labels": {obj.JOB_LABEL: job},
            "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
        },
        "spec": {"nodeName": node_name},
        "status": status,
    }


def dcgm_log(fixture: str) -> str:
    return HOSTENGINE + (HEALTH / fixture).read_text()


def allreduce_log(
    busbw_seconds: float, hosts: Sequence[str], network: str = "Libfabric", ranks: int = 16
) -> str:
    ranks_hosts = [hosts[i * len(hosts) // ranks] for i in range(ranks)]
    line = json.dumps(allreduce.result(8 << 30, busbw_seconds, ranks_hosts, correct=True))
    return (
        f"{hosts[0]}:57:57 [0] NCCL INFO NCCL version 2.28.9+cuda13.1\n"
        f"{hosts[0]}:57:57 [0] NCCL INFO Using network {network}\n"
        f"{line}\n"
    )


@dataclass
class FakeApi:
    """Answers the check's calls from recorded objects; `rounds` are successive answers to the listing of
    the run's pods (the last one repeats); `logs` by pod name; `conflicts`: nodes whose first patch gets
    409. `calls` records (method, path, query or body)."""

    nodes: list[dict[str, Any]]
    rounds: list[list[dict[str, Any]]]
    logs: Mapping[str, str]
    workloads: list[dict[str, Any]] = field(default_factory=list)
    conflicts: set[str] = field(default_factory=set)
    namespace_exists: bool = False
    calls: list[tuple[str, str, Any]] = field(default_factory=list)

    def get(self, path: str, query: Mapping[str, str] | None = None) -> Any:
        self.calls.append(("GET", path, dict(query or {})))
        if path == "/api/v1/nodes":
            return {"items": self.nodes}
        if path.startswith("/api/v1/nodes/"):
            return next(n for n in self.nodes if n["metadata"]["name"] == path.rsplit("/", 1)[1])
        if path == "/api/v1/pods":
            return {"items": self.workloads}
        rounds = len([c for c in self.calls if c[1] == path])
        return {"items": self.rounds[min(rounds, len(self.rounds)) - 1]}

    def log(self, path: str, query: Mapping[str, str] | None = None) -> str:
        self.calls.append(("LOG", path, dict(query or {})))
        return self.logs[path.split("/")[-2]]

    def create(self, path: str, body: Mapping[str, Any]) -> Any:
        self.calls.append(("POST", path, body))
        if body["kind"] == "Namespace" and self.namespace_exists:
            raise ApiError(409, 'namespaces "clusterfab-system" already exists')
        return body

    def patch(self, path: str, body: Mapping[str, Any]) -> Any:
        self.calls.append(("PATCH", path, body))
        name = path.rsplit("/", 1)[1]
        if name in self.conflicts:
            self.conflicts.discard(name)
            raise ApiError(409, "the object has been modified")
        return body

    def delete(self, path: str, query: Mapping[str, str] | None = None) -> Any:
        self.calls.append(("DELETE", path, dict(query or {})))
        return {"kind": "Status"}
