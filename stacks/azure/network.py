"""The stack's resource group and VNet: the nodes' subnet (the hosts' block of the cluster range), a
controller subnet, a subnet per Managed Lustre file system and, with managed accounting, the subnet delegated
to the accounting database, with NAT egress and no inbound from the internet; where the cluster has hosts,
the Azure Bastion an operator reaches them through."""

from __future__ import annotations

import pulumi
from cluster import Cluster

from clusterfab import addressing
from clusterfab.clouds import profile
from clusterfab.clouds.azure.access import bastion_name
from clusterfab.clouds.azure.hostvars import NODE_BLOCK, resource_group_name
from clusterfab.clouds.azure.lustre import lustre_subnets
from clusterfab.scheduler.slurm.render import slurm_section
from clusterfab.spec import LustreStorage
from components._naming import child
from components.azure.bastion import AzureBastion, AzureBastionArgs
from components.azure.network import (
    KEY_VAULT_SERVICE,
    STORAGE_SERVICE,
    AzureLustreSubnet,
    AzureNetwork,
    AzureNetworkArgs,
)
from components.azure.resource_group import AzureResourceGroup, AzureResourceGroupArgs


def resource_group(cluster: Cluster, opts: pulumi.ResourceOptions) -> AzureResourceGroup:
    spec = cluster.spec
    return AzureResourceGroup(
        child(spec.name, "rg"),
        AzureResourceGroupArgs(
            location=spec.region,
            name=resource_group_name(spec.name, cluster.stack),
            protect=spec.protected,
            tags=cluster.tags("resource-group"),
        ),
        opts,
    )


def network(
    cluster: Cluster, group: pulumi.Input[str], *, hosts: bool, opts: pulumi.ResourceOptions
) -> AzureNetwork:
    """`hosts`: the scheduler has hosts in the controller subnet, which reach the cluster bucket and the
    munge key's vault through their service endpoints."""
    spec = cluster.spec
    blocks = addressing.blocks(spec.cidr)
    return AzureNetwork(
        child(spec.name, "net"),
        AzureNetworkArgs(
            resource_group_name=group,
            location=spec.region,
            address_space=[spec.cidr],
            node_cidr=str(blocks[NODE_BLOCK]),
            controller_cidr=str(profile("azure").host_subnet(spec.cidr)),
            controller_service_endpoints=(STORAGE_SERVICE, KEY_VAULT_SERVICE) if hosts else (),
            lustre_subnets=file_system_subnets(cluster),
            bastion_cidr=str(addressing.azure_bastion_subnet(spec.cidr)) if hosts else None,
            database_cidr=(
                str(addressing.azure_database_subnet(spec.cidr)) if managed_accounting(cluster) else None
            ),
            zone=spec.zone,
            tags=cluster.tags("network"),
        ),
        opts,
    )


def managed_accounting(cluster: Cluster) -> bool:
    """Slurm keeps its accounting in Azure Database for MySQL, whose server takes a delegated subnet."""
    slurm = slurm_section(cluster.spec)
    return slurm is not None and slurm.database is not None


def bastion(
    cluster: Cluster, group: pulumi.Input[str], net: AzureNetwork, opts: pulumi.ResourceOptions
) -> AzureBastion | None:
    """The Bastion in the VNet's AzureBastionSubnet, named where `clusterfab dashboard` looks for it; None
    without hosts (a network made without them has no Bastion subnet)."""
    if net.bastion_subnet_id is None:
        return None
    spec = cluster.spec
    return AzureBastion(
        child(spec.name, "bastion"),
        AzureBastionArgs(
            resource_group_name=group,
            location=spec.region,
            bastion_name=bastion_name(resource_group_name(spec.name, cluster.stack)),
            subnet_id=net.bastion_subnet_id,
            tags=cluster.tags("bastion"),
        ),
        opts,
    )


def file_system_subnets(cluster: Cluster) -> list[AzureLustreSubnet]:
    """Each Managed Lustre file system's subnet, sized by the catalog for its capacity, in blueprint order
    (clusterfab.clouds.azure.lustre)."""
    spec = cluster.spec
    items = [item for item in spec.storage if isinstance(item, LustreStorage)]
    planned = lustre_subnets(
        spec.cidr, [item.capacity_gib for item in items], cluster.input.catalog.azure.amlfs_subnets
    )
    subnets = []
    for item, plan in zip(items, planned, strict=True):
        if plan.prefix is None or plan.subnet is None:
            raise ValueError(f"storage {item.name}: no subnet fits it in {spec.cidr} (validation rejects it)")
        subnets.append(
            AzureLustreSubnet(file_system=item.name, cidr=str(plan.subnet), min_prefix=plan.prefix)
        )
    return subnets
