"""Shared file systems on GCP: Managed Lustre and Filestore, both reached over private services access.

Each exports a `MountTarget`, so node groups and TPU slices mount them without knowing which is which:
Managed Lustre as `<ip>@tcp:/<fsname>`, Filestore as `<ip>:/<share>`. Both are stateful: protected in
prod (or when the blueprint says so), and Filestore's own deletion protection is switched on with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components._contracts import MountTarget
from components._naming import child, physical
from components.gcp import GcpPlanError

LUSTRE_TYPE = "clusterfab:storage:GcpManagedLustre"
FILESTORE_TYPE = "clusterfab:storage:GcpFilestore"
LUSTRE_FILESYSTEM_MAX = 8
"""Managed Lustre file system names: at most 8 alphanumeric characters."""
MOUNT_OPTIONS = "defaults"
REGIONAL_FILESTORE_TIERS = frozenset({"REGIONAL", "ENTERPRISE"})
"""Filestore tiers whose instances live in a region; the others live in a zone."""


@dataclass(frozen=True)
class LustrePlan:
    name: str
    instance_id: str
    filesystem: str
    capacity_gib: int
    throughput: int
    mount_point: str
    protect: bool


def lustre_filesystem_name(name: str) -> str:
    """The blueprint name as a Lustre file system name: `scratch-2` -> `scratch2`."""
    cleaned = re.sub(r"[^a-z0-9]", "", name.lower())[:LUSTRE_FILESYSTEM_MAX]
    return cleaned or "lustre"


def plan_lustre(
    *,
    cluster: str,
    stack: str,
    name: str,
    capacity_gib: int,
    throughput: int | None,
    mount_point: str,
    protect: bool,
) -> LustrePlan:
    if throughput is None:
        raise GcpPlanError(f"storage {name}: Managed Lustre needs throughput_mbps_per_tib (its tier)")
    return LustrePlan(
        name=name,
        instance_id=physical(cluster, stack, name),
        filesystem=lustre_filesystem_name(name),
        capacity_gib=capacity_gib,
        throughput=throughput,
        mount_point=mount_point,
        protect=protect,
    )


@dataclass(frozen=True)
class GcpManagedLustreArgs:
    plan: LustrePlan
    project: str
    zone: str
    network_id: pulumi.Input[str]
    private_services: pulumi.Resource | None
    labels: Mapping[str, str] = field(default_factory=dict)


class GcpManagedLustre(pulumi.ComponentResource):
    """A Managed Lustre instance in the cluster's zone, on the system VPC."""

    instance_name: pulumi.Output[str]
    """The Lustre instance."""
    mount_target: MountTarget
    """How nodes mount it."""

    def __init__(
        self, name: str, args: GcpManagedLustreArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(LUSTRE_TYPE, name, None, opts)
        plan = args.plan
        instance = gcp.lustre.Instance(
            child(name, "fs"),
            project=args.project,
            location=args.zone,
            instance_id=plan.instance_id,
            filesystem=plan.filesystem,
            capacity_gib=str(plan.capacity_gib),
            # The tier is fixed at creation: changing it replaces the file system (hence protect).
            per_unit_storage_throughput=str(plan.throughput),
            network=args.network_id,
            labels=dict(args.labels),
            description=f"clusterfab {name}",
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=plan.protect,
                # Lustre servers take their addresses from the private services range.
                depends_on=[args.private_services] if args.private_services is not None else None,
            ),
        )
        self.instance_name = instance.name
        self.mount_target = MountTarget(
            name=plan.name,
            fs_type="lustre",
            source=instance.mount_point,
            mount_point=plan.mount_point,
            options=MOUNT_OPTIONS,
        )
        self.register_outputs({"instance_name": instance.name, "mount_source": instance.mount_point})


@dataclass(frozen=True)
class FilestorePlan:
    name: str
    tier: str
    location: str
    capacity_gib: int
    share_name: str
    mount_point: str
    protect: bool


def plan_filestore(
    *,
    name: str,
    tier: str,
    region: str,
    zone: str,
    capacity_gib: int,
    share_name: str,
    mount_point: str,
    protect: bool,
) -> FilestorePlan:
    return FilestorePlan(
        name=name,
        tier=tier,
        location=region if tier in REGIONAL_FILESTORE_TIERS else zone,
        capacity_gib=capacity_gib,
        share_name=share_name,
        mount_point=mount_point,
        protect=protect,
    )


def _first_address(networks: Sequence[gcp.filestore.outputs.InstanceNetwork]) -> str:
    addresses = networks[0].ip_addresses if networks else None
    if not addresses:
        raise GcpPlanError("Filestore reported no IP address for its network")
    return addresses[0]


@dataclass(frozen=True)
class GcpFilestoreArgs:
    plan: FilestorePlan
    project: str
    network_name: pulumi.Input[str]
    private_services: pulumi.Resource | None
    private_services_range: pulumi.Input[str] | None
    labels: Mapping[str, str] = field(default_factory=dict)


class GcpFilestore(pulumi.ComponentResource):
    """A Filestore instance with one NFS share, connected through private services access."""

    instance_name: pulumi.Output[str]
    """The Filestore instance."""
    mount_target: MountTarget
    """How nodes mount it."""

    def __init__(self, name: str, args: GcpFilestoreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(FILESTORE_TYPE, name, None, opts)
        plan = args.plan
        psa = args.private_services is not None
        instance = gcp.filestore.Instance(
            child(name, "share"),
            project=args.project,
            location=plan.location,
            tier=plan.tier,
            file_shares=gcp.filestore.InstanceFileSharesArgs(
                capacity_gb=plan.capacity_gib, name=plan.share_name
            ),
            networks=[
                gcp.filestore.InstanceNetworkArgs(
                    network=args.network_name,
                    modes=["MODE_IPV4"],
                    # Through the cluster's private services range: the share's address is planned
                    # (inside the cluster range) instead of picked by Filestore from anywhere in 10/8.
                    connect_mode="PRIVATE_SERVICE_ACCESS" if psa else "DIRECT_PEERING",
                    reserved_ip_range=args.private_services_range if psa else None,
                )
            ],
            deletion_protection_enabled=plan.protect,
            labels=dict(args.labels),
            description=f"clusterfab {name}",
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=plan.protect,
                depends_on=[args.private_services] if args.private_services is not None else None,
            ),
        )
        address = instance.networks.apply(_first_address)
        source = pulumi.Output.concat(address, ":/", plan.share_name)
        self.instance_name = instance.name
        self.mount_target = MountTarget(
            name=plan.name, fs_type="nfs", source=source, mount_point=plan.mount_point, options=MOUNT_OPTIONS
        )
        self.register_outputs({"instance_name": instance.name, "mount_source": source})
