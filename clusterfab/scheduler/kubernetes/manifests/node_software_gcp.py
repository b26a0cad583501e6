"""GKE: each fabric's software on its node groups, and no device plugin.

GKE installs the NVIDIA driver itself (the node pool's gpu_driver_installation_config) and runs its own
device plugin for `nvidia.com/gpu`, so the cluster gets none from us: a second plugin registering the
same resource would fight GKE's ("Run GPUs in Standard node pools",
https://cloud.google.com/kubernetes-engine/docs/how-to/gpus, and "Manage the GPU stack with the NVIDIA
GPU Operator on GKE", which recommends GKE's own GPU management,
https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-operator, both read 2026-11-29). TPU slices
need nothing either: GKE runs their device plugin. What the fabrics need is what GKE's own recipes apply
(software.yaml): the NRI device injector and the TCPXO or TCPX NCCL plugin installer, or the gIB NCCL
plugin installer on RDMA.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clusterfab.scheduler.kubernetes.manifests import nccl_installers as nccl
from clusterfab.scheduler.kubernetes.manifests.common import node_groups_on
from clusterfab.scheduler.kubernetes.manifests.nri_device_injector import nri_device_injector
from clusterfab.spec.model import NodeGroup

if TYPE_CHECKING:
    from clusterfab.scheduler.kubernetes.software import KubernetesSoftware

HOST_DRIVER: str | None = "/home/kubernetes/bin/nvidia"
"""Where GKE's driver installer puts the driver on the node (no NVIDIA container runtime mounts it)."""
QUEUED_PROVISIONING_CLASS: str | None = "queued-provisioning.gke.io"
"""GKE's ProvisioningRequest class for queued provisioning, how GKE sells flex-start to a node pool (Cluster
Toolkit's examples/gke-consumption-options/dws-flex-start-queued-provisioning/dws-queues.yaml.tftpl)."""


def node_software(groups: tuple[NodeGroup, ...], software: KubernetesSoftware) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    gpudirect = node_groups_on(groups, "gpudirect-tcpx", "gpudirect-tcpxo")
    if gpudirect:
        objects.append(
            nri_device_injector(software.piece("nri-device-injector").image("injector"), gpudirect)
        )
    tcpxo, tcpx = node_groups_on(groups, "gpudirect-tcpxo"), node_groups_on(groups, "gpudirect-tcpx")
    if tcpxo:
        piece = software.piece("nccl-tcpxo-installer")
        pins = (piece.image("installer"), piece.image("pre-installation"), piece.image("pause"))
        objects.append(nccl.nccl_tcpxo_installer(*pins, tcpxo))
    if tcpx:
        piece = software.piece("nccl-tcpx-installer")
        objects.append(nccl.nccl_tcpx_installer(piece.image("installer"), piece.image("pause"), tcpx))
    rdma = software.piece("nccl-rdma-installer")
    for name, architecture in ((nccl.RDMA, "x86_64"), (nccl.RDMA_ARM64, "arm64")):
        members = node_groups_on(groups, "rdma", architecture=architecture)
        if members:
            image = rdma.image(f"installer-{architecture}")
            objects.append(nccl.nccl_rdma_installer(name, image, rdma.image("pause"), members))
    return objects
