"""EKS: the device plugins of the GPU node groups.

The EKS-optimized AL2023 NVIDIA AMI carries the NVIDIA driver and the NVIDIA container toolkit, so the
node groups need the NVIDIA device plugin and not the GPU operator (which would manage a driver of its
own); the EFA node groups also need the EFA device plugin, which the AMI does not carry (software.yaml
names the pages).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clusterfab.scheduler.kubernetes.manifests.common import node_groups_on
from clusterfab.scheduler.kubernetes.manifests.efa_device_plugin import efa_device_plugin
from clusterfab.scheduler.kubernetes.manifests.nvidia_device_plugin import nvidia_device_plugin
from clusterfab.spec.model import NodeGroup

if TYPE_CHECKING:
    from clusterfab.scheduler.kubernetes.software import KubernetesSoftware

HOST_DRIVER: str | None = None
"""The NVIDIA container runtime mounts the driver into containers: nothing to mount from the host."""
QUEUED_PROVISIONING_CLASS: str | None = None
"""EKS sells no flex-start capacity (validation refuses it): no ProvisioningRequest class."""


def node_software(groups: tuple[NodeGroup, ...], software: KubernetesSoftware) -> list[dict[str, Any]]:
    # Every machine type of the catalog has NVIDIA GPUs: every node group gets the device plugin.
    objects = [
        nvidia_device_plugin(software.piece("nvidia-device-plugin").image("plugin"), [g.name for g in groups])
    ]
    efa = node_groups_on(groups, "efa")
    if efa:
        objects.append(efa_device_plugin(software.piece("efa-device-plugin").image("plugin"), efa))
    return objects
