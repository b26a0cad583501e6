"""Where a GCP cluster's components are built, and what a scheduler kind adds to them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from cluster import Cluster, NodeGroupExport, SchedulerRealized, TpuSliceExport

from clusterfab.catalog.models import GcpMachineType
from clusterfab.core.vocab import Fabric
from clusterfab.scheduler.slurm.nodes.gcp import GceGroup
from clusterfab.spec import ClusterSpec, NodeGroup
from components._contracts import MountTarget
from components.gcp.bucket import GcpClusterBucket
from components.gcp.network import GcpFabricNetwork, GcpNetwork


class GcpRealizeError(ValueError):
    """A spec the GCP components cannot realize; validation should have refused it."""


@dataclass(frozen=True)
class GcpScheduler:
    """One scheduler kind on GCP (the realizer's table holds one per kind it realizes)."""

    node_vars: Callable[[Cluster, NodeGroup, str], dict[str, Any]]
    """gpu_node.yml's vars of the scheduler's part for a node group (with the cluster's project)."""
    delete_hooks: Callable[[Cluster, str], tuple[pulumi.ResourceHook, ...]]
    """The before-delete hooks it binds to every node group's MIG (`cluster.bound_hooks`)."""
    gce_groups: Callable[[ClusterSpec, str], Mapping[str, GceGroup]]
    """The node groups whose VMs it creates or places itself, as it sees them (`Site.gce_groups`)."""
    private_services: Callable[[ClusterSpec], bool]
    """Whether its hosts need the network's private services access (a managed database)."""
    realize: Callable[[Site, dict[str, NodeGroupExport], list[MountTarget]], SchedulerRealized | None]
    """Its own hosts, once the node groups (their exports by name) and the file systems (for login nodes)
    exist."""
    compute: (
        Callable[
            [Site, Mapping[str, MountTarget]],
            tuple[dict[str, NodeGroupExport], dict[str, TpuSliceExport], SchedulerRealized],
        ]
        | None
    ) = None
    """Set by a scheduler that places the node groups and TPU slices itself (Kubernetes' node pools), given
    the file systems by name: then the realizer builds no instance groups or queued resources, and this
    stands for `realize` too."""


WITHOUT_SCHEDULER = GcpScheduler(
    node_vars=lambda _cluster, _group, _project: {},
    delete_hooks=lambda _cluster, _project: (),
    gce_groups=lambda _spec, _stack: {},
    private_services=lambda _spec: False,
    realize=lambda _site, _groups, _mounts: None,
)
"""`scheduler.kind: none`: the node groups and TPU slices alone."""


@dataclass(frozen=True)
class Site:
    """Where every component of the cluster is built: its project, provider, networks and bucket, for the
    cluster's scheduler kind."""

    cluster: Cluster
    project: str
    opts: pulumi.ResourceOptions
    network: GcpNetwork
    fabrics: dict[Fabric, GcpFabricNetwork]
    bucket: GcpClusterBucket
    scheduler: GcpScheduler
    node_group_hooks: tuple[pulumi.ResourceHook, ...] = ()
    """Bound to each node group's managed instance group (`cluster.bound_hooks`)."""
    gce_groups: Mapping[str, GceGroup] = field(default_factory=dict)
    """The scheduler's node groups as the controller's programs see them (`GcpScheduler.gce_groups`)."""
    workload_policies: dict[str, pulumi.Output[str]] = field(default_factory=dict)
    """Each compactly placed node group's workload policy (name): a flex-start group's elastic MIGs use it."""

    @property
    def spec(self) -> ClusterSpec:
        return self.cluster.spec


def machine_type(group: NodeGroup) -> GcpMachineType:
    if not isinstance(group.machine, GcpMachineType):
        raise GcpRealizeError(f"node group {group.name}: {group.machine.name} is not a GCP machine type")
    return group.machine
