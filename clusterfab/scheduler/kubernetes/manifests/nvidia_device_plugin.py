"""NVIDIA's Kubernetes device plugin (EKS): advertises `nvidia.com/gpu` on the GPU nodes.

NVIDIA's static manifest (deployments/static/nvidia-device-plugin.yml at the pinned release), with node
affinity to the GPU node groups: the manifest itself runs on every node, and the plugin fails on a node
without GPUs (the system nodes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clusterfab.scheduler.kubernetes.manifests.common import (
    KUBE_SYSTEM,
    gpu_toleration,
    host_path,
    metadata,
    node_groups_affinity,
)

NAME = "nvidia-device-plugin-daemonset"


def nvidia_device_plugin(image: str, groups: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(NAME, KUBE_SYSTEM),
        "spec": {
            "selector": {"matchLabels": {"name": "nvidia-device-plugin-ds"}},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {"name": "nvidia-device-plugin-ds"}},
                "spec": {
                    "affinity": node_groups_affinity(groups),
                    "tolerations": [gpu_toleration()],
                    "priorityClassName": "system-node-critical",
                    "containers": [
                        {
                            "image": image,
                            "name": "nvidia-device-plugin-ctr",
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [
                                {
                                    "name": "kubelet-device-plugins-dir",
                                    "mountPath": "/var/lib/kubelet/device-plugins",
                                }
                            ],
                        }
                    ],
                    "volumes": [
                        host_path(
                            "kubelet-device-plugins-dir", "/var/lib/kubelet/device-plugins", "Directory"
                        )
                    ],
                },
            },
        },
    }
