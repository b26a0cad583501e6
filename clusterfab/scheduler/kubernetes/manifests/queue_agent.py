"""The queue agent: clusterfab's own in-cluster program (clusterfab/scheduler/kubernetes/agent/) that keeps
each team's GPU-hours of the month, holds a team's ClusterQueue when its `gpu_hours_per_month` is spent,
and serves the queues' state (and Kueue's own metrics) to the cluster's Prometheus.

Kueue has no GPU-hour budget, so the agent enforces it: it adds up each team's admitted GPUs over time in
a ledger (a ConfigMap, so a restart loses nothing), warns at 80 % with an Event in the team's namespace and
at 100 % sets the team's ClusterQueue `stopPolicy: Hold` (admitted workloads run to completion, nothing
new is admitted) until the month turns. The program is standard library only and ships as a ConfigMap
mounted into a pinned Python image: no image of ours to build, push or trust.

One replica with the Recreate strategy: the ledger has one writer. It runs on the system nodes (GPU and
TPU nodes carry taints it does not tolerate, and its affinity keeps it off untainted CPU node groups), and
when the cluster is monitored it listens on the node's port too: the monitoring host finds the system
nodes through the cloud's API, as it finds the GPU nodes, and scrapes the one that answers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from clusterfab.scheduler.kubernetes.agent_files import PACKAGE
from clusterfab.scheduler.kubernetes.labels import MANAGED_BY, NODE_GROUP_LABEL, TPU_SLICE_LABEL
from clusterfab.scheduler.kubernetes.manifests.common import metadata
from clusterfab.spec.model import ClusterSpec

NAMESPACE = "clusterfab-system"
NAME = "clusterfab-queue-agent"
PORT = 9410
"""Beside the node exporter (9100) and dcgm-exporter (9400) the monitoring host scrapes."""
LEDGER = "clusterfab-gpu-hours"
"""The ConfigMap the agent keeps its month's GPU-hours in."""
WARN_FRACTION = 0.8
GPU_RESOURCE = "nvidia.com/gpu"
SYSTEM_GROUP = "system"
"""The node group label of EKS's system node group (GKE's system pool has none)."""
KUEUE_METRICS_URL = "https://kueue-controller-manager-metrics-service.kueue-system.svc:8443/metrics"
"""Kueue's controller-manager metrics Service as the Kueue chart names it (kueue-controller-manager-
metrics-service, port 8443, HTTPS with bearer-token authentication and `get /metrics` authorization)."""
INTERVAL_SECONDS = 30
CODE_MOUNT = "/opt/clusterfab"
CONFIG_MOUNT = "/etc/clusterfab"
APP = {"app.kubernetes.io/name": NAME}
RBAC = "rbac.authorization.k8s.io"
KUEUE_GROUP = "kueue.x-k8s.io"


def agent_config(spec: ClusterSpec) -> dict[str, Any]:
    """What the program reads (its --config): the teams' queues and budgets."""
    return {
        "cluster": spec.name,
        "namespace": NAMESPACE,
        "ledger_configmap": LEDGER,
        "interval_seconds": INTERVAL_SECONDS,
        "warn_fraction": WARN_FRACTION,
        "resources": [GPU_RESOURCE],
        "kueue_metrics_url": KUEUE_METRICS_URL,
        "teams": [
            {"team": t.name, "cluster_queue": t.name, "gpu_hours_per_month": t.gpu_hours_per_month}
            for t in spec.teams
        ],
    }


def queue_agent_objects(
    spec: ClusterSpec, image: str, code: Mapping[str, str], *, monitored: bool
) -> list[dict[str, Any]]:
    """The agent's objects in apply order; none for a cluster without teams (no team queues to watch).

    `code`: the program's files by name; `monitored`: the cluster has a monitoring host that scrapes the
    agent on its node's port."""
    if not spec.teams:
        return []
    config = json.dumps(agent_config(spec), indent=2, sort_keys=True) + "\n"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(NAMESPACE, None)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(NAME, NAMESPACE)},
        _cluster_role(),
        _binding("ClusterRoleBinding", NAME, None, "ClusterRole", NAME),
        _event_role(),
        *(
            _binding("RoleBinding", f"{NAME}-events", t.name, "ClusterRole", f"{NAME}-events")
            for t in spec.teams
        ),
        _ledger_role(),
        _binding("RoleBinding", NAME, NAMESPACE, "Role", NAME),
        # The ledger exists before the agent: the agent may read and write this one ConfigMap, never create
        # one. The program never declares its data, so an update of the stack leaves the agent's entries.
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(LEDGER, NAMESPACE)},
        _config_map(f"{NAME}-code", dict(code)),
        _config_map(f"{NAME}-config", {"agent.json": config}),
        _deployment(image, _digest(code, config), monitored=monitored),
    ]


