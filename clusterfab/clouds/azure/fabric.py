"""How a node group of an InfiniBand size is cut into fabric units (pure: no Pulumi, no I/O).

InfiniBand links only the VMs of one scale set with a single placement group, "capped at 100 VMs by
default" (learn.microsoft.com/azure/virtual-machines/setup-infiniband); VMs of different scale sets cannot
reach each other over it. A GB200 / GB300 fabric unit is one NVL72 rack of exactly 18 VMs. The unit of each
size is in the catalog (`AzureMachineType.fabric_unit`, `fabric_unit_kind`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterfab.catalog.azure_models import AzureMachineType
from clusterfab.clouds.base import FabricUnit

if TYPE_CHECKING:
    from clusterfab.catalog.models import MachineType


def fabric_units(machine: MachineType, count: int) -> tuple[int, ...]:
    """The sizes of the fabric units `count` nodes of `machine` take, largest first.

    A scale-set unit holds at most `fabric_unit` VMs, so the group is split into as few scale sets as
    that allows, of near-equal sizes (200 -> 100 + 100, 250 -> 84 + 83 + 83): the realizer never makes
    one of more than the unit. A rack unit holds exactly `fabric_unit` VMs (a count that is no multiple is
    refused by the rules; here the last rack takes the rest). A size without InfiniBand, or no nodes at
    all, is one unit of `count` (or none).
    """
    if count <= 0:
        return ()
    unit = machine.fabric_unit if isinstance(machine, AzureMachineType) else None
    if unit is None or machine.fabric is None:
        return (count,)
    if isinstance(machine, AzureMachineType) and machine.fabric_unit_kind == "rack":
        full, rest = divmod(count, unit)
        return (unit,) * full + ((rest,) if rest else ())
    units = -(-count // unit)
    base, extra = divmod(count, units)
    return (base + 1,) * extra + (base,) * (units - extra)


def unit_names(group: str, units: int) -> tuple[str, ...]:
    """The units' names: the group's own for one unit, `<group>-<i>` for several. They name the scale
    sets (a one-unit group keeps the name it had before units existed) and Slurm's features."""
    return (group,) if units == 1 else tuple(f"{group}-{index}" for index in range(units))


def named_units(
    group: str, machine: MachineType, count: int, static: int | None = None
) -> tuple[FabricUnit, ...]:
    """The group's fabric units, named, with their nodes numbered across the units in order (Slurm names
    them `<group>-<i>`). Where only the first `static` nodes are always up, those and the elastic rest are
    cut into units apart: an always-up unit's scale set keeps its size, an elastic one's grows and shrinks
    with Slurm's power saving (no job spans the two, as none spans two units)."""
    up = count if static is None else min(static, count)
    sizes = fabric_units(machine, up) + fabric_units(machine, count - up)
    firsts = [sum(sizes[:index]) for index in range(len(sizes))]
    return tuple(
        FabricUnit(name, first, size)
        for name, first, size in zip(unit_names(group, len(sizes)), firsts, sizes, strict=True)
    )
