"""The GPU node groups: a managed instance group each, with the machine's NICs from the catalog, its
capacity's provisioning model and its placement."""

from __future__ import annotations

from typing import Literal, TypedDict, assert_never

import pulumi
from cluster import NodeGroupExport

from clusterfab.catalog.models import GcpMachineType
from clusterfab.core.naming import physical
from clusterfab.provision.extravars import healthcheck_vars
from clusterfab.spec import Capacity, CapacityBlock, FlexStart, NodeGroup, OnDemand, Reservation, Spot
from components._contracts import MountTarget
from components._naming import child
from components.gcp.node_group import GcpGpuNodeGroup, GcpGpuNodeGroupArgs, Nic, Provisioning

from .names import SERVICE_ACCOUNT_ID_MAX, base_instance_name
from .site import GcpRealizeError, Site, machine_type

TOPOLOGY_DISTANCE: dict[int, Literal["SUBBLOCK", "BLOCK", "CLUSTER"]] = {
    1: "SUBBLOCK",
    2: "BLOCK",
    3: "CLUSTER",
}
"""Blueprint placement_max_distance -> the workload policy's maxTopologyDistance."""


def provisioning(group_name: str, capacity: Capacity) -> tuple[Provisioning, int | None, str | None]:
    """(provisioning model, max run seconds, reservation) of a capacity."""
    match capacity:
        case OnDemand():
            return "STANDARD", None, None
        case Reservation():
            return "STANDARD", None, capacity.reservation
        case Spot():
            return "SPOT", None, None
        case FlexStart():
            hours = capacity.max_run_hours
            return "FLEX_START", hours * 3600 if hours is not None else None, None
        case CapacityBlock():
            raise GcpRealizeError(f"{group_name}: GCP has no capacity blocks (validation rejects them)")
        case _:
            assert_never(capacity)


def _nics(group: NodeGroup, machine: GcpMachineType) -> tuple[Nic, ...]:
    net = machine.network
    nics = [Nic("general", 0, net.general_nic_type)]
    if group.fabric is not None:
        nics += [Nic("general", i, net.general_nic_type) for i in range(1, net.general_vpcs)]
        nics += [Nic("fabric", i, net.gpu_nic_type) for i in range(net.gpu_vpcs + net.rdma_subnets)]
    return tuple(nics)


def _distance(group: NodeGroup, machine: GcpMachineType) -> Literal["SUBBLOCK", "BLOCK", "CLUSTER"] | None:
    """The workload policy's max distance: none where the machine places by accelerator topology."""
    distance = group.placement_max_distance
    if group.placement != "compact" or distance is None or machine.placement.accelerator_topology:
        return None
    return TOPOLOGY_DISTANCE[distance]


def node_group(site: Site, group: NodeGroup, mounts: list[MountTarget]) -> NodeGroupExport:
    spec, machine, stack = site.spec, machine_type(group), site.cluster.stack
    model, max_run_seconds, reservation = provisioning(group.name, group.capacity)
    nics = _nics(group, machine)
    compact = group.placement == "compact"
    component = GcpGpuNodeGroup(
        child(spec.name, group.name),
        GcpGpuNodeGroupArgs(
            node_group=group.name,
            project=site.project,
            region=spec.region,
            zone=spec.zone,
            machine_type=machine.name,
            image=group.image,
            service_account_id=physical(
                spec.name, site.cluster.stack, group.name, max_length=SERVICE_ACCOUNT_ID_MAX
            ),
            general_subnetworks=site.network.general_subnetworks,
            fabric_subnetworks=site.fabrics[group.fabric].nic_subnetworks if group.fabric is not None else (),
            bucket_name=site.bucket.bucket_name,
            nics=nics,
            boot_disk_type=machine.boot_disk_type,
            boot_disk_gib=group.boot_disk_gib,
            boot_disk_kms_key=group.kms_key,
            **_mig_size(site, group),
            provisioning_model=model,
            max_run_duration_seconds=max_run_seconds,
            reservation=reservation,
            compact_placement=compact,
            max_topology_distance=_distance(group, machine),
            accelerator_topology=machine.placement.accelerator_topology if compact else None,
            elastic_placement_policies=(
                site.gce_groups[group.name].placement_policies(group.static_size, group.max_size)
                if group.name in site.gce_groups
                else []
            ),
            startup_script=_node_boot(site, group, mounts),
            base_instance_name=base_instance_name(spec, stack, group),
            description=f"{spec.name}/{group.name}",
            service_account_description=f"clusterfab nodes of {spec.name}/{group.name} ({stack})",
            labels=site.cluster.tags(f"node-group-{group.name}"),
            before_delete=site.node_group_hooks,
        ),
        site.opts,
    )
    if component.workload_policy is not None:
        site.workload_policies[group.name] = component.workload_policy
    return NodeGroupExport(
        machine_type=machine.name,
        min_size=group.min_size,
        max_size=group.max_size,
        capacity=group.capacity.kind,
        placement=group.placement,
        fabric=group.fabric,
        group=component.instance_group_manager_name,
        template=component.instance_template,
        identity=component.service_account_email,
        interfaces=len(nics),
        fabric_interfaces=sum(1 for n in nics if n.network == "fabric"),
    )


class _MigSize(TypedDict):
    min_size: int
    max_size: int
    autoscaled: bool


def _mig_size(site: Site, group: NodeGroup) -> _MigSize:
    """The group's MIG's size. A flex-start group's elastic nodes are Slurm's requests, each a MIG of its
    own: the group's MIG holds its static nodes, all at once, and nothing resizes it."""
    source = site.gce_groups.get(group.name)
    if source is not None and source.flex_prefix:
        return _MigSize(min_size=group.static_size, max_size=group.static_size, autoscaled=False)
    return _MigSize(min_size=group.min_size, max_size=group.max_size, autoscaled=group.autoscaled)


def _node_boot(site: Site, group: NodeGroup, mounts: list[MountTarget]) -> pulumi.Output[str]:
    """A GPU node's boot: gpu_node.yml with the node software's vars and its scheduler's (slurmd's)."""
    cluster, catalog = site.cluster, site.cluster.input.catalog
    return cluster.boot_script(
        name=group.name,
        bucket_name=site.bucket.uploaded_name,
        mounts=mounts,
        playbook="gpu_node.yml",
        playbook_vars=lambda resolved: cluster.gpu_node_playbook_vars(
            group, resolved, site.scheduler.node_vars(cluster, group, site.project)
        ),
        healthcheck_vars=healthcheck_vars(site.spec, group, catalog),
    )
