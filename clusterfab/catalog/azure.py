"""The Azure part of the catalog (`data/azure.yaml`): ND-series sizes with their InfiniBand fabric units,
regions and zones, the RDMA network's reserved range and Azure Managed Lustre's subnet sizes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clusterfab.catalog.azure_models import (
    AmlfsSubnets,
    AzureMachineType,
    AzureRegions,
    AzureTables,
    RdmaNetwork,
)

if TYPE_CHECKING:
    from clusterfab.catalog.models import MachineType
    from clusterfab.catalog.query import Catalog

MANAGED_DATABASE_FIELDS = ("ca_certificates",)
"""Azure Database for MySQL: the root certificates, from the controller's trust store."""


def tables(data: Any) -> dict[str, Any]:
    machines = (AzureMachineType.model_validate(x) for x in data["machine_types"])
    return {
        "azure": AzureTables(
            machine_types={m.name: m for m in machines},
            regions=AzureRegions.model_validate(data["regions"]),
            rdma_network=RdmaNetwork.model_validate(data["rdma_network"]),
            amlfs_subnets=AmlfsSubnets.model_validate(data["amlfs_subnets"]),
        )
    }


def machine_types(catalog: Catalog) -> Mapping[str, MachineType]:
    return catalog.azure.machine_types
