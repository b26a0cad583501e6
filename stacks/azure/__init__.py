"""ClusterSpec -> Azure components: the only place that maps a resolved cluster to Azure component Args.

One resource group per stack holds everything of it (`network`): the VNet with the nodes', the
controller's and Managed Lustre's subnets and NAT egress, the cluster bucket and Managed Lustre per file
system (`storage`), the nodes' identity, a scale set per InfiniBand fabric unit of each node group
(`compute`) and the budget of the resource group (`budget`). Resources are registered in that order.
Slurm's controller and login hosts come after them (`slurm`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pulumi
import pulumi_azure_native as azure
from cluster import Cluster, Realized, scheduler_entry
from slurm_common import KIND as SLURM

from clusterfab.clouds import profile
from clusterfab.clouds.azure.discovery import SUBSCRIPTION_SETTING
from clusterfab.core.plugins import NO_SCHEDULER
from components._naming import child
from components.azure.admin_key import AdminSshKey
from components.azure.identity import AzureNodeIdentity, AzureNodeIdentityArgs

from . import slurm
from .budget import budget
from .compute import node_group
from .network import bastion, network, resource_group
from .site import WITHOUT_SCHEDULER, AzureScheduler, Site, deployer, same_subscription
from .storage import bucket, file_systems

SCHEDULERS: Mapping[str, AzureScheduler] = {NO_SCHEDULER: WITHOUT_SCHEDULER, SLURM: slurm.SLURM}
"""The scheduler kinds Azure realizes: kind -> its module's entry."""


def realize(cluster: Cluster) -> Realized:
    spec = cluster.spec
    scheduler = scheduler_entry(cluster, SCHEDULERS, "Azure")
    files = scheduler.files(cluster)
    # One explicit provider, in the blueprint's region: the stack's azure-native:location cannot move it.
    provider = azure.Provider(child(spec.name, "azure"), location=spec.region)
    opts = pulumi.ResourceOptions(providers=[provider])
    who = deployer(provider)
    same_subscription(cluster.input.settings.provider_settings.get(SUBSCRIPTION_SETTING), who)
    group = resource_group(cluster, opts)
    net = network(cluster, group.resource_group_name, hosts=files is not None, opts=opts)
    bastion(cluster, group.resource_group_name, net, opts)
    store = bucket(cluster, group.resource_group_name, net, who, files=files, opts=opts)
    identity = AzureNodeIdentity(
        child(spec.name, "nodes"),
        AzureNodeIdentityArgs(
            resource_group_name=group.resource_group_name,
            location=spec.region,
            subscription_id=who.subscription_id,
            bundle_container_id=store.container_id,
            verdict_container_id=store.verdict_container_id,
            tags=cluster.tags("identity"),
        ),
        opts,
    )
    key = AdminSshKey(child(spec.name, "admin-key"))
    site = Site(
        cluster,
        opts,
        group.resource_group_name,
        group.resource_group_id,
        net,
        store,
        identity,
        key.public_key,
        who,
        scheduler,
    )
    mounts, storage = file_systems(cluster, group.resource_group_name, net, opts)
    built = {g.name: node_group(site, g, [mounts[s] for s in g.storage]) for g in spec.node_groups}
    exports = {name: export for name, (export, _) in built.items()}
    site = dataclasses.replace(site, scale_sets={u: i for _, ids in built.values() for u, i in ids.items()})
    budget(site)
    hosted = scheduler.realize(site, list(mounts.values()), files) if files is not None else None
    return Realized(
        monitoring=hosted.monitoring if hosted is not None else None,
        scheduler=hosted.scheduler if hosted is not None else None,
        network={
            "resource_group": group.resource_group_name,
            "vnet_id": net.vnet_id,
            "node_subnet_id": net.node_subnet_id,
        },
        bucket=site.bucket_name,
        node_groups=exports,
        storage=storage,
        node_selector=profile("azure").node_selector(spec.name, cluster.stack),
    )
