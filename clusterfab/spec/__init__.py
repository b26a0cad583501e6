"""The resolved cluster: `resolve(blueprint, catalog, environment) -> ClusterSpec`."""

from clusterfab.spec.capacity import Capacity, CapacityBlock, FlexStart, OnDemand, Reservation, Spot
from clusterfab.spec.model import (
    Budget,
    ClusterSpec,
    FilestoreStorage,
    LocalScratch,
    LustreStorage,
    Monitoring,
    NodeGroup,
    Partition,
    SchedulerSection,
    Slurm,
    SoftwareVersions,
    Storage,
    Team,
    TpuSlice,
    Unresolved,
)
from clusterfab.spec.resolve import resolve

__all__ = [
    "Budget",
    "Capacity",
    "CapacityBlock",
    "ClusterSpec",
    "FilestoreStorage",
    "FlexStart",
    "LocalScratch",
    "LustreStorage",
    "Monitoring",
    "NodeGroup",
    "OnDemand",
    "Partition",
    "Reservation",
    "SchedulerSection",
    "Slurm",
    "SoftwareVersions",
    "Spot",
    "Storage",
    "Team",
    "TpuSlice",
    "Unresolved",
    "resolve",
]
