"""What the agent reads from Kueue's objects (apis kueue.x-k8s.io/v1beta2, Kueue v0.19.2): each
ClusterQueue's GPUs in use and stop policy, and the GPU Workloads still waiting for admission."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .quantity import parse_quantity

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
CLUSTER_QUEUES = f"{KUEUE}/clusterqueues"
LOCAL_QUEUES = f"{KUEUE}/localqueues"
WORKLOADS = f"{KUEUE}/workloads"
HELD_BY = "clusterfab.dev/held-by"
HELD_MONTH = "clusterfab.dev/held-month"
BUDGET = "gpu-budget"
"""HELD_BY's value on a queue this agent holds: the only holds it ever lifts."""
HOLDS = ("Hold", "HoldAndDrain")
"""spec.stopPolicy values that stop admission (clusterqueue_types.go; None or absent admits)."""
WAITING = ("QuotaReserved", "Admitted", "Finished")
"""Workload conditions (workload_types.go): a Workload with none of them True waits for admission."""


@dataclass(frozen=True)
class Queue:
    name: str
    uid: str
    stop_policy: str
    held_by: str | None
    held_month: str | None
    gpus: float
    """Sum of status.flavorsUsage[*].resources[*].total over the configured resources."""

    @property
    def held(self) -> bool:
        return self.stop_policy in HOLDS

    @property
    def ours(self) -> bool:
        return self.held_by == BUDGET


@dataclass(frozen=True)
class Pending:
    count: int
    oldest_seconds: float


def queue(item: Mapping[str, Any], resources: Iterable[str]) -> Queue:
    metadata, spec = item.get("metadata") or {}, item.get("spec") or {}
    annotations = metadata.get("annotations") or {}
    wanted = set(resources)
    usage = (item.get("status") or {}).get("flavorsUsage") or []
    gpus = sum(
        (
            parse_quantity(entry.get("total", "0"))
            for flavor in usage
            for entry in flavor.get("resources") or []
            if entry.get("name") in wanted
        ),
        start=parse_quantity("0"),
    )
    return Queue(
        name=metadata["name"],
        uid=metadata.get("uid", ""),
        stop_policy=spec.get("stopPolicy") or "None",
        held_by=annotations.get(HELD_BY),
        held_month=annotations.get(HELD_MONTH),
        gpus=float(gpus),
    )


def queues(items: Iterable[Mapping[str, Any]], resources: Iterable[str]) -> dict[str, Queue]:
    names = tuple(resources)
    return {q.name: q for q in (queue(item, names) for item in items)}


def queue_of(local_queues: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """(namespace, LocalQueue name) -> the ClusterQueue it feeds (spec.clusterQueue)."""
    return {
        (lq["metadata"].get("namespace", ""), lq["metadata"]["name"]): (lq.get("spec") or {}).get(
            "clusterQueue", ""
        )
        for lq in local_queues
    }


def local_queue(
    local_queues: Iterable[Mapping[str, Any]], namespace: str, cluster_queue: str
) -> Mapping[str, Any] | None:
    """The team's LocalQueue: the one in its namespace that feeds its ClusterQueue, if any."""
    for lq in local_queues:
        metadata = lq["metadata"]
        if (
            metadata.get("namespace") == namespace
            and (lq.get("spec") or {}).get("clusterQueue") == cluster_queue
        ):
            return lq
    return None


def asks_for(workload: Mapping[str, Any], resources: Iterable[str]) -> bool:
    """Whether any podSet's containers request (or only limit) more than zero of a resource."""
    wanted = set(resources)
    for pod_set in (workload.get("spec") or {}).get("podSets") or []:
        pod = ((pod_set.get("template") or {}).get("spec")) or {}
        for container in pod.get("containers") or []:
            amounts = container.get("resources") or {}
            for kind in ("requests", "limits"):
                if any(parse_quantity(v) > 0 for k, v in (amounts.get(kind) or {}).items() if k in wanted):
                    return True
    return False


def waiting(workload: Mapping[str, Any]) -> bool:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return not any(c.get("type") in WAITING and c.get("status") == "True" for c in conditions)


def pending(
    workloads: Iterable[Mapping[str, Any]],
    local_queues: Iterable[Mapping[str, Any]],
    resources: Iterable[str],
    now: float,
) -> dict[str, Pending]:
    """Per ClusterQueue: the GPU Workloads waiting for admission and the age of the oldest, through the
    LocalQueue each names (spec.queueName in its namespace); one naming no LocalQueue is nobody's."""
    feeds = queue_of(local_queues)
    names = tuple(resources)
    ages: dict[str, list[float]] = {}
    for workload in workloads:
        metadata = workload.get("metadata") or {}
        target = feeds.get((metadata.get("namespace", ""), (workload.get("spec") or {}).get("queueName", "")))
        if target is None or not waiting(workload) or not asks_for(workload, names):
            continue
        created = dt.datetime.fromisoformat(metadata["creationTimestamp"]).timestamp()
        ages.setdefault(target, []).append(max(0.0, now - created))
    return {name: Pending(len(found), max(found)) for name, found in ages.items()}
