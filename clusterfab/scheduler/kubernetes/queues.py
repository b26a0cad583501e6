"""The cluster's Kueue objects: who may use which accelerators, and what happens when they all want them.

- A ResourceFlavor per node group and per TPU slice group (named `<group>-<capacity kind>`), selecting
  the group's nodes by the label its node pool carries and tolerating its accelerator taint; a Topology
  of the cloud's network hierarchy (clusterfab.clouds.kubernetes) that the flavors name, for
  topology-aware placement.
- A ClusterQueue per team in one cohort: the team's `max_gpus` is its nominal quota of `nvidia.com/gpu`
  (and of `google.com/tpu` chips where the cluster has TPU slices), laid on the flavors in node group
  order. The queues count accelerators only, as Cluster Toolkit's and xpk's do; Kueue's configuration
  leaves the other resources pods request (cpu, memory, EFA devices) out of its accounting
  (`quotaCheckStrategy: IgnoreUndeclared`, clusterfab.scheduler.kubernetes.kueue). Idle quota is lent
  through the cohort and reclaimed (`reclaimWithinCohort: Any`); a team's own higher-priority work
  preempts its lower (`withinClusterQueue`) and a borrowing workload may preempt lower-priority work of
  others (`borrowWithinCohort`). The cohort itself holds what no team's quota covers, so nothing stands
  idle for want of an owner.
- On GKE with a flex-start node group, the ProvisioningRequest admission check (clusterfab.scheduler.
  kubernetes.kueue) on that group's flavor in every queue: Kueue asks GKE for all of a workload's nodes
  before it admits it.
- A LocalQueue per team in its namespace, and a WorkloadPriorityClass per `priority` (Cluster Toolkit's
  scale: low 250, normal 500, high 750).
Without teams, one ClusterQueue `default` holds everything, with a LocalQueue in namespace `default`.
Research: the shared scheduler note §B2 (Kueue's ClusterQueue, Cohort, Topology and TAS documents).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clusterfab.clouds.kubernetes import topology_levels
from clusterfab.scheduler.kubernetes.kueue import PROVISIONING_CHECK, admission_objects, provisioning_groups
from clusterfab.scheduler.kubernetes.labels import (
    GPU_TAINT,
    MANAGED_BY,
    NODE_GROUP_LABEL,
    TEAM_LABEL,
    TPU_SLICE_LABEL,
    TPU_TAINT,
)
from clusterfab.spec.model import ClusterSpec, NodeGroup, TpuSlice

KUEUE_API = "kueue.x-k8s.io/v1beta2"
"""Kueue's storage version from 0.16 (research note §B2)."""
COHORT = "clusterfab"
TOPOLOGY = "clusterfab"
GPU = "nvidia.com/gpu"
TPU = "google.com/tpu"
PRIORITY_VALUES = {"low": 250, "normal": 500, "high": 750}
"""A team's `priority` as a WorkloadPriorityClass value: Cluster Toolkit's PriorityClasses (very-low 100,
low 250, medium 500, high 750, very-high 1000) for our three."""
DEFAULT_QUEUE = "default"


@dataclass(frozen=True)
class Flavor:
    """One kind of node the queues hand out: its accelerator, how many a node has, and how many nodes."""

    name: str
    group: str
    """The node group or TPU slice group whose nodes it is."""
    node_labels: dict[str, str]
    taint: str
    resource: str
    per_node: int
    nodes: int
    topology: bool
    """Whether its nodes carry the cloud's topology labels (GPU nodes; a TPU slice is compact already and
    its nodes carry GKE's TPU labels instead)."""

    @property
    def accelerators(self) -> int:
        return self.per_node * self.nodes


def priority_class(priority: str) -> str:
    """The WorkloadPriorityClass a team's workloads name (label `kueue.x-k8s.io/priority-class`)."""
    return f"clusterfab-{priority}"


def flavors(spec: ClusterSpec) -> list[Flavor]:
    """The cluster's flavors: its GPU node groups, then its TPU slice groups."""
    found = [_gpu_flavor(group) for group in spec.node_groups if group.gpus_per_node]
    return found + [_tpu_flavor(tpu) for tpu in spec.tpu_slices]


def _gpu_flavor(group: NodeGroup) -> Flavor:
    return Flavor(
        name=f"{group.name}-{group.capacity.kind.replace('_', '-')}",
        group=group.name,
        node_labels={NODE_GROUP_LABEL: group.name},
        taint=GPU_TAINT,
        resource=GPU,
        per_node=group.gpus_per_node,
        nodes=group.max_size,
        topology=True,
    )


def _tpu_flavor(tpu: TpuSlice) -> Flavor:
    hosts = tpu.shape.hosts * tpu.slices
    return Flavor(
        name=f"{tpu.name}-{tpu.capacity.kind.replace('_', '-')}",
        group=tpu.name,
        node_labels={TPU_SLICE_LABEL: tpu.name},
        taint=TPU_TAINT,
        resource=TPU,
        per_node=tpu.chips // hosts,
        nodes=hosts,
        topology=False,
    )


