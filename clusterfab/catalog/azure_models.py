"""Typed view of the Azure catalog data (`data/azure.yaml`): ND-series sizes with their InfiniBand fabric
units, the regions and their zones, the RDMA network's reserved range and Azure Managed Lustre's subnets.

A module of its own (not in models.py): what only Azure needs stays with Azure.
"""

# No `from __future__ import annotations`: see models.py (pydantic evaluates annotations at class creation).
import ipaddress
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from clusterfab.catalog.models import InfinibandPorts, MachineType, Record, Sourced

if TYPE_CHECKING:
    from clusterfab.catalog.query import Catalog

FabricUnitKind = Literal["scale_set", "rack"]
"""What one InfiniBand fabric of a size is: a scale set with a single placement group (ND H100 / H200
v5, up to `fabric_unit` VMs), or a rack of exactly `fabric_unit` VMs (GB200 / GB300 NVL72)."""


class AzureMachineType(MachineType):
    """An Azure VM size. The `r` in a size's name marks InfiniBand (RDMA); a size without it has none."""

    cloud: Literal["azure"] = "azure"
    ib_hcas: int = Field(ge=0, description="InfiniBand HCAs (ports) per VM; 0 without InfiniBand.")
    ib_gbps_per_port: int | None = Field(description="Gb/s of each InfiniBand port; None without one.")
    local_nvme_gib: int = Field(gt=0, description="Local NVMe capacity per VM.")
    quota_family: str | None = Field(description="The vCPU quota family (None: no source names it).")
    fabric_unit: int | None = Field(
        gt=0, description="Most VMs of one InfiniBand fabric (rack: exactly); None without InfiniBand."
    )
    fabric_unit_kind: FabricUnitKind | None
    regions: list[str] = Field(description="Regions a stored source confirms offer the size.")

    def listing(self, catalog: "Catalog") -> dict[str, Any]:
        del catalog
        return {
            "ib_hcas": self.ib_hcas,
            "ib_gbps_per_port": self.ib_gbps_per_port,
            "local_nvme_gib": self.local_nvme_gib,
            "quota_family": self.quota_family,
            "fabric_unit": self.fabric_unit,
            "fabric_unit_kind": self.fabric_unit_kind,
            "locations": sorted(self.regions),
        }

    def infiniband_ports(self) -> InfinibandPorts | None:
        if self.fabric != "infiniband" or self.ib_gbps_per_port is None:
            return None
        return InfinibandPorts(self.ib_hcas, self.ib_gbps_per_port)


class AzureRegions(Sourced):
    """Azure regions with availability zones (programmatic names) and the zones of each ("1", "2", "3")."""

    zones: dict[str, list[str]]


class RdmaNetwork(Sourced):
    """The address range Azure's InfiniBand (RDMA) network reserves: no VNet of a cluster may overlap it."""

    cidr: str

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.cidr)


class AmlfsSubnet(Record):
    """The smallest subnet an AMLFS file system of up to `max_tib` TiB needs."""

    max_tib: int = Field(gt=0)
    prefix: int = Field(ge=16, le=29)


class AmlfsSubnets(Sourced):
    sizes: list[AmlfsSubnet]

    def prefix_for(self, tib: int) -> int | None:
        """The longest prefix a subnet for `tib` TiB may have (None: larger than the table)."""
        return next((s.prefix for s in self.sizes if tib <= s.max_tib), None)


class AzureTables(Record):
    """Everything the Azure part of the catalog holds (one `Catalog` field)."""

    machine_types: dict[str, AzureMachineType]
    regions: AzureRegions
    rdma_network: RdmaNetwork
    amlfs_subnets: AmlfsSubnets
