"""Catalog rules of Azure's InfiniBand fabrics: fabric units (scale sets of at most 100 VMs, NVL72 racks of
18) and the RDMA network's reserved range; and the subnets of Managed Lustre file systems. They speak only
of Azure sizes and Azure blueprints."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from clusterfab import addressing
from clusterfab.blueprint.models import LustreSpec
from clusterfab.catalog.azure_models import AmlfsSubnets, AzureMachineType
from clusterfab.clouds.azure.fabric import named_units
from clusterfab.clouds.azure.lustre import LustreSubnet, lustre_subnets
from clusterfab.core.findings import FieldPath, Finding
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
        if machine.fabric_unit_kind == "rack":
            # An elastic group's always-up nodes are racks of their own too (its units are cut at `min`).
            counts = [(field, size)]
            if group.autoscaled:
                counts.insert(0, ((*group.path, "autoscaling", "min"), group.min_size))
            yield from _whole_racks(ctx, machine.name, unit, counts)
        elif machine.fabric_unit_kind == "scale_set" and size > unit:
            units = tuple(u.size for u in named_units(group.name, machine, size, group.static_size))
            yield ctx.finding(
                "BP225",
                field,
                f"{size} {machine.name} VMs are more than one InfiniBand fabric holds ({unit}): the group "
                f"becomes {len(units)} scale sets ({_sizes(units)} VMs), and InfiniBand does not span "
                "scale sets",
                hint=f"keep multi-node jobs within one scale set, or lower the group to {unit} (Azure "
                "support can raise a scale set's limit to 300)",
            )


def _whole_racks(
    ctx: RuleContext, machine: str, unit: int, counts: list[tuple[FieldPath, int]]
) -> Iterator[Finding]:
    for field, size in counts:
        if not size % unit:
            continue
        below, above = size - size % unit, size - size % unit + unit
        nearest = f"{below} or {above}" if below else f"{above}"
        yield ctx.finding(
            "BP226",
            field,
            f"{machine} comes in NVL72 racks of {unit} VMs; {size} is not a whole number of racks",
            hint=f"nearest valid: {nearest}",
        )


def check_fixed_scale_sets(ctx: RuleContext) -> Iterator[Finding]:
    """BP235: without a scheduler nothing grows an Azure scale set (Slurm's resume program does, for its
    elastic nodes), so an autoscaled group would never have more than its `min` VMs."""
    if ctx.blueprint.cloud != AZURE or ctx.spec.scheduler is not None:
        return
    for group in ctx.spec.node_groups:
        if group.autoscaled:
            yield ctx.finding(
                "BP235",
                (*group.path, "autoscaling"),
                f"node group '{group.name}' is autoscaled, but without a scheduler nothing grows an Azure "
                f"scale set: it would never run more than its {group.min_size} VMs",
                hint="use `count:` the number you want running, or scheduler kind slurm (its elastic nodes "
                "grow the scale set)",
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


def check_lustre_subnets(ctx: RuleContext) -> Iterator[Finding]:
    """Each Managed Lustre file system needs a subnet of its own, of the catalog's size for its capacity,
    where the layout puts it (clusterfab.addressing.azure_lustre_subnets): a file system beyond the
    catalog's table, or one the network has no room for, is an error at its storage entry."""
    bp = ctx.blueprint
    cidr = ipaddress.IPv4Network(bp.network.cidr, strict=False)
    if bp.cloud != AZURE or cidr.prefixlen > addressing.MAX_CLUSTER_PREFIX:
        return  # a range too small for the layout is BP112
    items = [(index, s) for index, s in enumerate(bp.storage) if isinstance(s, LustreSpec)]
    table = ctx.catalog.azure.amlfs_subnets
    capacities = [s.capacity_gib for _, s in items]
    planned = lustre_subnets(str(cidr), capacities, table)
    placed = [plan for plan in planned if plan.prefix is not None]
    largest = table.sizes[-1]
    for (index, storage), plan in zip(items, planned, strict=True):
        if plan.prefix is None:
            yield ctx.finding(
                "BP229",
                ("storage", index),
                f"storage {storage.name} is {plan.tib} TiB: Microsoft's subnet table for Managed Lustre ends "
                f"at {largest.max_tib} TiB (a /{largest.prefix}), so no subnet size is known for it",
                hint=f"keep each file system at {largest.max_tib} TiB or less (split it into several), or "
                "record the size Microsoft gives for it in the catalog",
            )
        elif plan.subnet is None:
            wide = _fitting_prefix(cidr, capacities, table)
            yield ctx.finding(
                "BP229",
                ("storage", index),
                _no_room(cidr, storage.name, plan, placed),
                hint=f"use a larger network.cidr (a /{wide} holds them all), or fewer or smaller file "
                "systems",
            )


def _no_room(cidr: ipaddress.IPv4Network, name: str, plan: LustreSubnet, placed: list[LustreSubnet]) -> str:
    """Why `plan` has no subnet: the sizes it and the file systems before it need, and the room there is."""
    blocks = addressing.blocks(str(cidr))
    need = f"storage {name} ({plan.tib} TiB) needs a subnet of /{plan.prefix} or larger"
    position = next(i for i, other in enumerate(placed) if other is plan)
    if position == 0:
        block = blocks[addressing.AZURE_LUSTRE_BLOCK]
        return (
            f"{need}, but the first file system's subnet is block {addressing.AZURE_LUSTRE_BLOCK} of {cidr}, "
            f"{block} (blocks 0 and 1 are the nodes' and the controller's)"
        )
    low, high = addressing.AZURE_LUSTRE_AREA
    taken = ", ".join(f"/{p.prefix}" for p in placed[1:position]) or "none"
    return (
        f"{need}, but the other file systems' blocks of {cidr} ({low}-{high}: {blocks[low].network_address}-"
        f"{blocks[high].broadcast_address}) have no room left for it (taken before it: {taken})"
    )


def _fitting_prefix(cidr: ipaddress.IPv4Network, capacities: list[int], table: AmlfsSubnets) -> int:
    """The longest prefix of a cluster range that holds every file system's subnet."""
    for prefix in range(cidr.prefixlen - 1, 0, -1):
        wider = str(cidr.supernet(new_prefix=prefix))
        if all(plan.subnet is not None for plan in lustre_subnets(wider, capacities, table) if plan.prefix):
            return prefix
    return 0
