"""Where an AWS cluster's components are built, and what a scheduler kind adds to them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
from cluster import Cluster, NodeGroupExport, SchedulerRealized

from clusterfab.spec import ClusterSpec, NodeGroup
from components._contracts import MountTarget
from components.aws.bucket import AwsClusterBucket
from components.aws.network import AwsNetwork
from components.aws.node_group import AwsGpuNodeGroup


@dataclass(frozen=True)
class AwsScheduler:
    """One scheduler kind on AWS (the realizer's table holds one per kind it realizes)."""

    node_vars: Callable[[Cluster, NodeGroup], dict[str, Any]]
    """gpu_node.yml's vars of the scheduler's part for a node group."""
    delete_hooks: Callable[[Cluster], tuple[pulumi.ResourceHook, ...]]
    """The before-delete hooks it binds to every node group's auto scaling group (`cluster.bound_hooks`)."""
    realize: Callable[[Site, Mapping[str, AwsGpuNodeGroup], list[MountTarget]], SchedulerRealized | None]
    """Its own hosts, once the node groups (by name) and the file systems (for login nodes) exist."""
    compute: (
        Callable[[Site, Mapping[str, MountTarget]], tuple[dict[str, NodeGroupExport], SchedulerRealized]]
        | None
    ) = None
    """Set by a scheduler that places the node groups itself (Kubernetes' managed node groups), given the
    file systems by name: then the realizer builds no auto scaling groups, and this stands for `realize`
    too."""


WITHOUT_SCHEDULER = AwsScheduler(
    node_vars=lambda _cluster, _group: {},
    delete_hooks=lambda _cluster: (),
    realize=lambda _site, _nodes, _mounts: None,
)
"""`scheduler.kind: none`: the node groups alone."""


@dataclass(frozen=True)
class Site:
    """Where the cluster's components are built: the provider (in `opts`), the network and the bucket,
    for the cluster's scheduler kind."""

    cluster: Cluster
    opts: pulumi.ResourceOptions
    network: AwsNetwork
    bucket: AwsClusterBucket
    scheduler: AwsScheduler

    @property
    def spec(self) -> ClusterSpec:
        return self.cluster.spec


def required(value: str | None, what: str) -> str:
    """A catalog figure AWS needs (the catalog tests check that every AWS record has it)."""
    if value is None:
        raise ValueError(f"the catalog has no {what}")
    return value
