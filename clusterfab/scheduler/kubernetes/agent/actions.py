"""The requests that carry out the budget's decisions: merge patches of a ClusterQueue and core/v1 Events
in the team's namespace, built pure (the round sends them)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .budget import Action
from .kube import JSON, MERGE_PATCH
from .queues import BUDGET, CLUSTER_QUEUES, HELD_BY, HELD_MONTH, Queue

COMPONENT = "clusterfab-queue-agent"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
REASONS = {"warn": "GpuBudgetNearlySpent", "hold": "GpuBudgetSpent"}


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: Mapping[str, Any]
    content_type: str = JSON
    done_if_exists: bool = False
    """An Event named for its team, reason and month: a 409 means an earlier round already posted it."""


def hold_patch(month: str) -> dict[str, Any]:
    return {
        "metadata": {"annotations": {HELD_BY: BUDGET, HELD_MONTH: month}},
        "spec": {"stopPolicy": "Hold"},
    }


RELEASE_PATCH: dict[str, Any] = {
    "metadata": {"annotations": {HELD_BY: None, HELD_MONTH: None}},
    "spec": {"stopPolicy": "None"},
}


def calls(action: Action, month: str, involved: Mapping[str, Any], now: float) -> list[Call]:
    """What one action sends: a hold patches the queue, then says so in an Event."""
    path = f"{CLUSTER_QUEUES}/{action.team.cluster_queue}"
    if action.kind == "release":
        return [Call("PATCH", path, RELEASE_PATCH, MERGE_PATCH)]
    body = event_body(action, month, involved, now)
    event = Call(
        "POST", f"/api/v1/namespaces/{body['metadata']['namespace']}/events", body, done_if_exists=True
    )
    if action.kind == "warn":
        return [event]
    return [Call("PATCH", path, hold_patch(month), MERGE_PATCH), event]


def involved_object(local_queue: Mapping[str, Any] | None, queue: Queue) -> dict[str, str]:
    """The team's LocalQueue (what its users look at with kubectl describe), else its ClusterQueue; the
    uid too, since kubectl describe finds an object's Events by it."""
    if local_queue is not None:
        metadata = local_queue["metadata"]
        return {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "uid": metadata.get("uid", ""),
        }
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "name": queue.name, "uid": queue.uid}


def event_body(action: Action, month: str, involved: Mapping[str, Any], now: float) -> dict[str, Any]:
    reason = REASONS[action.kind]
    stamp = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            # One name per team, reason and month: posting it twice is refused, never a second warning.
            "name": f"{action.team.cluster_queue}.{reason.lower()}.{month}",
            # The API server wants an Event in its object's namespace, and for a cluster-scoped object
            # (the ClusterQueue) in "" or "default" (core/v1 Event validation).
            "namespace": involved.get("namespace") or "default",
        },
        "involvedObject": dict(involved),
        "reason": reason,
        "message": message(action, month),
        "type": "Warning",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def message(action: Action, month: str) -> str:
    team, limit = action.team, action.team.gpu_hours_per_month or 0.0
    share = f"{action.hours:.0f} of its {limit:.0f} GPU-hours for {month} ({_percent(action.hours, limit)})"
    if action.kind == "warn":
        return f"Team {team.team} has used {share}; at 100% ClusterQueue {team.cluster_queue} is held."
    return (
        f"Team {team.team} has used {share}: ClusterQueue {team.cluster_queue} admits no new workloads "
        "until the month ends (admitted workloads run to completion)."
    )


def _percent(hours: float, limit: float) -> str:
    return f"{100 * hours / limit:.0f}%" if limit else "100%"


def after(queue: Queue, action: Action, month: str) -> Queue:
    """The queue as the action leaves it: the metrics of this round show the hold it just made."""
    if action.kind == "hold":
        return dataclasses.replace(queue, stop_policy="Hold", held_by=BUDGET, held_month=month)
    if action.kind == "release":
        return dataclasses.replace(queue, stop_policy="None", held_by=None, held_month=None)
    return queue
