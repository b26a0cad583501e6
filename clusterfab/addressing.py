"""The cluster network's address plan.

The blueprint gives one private range; every subnet the cluster needs is a fixed slot of it, so the
plan is stable when groups change: slot i is always the same subnet. The range is cut into 16 equal
blocks. AWS uses block 0 for the nodes' private subnet, the last block for the public subnet that
holds only the NAT gateway, and the one before it for the accounting database's second subnet (managed
accounting: RDS wants a subnet group over two zones). GCP uses block i for general network i, then one
block per extra GPU network or RDMA subnet, in order. Azure uses block 0 for the nodes, block 1 for the
controller, block 2 for the first Managed Lustre file system, blocks 3-13 for the others
(`azure_lustre_subnets`), the start of block 14 for the accounting database's delegated subnet (managed
accounting) and the start of block 15 for the Bastion.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

SPLIT_BITS = 4
BLOCKS = 1 << SPLIT_BITS
MAX_CLUSTER_PREFIX = 20
"""The smallest cluster range: 16 blocks of /24."""


def blocks(cidr: str) -> list[ipaddress.IPv4Network]:
    """The 16 equal blocks of the cluster range, in address order."""
    network = ipaddress.IPv4Network(cidr)
    return list(network.subnets(prefixlen_diff=SPLIT_BITS))


def aws_node_subnet(cidr: str) -> ipaddress.IPv4Network:
    return blocks(cidr)[0]


def aws_public_subnet(cidr: str) -> ipaddress.IPv4Network:
    return blocks(cidr)[-1]


def aws_database_subnet(cidr: str) -> ipaddress.IPv4Network:
    return blocks(cidr)[-2]


def gcp_subnet(cidr: str, slot: int) -> ipaddress.IPv4Network:
    """Slot i: general networks first (0, 1), then extra GPU networks or RDMA subnets."""
    return blocks(cidr)[slot]


GCP_PRIVATE_SERVICES_SLOT = BLOCKS - 1
"""GCP: the last block is the private services access range (Managed Lustre, Filestore, the Cloud SQL
accounting database): at least /24, Cloud SQL's smallest allocated range."""


def gcp_fabric_slots(general_slots: int) -> int:
    """GCP: blocks left for GPU networks and RDMA subnets after the general and private services ones."""
    return GCP_PRIVATE_SERVICES_SLOT - general_slots


SLURM_CONTROLLER_HOST = 10
"""The controller's host number in the hosts' subnet (`CloudProfile.host_subnet`: the nodes' subnet on AWS,
the first general one on GCP): above the addresses the clouds reserve at the start of a subnet, and fixed
so that slurm.conf can name it before it exists."""


def slurm_controller_address(host_subnet: ipaddress.IPv4Network) -> str:
    """The Slurm controller's private address in the cluster's hosts' subnet: nodes and clients reach
    slurmctld there."""
    return str(host_subnet[SLURM_CONTROLLER_HOST])


AZURE_LUSTRE_BLOCK = 2
"""Azure: the first Managed Lustre file system's subnet is this whole block. Before each file system had
a subnet of its own, all of them shared this block; keeping the first one there means a stack made then
sees no change: Azure cannot move a file system to another subnet, so a moved subnet replaces the file
system and its data."""
AZURE_LUSTRE_AREA = (3, BLOCKS - 3)
"""Azure: the blocks (first and last, inclusive) that hold the subnets of the file systems after the first.
The last two blocks stay out of it, as AWS uses them: the last holds the Bastion's subnet, the one before
holds the subnet the accounting database's service delegates to itself (`azure_database_subnet`)."""
AZURE_BASTION_PREFIX = 26
"""Azure Bastion's subnet, AzureBastionSubnet, "must be /26 or larger" (learn.microsoft.com/azure/bastion/
configuration-settings#subnet)."""


def azure_bastion_subnet(cidr: str) -> ipaddress.IPv4Network:
    """The Bastion's subnet: the first /26 of the cluster range's last block (every block is /24 or larger),
    clear of the Lustre subnets, so adding it to a stack moves nothing."""
    return next(blocks(cidr)[-1].subnets(new_prefix=AZURE_BASTION_PREFIX))


AZURE_DATABASE_PREFIX = 28
"""Azure Database for MySQL flexible server's delegated subnet (managed accounting): a /28, which holds
the one server (learn.microsoft.com/azure/mysql/flexible-server/concepts-networking-vnet)."""


def azure_database_subnet(cidr: str) -> ipaddress.IPv4Network:
    """The accounting database's delegated subnet: the first /28 of the block before the Bastion's, which
    no other subnet uses, so adding managed accounting to a stack moves nothing."""
    return next(blocks(cidr)[-2].subnets(new_prefix=AZURE_DATABASE_PREFIX))


def azure_lustre_subnets(cidr: str, prefixes: Sequence[int]) -> list[ipaddress.IPv4Network | None]:
    """Each Managed Lustre file system's subnet, in blueprint order, from the longest prefix it may have
    (the catalog's size for its capacity); None where the range has no room for it.

    The first takes the whole `AZURE_LUSTRE_BLOCK` when that is at least its size. Each later one takes the
    next free range of exactly its size (aligned to it) in `AZURE_LUSTRE_AREA`, after those before it: a
    file system added at the end never moves one before it. Removing or reordering file systems moves the
    ones after the change, which the plan shows as their replacement."""
    parts = blocks(cidr)
    first = parts[AZURE_LUSTRE_BLOCK]
    low, high = AZURE_LUSTRE_AREA
    cursor, end = int(parts[low].network_address), int(parts[high].broadcast_address)
    subnets: list[ipaddress.IPv4Network | None] = []
    for index, prefix in enumerate(prefixes):
        if index == 0:
            subnets.append(first if first.prefixlen <= prefix else None)
            continue
        size = 1 << (32 - prefix)
        start = -(-cursor // size) * size
        if start + size - 1 > end:
            subnets.append(None)
            continue
        subnets.append(ipaddress.IPv4Network((start, prefix)))
        cursor = start + size
    return subnets
