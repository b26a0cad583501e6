"""The Kubernetes facts (facts.yaml beside this module): control plane versions per cloud, the default
version, the system node pool's machines, the GPU node pools' images and capacity types. Each record
carries its sources (ids of the catalog's sources.yaml), read like the catalog's own records."""

# No `from __future__ import annotations`: pydantic evaluates the fields' annotations.
import datetime as dt
import functools
import io
from importlib import resources

from pydantic import Field
from ruamel.yaml import YAML

from clusterfab.catalog.models import Record, Sourced


class VersionSupport(Record):
    """A control plane minor version and when the service's support of it ends."""

    minor: str = Field(pattern=r"^1\.[0-9]{2}$")
    standard_support_ends: dt.date
    extended_support_ends: dt.date


class ControlPlane(Sourced):
    """A cloud's managed Kubernetes service: the versions it offers a new cluster."""

    cloud: str
    service: str
    release_channel: str | None
    fee_sku: str
    """The control plane's fee per cluster hour in prices.yaml."""
    extended_fee_sku: str | None
    """Its fee while the version is on extended support (None: the service upgrades the cluster instead)."""
    default_version: str
    versions: list[VersionSupport]

    def version(self, minor: str) -> VersionSupport | None:
        return next((v for v in self.versions if v.minor == minor), None)


class SystemMachine(Record):
    cloud: str
    name: str
    vcpus: int
    memory_gib: int
    source: list[str]
    as_of: dt.date


class NodeImage(Record):
    """A node image of a service's GPU node pools and the machine families it runs on."""

    image: str
    families: list[str]

    def runs(self, machine: str) -> bool:
        """Whether `machine` is of one of the families: the family is the name up to its size (p5 of
        p5.48xlarge, a3-megagpu of a3-megagpu-8g)."""
        return any(machine.startswith((f"{family}.", f"{family}-")) for family in self.families)


class NodePools(Sourced):
    """What a cloud's managed Kubernetes service's node pools (GKE node pools, EKS managed node groups)
    run: the node image per machine family and the service's name of each capacity kind."""

    cloud: str
    service: str
    images: list[NodeImage]
    capacity_types: dict[str, str] | None
    autoscaler: bool
    """Whether the service resizes a pool between its limits by itself (GKE's cluster autoscaler);
    False: only a cluster autoscaler installed in the cluster does."""

    def image(self, machine: str) -> str | None:
        """The node image `machine` runs on (None: none of the service's GPU node images)."""
        return next((i.image for i in self.images if i.runs(machine)), None)


class KubernetesFacts(Record):
    control_planes: list[ControlPlane]
    system_machines: list[SystemMachine]
    node_pools: list[NodePools]

    def pools(self, cloud: str) -> NodePools | None:
        return next((p for p in self.node_pools if p.cloud == cloud), None)

    def control_plane(self, cloud: str) -> ControlPlane | None:
        return next((c for c in self.control_planes if c.cloud == cloud), None)

    def system_machine(self, cloud: str, name: str | None) -> SystemMachine | None:
        """The named system machine of `cloud` (its default, the first listed, for None)."""
        machines = [m for m in self.system_machines if m.cloud == cloud]
        if name is None:
            return machines[0] if machines else None
        return next((m for m in machines if m.name == name), None)


@functools.cache
def kubernetes_facts() -> KubernetesFacts:
    text = resources.files(__package__).joinpath("facts.yaml").read_text("utf-8")
    return KubernetesFacts.model_validate(YAML(typ="safe").load(io.StringIO(text)))
