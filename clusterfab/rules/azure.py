"""Catalog rules of Azure's InfiniBand fabrics: fabric units (scale sets of at most 100 VMs, NVL72 racks of
18) and the RDMA network's reserved range. They speak only of Azure sizes and Azure blueprints."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from clusterfab.catalog.azure_models import AzureMachineType
from clusterfab.clouds.azure.fabric import fabric_units
from clusterfab.core.findings import Finding
from clusterfab.rules.context import RuleContext

AZURE = "azure"


def _sizes(units: tuple[int, ...]) -> str:
    """'2 scale sets of 100' / '84, 83 and 83'."""
    if len(set(units)) == 1:
        return f"{len(units)} of {units[0]}"
    *rest, last = (str(u) for u in units)
    return f"{', '.join(rest)} and {last}"


def check_fabric_units(ctx: RuleContext) -> Iterator[Finding]:
    """A group larger than one InfiniBand fabric unit (warning: it is split, and InfiniBand does not span
    the units); a rack-scale group that is not whole racks (error, with the nearest valid counts)."""
    for group in ctx.spec.node_groups:
        machine = group.machine
        if not isinstance(machine, AzureMachineType) or group.fabric is None or machine.fabric_unit is None:
            continue
        unit, size = machine.fabric_unit, group.max_size
        field = (*group.path, "autoscaling", "max") if group.autoscaled else (*group.path, "count")
        if machine.fabric_unit_kind == "rack" and size % unit:
            below, above = size - size % unit, size - size % unit + unit
            nearest = f"{below} or {above}" if below else f"{above}"
            yield ctx.finding(
                "BP226",
                field,
                f"{machine.name} comes in NVL72 racks of {unit} VMs; {size} is not a whole number of racks",
                hint=f"nearest valid: {nearest}",
            )
        elif machine.fabric_unit_kind == "scale_set" and size > unit:
            units = fabric_units(machine, size)
            yield ctx.finding(
                "BP225",
                field,
                f"{size} {machine.name} VMs are more than one InfiniBand fabric holds ({unit}): the group "
                f"becomes {len(units)} scale sets ({_sizes(units)} VMs), and InfiniBand does not span "
                "scale sets",
                hint=f"keep multi-node jobs within one scale set, or lower the group to {unit} (Azure "
                "support can raise a scale set's limit to 300)",
            )


def check_rdma_range(ctx: RuleContext) -> Iterator[Finding]:
    """The cluster's network must not overlap the range Azure's RDMA network reserves."""
    if ctx.blueprint.cloud != AZURE:
        return
    reserved = ctx.catalog.azure.rdma_network.network
    cidr = ipaddress.IPv4Network(ctx.blueprint.network.cidr, strict=False)
    if cidr.overlaps(reserved):
        yield ctx.finding(
            "BP227",
            ("network", "cidr"),
            f"{cidr} overlaps {reserved}, which Azure's InfiniBand (RDMA) network reserves",
            hint="use a range outside 172.16.0.0/16, e.g. 10.20.0.0/16",
        )
