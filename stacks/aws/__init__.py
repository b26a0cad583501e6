"""ClusterSpec -> AWS components: the only place that maps a resolved cluster to AWS component Args.

One VPC with a node subnet in the blueprint's zone (`network`), the cluster bucket and FSx for Lustre per
file system (`storage`), an auto scaling group per node group (`compute`), the budget (`budget`), the
scheduler's hosts (one module per scheduler kind: `slurm`) and the monitoring node (`monitoring`).
Resources are registered in that order.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_aws as aws
from cluster import Cluster, Realized, SchedulerRealized, bound_hooks, scheduler_entry
from slurm_common import KIND as SLURM

from clusterfab.clouds import profile
from clusterfab.core.plugins import NO_SCHEDULER
from clusterfab.scheduler.kubernetes.section import KIND as KUBERNETES
from components._naming import child

from . import kubernetes, slurm
from .budget import budget
from .compute import node_group
from .monitoring import monitoring_node
from .network import network
from .site import WITHOUT_SCHEDULER, AwsScheduler, Site
from .storage import bucket, file_systems

SCHEDULERS: Mapping[str, AwsScheduler] = {
    NO_SCHEDULER: WITHOUT_SCHEDULER,
    SLURM: slurm.SLURM,
    KUBERNETES: kubernetes.KUBERNETES,
}
"""The scheduler kinds AWS realizes: kind -> its module's entry."""


def realize(cluster: Cluster) -> Realized:
    spec = cluster.spec
    scheduler = scheduler_entry(cluster, SCHEDULERS, "AWS")
    # One explicit provider, in the blueprint's region: the stack's aws:region cannot move the cluster.
    opts = pulumi.ResourceOptions(providers=[aws.Provider(child(spec.name, "aws"), region=spec.region)])
    site = Site(cluster, opts, network(cluster, opts), bucket(cluster, opts), scheduler)
    mounts, storage = file_systems(cluster, site.network, opts)
    hooks = bound_hooks(cluster, {kind: entry.delete_hooks(cluster) for kind, entry in SCHEDULERS.items()})
    hosted: SchedulerRealized | None
    if scheduler.compute is not None:
        exports, hosted = scheduler.compute(site, mounts)
        budget(cluster, opts)
    else:
        built = {
            group.name: node_group(site, group, [mounts[s] for s in group.storage], hooks)
            for group in spec.node_groups
        }
        budget(cluster, opts)
        nodes = {name: component for name, (_, component) in built.items()}
        hosted = scheduler.realize(site, nodes, list(mounts.values()))
        exports = {name: export for name, (export, _) in built.items()}
    monitoring = monitoring_node(site) or (hosted.monitoring if hosted is not None else None)
    return Realized(
        monitoring=monitoring,
        scheduler=hosted.scheduler if hosted is not None else None,
        network={
            "vpc_id": site.network.vpc_id,
            "node_subnet_id": site.network.node_subnet_id,
            "node_security_group_id": site.network.node_security_group_id,
        },
        bucket=site.bucket.bucket_name,
        node_groups=exports,
        storage=storage,
        node_selector=profile("aws").node_selector(spec.name, cluster.stack),
    )
