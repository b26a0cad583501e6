"""The GPU node groups: a Uniform scale set per InfiniBand fabric unit of each group (one scale set is one
fabric: VMs in different scale sets never reach each other over InfiniBand)."""

from __future__ import annotations

from typing import Final, assert_never

import pulumi
from cluster import Cluster, NodeGroupExport

from clusterfab.bootstrap import render_boot_fetch
from clusterfab.catalog.azure_models import AzureMachineType
from clusterfab.clouds.azure.fabric import named_units
from clusterfab.clouds.base import FabricUnit
from clusterfab.core.vocab import FABRIC_UNIT_TAG
from clusterfab.provision.extravars import healthcheck_vars
from clusterfab.spec import CapacityBlock, FlexStart, NodeGroup, OnDemand, Reservation, Spot
from components._contracts import MountTarget
from components._naming import child
from components.azure.node_group import AzureGpuScaleSet, AzureGpuScaleSetArgs, AzureImage, Priority

from .site import Site

SPOT_EVICTION: Final = "Delete"
"""An evicted spot VM is deleted, not deallocated: a deallocated VM keeps its disks (billed) and its place
in the scale set's count, and comes back only when someone starts it."""


def priority(group: NodeGroup) -> Priority:
    match group.capacity:
        case OnDemand():
            return "Regular"
        case Spot():
            return "Spot"
        case Reservation() | CapacityBlock() | FlexStart():
            raise ValueError(
                f"node group {group.name}: Azure realizes no {group.capacity.kind} (validation rejects it)"
            )
        case _:
            assert_never(group.capacity)


def _single_placement_group(group: NodeGroup) -> bool:
    """InfiniBand needs a scale set with a single placement group (learn.microsoft.com/azure/virtual-
    machines/setup-infiniband), except Azure's GB200 / GB300 racks: an 18-VM rack scale set with one is
    refused ("Vertical Connect Feature is not available for this Virtual Machine Scale Set", Azure/
    AgentBaker's GB300 end-to-end test, which creates them without)."""
    machine = group.machine
    rack = isinstance(machine, AzureMachineType) and machine.fabric_unit_kind == "rack"
    return group.fabric is not None and not rack


def image(reference: str) -> AzureImage:
    """A marketplace image written publisher:offer:sku:version (the catalog's and the blueprint's form)."""
    publisher, offer, sku, version = reference.split(":")
    return AzureImage(publisher=publisher, offer=offer, sku=sku, version=version)


def boot_launcher(cluster: Cluster, name: str) -> str:
    """The custom data of a VM whose boot script is its user data: the launcher that runs the current user
    data at every boot (custom data never changes)."""
    spec = cluster.spec
    return render_boot_fetch(
        cloud=spec.cloud, cluster=spec.name, stack=cluster.stack, node_group=name, bucket=""
    )


def node_group(
    site: Site, group: NodeGroup, mounts: list[MountTarget]
) -> tuple[NodeGroupExport, dict[str, pulumi.Output[str]]]:
    """A node group's scale sets, one per fabric unit, all booting the same script; and each unit's scale
    set id."""
    cluster, spec = site.cluster, site.spec
    boot_script = cluster.boot_script(
        name=group.name,
        bucket_name=site.bucket_name,
        mounts=mounts,
        playbook="gpu_node.yml",
        playbook_vars=lambda resolved: cluster.gpu_node_playbook_vars(
            group, resolved, site.scheduler.node_vars(cluster, group)
        ),
        healthcheck_vars=healthcheck_vars(spec, group, cluster.input.catalog),
    )
    launcher = boot_launcher(cluster, group.name)
    units = named_units(group.name, group.machine, group.max_size, group.static_size) or (
        FabricUnit(group.name, 0, 0),
    )
    sets = [
        AzureGpuScaleSet(
            child(spec.name, unit.name),
            AzureGpuScaleSetArgs(
                resource_group_name=site.resource_group_name,
                location=spec.region,
                node_group=group.name,
                vm_size=group.machine.name,
                capacity=unit.always_up(group.static_size),
                elastic=unit.always_up(group.static_size) < unit.size,
                subnet_id=site.network.node_subnet_id,
                identity_id=site.identity.identity_id,
                image=image(group.image),
                ssh_public_key=site.admin_key,
                launcher=launcher,
                boot_script=boot_script,
                single_placement_group=_single_placement_group(group),
                zone=spec.zone,
                os_disk_gib=group.boot_disk_gib,
                priority=priority(group),
                eviction_policy=SPOT_EVICTION if isinstance(group.capacity, Spot) else None,
                # A VM reads its unit from its scale set's tags: Slurm nodes join by it.
                tags={**cluster.tags(f"node-group-{group.name}"), FABRIC_UNIT_TAG: unit.name},
            ),
            # The nodes' role assignments exist before a node boots and fetches its bundle.
            pulumi.ResourceOptions.merge(site.opts, pulumi.ResourceOptions(depends_on=[site.identity])),
        )
        for unit in units
    ]
    names = pulumi.Output.all(*[s.scale_set_name for s in sets]).apply(",".join)
    ids = {unit.name: scale_set.scale_set_id for unit, scale_set in zip(units, sets, strict=True)}
    return NodeGroupExport(
        machine_type=group.machine.name,
        min_size=group.min_size,
        max_size=group.max_size,
        capacity=group.capacity.kind,
        placement=group.placement,
        fabric=group.fabric,
        group=names,
        template=sets[0].scale_set_id,
        identity=site.identity.identity_id,
        interfaces=1,
        fabric_interfaces=0,
    ), ids
