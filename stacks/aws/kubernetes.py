"""Kubernetes on AWS: an EKS cluster whose managed node groups are the blueprint's node groups.

The control plane (components.aws.eks) gets two subnets of its own, carved from blocks of the cluster
range that the AWS network leaves free (block 0 holds the nodes, the last the NAT gateway, the one before
it Slurm's accounting database); the node groups stay in the node subnet of the blueprint's zone, with
the same EFA layout as the auto scaling groups of the other schedulers (`compute._interfaces`). The
add-ons nodes need to join come before the node groups, those that run as Deployments after them, and the
cluster's own objects (team namespaces and RoleBindings; the in-cluster software) after both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, assert_never

import pulumi
from cluster import Cluster, NodeGroupExport, SchedulerRealized

from clusterfab import addressing
from clusterfab.catalog.models import AwsMachineType
from clusterfab.clouds.kubernetes import credentials
from clusterfab.core.naming import physical
from clusterfab.scheduler.kubernetes import labels
from clusterfab.scheduler.kubernetes.costs import SYSTEM_NODES_ITEM
from clusterfab.scheduler.kubernetes.eks_addons import eks_addons
from clusterfab.scheduler.kubernetes.kubeconfig import kubeconfig
from clusterfab.scheduler.kubernetes.kueue import training_charts
from clusterfab.scheduler.kubernetes.queues import kueue_objects
from clusterfab.scheduler.kubernetes.render import agent_objects, require_kubernetes, team_objects
from clusterfab.scheduler.kubernetes.section import KIND, Kubernetes
from clusterfab.scheduler.kubernetes.software import in_cluster_objects
from clusterfab.spec import CapacityBlock, FlexStart, NodeGroup, OnDemand, Reservation, Spot
from components._contracts import MountTarget
from components._naming import child
from components.aws.eks import AwsEksCluster, AwsEksClusterArgs
from components.aws.eks_addons import AwsEksAddons, AwsEksAddonsArgs, ManagedAddon
from components.aws.eks_node_group import AwsEksNodeGroup, AwsEksNodeGroupArgs, CapacityType, Taint
from components.kubernetes.helm import HelmChart
from components.kubernetes.objects import KubernetesObjects, KubernetesObjectsArgs

from .compute import _interfaces, _tags
from .site import AwsScheduler, Site

SERVICE = "EKS"
SYSTEM_GROUP = "system"
GPU_TAINT = Taint(labels.GPU_TAINT, "NO_SCHEDULE")
"""GPU nodes admit only pods that tolerate it (NVIDIA's device plugin and GPU jobs do): system pods stay on
the system nodes. EFA needs no taint of its own: AWS documents none, and pods ask for
`vpc.amazonaws.com/efa` as a resource."""
AMI_TYPES = {"x86_64": "AL2023_x86_64_NVIDIA", "arm64": "AL2023_ARM_64_NVIDIA"}
"""The EKS AL2023 NVIDIA AMI per CPU architecture (botocore eks AMITypes; the ARM one for Grace machines)."""
SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
CONTROL_PLANE_BLOCKS = (-3, -4)
"""The cluster range's blocks of the control plane's two subnets (clusterfab.addressing)."""


def cluster_name(cluster: Cluster) -> str:
    """The EKS cluster's name: the blueprint's and the stack's, unique per account and region."""
    return physical(cluster.spec.name, cluster.stack, max_length=100)


def _api_access_cidrs(cluster: Cluster) -> list[str]:
    """The blueprint's `scheduler.api_access_cidrs` (the resolved section does not carry them)."""
    written = cluster.input.blueprint.scheduler
    return [str(cidr) for cidr in written.api_access_cidrs] if written is not None else []


def _capacity(group: NodeGroup) -> tuple[CapacityType, str | None]:
    """The managed node group's capacity type and the reservation its launch template targets."""
    capacity = group.capacity
    match capacity:
        case OnDemand():
            return "ON_DEMAND", None
        case Spot():
            return "SPOT", None
        case Reservation():
            return "ON_DEMAND", capacity.reservation
        case CapacityBlock():
            return "CAPACITY_BLOCK", capacity.reservation
        case FlexStart():
            raise ValueError(
                f"node group {group.name}: AWS has no flex-start capacity (validation rejects it)"
            )
        case _:
            assert_never(capacity)


def _node_group(
    site: Site, control: AwsEksCluster, section: Kubernetes, group: NodeGroup, addons: AwsEksAddons
) -> AwsEksNodeGroup:
    cluster, network = site.cluster, site.network
    capacity_type, reservation = _capacity(group)
    machine = group.machine
    arch = machine.cpu_architecture if isinstance(machine, AwsMachineType) else "x86_64"
    return AwsEksNodeGroup(
        child(cluster.spec.name, group.name),
        AwsEksNodeGroupArgs(
            cluster_name=control.cluster_name,
            node_group=group.name,
            version=section.version,
            node_role_arn=control.node_role_arn,
            subnet_id=network.node_subnet_id,
            security_group_ids=[network.node_security_group_id, control.cluster_security_group_id],
            instance_type=machine.name,
            ami_type=AMI_TYPES[arch],
            capacity_type=capacity_type,
            capacity_reservation_id=reservation,
            network_interfaces=_interfaces(cluster, group),
            placement_group=group.placement == "compact",
            min_size=group.min_size,
            max_size=group.max_size,
            autoscaled=group.autoscaled,
            root_volume_gib=group.boot_disk_gib,
            root_volume_type=group.root_volume_type or "gp3",
            kms_key_arn=group.kms_key,
            labels={labels.NODE_GROUP_LABEL: group.name},
            taints=[GPU_TAINT] if machine.accelerator.count else [],
            tags=_tags(cluster, group),
            after=[addons],
        ),
        site.opts,
    )


def _system_group(
    site: Site, control: AwsEksCluster, section: Kubernetes, addons: AwsEksAddons
) -> AwsEksNodeGroup:
    cluster, network = site.cluster, site.network
    return AwsEksNodeGroup(
        child(cluster.spec.name, SYSTEM_GROUP),
        AwsEksNodeGroupArgs(
            cluster_name=control.cluster_name,
            node_group=SYSTEM_GROUP,
            discoverable=False,
            version=section.version,
            node_role_arn=control.node_role_arn,
            subnet_id=network.node_subnet_id,
            security_group_ids=[network.node_security_group_id, control.cluster_security_group_id],
            instance_type=section.system_machine,
            ami_type=SYSTEM_AMI_TYPE,
            min_size=section.system_count,
            max_size=section.system_count,
            root_volume_gib=100,
            labels={labels.NODE_GROUP_LABEL: SYSTEM_GROUP},
            # The component tag names the cost item, so the budget policy prices it as `cost` does.
            tags=cluster.tags(SYSTEM_NODES_ITEM),
            after=[addons],
        ),
        site.opts,
    )


def _addons(
    site: Site, control: AwsEksCluster, section: Kubernetes, *, before_nodes: bool, after: list[Any]
) -> AwsEksAddons:
    spec = site.spec
    chosen = [
        ManagedAddon(a.name, a.version(section.version))
        for a in eks_addons()
        if a.before_nodes == before_nodes
    ]
    return AwsEksAddons(
        child(spec.name, "addons" if not before_nodes else "node-addons"),
        AwsEksAddonsArgs(
            cluster_name=control.cluster_name,
            cluster=cluster_name(site.cluster),
            addons=chosen,
            depends_on=after,
            tags=site.cluster.tags("kubernetes"),
        ),
        site.opts,
    )


def _kubeconfig(cluster: Cluster, control: AwsEksCluster) -> pulumi.Output[str]:
    """The provider's kubeconfig: `aws eks get-token` with the deploying user's credentials."""
    region = cluster.spec.region

    def render(values: list[str]) -> str:
        name, endpoint, ca = values
        credential = credentials("aws")(cluster=name, location=region, project=None)
        return json.dumps(
            kubeconfig(context=name, endpoint=endpoint, certificate_authority=ca, credential=credential)
        )

    return pulumi.Output.all(control.cluster_name, control.endpoint, control.certificate_authority).apply(
        render
    )


def _in_cluster_objects(cluster: Cluster) -> list[dict[str, Any]]:
    """The objects the program applies to the cluster, in order."""
    # The cluster's system software (device plugins, dcgm-exporter) first, then the teams' namespaces and
    # Kueue's objects (after Kueue's chart).
    spec = cluster.spec
    return [
        *in_cluster_objects(spec, "aws"),
        *team_objects(spec),
        *kueue_objects(spec, "aws"),
        *agent_objects(spec),
    ]


def _compute(
    site: Site, mounts: Mapping[str, MountTarget]
) -> tuple[dict[str, NodeGroupExport], SchedulerRealized]:
    cluster, network = site.cluster, site.network
    spec = cluster.spec
    section = require_kubernetes(spec)
    blocks = addressing.blocks(spec.cidr)
    control = AwsEksCluster(
        child(spec.name, "eks"),
        AwsEksClusterArgs(
            name=cluster_name(cluster),
            version=section.version,
            vpc_id=network.vpc_id,
            control_plane_subnet_cidrs=(
                str(blocks[CONTROL_PLANE_BLOCKS[0]]),
                str(blocks[CONTROL_PLANE_BLOCKS[1]]),
            ),
            availability_zone=network.node_subnet_zone,
            api_access_cidrs=_api_access_cidrs(cluster),
            protect=spec.protected,
            tags=cluster.tags("kubernetes"),
        ),
        site.opts,
    )
    node_addons = _addons(site, control, section, before_nodes=True, after=[])
    system = _system_group(site, control, section, node_addons)
    groups = {
        group.name: _node_group(site, control, section, group, node_addons) for group in spec.node_groups
    }
    addons = _addons(site, control, section, before_nodes=False, after=[system])
    KubernetesObjects(
        child(spec.name, "objects"),
        KubernetesObjectsArgs(
            kubeconfig=_kubeconfig(cluster, control),
            cluster_identifier=control.arn,
            objects=_in_cluster_objects(cluster),
            depends_on=[system, addons],
            charts=[HelmChart(**vars(chart)) for chart in training_charts(spec, "aws")],
        ),
        site.opts,
    )
    exports = {group.name: _export(cluster, group, groups[group.name], control) for group in spec.node_groups}
    return exports, SchedulerRealized(_scheduler_export(cluster, section, control))


def _export(
    cluster: Cluster, group: NodeGroup, made: AwsEksNodeGroup, control: AwsEksCluster
) -> NodeGroupExport:
    interfaces = _interfaces(cluster, group)
    return NodeGroupExport(
        machine_type=group.machine.name,
        min_size=group.min_size,
        max_size=group.max_size,
        capacity=group.capacity.kind,
        placement=group.placement,
        fabric=group.fabric,
        group=made.arn,
        template=made.launch_template_id,
        identity=control.node_role_arn,
        interfaces=len(interfaces),
        fabric_interfaces=sum(1 for i in interfaces if i.interface_type != "interface"),
    )


def _scheduler_export(cluster: Cluster, section: Kubernetes, control: AwsEksCluster) -> dict[str, Any]:
    """clusterfab.scheduler.kubernetes.outputs.KubernetesOutput."""
    return {
        "kind": KIND,
        "controller": control.cluster_name,
        "controller_address": control.endpoint,
        "login": [],
        "service": SERVICE,
        "location": cluster.spec.region,
        "version": section.version,
        "certificate_authority": control.certificate_authority,
    }


KUBERNETES = AwsScheduler(
    node_vars=lambda _cluster, _group: {},
    delete_hooks=lambda _cluster: (),
    realize=lambda _site, _nodes, _mounts: None,
    compute=_compute,
)
"""Kubernetes' entry in the AWS realizer's table of schedulers."""