def _digest(code: Mapping[str, str], config: str) -> str:
    """Changes with the program or its configuration, so the Deployment rolls its pod when either does
    (a mounted ConfigMap changes under a running process, which would not reload it)."""
    text = json.dumps({"code": dict(code), "config": config}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _rule(groups: list[str], resources: list[str], verbs: list[str], **more: Any) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, **more, "verbs": verbs}


def _cluster_role() -> dict[str, Any]:
    """Read the queues and workloads, stop and release a ClusterQueue, and read Kueue's metrics."""
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": metadata(NAME, None),
        "rules": [
            _rule([KUEUE_GROUP], ["clusterqueues"], ["list", "patch"]),
            _rule([KUEUE_GROUP], ["localqueues", "workloads"], ["list"]),
            # Kueue's metrics endpoint authorizes a bearer token for `get` on its non-resource URL.
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
        ],
    }


def _event_role() -> dict[str, Any]:
    """Events in the team namespaces it is bound in (a RoleBinding per team namespace, not cluster-wide)."""
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": metadata(f"{NAME}-events", None),
        # Each Event has a name of its own per team and month: posting it twice is refused (409), never
        # patched, so a team is warned once.
        "rules": [_rule([""], ["events"], ["create"])],
    }


def _ledger_role() -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "Role",
        "metadata": metadata(NAME, NAMESPACE),
        "rules": [_rule([""], ["configmaps"], ["get", "patch"], resourceNames=[LEDGER])],
    }


def _binding(kind: str, name: str, namespace: str | None, role_kind: str, role: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": kind,
        "metadata": metadata(name, namespace),
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}],
    }


def _config_map(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(name, NAMESPACE), "data": data}


def _system_nodes() -> dict[str, Any]:
    """The system nodes: EKS's system node group carries the node group label `system`; GKE's system pool
    no node group label at all (nor the TPU slice label)."""
    unlabelled = [
        {"key": NODE_GROUP_LABEL, "operator": "DoesNotExist"},
        {"key": TPU_SLICE_LABEL, "operator": "DoesNotExist"},
    ]
    system = [{"key": NODE_GROUP_LABEL, "operator": "In", "values": [SYSTEM_GROUP]}]
    terms = [{"matchExpressions": unlabelled}, {"matchExpressions": system}]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def _container(image: str, *, monitored: bool) -> dict[str, Any]:
    port: dict[str, Any] = {"name": "metrics", "containerPort": PORT}
    if monitored:
        port["hostPort"] = PORT
    probe = {"httpGet": {"path": "/healthz", "port": "metrics"}, "periodSeconds": 30}
    return {
        "name": "agent",
        "image": image,
        "command": ["python3", "-m", PACKAGE, "--config", f"{CONFIG_MOUNT}/agent.json", "--port", str(PORT)],
        "env": [
            {"name": "PYTHONPATH", "value": CODE_MOUNT},
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
            {"name": "PYTHONUNBUFFERED", "value": "1"},
        ],
        "ports": [port],
        "readinessProbe": probe,
        "livenessProbe": {**probe, "failureThreshold": 5},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "code", "mountPath": f"{CODE_MOUNT}/{PACKAGE}", "readOnly": True},
            {"name": "config", "mountPath": CONFIG_MOUNT, "readOnly": True},
        ],
        "resources": {
            "requests": {"cpu": "50m", "memory": "64Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        },
    }


def _deployment(image: str, digest: str, *, monitored: bool) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(NAME, NAMESPACE, dict(APP)),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": dict(APP)},
            "template": {
                "metadata": {
                    "labels": {**APP, **MANAGED_BY},
                    "annotations": {"clusterfab.dev/program-sha256": digest},
                },
                "spec": {
                    "serviceAccountName": NAME,
                    "affinity": _system_nodes(),
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65534,
                        "runAsGroup": 65534,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [_container(image, monitored=monitored)],
                    "volumes": [
                        {"name": "code", "configMap": {"name": f"{NAME}-code"}},
                        {"name": "config", "configMap": {"name": f"{NAME}-config"}},
                    ],
                },
            },
        },
    }
