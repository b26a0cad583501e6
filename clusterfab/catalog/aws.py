"""The AWS part of the catalog (`data/aws.yaml`): machine types, the zone id prefixes of the regions,
Capacity Block limits and times, and the EFA network interface layouts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from clusterfab.catalog.models import (
    AwsMachineType,
    AwsRegions,
    CapacityBlockLimits,
    CapacityBlockTimes,
    MachineType,
    NetworkLayout,
)

if TYPE_CHECKING:
    from clusterfab.catalog.query import Catalog

MANAGED_DATABASE_FIELDS = ("parameter_family", "ca_bundle_url")
"""RDS: the DB parameter group family, and where the CA bundle of its server certificates is published."""


def tables(data: Any) -> dict[str, Any]:
    return {
        "aws_regions": AwsRegions.model_validate(data["regions"]),
        "capacity_blocks": CapacityBlockLimits.model_validate(data["capacity_blocks"]),
        "capacity_block_times": CapacityBlockTimes.model_validate(data["capacity_block_times"]),
        "network_layouts": {k: NetworkLayout.model_validate(v) for k, v in data["network_layouts"].items()},
        "aws_machine_types": {
            m.name: m for m in (AwsMachineType.model_validate(x) for x in data["machine_types"])
        },
    }


def machine_types(catalog: Catalog) -> Mapping[str, MachineType]:
    return catalog.aws_machine_types
