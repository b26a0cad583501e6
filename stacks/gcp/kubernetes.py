"""Kubernetes on GCP: a GKE Standard cluster whose node pools are the node groups and TPU slices.

The cluster is regional, its pools in the blueprint's zone (components.gcp.gke_cluster). Each node group
becomes one GPU node pool with the machine's accelerators, gVNIC, its capacity and placement and, with a
fabric, the fabric's networks as additional node networks; each slice of a TPU slice group becomes one TPU
node pool (multislice: a pool per slice). The objects applied in the cluster are the multi-networking
objects of the fabrics in use and the teams' namespaces; no instance group, template or queued resource of
the realizer's own is made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Literal, assert_never

import pulumi
from cluster import NodeGroupExport, SchedulerRealized, TpuSliceExport

from clusterfab.clouds.gcp.kubernetes import TPU_MACHINES
from clusterfab.clouds.kubernetes import credentials
from clusterfab.core.naming import GCP_GKE_NODES, physical
from clusterfab.core.vocab import NODE_GROUP_TAG, label_value
from clusterfab.scheduler.kubernetes import labels
from clusterfab.scheduler.kubernetes.costs import SYSTEM_NODES_ITEM
from clusterfab.scheduler.kubernetes.facts import kubernetes_facts
from clusterfab.scheduler.kubernetes.gpudirect import gpu_network, rdma_network
from clusterfab.scheduler.kubernetes.kubeconfig import kubeconfig
from clusterfab.scheduler.kubernetes.kueue import training_charts
from clusterfab.scheduler.kubernetes.queues import kueue_objects
from clusterfab.scheduler.kubernetes.render import agent_objects, require_kubernetes, team_objects
from clusterfab.scheduler.kubernetes.section import KIND, Kubernetes
from clusterfab.scheduler.kubernetes.software import in_cluster_objects
from clusterfab.spec import Capacity as SpecCapacity
from clusterfab.spec import CapacityBlock, FlexStart, NodeGroup, OnDemand, Reservation, Spot, TpuSlice
from components._contracts import MountTarget
from components._naming import child
from components.gcp.gke_cluster import GkeCluster, GkeClusterArgs, MaintenanceWindow
from components.gcp.gke_networks import PodNetwork, network_objects
from components.gcp.gke_node_pool import Capacity, GkeNodePool, GkeNodePoolArgs, NodeNetwork, Taint
from components.kubernetes.helm import HelmChart
from components.kubernetes.objects import KubernetesObjects, KubernetesObjectsArgs

from .names import SERVICE_ACCOUNT_ID_MAX
from .site import GcpRealizeError, GcpScheduler, Site, machine_type

GPU_TAINT = Taint(labels.GPU_TAINT, "present")
TPU_TAINT = Taint(labels.TPU_TAINT, "present")
"""Only pods that ask for accelerators (and tolerate them) land on accelerator nodes (Cluster Toolkit's
gke-node-pool taints)."""
MAINTENANCE_WINDOW = MaintenanceWindow(
    start="2026-01-03T04:00:00Z", end="2026-01-03T12:00:00Z", recurrence="FREQ=WEEKLY;BYDAY=SA,SU"
)
"""Saturdays and Sundays 04:00-12:00 UTC: 16 hours a week, more than the 48 hours in 32 days GKE asks a
window to allow."""
CLUSTER_NAME_MAX = 40


def _compute(
    site: Site, mounts: Mapping[str, MountTarget]
) -> tuple[dict[str, NodeGroupExport], dict[str, TpuSliceExport], SchedulerRealized]:
    """The cluster, its pools and the objects in it. The file systems exist beside it (their CSI drivers
    are on); pods mount them through volumes of their own."""
    spec = site.spec
    section = require_kubernetes(spec)
    networks = _pod_networks(site)
    gke = GkeCluster(
        child(spec.name, "gke"),
        _cluster_args(site, section, multi_networking=bool(networks)),
        site.opts,
    )
    pools: list[pulumi.Resource] = []
    groups: dict[str, NodeGroupExport] = {}
    for group in spec.node_groups:
        pool, groups[group.name] = _gpu_pool(site, gke, group, networks)
        pools.append(pool)
    tpus: dict[str, TpuSliceExport] = {}
    for tpu in spec.tpu_slices:
        slice_pools, tpus[tpu.name] = _tpu_pools(site, gke, tpu)
        pools.extend(slice_pools)
    used = {n.name: n for g in spec.node_groups for n in networks.get(g.name, ())}
    # The fabric's networks, the system software (fabric installers, dcgm-exporter), the teams' namespaces,
    # Kueue's admission check for queued provisioning (after Kueue's chart).
    objects = [
        *network_objects(list(used.values())),
        *in_cluster_objects(spec, "gcp"),
        *team_objects(spec),
        *kueue_objects(spec, "gcp"),
        *agent_objects(spec),
    ]
    KubernetesObjects(
        child(spec.name, "objects"),
        KubernetesObjectsArgs(
            kubeconfig=_kubeconfig(site, gke),
            cluster_identifier=gke.cluster_id,
            objects=objects,
            depends_on=pools,
            charts=[HelmChart(**vars(chart)) for chart in training_charts(spec, "gcp")],
        ),
        site.opts,
    )
    return groups, tpus, _scheduler_export(site, section, gke)


def _cluster_args(site: Site, section: Kubernetes, *, multi_networking: bool) -> GkeClusterArgs:
    """The cluster's Args; the upgrade exclusion runs from the day the catalog recorded the version as
    offered to the end of its standard support (GKE refuses an exclusion of minor upgrades past it)."""
    spec, stack = site.spec, site.cluster.stack
    plane = kubernetes_facts().control_plane(spec.cloud)
    support = plane.version(section.version) if plane is not None else None
    if plane is None or support is None or section.release_channel is None:
        raise GcpRealizeError(f"GKE offers no Kubernetes {section.version} (validation refuses it)")
    return GkeClusterArgs(
        name=physical(spec.name, stack, max_length=CLUSTER_NAME_MAX),
        project=site.project,
        region=spec.region,
        zone=spec.zone,
        network=site.network.system_network_id,
        subnetwork=site.network.system_subnetwork_id,
        release_channel=section.release_channel,
        version=section.version,
        api_access_cidrs=section.api_access_cidrs,
        multi_networking=multi_networking,
        maintenance_window=MAINTENANCE_WINDOW,
        exclusion_start=f"{plane.as_of.isoformat()}T00:00:00Z",
        exclusion_end=f"{support.standard_support_ends.isoformat()}T00:00:00Z",
        service_account_id=physical(spec.name, stack, GCP_GKE_NODES, max_length=SERVICE_ACCOUNT_ID_MAX),
        system_machine_type=section.system_machine,
        system_node_count=section.system_count,
        protect=spec.protected,
        labels=site.cluster.tags(KIND),
        # The component label names the cost item, so the budget policy prices it as `cost` does.
        system_labels=site.cluster.tags(SYSTEM_NODES_ITEM),
        description=f"{spec.name} ({stack})",
    )


def _name(link: pulumi.Input[str]) -> pulumi.Output[str]:
    """A VPC's or subnet's name from its self link."""
    return pulumi.Output.from_input(link).apply(lambda value: value.rsplit("/", 1)[-1])


def _pod_networks(site: Site) -> dict[str, list[PodNetwork]]:
    """Each fabric node group's additional networks, NIC order: the general networks after the system one
    (`gvnic-<i>`), then per GPU VPC `vpc<i>` (TCPX / TCPXO, from 1: gpu_network, the names TCPXO pods
    ask for) and per RDMA subnet `rdma-<i>` (from 0: rdma_network, the names RDMA pods ask for), the names
    GKE's and Cluster Toolkit's recipes give them."""
    found: dict[str, list[PodNetwork]] = {}
    for group in site.spec.node_groups:
        if group.fabric is None:
            continue
        net, fabric = machine_type(group).network, site.fabrics[group.fabric]
        networks = [
            PodNetwork(
                f"gvnic-{index}",
                _name(site.network.network_self_links[f"gvnic-{index}"]),
                _name(site.network.general_subnetworks[index]),
                "NetDevice",
            )
            for index in range(1, net.general_vpcs)
        ]
        for index in range(net.gpu_vpcs):
            vpc = fabric.network_self_links[f"gpu-{index}"]
            subnet = fabric.nic_subnetworks[index]
            networks.append(PodNetwork(gpu_network(index), _name(vpc), _name(subnet), "NetDevice"))
        for index in range(net.rdma_subnets):
            subnet = fabric.nic_subnetworks[net.gpu_vpcs + index]
            vpc = fabric.network_self_links["vpc"]
            networks.append(PodNetwork(rdma_network(index), _name(vpc), _name(subnet), "RDMA"))
        found[group.name] = networks
    return found


def _capacity(name: str, capacity: SpecCapacity) -> tuple[Capacity, str | None]:
    """A GPU pool's capacity and the reservation it consumes."""
    match capacity:
        case OnDemand():
            return "on_demand", None
        case Spot():
            return "spot", None
        case Reservation():
            return "reservation", capacity.reservation
        case FlexStart():
            return "queued", None
        case CapacityBlock():
            raise GcpRealizeError(f"{name}: GCP has no capacity blocks (validation rejects them)")
        case _:
            assert_never(capacity)


