"""Each Azure Managed Lustre file system's subnet (pure: no Pulumi, no I/O).

Azure wants a subnet per file system, sized for its capacity: the catalog's `amlfs_subnets` gives the
smallest subnet for a capacity (Microsoft's "Network size requirements", S-AZ-AMLFS-NET), and
`clusterfab.addressing.azure_lustre_subnets` places the subnets in the cluster range. The realizer builds
what `lustre_subnets` says; the rules report where it has no answer.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from clusterfab import addressing
from clusterfab.catalog.azure_models import AmlfsSubnets

GIB_PER_TIB = 1024


@dataclass(frozen=True)
class LustreSubnet:
    """The subnet of one file system, or why there is none."""

    tib: int
    """The file system's capacity, in whole TiB (rounded up)."""
    prefix: int | None
    """The longest prefix its subnet may have; None: larger than the catalog's largest row."""
    subnet: ipaddress.IPv4Network | None
    """Where it lies; None without a `prefix` or when the cluster range has no room for it."""


def capacity_tib(capacity_gib: int) -> int:
    """Whole TiB, rounded up (the tiers' steps are whole TiB, which the rules check: BP208)."""
    return -(-capacity_gib // GIB_PER_TIB)


def lustre_subnets(cidr: str, capacities_gib: Sequence[int], table: AmlfsSubnets) -> list[LustreSubnet]:
    """The subnets of file systems of `capacities_gib`, in blueprint order.

    A file system beyond the table gets no subnet and takes no room, so the ones after it are placed as if
    it were not there (a finding stops the plan anyway)."""
    sized = [(tib, table.prefix_for(tib)) for tib in (capacity_tib(gib) for gib in capacities_gib)]
    placed = iter(addressing.azure_lustre_subnets(cidr, [p for _, p in sized if p is not None]))
    return [LustreSubnet(tib, prefix, next(placed) if prefix is not None else None) for tib, prefix in sized]
