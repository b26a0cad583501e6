"""Prometheus' node exporter on every GPU node (both clouds), in clusterfab's monitoring namespace: the
host's own series (CPU, memory, disks, network) that the monitoring host scrapes at <node>:9100, as on a
Slurm cluster's nodes, whose Ubuntu package is the same upstream release.

As the node exporter's README runs it in a container: the host's network and PID namespaces, the host's
root file system mounted read-only at /host/root and named by --path.rootfs.
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
from clusterfab.scheduler.kubernetes.manifests.dcgm_exporter import NAMESPACE, NODE_AGENTS

NAME = "node-exporter"
PORT = 9100
APP = {"app.kubernetes.io/name": NAME}


def node_exporter(image: str, version: str, groups: Sequence[str]) -> dict[str, Any]:
    labels = {**APP, "app.kubernetes.io/version": version}
    container = {
        "name": NAME,
        "image": image,
        "args": ["--path.rootfs=/host/root", f"--web.listen-address=:{PORT}"],
        "ports": [{"name": "metrics", "containerPort": PORT, "hostPort": PORT}],
        "securityContext": {"readOnlyRootFilesystem": True, "runAsNonRoot": True, "runAsUser": 65534},
        "volumeMounts": [
            {
                "name": "root",
                "mountPath": "/host/root",
                "readOnly": True,
                "mountPropagation": "HostToContainer",
            }
        ],
        "resources": {
            "limits": {"cpu": "200m", "memory": "128Mi"},
            "requests": {"cpu": "50m", "memory": "64Mi"},
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
                    "hostNetwork": True,
                    "hostPID": True,
                    "affinity": node_groups_affinity(groups),
                    "tolerations": gpu_node_tolerations(),
                    "containers": [container],
                    "volumes": [host_path("root", "/")],
                },
            },
        },
    }