def _gpu_pool(
    site: Site, gke: GkeCluster, group: NodeGroup, networks: Mapping[str, list[PodNetwork]]
) -> tuple[GkeNodePool, NodeGroupExport]:
    spec, machine = site.spec, machine_type(group)
    capacity, reservation = _capacity(group.name, group.capacity)
    queued = capacity == "queued"
    own = networks.get(group.name, [])
    pool = GkeNodePool(
        child(spec.name, group.name),
        GkeNodePoolArgs(
            name=f"gpu-{group.name}",
            cluster=gke.cluster_id,
            project=site.project,
            location=spec.region,
            node_locations=[spec.zone],
            machine_type=machine.name,
            service_account_email=gke.node_service_account_email,
            node_count=group.max_size,
            # Queued provisioning grows a pool from 0 for each admitted job (GKE's ProvisioningRequest).
            autoscaling=(0, group.max_size) if queued else _autoscaling(group),
            capacity=capacity,
            reservation=reservation,
            accelerator_type=machine.accelerator.gcp_type,
            accelerator_count=machine.accelerator.count,
            gvnic=True,
            local_ssd_ephemeral=True,
            # Queued provisioning places the nodes it obtains itself; a reservation's VMs are placed as
            # the reservation was made (GKE's A3 Mega recipe and Cluster Toolkit's example give such a
            # pool no placement policy).
            compact_placement=group.placement == "compact" and capacity in ("on_demand", "spot"),
            additional_networks=[NodeNetwork(n.vpc, n.subnet) for n in own],
            boot_disk_type=machine.boot_disk_type,
            boot_disk_gib=group.boot_disk_gib,
            boot_disk_kms_key=group.kms_key,
            taints=[GPU_TAINT],
            labels={labels.NODE_GROUP_LABEL: group.name},
            # The node group label: the monitoring host's service discovery finds the pool's VMs by it.
            resource_labels={
                **site.cluster.tags(f"node-group-{group.name}"),
                NODE_GROUP_TAG: label_value(group.name),
            },
            # An upgrade replaces one node at a time in place: no spare GPU capacity is needed for it.
            max_surge=0,
            max_unavailable=1,
        ),
        site.opts,
    )
    nics = 1 + len(own)
    export = NodeGroupExport(
        machine_type=machine.name,
        min_size=0 if queued else group.min_size,
        max_size=group.max_size,
        capacity=group.capacity.kind,
        placement=group.placement,
        fabric=group.fabric,
        group=pool.pool_id,
        template="",
        identity=gke.node_service_account_email,
        interfaces=nics,
        fabric_interfaces=sum(1 for n in own if not n.name.startswith("gvnic-")),
    )
    return pool, export


