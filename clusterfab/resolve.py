"""What a blueprint means once defaults are filled in.

Blueprints leave many things to defaults (placement, fabric, which storage a group mounts, software
versions, whether storage is protected). Rules, cost estimates, components and the node software all
need the same answers, so they are decided here, once, from the blueprint and the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from clusterfab.blueprint.models import (
    Blueprint,
    FilestoreSpec,
    LustreSpec,
    NodeGroupSpec,
    TpuSliceSpec,
)
from clusterfab.catalog import Catalog
from clusterfab.catalog.models import MachineType
from clusterfab.core.vocab import Fabric

PROTECTED_ENVIRONMENTS = frozenset({"prod"})
"""Environments whose stateful resources are protected unless the blueprint says otherwise."""


def max_size(group: NodeGroupSpec) -> int:
    """The most nodes the group can have: its count, or its autoscaling max."""
    if group.autoscaling is not None:
        return group.autoscaling.max
    return group.count or 0


def min_size(group: NodeGroupSpec) -> int:
    if group.autoscaling is not None:
        return group.autoscaling.min
    return group.count or 0


def fabric_of(group: NodeGroupSpec, machine: MachineType) -> Fabric | None:
    """The fabric the group's nodes attach to (None: only the general network)."""
    if group.fabric == "none":
        return None
    return machine.fabric


def placement_of(group: NodeGroupSpec, machine: MachineType) -> Literal["compact", "none"]:
    """compact unless the blueprint says none; by default only multi-node fabric groups are compact."""
    if group.placement is not None:
        return group.placement
    if max_size(group) > 1 and fabric_of(group, machine) is not None:
        return "compact"
    return "none"


def attached_storage(
    blueprint: Blueprint, item: NodeGroupSpec | TpuSliceSpec
) -> list[LustreSpec | FilestoreSpec]:
    """The storage mounted on a node group or TPU slice, in blueprint order (default: all)."""
    if item.attach is None:
        return list(blueprint.storage)
    wanted = set(item.attach)
    return [s for s in blueprint.storage if s.name in wanted]


def is_protected(storage: LustreSpec | FilestoreSpec, environment: str | None) -> bool:
    """Stateful resources are protected in prod unless the blueprint decides explicitly."""
    if storage.protect is not None:
        return storage.protect
    return environment in PROTECTED_ENVIRONMENTS


@dataclass(frozen=True, slots=True)
class SoftwareVersions:
    """The NVIDIA stack for GPU nodes, with the blueprint's choices over the catalog's defaults."""

    nvidia_driver: str
    cuda: str
    nccl: str


def software_of(blueprint: Blueprint, catalog: Catalog) -> SoftwareVersions:
    chosen, default = blueprint.software, catalog.recommended
    return SoftwareVersions(
        nvidia_driver=chosen.nvidia_driver or default.nvidia_driver,
        cuda=chosen.cuda or default.cuda,
        nccl=chosen.nccl or default.nccl,
    )


def lustre_tier(storage: LustreSpec, cloud: str) -> str | None:
    """The catalog tier a Lustre spec asks for: FSx deployment type, or the GCP throughput tier."""
    if cloud == "aws":
        return "PERSISTENT_2" if storage.deployment == "persistent" else "SCRATCH_2"
    if storage.throughput_mbps_per_tib is None:
        return None
    return str(storage.throughput_mbps_per_tib)


def storage_tier_name(storage: LustreSpec | FilestoreSpec, cloud: str) -> str | None:
    if isinstance(storage, FilestoreSpec):
        return storage.tier
    return lustre_tier(storage, cloud)
