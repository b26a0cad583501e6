"""The in-cluster software of a GKE or EKS cluster: the pins (software.yaml beside this module) and the
plain Kubernetes objects the program applies, in apply order.

EKS (AL2023 NVIDIA AMI: driver and container toolkit on the node): the NVIDIA device plugin on every GPU
node group, the EFA device plugin on the EFA node groups. GKE installs the NVIDIA driver itself (the node
pool's gpu_driver_installation_config) and runs its own device plugin for `nvidia.com/gpu`, so the
cluster gets none from us: a second plugin registering the same resource would fight GKE's ("Run GPUs in
Standard node pools", https://cloud.google.com/kubernetes-engine/docs/how-to/gpus, and "Manage the GPU
stack with the NVIDIA GPU Operator on GKE", which recommends GKE's GPU management,
https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-operator, both read 2026-11-29). GKE node
groups get their fabric's pieces instead: the NRI device injector and the TCPXO or TCPX NCCL plugin
installer, or the gIB NCCL plugin installer on RDMA. On both clouds the DCGM exporter runs on the GPU
nodes. TPU slices need nothing: GKE runs their device plugin.
"""

# No `from __future__ import annotations`: pydantic evaluates the fields' annotations.
import datetime as dt
import functools
import io
from importlib import resources
from typing import Any, Self

from pydantic import Field, model_validator
from ruamel.yaml import YAML

from clusterfab.catalog.models import Record
from clusterfab.scheduler.kubernetes.manifests import dcgm_exporter as dcgm
from clusterfab.scheduler.kubernetes.manifests import nccl_installers as nccl
from clusterfab.scheduler.kubernetes.manifests.efa_device_plugin import efa_device_plugin
from clusterfab.scheduler.kubernetes.manifests.nri_device_injector import nri_device_injector
from clusterfab.scheduler.kubernetes.manifests.nvidia_device_plugin import nvidia_device_plugin
from clusterfab.spec.model import ClusterSpec, NodeGroup


class Image(Record):
    """A container image as its source pins it: a tag, a digest, or both."""

    repository: str
    tag: str | None = None
    digest: str | None = Field(default=None, pattern=r"^sha256:[0-9a-f]{64}$")

    @model_validator(mode="after")
    def _pinned(self) -> Self:
        if self.tag is None and self.digest is None:
            raise ValueError(f"image {self.repository}: give its tag or digest")
        return self

    @property
    def reference(self) -> str:
        """`repository:tag`, `repository@digest` or `repository:tag@digest`."""
        tag = f":{self.tag}" if self.tag else ""
        digest = f"@{self.digest}" if self.digest else ""
        return f"{self.repository}{tag}{digest}"


class Piece(Record):
    """One piece of in-cluster software: the upstream manifest or chart version it follows and its
    images, with the page or repository they were read from."""

    name: str
    version: str
    source: str = Field(pattern=r"^https://")
    also: tuple[str, ...] = ()
    as_of: dt.date
    images: dict[str, Image]

    def image(self, role: str) -> str:
        return self.images[role].reference


class KubernetesSoftware(Record):
    pieces: list[Piece]

    def piece(self, name: str) -> Piece:
        found = next((p for p in self.pieces if p.name == name), None)
        if found is None:
            raise KeyError(f"software.yaml has no piece {name!r}")
        return found


@functools.cache
def kubernetes_software() -> KubernetesSoftware:
    text = resources.files(__package__).joinpath("software.yaml").read_text("utf-8")
    return KubernetesSoftware.model_validate(YAML(typ="safe").load(io.StringIO(text)))


def in_cluster_objects(spec: ClusterSpec, cloud: str) -> list[dict[str, Any]]:
    """The cluster's system software as plain manifests, in the order they are applied: cluster-scoped
    objects (the monitoring namespace, the node agents' PriorityClass) before what uses them. Empty for
    a cluster without GPU node groups."""
    groups = spec.node_groups
    if not groups:
        return []
    software = kubernetes_software()
    if cloud == "aws":
        fabric = _eks_objects(groups, software)
    elif cloud == "gcp":
        fabric = _gke_objects(groups, software)
    else:
        raise ValueError(f"no managed Kubernetes in-cluster software for cloud {cloud!r}")
    exporter = software.piece("dcgm-exporter")
    names = [g.name for g in groups]
    return [
        dcgm.monitoring_namespace(),
        dcgm.node_agents_priority(),
        *fabric,
        dcgm.dcgm_exporter(exporter.image("exporter"), exporter.version, names, gke=cloud == "gcp"),
        dcgm.dcgm_exporter_service(exporter.version),
    ]


def _names(groups: tuple[NodeGroup, ...], *fabrics: str, architecture: str | None = None) -> list[str]:
    return [
        g.name
        for g in groups
        if g.fabric in fabrics and (architecture is None or g.machine.cpu_architecture == architecture)
    ]


def _eks_objects(groups: tuple[NodeGroup, ...], software: KubernetesSoftware) -> list[dict[str, Any]]:
    # Every machine type of the catalog has NVIDIA GPUs: every node group gets the device plugin.
    objects = [
        nvidia_device_plugin(software.piece("nvidia-device-plugin").image("plugin"), [g.name for g in groups])
    ]
    efa = _names(groups, "efa")
    if efa:
        objects.append(efa_device_plugin(software.piece("efa-device-plugin").image("plugin"), efa))
    return objects


def _gke_objects(groups: tuple[NodeGroup, ...], software: KubernetesSoftware) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    gpudirect = _names(groups, "gpudirect-tcpx", "gpudirect-tcpxo")
    if gpudirect:
        objects.append(
            nri_device_injector(software.piece("nri-device-injector").image("injector"), gpudirect)
        )
    tcpxo, tcpx = _names(groups, "gpudirect-tcpxo"), _names(groups, "gpudirect-tcpx")
    if tcpxo:
        piece = software.piece("nccl-tcpxo-installer")
        pins = (piece.image("installer"), piece.image("pre-installation"), piece.image("pause"))
        objects.append(nccl.nccl_tcpxo_installer(*pins, tcpxo))
    if tcpx:
        piece = software.piece("nccl-tcpx-installer")
        objects.append(nccl.nccl_tcpx_installer(piece.image("installer"), piece.image("pause"), tcpx))
    rdma = software.piece("nccl-rdma-installer")
    for name, architecture in ((nccl.RDMA, "x86_64"), (nccl.RDMA_ARM64, "arm64")):
        members = _names(groups, "rdma", architecture=architecture)
        if members:
            image = rdma.image(f"installer-{architecture}")
            objects.append(nccl.nccl_rdma_installer(name, image, rdma.image("pause"), members))
    return objects