def _autoscaling(group: NodeGroup) -> tuple[int, int] | None:
    return (group.min_size, group.max_size) if group.autoscaled else None


def _tpu_capacity(tpu: TpuSlice) -> tuple[Literal["on_demand", "spot", "reservation"], str | None]:
    capacity = tpu.capacity
    match capacity:
        case OnDemand():
            return "on_demand", None
        case Spot():
            return "spot", None
        case Reservation():
            return "reservation", capacity.reservation
        case CapacityBlock() | FlexStart():
            raise GcpRealizeError(f"TPU slice {tpu.name}: TPU VMs are not sold as {capacity.kind}")
        case _:
            assert_never(capacity)


def tpu_machine_type(tpu: TpuSlice) -> str:
    """The GKE machine type of the slice's VMs: a single-host slice's VM holds all its chips."""
    chips = tpu.shape.chips if tpu.shape.hosts == 1 else tpu.generation.chips_per_host
    machine = TPU_MACHINES.get((tpu.generation.name, chips))
    if machine is None:
        raise GcpRealizeError(f"TPU slice {tpu.name}: GKE has no {tpu.generation.name} VM with {chips} chips")
    return machine


def _tpu_pools(site: Site, gke: GkeCluster, tpu: TpuSlice) -> tuple[list[GkeNodePool], TpuSliceExport]:
    spec = site.spec
    capacity, reservation = _tpu_capacity(tpu)
    pools = [
        GkeNodePool(
            child(spec.name, tpu.name if tpu.slices == 1 else f"{tpu.name}-{index}"),
            GkeNodePoolArgs(
                name=f"tpu-{tpu.name}" if tpu.slices == 1 else f"tpu-{tpu.name}-{index}",
                cluster=gke.cluster_id,
                project=site.project,
                location=spec.region,
                node_locations=[spec.zone],
                machine_type=tpu_machine_type(tpu),
                service_account_email=gke.node_service_account_email,
                node_count=tpu.hosts_per_slice,
                capacity=capacity,
                reservation=reservation,
                tpu_topology=tpu.topology,
                taints=[TPU_TAINT],
                labels={labels.TPU_SLICE_LABEL: tpu.name},
                resource_labels=site.cluster.tags(f"tpu-{tpu.name}"),
                # A slice's hosts work as one: an upgrade recreates the slice (GKE's TPU pool upgrades).
                max_surge=0,
                max_unavailable=1,
            ),
            site.opts,
        )
        for index in range(tpu.slices)
    ]
    export = TpuSliceExport(
        nodes=[pool.pool_id for pool in pools],
        accelerator_type=tpu.accelerator_type,
        topology=tpu.topology,
        runtime_version=tpu.runtime_version,
        slices=tpu.slices,
        hosts_per_slice=tpu.hosts_per_slice,
        capacity=tpu.capacity.kind,
        identity=gke.node_service_account_email,
    )
    return pools, export


