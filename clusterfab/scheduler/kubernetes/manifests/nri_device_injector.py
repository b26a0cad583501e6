"""GKE's NRI device injector (GPUDirect-TCPX and -TCPXO node pools): enables NRI in containerd and injects
the devices a pod's `devices.gke.io/container.<name>` annotation lists, which is how the TCPX(O) receive
data path daemon gets the GPUs and NICs.

container-engine-accelerators' nri_device_injector/nri-device-injector.yaml at the pinned commit (the
manifest Cluster Toolkit's gke-a3-megagpu and gke-a3-highgpu blueprints apply), selecting the node groups
on these fabrics; its unused `root` volume (the host's `/`, mounted nowhere) is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clusterfab.scheduler.kubernetes.manifests.common import (
    KUBE_SYSTEM,
    host_path,
    metadata,
    node_groups_affinity,
    tolerate_all,
)

NAME = "device-injector"


def nri_device_injector(image: str, groups: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(NAME, KUBE_SYSTEM, {"k8s-app": NAME}),
        "spec": {
            "selector": {"matchLabels": {"k8s-app": NAME}},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {"name": NAME, "k8s-app": NAME}},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "affinity": node_groups_affinity(groups),
                    "tolerations": [tolerate_all()],
                    "hostNetwork": True,
                    "hostPID": True,
                    "containers": [
                        {
                            "image": image,
                            "name": NAME,
                            "resources": {"requests": {"cpu": "150m"}},
                            "securityContext": {"privileged": True},
                            "volumeMounts": [
                                {"name": "dev", "mountPath": "/dev"},
                                {"name": "nri", "mountPath": "/var/run/nri"},
                            ],
                        }
                    ],
                    "volumes": [host_path("nri", "/var/run/nri"), host_path("dev", "/dev")],
                },
            },
        },
    }
