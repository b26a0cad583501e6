"""The in-cluster software of a GKE or EKS cluster: the pins (software.yaml beside this module) and the
plain Kubernetes objects the program applies, in apply order.

What the node groups need differs per cloud and is in the cloud's module, found by the cloud's name
(manifests/node_software_<cloud>.py): on EKS the NVIDIA and EFA device plugins, on GKE, which installs the
driver and runs its own device plugin, each fabric's software. On both the DCGM exporter runs on the GPU
nodes.
"""

# No `from __future__ import annotations`: pydantic evaluates the fields' annotations.
import datetime as dt
import functools
import importlib
import io
from importlib import resources
from typing import Any, Protocol, Self

from pydantic import Field, model_validator
from ruamel.yaml import YAML

from clusterfab.catalog.models import Record
from clusterfab.scheduler.kubernetes.manifests import dcgm_exporter as dcgm
from clusterfab.scheduler.kubernetes.manifests.node_exporter import node_exporter
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


class Chart(Record):
    """A Helm chart as its publisher releases it: the OCI registry path it is pushed to, the chart's name
    and its version."""

    repository: str = Field(pattern=r"^oci://")
    name: str
    version: str

    @property
    def reference(self) -> str:
        """What Helm installs: `oci://<registry path>/<name>`."""
        return f"{self.repository}/{self.name}"


class Piece(Record):
    """One piece of in-cluster software: the upstream manifest or chart version it follows and its
    images, with the page or repository they were read from; a piece installed from a Helm chart names it."""

    name: str
    version: str
    source: str = Field(pattern=r"^https://")
    also: tuple[str, ...] = ()
    as_of: dt.date
    chart: Chart | None = None
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
    part = cloud_part(cloud)
    exporter = software.piece("dcgm-exporter")
    node = software.piece("node-exporter")
    names = [g.name for g in groups]
    return [
        dcgm.monitoring_namespace(),
        dcgm.node_agents_priority(),
        *part.node_software(groups, software),
        dcgm.dcgm_exporter(exporter.image("exporter"), exporter.version, names, host_driver=part.HOST_DRIVER),
        dcgm.dcgm_exporter_service(exporter.version),
        node_exporter(node.image("exporter"), node.version, names),
    ]


class CloudPart(Protocol):
    """A cloud's part of the in-cluster software: `manifests/node_software_<cloud>.py`."""

    HOST_DRIVER: str | None
    """Where the node image keeps the NVIDIA driver when no NVIDIA container runtime mounts it."""
    QUEUED_PROVISIONING_CLASS: str | None
    """The ProvisioningRequest class that grows a flex-start node group for a queued workload, if the
    cloud sells flex-start (clusterfab.scheduler.kubernetes.kueue.admission_objects)."""

    def node_software(
        self, groups: tuple[NodeGroup, ...], software: KubernetesSoftware
    ) -> list[dict[str, Any]]:
        """The device plugins and fabric software the cloud's node groups need."""
        ...


def cloud_part(cloud: str) -> CloudPart:
    """The cloud's module, by its name (a cloud's name is a module name's part; nothing else is)."""
    try:
        if not cloud.isidentifier():
            raise ModuleNotFoundError(cloud)
        module: CloudPart = importlib.import_module(f"{__package__}.manifests.node_software_{cloud}")
    except ModuleNotFoundError:
        raise ValueError(f"no managed Kubernetes in-cluster software for cloud {cloud!r}") from None
    return module
