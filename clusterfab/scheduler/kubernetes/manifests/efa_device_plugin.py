"""The EFA Kubernetes device plugin (EKS node groups with EFA): advertises `vpc.amazonaws.com/efa`, the
resource a training pod asks for to get the node's EFA interfaces.

The DaemonSet of the eks-charts `aws-efa-k8s-device-plugin` chart as its default values render it
(release name = chart name, in kube-system), with node affinity to the EFA node groups instead of the
chart's list of EFA instance types, and the GPU taint tolerated beside the chart's CriticalAddonsOnly.
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

NAME = "aws-efa-k8s-device-plugin"
RESOURCE = "vpc.amazonaws.com/efa"


def efa_device_plugin(image: str, groups: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(NAME, KUBE_SYSTEM),
        "spec": {
            "selector": {"matchLabels": {"name": NAME}},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {"name": NAME}},
                "spec": {
                    "automountServiceAccountToken": False,
                    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, gpu_toleration()],
                    "priorityClassName": "system-node-critical",
                    "affinity": node_groups_affinity(groups),
                    "hostNetwork": True,
                    "containers": [
                        {
                            "image": image,
                            "name": NAME,
                            # The chart's defaults: the plugin opens /dev/infiniband on the host.
                            "securityContext": {
                                "allowPrivilegeEscalation": True,
                                "privileged": True,
                                "runAsNonRoot": False,
                                "runAsUser": 0,
                            },
                            "resources": {"requests": {"cpu": "10m", "memory": "20Mi"}},
                            "volumeMounts": [
                                {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
                                {"name": "infiniband-volume", "mountPath": "/dev/infiniband/"},
                                {"name": "neuron-tools", "mountPath": "/opt/aws/neuron/"},
                            ],
                        }
                    ],
                    "volumes": [
                        host_path("device-plugin", "/var/lib/kubelet/device-plugins"),
                        host_path("infiniband-volume", "/dev/infiniband/"),
                        host_path("neuron-tools", "/opt/aws/neuron/", "DirectoryOrCreate"),
                    ],
                },
            },
        },
    }
