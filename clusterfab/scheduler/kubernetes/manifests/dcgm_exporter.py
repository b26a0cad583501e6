"""NVIDIA's DCGM exporter on the GPU nodes (both clouds), with its Service, in clusterfab's monitoring
namespace, and the PriorityClass of clusterfab's node agents.

NVIDIA's dcgm-exporter.yaml at the pinned release, with node affinity to the GPU node groups and the GPU
taint tolerated. Its selector leaves out the release's `app.kubernetes.io/version` label (a DaemonSet's
selector cannot change, so an upgrade would have to replace the DaemonSet); the pods still carry it.

On GKE no NVIDIA container runtime puts the driver into the container: GKE installs it on the host under
/home/kubernetes/bin/nvidia, and the exporter mounts it at /usr/local/nvidia with LD_LIBRARY_PATH set,
runs privileged to reach the GPUs, and names GPUs by device name as GKE's device plugin does, as Google's
manifest for GKE (prometheus-engine examples/nvidia-dcgm/exporter.yaml) does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clusterfab.scheduler.kubernetes.manifests.common import (
    gpu_node_tolerations,
    host_path,
    metadata,
    node_groups_affinity,
)

NAMESPACE = "clusterfab-monitoring"
NAME = "dcgm-exporter"
PORT = 9400
APP = {"app.kubernetes.io/name": NAME}

NODE_AGENTS = "clusterfab-node-agents"
NODE_AGENTS_PRIORITY = 1_000_000
"""Above any workload priority a team gets (the scheduler's classes stay in the thousands), far below
the system classes (2,000,000,000 and up; a class of our own may be at most 1,000,000,000): the kubelet evicts
a training pod before the exporter. GKE admits `system-node-critical` pods only in namespaces with a
ResourceQuota for that class (kube-system's gcp-critical-pods; Kubernetes "Limit Priority Class
consumption by default", https://kubernetes.io/docs/concepts/policy/resource-quotas/, and
https://github.com/openservicemesh/osm/issues/4408, read 2026-11-29), hence a class of our own."""


def monitoring_namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(NAMESPACE, None)}


def node_agents_priority() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": metadata(NODE_AGENTS, None),
        "value": NODE_AGENTS_PRIORITY,
        "globalDefault": False,
        # Never preempt: an agent waits for room rather than evict a running training pod.
        "preemptionPolicy": "Never",
        "description": "clusterfab's per-node agents (GPU metrics): kept when the kubelet evicts workloads.",
    }


def dcgm_exporter(
    image: str, version: str, groups: Sequence[str], *, host_driver: str | None
) -> dict[str, Any]:
    """`host_driver`: the host directory of the NVIDIA driver, mounted into the exporter where no NVIDIA
    container runtime does it (GKE); None where one does (the EKS AL2023 NVIDIA AMI)."""
    labels = {**APP, "app.kubernetes.io/version": version}
    env: list[dict[str, Any]] = [
        {"name": "DCGM_EXPORTER_LISTEN", "value": f":{PORT}"},
        {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    ]
    mounts = [{"name": "pod-gpu-resources", "readOnly": True, "mountPath": "/var/lib/kubelet/pod-resources"}]
    volumes = [host_path("pod-gpu-resources", "/var/lib/kubelet/pod-resources")]
    security: dict[str, Any] = {
        "runAsNonRoot": False,
        "runAsUser": 0,
        # SYS_ADMIN: the profiling metrics (DCGM_FI_PROF_*), NVIDIA's manifest says.
        "capabilities": {"add": ["SYS_ADMIN"], "drop": ["ALL"]},
        "allowPrivilegeEscalation": False,
    }
    if host_driver is not None:
        env += [
            {"name": "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", "value": "device-name"},
            {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"},
        ]
        mounts.append({"name": "nvidia-install-dir-host", "mountPath": "/usr/local/nvidia", "readOnly": True})
        volumes.append(host_path("nvidia-install-dir-host", host_driver, "Directory"))
        security = {"privileged": True, "runAsUser": 0}
    container = {
        "name": NAME,
        "image": image,
        "env": env,
        # On the node's own address too: the monitoring host scrapes every GPU node at <node>:9400, as it
        # scrapes a Slurm cluster's (the cloud's service discovery finds the nodes by their labels).
        "ports": [{"name": "metrics", "containerPort": PORT, "hostPort": PORT}],
        "securityContext": security,
        "volumeMounts": mounts,
        "resources": {
            "limits": {"cpu": "200m", "memory": "256Mi"},
            "requests": {"cpu": "100m", "memory": "128Mi"},
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(NAME, NAMESPACE, labels),
        "spec": {
            "updateStrategy": {"type": "RollingUpdate"},
            "selector": {"matchLabels": dict(APP)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "automountServiceAccountToken": False,
                    "priorityClassName": NODE_AGENTS,
                    "affinity": node_groups_affinity(groups),
                    "tolerations": gpu_node_tolerations(),
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def dcgm_exporter_service(version: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(NAME, NAMESPACE, {**APP, "app.kubernetes.io/version": version}),
        "spec": {"selector": dict(APP), "ports": [{"name": "metrics", "port": PORT}]},
    }
