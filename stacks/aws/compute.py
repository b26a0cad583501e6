"""The GPU node groups: an auto scaling group each, on a launch template with the machine's EFA layout
from the catalog."""

from __future__ import annotations

from typing import assert_never

import pulumi
from cluster import Cluster, NodeGroupExport

from clusterfab.catalog.models import AwsMachineType
from clusterfab.core.dates import utc_iso
from clusterfab.core.vocab import CAPACITY_ENDS_TAG
from clusterfab.provision.extravars import healthcheck_vars
from clusterfab.spec import CapacityBlock, FlexStart, NodeGroup, OnDemand, Reservation, Spot
from components._contracts import MountTarget
from components._naming import child
from components.aws.node_group import AwsGpuNodeGroup, AwsGpuNodeGroupArgs, Market, NetworkInterface

from .site import Site, required


def _market(group: NodeGroup) -> tuple[Market, str | None]:
    """The launch template's market and the reservation it launches into."""
    capacity = group.capacity
    match capacity:
        case OnDemand():
            return "on-demand", None
        case Spot():
            return "spot", None
        case Reservation():
            return "on-demand", capacity.reservation
        case CapacityBlock():
            return "capacity-block", capacity.reservation
        case FlexStart():
            raise ValueError(
                f"node group {group.name}: AWS has no flex-start capacity (validation rejects it)"
            )
        case _:
            assert_never(capacity)


def _tags(cluster: Cluster, group: NodeGroup) -> dict[str, str]:
    """The group's tags; a capacity block's end too, which the budget policy prices the group's term by."""
    tags = cluster.tags(f"node-group-{group.name}")
    capacity = group.capacity
    if isinstance(capacity, CapacityBlock) and capacity.ends_at is not None:
        tags[CAPACITY_ENDS_TAG] = utc_iso(capacity.ends_at)
    return tags


def _interfaces(cluster: Cluster, group: NodeGroup) -> tuple[NetworkInterface, ...]:
    machine = group.machine
    if group.fabric is None or not isinstance(machine, AwsMachineType):
        return (NetworkInterface(0, 0, "interface"),)
    layout = cluster.input.catalog.efa_interfaces(machine)
    return tuple(NetworkInterface(i.network_card_index, i.device_index, i.interface_type) for i in layout)


def node_group(
    site: Site,
    group: NodeGroup,
    mounts: list[MountTarget],
    hooks: tuple[pulumi.ResourceHook, ...],
) -> tuple[NodeGroupExport, AwsGpuNodeGroup]:
    """A node group's auto scaling group; `hooks` are bound to its delete."""
    cluster, network, bucket = site.cluster, site.network, site.bucket
    spec, catalog = cluster.spec, cluster.input.catalog
    market, reservation = _market(group)
    interfaces = _interfaces(cluster, group)
    boot_script = cluster.boot_script(
        name=group.name,
        bucket_name=bucket.uploaded_name,
        mounts=mounts,
        playbook="gpu_node.yml",
        playbook_vars=lambda resolved: cluster.gpu_node_playbook_vars(
            group, resolved, site.scheduler.node_vars(cluster, group)
        ),
        healthcheck_vars=healthcheck_vars(spec, group, catalog),
    )
    component = AwsGpuNodeGroup(
        child(spec.name, group.name),
        AwsGpuNodeGroupArgs(
            node_group=group.name,
            instance_type=group.machine.name,
            image_id=group.image,
            subnet_id=network.node_subnet_id,
            security_group_id=network.node_security_group_id,
            bucket_arn=bucket.bucket_arn,
            bucket_kms_key_arn=spec.bucket_kms_key,
            boot_script=boot_script,
            network_interfaces=interfaces,
            min_size=group.min_size,
            max_size=group.max_size,
            autoscaled=group.autoscaled,
            market=market,
            capacity_reservation_id=reservation,
            placement_group=group.placement == "compact",
            root_device_name=required(group.root_device, "the image's root device"),
            root_volume_type=required(group.root_volume_type, "the image's root volume type"),
            root_volume_gib=group.boot_disk_gib,
            kms_key_arn=group.kms_key,
            tags=_tags(cluster, group),
            before_delete=hooks,
        ),
        site.opts,
    )
    export = NodeGroupExport(
        machine_type=group.machine.name,
        min_size=group.min_size,
        max_size=group.max_size,
        capacity=group.capacity.kind,
        placement=group.placement,
        fabric=group.fabric,
        group=component.auto_scaling_group_name,
        template=component.launch_template_id,
        identity=component.role_arn,
        interfaces=len(interfaces),
        fabric_interfaces=sum(1 for i in interfaces if i.interface_type != "interface"),
    )
    return export, component
