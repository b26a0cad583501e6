"""The GCP part of the catalog (`data/gcp.yaml`): machine types with their networks and placement limits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clusterfab.catalog.models import GcpMachineType, MachineType

if TYPE_CHECKING:
    from clusterfab.catalog.query import Catalog

MANAGED_DATABASE_FIELDS = ("edition",)
"""Cloud SQL: the edition its machine type belongs to."""


def tables(data: Any) -> dict[str, Any]:
    return {
        "gcp_machine_types": {
            m.name: m for m in (GcpMachineType.model_validate(x) for x in data["machine_types"])
        },
    }


def machine_types(catalog: Catalog) -> Mapping[str, MachineType]:
    return catalog.gcp_machine_types
