"""ClusterSpec -> GCP components: the only place that maps a resolved cluster to GCP component Args.

The system network (plus the second gVNIC network RoCE machines use) and one set of fabric networks per
fabric kind in use (`network`), the cluster bucket, Managed Lustre / Filestore (`storage`), a MIG per node
group (`compute`), TPU slices (`tpu`), the budget (`budget`), the scheduler's hosts (one module per
scheduler kind: `slurm`) and the monitoring node (`monitoring`). Resources are registered in that order.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_gcp as gcp
from cluster import Cluster, NetworkExport, Realized, SchedulerRealized, bound_hooks, scheduler_entry
from slurm_common import KIND as SLURM

from clusterfab.clouds import profile
from clusterfab.core.plugins import NO_SCHEDULER
from clusterfab.core.vocab import Fabric
from clusterfab.scheduler.kubernetes.section import KIND as KUBERNETES
from components._naming import child
from components.gcp.network import GcpFabricNetwork, GcpNetwork

from . import kubernetes, slurm
from .budget import budget
from .compute import node_group
from .monitoring import monitoring_node
from .network import networks
from .site import WITHOUT_SCHEDULER, GcpScheduler, Site
from .storage import bucket, file_systems
from .tpu import tpu_slices

SCHEDULERS: Mapping[str, GcpScheduler] = {
    NO_SCHEDULER: WITHOUT_SCHEDULER,
    SLURM: slurm.SLURM,
    KUBERNETES: kubernetes.KUBERNETES,
}
"""The scheduler kinds GCP realizes: kind -> its module's entry."""


def realize(cluster: Cluster) -> Realized:
    spec = cluster.spec
    scheduler = scheduler_entry(cluster, SCHEDULERS, "GCP")
    project = cluster.input.project
    if not project:
        raise pulumi.RunError(
            f"{cluster.input.file}: no GCP project: set `project:` in the blueprint "
            "or the stack config `gcp:project`"
        )
    # One explicit provider, in the blueprint's project and region: stack config cannot move the cluster.
    opts = pulumi.ResourceOptions(
        providers=[gcp.Provider(child(spec.name, "gcp"), project=project, region=spec.region)]
    )
    network, fabrics = networks(cluster, project, opts, scheduler_services=scheduler.private_services(spec))
    site = Site(
        cluster,
        project,
        opts,
        network,
        fabrics,
        bucket(cluster, project, opts),
        scheduler,
        gce_groups=scheduler.gce_groups(spec, cluster.stack),
        node_group_hooks=bound_hooks(
            cluster, {kind: entry.delete_hooks(cluster, project) for kind, entry in SCHEDULERS.items()}
        ),
    )
    mounts, storage = file_systems(site)
    hosted: SchedulerRealized | None
    if scheduler.compute is not None:
        groups, tpus, hosted = scheduler.compute(site, mounts)
        budget(site)
    else:
        groups = {g.name: node_group(site, g, [mounts[s] for s in g.storage]) for g in spec.node_groups}
        tpus = {t.name: tpu_slices(site, t, [mounts[s] for s in t.storage]) for t in spec.tpu_slices}
        budget(site)
        hosted = scheduler.realize(site, groups, list(mounts.values()))
    monitoring = monitoring_node(site) or (hosted.monitoring if hosted is not None else None)
    return Realized(
        network=_network_export(network, fabrics),
        bucket=site.bucket.bucket_name,
        project=project,
        node_groups=groups,
        tpu_slices=tpus,
        storage=storage,
        node_selector=profile("gcp").node_selector(spec.name, cluster.stack),
        monitoring=monitoring,
        scheduler=hosted.scheduler if hosted is not None else None,
    )


def _network_export(network: GcpNetwork, fabrics: Mapping[Fabric, GcpFabricNetwork]) -> NetworkExport:
    """The networks' self links by role (a fabric's as `<fabric>-<role>`), and the system network's and
    subnetwork's ids."""
    links: dict[str, pulumi.Input[str]] = dict(network.network_self_links)
    for fabric, fabric_network in fabrics.items():
        for role, link in fabric_network.network_self_links.items():
            links[f"{fabric}-{role}"] = link
    links.update(
        system_network_id=network.system_network_id, system_subnetwork_id=network.system_subnetwork_id
    )
    return links