def _kubeconfig(site: Site, gke: GkeCluster) -> pulumi.Output[str]:
    """The program's kubeconfig: the endpoint and CA the cluster exports, a token from
    gke-gcloud-auth-plugin (the credentials of whoever runs the program)."""
    spec = site.spec

    def render(values: list[str]) -> str:
        name, endpoint, authority = values
        credential = credentials("gcp")(cluster=name, location=spec.region, project=site.project)
        config = kubeconfig(
            context=f"gke_{site.project}_{spec.region}_{name}",
            endpoint=endpoint,
            certificate_authority=authority,
            credential=credential,
        )
        return json.dumps(config)

    return pulumi.Output.all(gke.cluster_name, gke.endpoint, gke.certificate_authority).apply(render)


def _scheduler_export(site: Site, section: Kubernetes, gke: GkeCluster) -> SchedulerRealized:
    """clusterfab.scheduler.kubernetes.outputs.KubernetesOutput's fields."""
    return SchedulerRealized(
        scheduler={
            "kind": KIND,
            "controller": gke.cluster_name,
            "controller_address": gke.endpoint,
            "login": [],
            "service": section.service,
            "location": site.spec.region,
            "version": section.version,
            "certificate_authority": gke.certificate_authority,
        }
    )


KUBERNETES = GcpScheduler(
    node_vars=lambda _cluster, _group, _project: {},
    delete_hooks=lambda _cluster, _project: (),
    gce_groups=lambda _spec, _stack: {},
    private_services=lambda _spec: False,
    realize=lambda _site, _groups, _mounts: None,
    compute=_compute,
)
"""Kubernetes' entry in the GCP realizer's table of schedulers: GKE places the node groups itself."""
