"""How the budget policy reads Azure resources: the types that cost money and what each says.

Scale sets (`sku.name` is the VM size, `sku.capacity` the VMs, `virtualMachineProfile.priority` Spot or
Regular; the scale sets of one node group, its InfiniBand fabric units, are one item, as `clusterfab cost`
prices the group), single VMs (the Slurm controller and login nodes, by their role tag) and Managed
Lustre (`sku.name` is the tier, `storageCapacityTiB` its size).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from clusterfab.clouds.azure.profile import SCALE_SET
from clusterfab.core.vocab import NODE_GROUP_TAG, CapacityKind
from clusterfab.policy.pricing import CloudPricing, Reader
from clusterfab.policy.resources import Resource, integer

AMLFS = "azure-native:storagecache:AmlFilesystem"
VIRTUAL_MACHINE = "azure-native:compute:VirtualMachine"
GIB_PER_TIB = 1024


def _capacity(props: Mapping[str, Any]) -> CapacityKind:
    profile = props.get("virtualMachineProfile")
    priority = profile.get("priority") if isinstance(profile, Mapping) else None
    return "spot" if priority in ("Spot", "Low") else "on_demand"


def _sku(props: Mapping[str, Any]) -> Mapping[str, Any]:
    sku = props.get("sku")
    return sku if isinstance(sku, Mapping) else {}


def _scale_set(reader: Reader, scale_set: Resource) -> None:
    """A scale set; the later fabric units of a node group add their VMs to the group's item."""
    sku = _sku(scale_set.props)
    size, capacity = sku.get("name"), integer(sku.get("capacity"))
    if not isinstance(size, str) or capacity is None:
        reader.skip(f"{scale_set.name}: no VM size or capacity")
        return
    group = scale_set.tags().get(NODE_GROUP_TAG)
    for index, line in enumerate(reader.lines):
        if group and line.kind == "node_group" and line.name == group and line.sku == size:
            low = line.min_quantity if line.min_quantity is not None else line.quantity
            reader.lines[index] = dataclasses.replace(
                line, quantity=line.quantity + capacity, min_quantity=low + capacity
            )
            return
    reader.group(scale_set, size, capacity, capacity, _capacity(scale_set.props))


def _virtual_machine(reader: Reader, vm: Resource) -> None:
    """A single VM: the Slurm controller or a login node (`hardwareProfile.vmSize`)."""
    profile = vm.props.get("hardwareProfile")
    size = profile.get("vmSize") if isinstance(profile, Mapping) else None
    spot = vm.props.get("priority") in ("Spot", "Low")
    reader.instance(vm, size, "spot" if spot else "on_demand")


def _amlfs(reader: Reader, resource: Resource) -> None:
    tib = integer(resource.props.get("storageCapacityTiB"))
    tier = _sku(resource.props).get("name")
    reader.storage(resource, "lustre", str(tier or ""), tib * GIB_PER_TIB if tib is not None else None, None)


PRICING = CloudPricing(
    readers={SCALE_SET: _scale_set, VIRTUAL_MACHINE: _virtual_machine, AMLFS: _amlfs},
    zones={},
)
