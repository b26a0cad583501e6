"""One GKE node pool: the system pool, a GPU node group's pool or one TPU slice's pool.

Every pool runs Container-Optimized OS with containerd, Shielded VM (secure boot, integrity monitoring),
the cluster's node service account with the cloud-platform scope (IAM, not scopes, limits it) and GKE's
metadata server (Workload Identity: a pod never gets the node's credentials). GPU pools add their guest
accelerators with GKE's driver installation, gVNIC, the machine's bundled local SSDs as ephemeral storage,
the fabric's additional node networks and surge settings that need no spare GPU capacity; capacity is a
specific reservation, spot, or flex-start with queued provisioning. A TPU pool is one slice: its machine
type and topology make GKE place the slice's hosts together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_gcp as gcp

from components._errors import check_inputs
from components._naming import child
from components.gcp.identity import CLOUD_PLATFORM_SCOPE
from components.gcp.node_group import RESERVATION_KEY

TYPE = "clusterfab:compute:GkeNodePool"

NODE_POOL_NAME_MAX = 40
"""container.v1 NodePool.name: at most 40 characters (GKE refuses longer names)."""
IMAGE_TYPE = "COS_CONTAINERD"
"""Container-Optimized OS: the image GKE installs GPU drivers on (Cluster Toolkit's default)."""
TaintEffect = Literal["NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"]
Capacity = Literal["on_demand", "reservation", "spot", "queued"]


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: TaintEffect = "NO_SCHEDULE"


@dataclass(frozen=True)
class NodeNetwork:
    """An additional node network (a NIC beyond nic0): the VPC's and the subnet's names."""

    network: pulumi.Input[str]
    subnetwork: pulumi.Input[str]


@dataclass(frozen=True, kw_only=True)
class GkeNodePoolArgs:
    """Inputs of GkeNodePool. The defaults are a fixed on-demand pool without accelerators."""

    name: str
    """The pool's name in the cluster (at most 40 characters)."""
    cluster: pulumi.Input[str]
    """The cluster's id (projects/P/locations/L/clusters/C)."""
    project: str
    location: str
    """The cluster's location (its region)."""
    node_locations: Sequence[str]
    """The zones the pool's nodes are in."""
    machine_type: str
    service_account_email: pulumi.Input[str]
    node_count: int = 1
    """Nodes per zone of a fixed pool (an autoscaled one starts empty and grows to its least)."""
    autoscaling: tuple[int, int] | None = None
    """(least, most) nodes over all zones; None: a fixed pool."""
    capacity: Capacity = "on_demand"
    reservation: str | None = None
    """The specific reservation a `reservation` pool consumes."""
    accelerator_type: str | None = None
    """A GPU pool's accelerator (nvidia-h100-mega-80gb), `accelerator_count` per node."""
    accelerator_count: int = 0
    gpu_driver_version: Literal["DEFAULT", "LATEST", "INSTALLATION_DISABLED"] = "DEFAULT"
    """GKE's driver installation for the accelerators: DEFAULT is the driver GKE pairs with the node's
    version (Cluster Toolkit's default)."""
    gvnic: bool = False
    local_ssd_ephemeral: bool = False
    """Back ephemeral storage by local SSDs: count 0 takes every SSD a machine with bundled SSDs has
    (container.v1 EphemeralStorageLocalSsdConfig)."""
    compact_placement: bool = False
    tpu_topology: str | None = None
    """A TPU slice's topology (4x4x4): GKE places the pool's hosts as one slice."""
    additional_networks: Sequence[NodeNetwork] = ()
    boot_disk_type: str = "pd-balanced"
    boot_disk_gib: int = 100
    boot_disk_kms_key: str | None = None
    taints: Sequence[Taint] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    """Kubernetes labels of the nodes (what workloads and queues select them by)."""
    resource_labels: Mapping[str, str] = field(default_factory=dict)
    """GCP labels of the nodes' VMs and disks."""
    max_surge: int = 1
    max_unavailable: int = 0


def _problems(args: GkeNodePoolArgs) -> list[tuple[str, str]]:
    problems = []
    if len(args.name) > NODE_POOL_NAME_MAX:
        problems.append(("name", f"'{args.name}' is longer than {NODE_POOL_NAME_MAX} characters"))
    if args.capacity == "reservation" and not args.reservation:
        problems.append(("reservation", "a reservation pool needs the reservation's name"))
    if args.capacity != "reservation" and args.reservation:
        problems.append(("reservation", f"a {args.capacity} pool consumes no reservation"))
    if args.capacity == "queued" and (args.autoscaling is None or args.autoscaling[0] != 0):
        problems.append(("autoscaling", "queued provisioning scales a pool from 0 nodes"))
    if args.capacity == "queued" and args.compact_placement and args.tpu_topology is None:
        problems.append(("compact_placement", "queued provisioning places GPU nodes itself"))
    if args.autoscaling is not None and not 0 <= args.autoscaling[0] <= args.autoscaling[1]:
        problems.append(("autoscaling", "needs 0 <= least <= most"))
    if args.max_surge + args.max_unavailable < 1:
        problems.append(("max_unavailable", "an upgrade must be able to replace at least one node"))
    return problems


def _reservation_affinity(args: GkeNodePoolArgs) -> gcp.container.NodePoolNodeConfigReservationAffinityArgs:
    if args.capacity == "reservation" and args.reservation:
        return gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="SPECIFIC_RESERVATION", key=RESERVATION_KEY, values=[args.reservation]
        )
    # Spot and queued capacity never come from a reservation; on-demand nodes would silently consume
    # any open reservation and change what it is billed as.
    return gcp.container.NodePoolNodeConfigReservationAffinityArgs(consume_reservation_type="NO_RESERVATION")


