"""What the pieces share: the node label and GPU taint the node pools carry, and the labels that mark an
object as clusterfab's. Each call returns new dicts: no two manifests share a mutable part."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clusterfab.scheduler.kubernetes.labels import GPU_TAINT, MANAGED_BY, NODE_GROUP_LABEL
from clusterfab.spec.model import NodeGroup

KUBE_SYSTEM = "kube-system"


def gpu_toleration() -> dict[str, Any]:
    return {"key": GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}


def arm_toleration() -> dict[str, Any]:
    """GKE taints every Arm node `kubernetes.io/arch=arm64:NoSchedule` (GKE, "Prepare to deploy an Arm
    workload in a Standard cluster", read 2026-11-29): the pods clusterfab runs on every GPU node of a group
    (whose machine may be Grace-based, a4x) tolerate it; EKS puts no such taint."""
    return {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}


def gpu_node_tolerations() -> list[dict[str, Any]]:
    """What a pod on any GPU node, x86 or Arm, tolerates: the GPU taint and GKE's Arm taint."""
    return [gpu_toleration(), arm_toleration()]


def tolerate_all() -> dict[str, Any]:
    """GKE's own fabric recipes tolerate every taint: the installers must run wherever the fabric is."""
    return {"operator": "Exists"}


def metadata(name: str, namespace: str | None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """An object's metadata: its name, namespace (None: cluster-scoped) and labels, clusterfab's mark
    last."""
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = {**(labels or {}), **MANAGED_BY}
    return meta


def node_groups_affinity(groups: Sequence[str]) -> dict[str, Any]:
    """Required node affinity for the nodes of these node groups (by NODE_GROUP_LABEL), in the given
    order: the upstream manifests select by accelerator or instance type instead, which would also reach
    a node group of the same machine that the blueprint keeps off the fabric."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": NODE_GROUP_LABEL, "operator": "In", "values": list(groups)}
                        ]
                    }
                ]
            }
        }
    }


def host_path(name: str, path: str, kind: str | None = None) -> dict[str, Any]:
    """A hostPath volume (with its type, when the upstream manifest gives one)."""
    source: dict[str, Any] = {"path": path}
    if kind is not None:
        source["type"] = kind
    return {"name": name, "hostPath": source}


def node_groups_on(groups: Sequence[NodeGroup], *fabrics: str, architecture: str | None = None) -> list[str]:
    """The names of the node groups on one of these fabrics (and of this CPU architecture), in order."""
    return [
        g.name
        for g in groups
        if g.fabric in fabrics and (architecture is None or g.machine.cpu_architecture == architecture)
    ]