def kueue_objects(spec: ClusterSpec, cloud: str) -> list[dict[str, Any]]:
    """Every Kueue object of the cluster, in the order they are applied (what a queue names first)."""
    found = flavors(spec)
    if not found:
        return []
    objects: list[dict[str, Any]] = [_topology(cloud)] if any(f.topology for f in found) else []
    objects += [_resource_flavor(flavor) for flavor in found]
    objects += [_priority_class(priority) for priority in PRIORITY_VALUES]
    objects += admission_objects(spec, cloud)
    provisioned = provisioning_groups(spec, cloud)
    queued = [flavor.name for flavor in found if flavor.group in provisioned]
    teams = spec.teams
    shares = {team.name: _shares(found, team.max_gpus) for team in teams}
    if not teams:
        shares = {DEFAULT_QUEUE: _shares(found, None)}
    objects += _cohort(found, shares.values())
    for name in shares:
        objects.append(_cluster_queue(name, found, shares[name], team_label=bool(teams), queued=queued))
    objects += [_local_queue(name, name if teams else DEFAULT_QUEUE) for name in shares]
    return objects


def _shares(found: Sequence[Flavor], most: int | None) -> dict[str, int]:
    """A quota of `most` accelerators of each kind (None: all) laid on the flavors in order."""
    left = {GPU: most, TPU: most}
    shares: dict[str, int] = {}
    for flavor in found:
        room = left[flavor.resource]
        take = flavor.accelerators if room is None else min(room, flavor.accelerators)
        shares[flavor.name] = take
        if room is not None:
            left[flavor.resource] = room - take
    return shares


def _resource_groups(found: Sequence[Flavor], shares: dict[str, int]) -> list[dict[str, Any]]:
    """One resource group per accelerator kind, its flavors with their share of it."""
    groups = []
    for kind in (GPU, TPU):
        mine = [flavor for flavor in found if flavor.resource == kind]
        if mine:
            groups.append(
                {
                    "coveredResources": [kind],
                    "flavors": [
                        {"name": f.name, "resources": [{"name": kind, "nominalQuota": shares[f.name]}]}
                        for f in mine
                    ],
                }
            )
    return groups


def _metadata(name: str, namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = dict(MANAGED_BY)
    return metadata


def _topology(cloud: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "Topology",
        "metadata": _metadata(TOPOLOGY),
        "spec": {"levels": [{"nodeLabel": label} for label in topology_levels(cloud)]},
    }


def _resource_flavor(flavor: Flavor) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": _metadata(flavor.name),
        "spec": {
            "nodeLabels": dict(flavor.node_labels),
            "tolerations": [{"key": flavor.taint, "operator": "Exists", "effect": "NoSchedule"}],
            **({"topologyName": TOPOLOGY} if flavor.topology else {}),
        },
    }


def _priority_class(priority: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "WorkloadPriorityClass",
        "metadata": _metadata(priority_class(priority)),
        "value": PRIORITY_VALUES[priority],
        "description": f"clusterfab: workloads of teams of {priority} priority",
    }


def _cohort(found: Sequence[Flavor], shares: Any) -> list[dict[str, Any]]:
    """The cohort as an object when it holds something: what the queues' quotas leave of each flavor,
    lent to whoever needs it (without one, the queues' cohortName makes an empty cohort)."""
    given = {flavor.name: sum(share[flavor.name] for share in shares) for flavor in found}
    rest = {flavor.name: max(0, flavor.accelerators - given[flavor.name]) for flavor in found}
    if not any(rest.values()):
        return []
    spec = {"resourceGroups": _resource_groups(found, rest)}
    return [{"apiVersion": KUEUE_API, "kind": "Cohort", "metadata": _metadata(COHORT), "spec": spec}]


def _cluster_queue(
    name: str, found: Sequence[Flavor], shares: dict[str, int], *, team_label: bool, queued: Sequence[str]
) -> dict[str, Any]:
    """A team's queue; `queued`: the flavors whose nodes queued provisioning makes (their workloads wait
    for the ProvisioningRequest admission check)."""
    selector: dict[str, Any] = {"matchLabels": {TEAM_LABEL: name}} if team_label else {}
    check = {"name": PROVISIONING_CHECK, "onFlavors": list(queued)}
    checks = {"admissionChecksStrategy": {"admissionChecks": [check]}}
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": _metadata(name),
        "spec": {
            "cohortName": COHORT,
            "namespaceSelector": selector,
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": _resource_groups(found, shares),
            "preemption": {
                "reclaimWithinCohort": "Any",
                "borrowWithinCohort": {"policy": "LowerPriority"},
                "withinClusterQueue": "LowerPriority",
            },
            **(checks if queued else {}),
        },
    }


def _local_queue(queue: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": _metadata(queue, namespace),
        "spec": {"clusterQueue": queue},
    }