def _accelerators(args: GkeNodePoolArgs) -> list[gcp.container.NodePoolNodeConfigGuestAcceleratorArgs] | None:
    if args.accelerator_type is None:
        return None
    return [
        gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
            type=args.accelerator_type,
            count=args.accelerator_count,
            gpu_driver_installation_config=(
                gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                    gpu_driver_version=args.gpu_driver_version
                )
            ),
        )
    ]


def _node_config(args: GkeNodePoolArgs) -> gcp.container.NodePoolNodeConfigArgs:
    queued = args.capacity == "queued"
    return gcp.container.NodePoolNodeConfigArgs(
        machine_type=args.machine_type,
        image_type=IMAGE_TYPE,
        service_account=args.service_account_email,
        oauth_scopes=[CLOUD_PLATFORM_SCOPE],
        workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
            mode="GKE_METADATA"
        ),
        shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_integrity_monitoring=True
        ),
        metadata={"disable-legacy-endpoints": "true"},
        disk_type=args.boot_disk_type,
        disk_size_gb=args.boot_disk_gib,
        boot_disk_kms_key=args.boot_disk_kms_key,
        guest_accelerators=_accelerators(args),
        gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True) if args.gvnic else None,
        ephemeral_storage_local_ssd_config=(
            gcp.container.NodePoolNodeConfigEphemeralStorageLocalSsdConfigArgs(local_ssd_count=0)
            if args.local_ssd_ephemeral
            else None
        ),
        spot=True if args.capacity == "spot" else None,
        # Queued provisioning is flex-start capacity asked for by ProvisioningRequests (GKE's
        # `--flex-start --enable-queued-provisioning`).
        flex_start=True if queued else None,
        reservation_affinity=_reservation_affinity(args),
        taints=[
            gcp.container.NodePoolNodeConfigTaintArgs(key=t.key, value=t.value, effect=t.effect)
            for t in args.taints
        ]
        or None,
        labels=dict(args.labels) or None,
        resource_labels=dict(args.resource_labels) or None,
    )


def _placement(args: GkeNodePoolArgs) -> gcp.container.NodePoolPlacementPolicyArgs | None:
    if args.tpu_topology is not None:
        return gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", tpu_topology=args.tpu_topology)
    if args.compact_placement:
        return gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT")
    return None


class GkeNodePool(pulumi.ComponentResource):
    """A node pool of a GKE cluster."""

    pool_id: pulumi.Output[str]
    """The pool's id (projects/P/locations/L/clusters/C/nodePools/N)."""
    instance_group_urls: pulumi.Output[Sequence[str]]
    """The managed instance groups GKE made for the pool (one per zone)."""

    def __init__(self, name: str, args: GkeNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        queued = args.capacity == "queued"
        pool = gcp.container.NodePool(
            child(name, "pool"),
            name=args.name,
            project=args.project,
            cluster=args.cluster,
            location=args.location,
            node_locations=list(args.node_locations),
            node_count=args.node_count if args.autoscaling is None else None,
            autoscaling=(
                gcp.container.NodePoolAutoscalingArgs(
                    total_min_node_count=args.autoscaling[0],
                    total_max_node_count=args.autoscaling[1],
                    location_policy="ANY",
                )
                if args.autoscaling is not None
                else None
            ),
            node_config=_node_config(args),
            placement_policy=_placement(args),
            queued_provisioning=gcp.container.NodePoolQueuedProvisioningArgs(enabled=True)
            if queued
            else None,
            network_config=gcp.container.NodePoolNetworkConfigArgs(
                # The cluster's nodes are private already; said again here so that no pool is public.
                enable_private_nodes=True,
                additional_node_network_configs=[
                    gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(
                        network=n.network, subnetwork=n.subnetwork
                    )
                    for n in args.additional_networks
                ]
                or None,
            ),
            # Auto-repair replaces a broken node; a release channel needs auto-upgrade. Queued
            # provisioning pools take neither (Cluster Toolkit's flex-start queued provisioning example):
            # their nodes live for one job.
            management=gcp.container.NodePoolManagementArgs(auto_repair=not queued, auto_upgrade=not queued),
            upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(
                strategy="SURGE", max_surge=args.max_surge, max_unavailable=args.max_unavailable
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.pool_id = pool.id
        self.instance_group_urls = pool.instance_group_urls
        self.register_outputs({"pool_id": self.pool_id, "instance_group_urls": self.instance_group_urls})
