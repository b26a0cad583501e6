"""The stack's resource group and VNet: the nodes' subnet (the hosts' block of the cluster range), a
controller subnet and Managed Lustre's own subnet, with NAT egress and no inbound from the internet."""

from __future__ import annotations

import pulumi
from cluster import Cluster

from clusterfab import addressing
from clusterfab.clouds import profile
from clusterfab.clouds.azure.hostvars import NODE_BLOCK
from clusterfab.spec import LustreStorage
from components._naming import child
from components.azure.network import KEY_VAULT_SERVICE, STORAGE_SERVICE, AzureNetwork, AzureNetworkArgs
from components.azure.resource_group import AzureResourceGroup, AzureResourceGroupArgs

LUSTRE_BLOCK = 2
"""The block of the cluster range (clusterfab.addressing.blocks) Managed Lustre's subnet takes."""


def resource_group(cluster: Cluster, opts: pulumi.ResourceOptions) -> AzureResourceGroup:
    spec = cluster.spec
    return AzureResourceGroup(
        child(spec.name, "rg"),
        AzureResourceGroupArgs(
            location=spec.region,
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
    lustre = any(isinstance(item, LustreStorage) for item in spec.storage)
    return AzureNetwork(
        child(spec.name, "net"),
        AzureNetworkArgs(
            resource_group_name=group,
            location=spec.region,
            address_space=[spec.cidr],
            node_cidr=str(blocks[NODE_BLOCK]),
            controller_cidr=str(profile("azure").host_subnet(spec.cidr)),
            controller_service_endpoints=(STORAGE_SERVICE, KEY_VAULT_SERVICE) if hosts else (),
            lustre_cidr=str(blocks[LUSTRE_BLOCK]) if lustre else None,
            zone=spec.zone,
            tags=cluster.tags("network"),
        ),
        opts,
    )
