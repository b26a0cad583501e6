"""Shared file systems on GCP: Managed Lustre and Filestore, both reached over private services access.

Each exports a `MountTarget`, so node groups and TPU slices mount them without knowing which is which:
Managed Lustre as `<ip>@tcp:/<fsname>`, Filestore as `<ip>:/<share>`. Both are stateful: `protect`
guards them against deletion and replacement, and Filestore's own deletion protection follows it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components._contracts import MountTarget
from components._errors import check_inputs
from components._naming import child, gcp_name

LUSTRE_TYPE = "clusterfab:storage:GcpManagedLustre"
FILESTORE_TYPE = "clusterfab:storage:GcpFilestore"
LUSTRE_FILESYSTEM_MAX = 8
"""Managed Lustre file system names: at most 8 alphanumeric characters."""
MOUNT_OPTIONS = "defaults"
NOBODY = 65534
"""The uid and gid root becomes on a root-squashed export (Filestore's default anonymous ids)."""


def lustre_filesystem_name(name: str) -> str:
    """A name as a Lustre file system name: `scratch-2` -> `scratch2`."""
    cleaned = re.sub(r"[^a-z0-9]", "", name.lower())[:LUSTRE_FILESYSTEM_MAX]
    return cleaned or "lustre"


@dataclass(frozen=True, kw_only=True)
class GcpManagedLustreArgs:
    """Inputs of GcpManagedLustre."""

    project: str
    zone: str
    instance_id: str
    """The instance's id (unique in the project and zone)."""
    capacity_gib: int
    per_unit_storage_throughput: int
    """The tier, in MB/s per TiB (125, 250, 500, 1000); fixed at creation."""
    network_id: pulumi.Input[str]
    """The VPC (projects/P/global/networks/N) with private services access."""
    mount_point: str
    mount_name: str = ""
    """The name clients know it by (MountTarget.name); default the component's name."""
    filesystem: str = ""
    """The Lustre file system name (at most 8 alphanumerics); default derived from `mount_name`."""
    private_services: pulumi.Resource | None = None
    """The private services connection the instance must wait for."""
    kms_key: str | None = None
    """A Cloud KMS key (in the instance's region) to encrypt the file system with; default Google's own
    keys. The Managed Lustre service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter on it."""
    protect: bool = False
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
        mount_name = args.mount_name or name
        instance = gcp.lustre.Instance(
            child(name, "fs"),
            project=args.project,
            location=args.zone,
            instance_id=args.instance_id,
            filesystem=args.filesystem or lustre_filesystem_name(mount_name),
            capacity_gib=str(args.capacity_gib),
            # The tier is fixed at creation: changing it replaces the file system (hence protect).
            per_unit_storage_throughput=str(args.per_unit_storage_throughput),
            network=args.network_id,
            kms_key=args.kms_key,
            labels=dict(args.labels),
            description=f"clusterfab {name}",
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.protect,
                # Lustre servers take their addresses from the private services range.
                depends_on=[args.private_services] if args.private_services is not None else None,
            ),
        )
        self.instance_name = instance.name
        self.mount_target = MountTarget(
            name=mount_name,
            fs_type="lustre",
            source=instance.mount_point,
            mount_point=args.mount_point,
            options=MOUNT_OPTIONS,
        )
        self.register_outputs({"instance_name": instance.name, "mount_source": instance.mount_point})


def _first_address(networks: Sequence[gcp.filestore.outputs.InstanceNetwork]) -> str:
    addresses = networks[0].ip_addresses if networks else None
    if not addresses:
        raise ValueError("Filestore reported no IP address for its network")
    return addresses[0]


def _exports(args: GcpFilestoreArgs) -> list[gcp.filestore.InstanceFileSharesNfsExportOptionArgs] | None:
    """One export rule: the client ranges, read-write, root squashed or not. Filestore's default exports to
    every private address of the network, root unsquashed (cloud.google.com/filestore/docs/access-control).
    The anonymous ids may be set only with ROOT_SQUASH (file v1 NfsExportOptions.anonUid)."""
    if not args.client_ranges:
        return None
    squash = args.root_squash
    return [
        gcp.filestore.InstanceFileSharesNfsExportOptionArgs(
            ip_ranges=list(args.client_ranges),
            access_mode="READ_WRITE",
            squash_mode="ROOT_SQUASH" if squash else "NO_ROOT_SQUASH",
            anon_uid=NOBODY if squash else None,
            anon_gid=NOBODY if squash else None,
        )
    ]


@dataclass(frozen=True, kw_only=True)
class GcpFilestoreArgs:
    """Inputs of GcpFilestore."""

    project: str
    location: str
    """A zone, or a region for the REGIONAL and ENTERPRISE tiers."""
    capacity_gib: int
    network_name: pulumi.Input[str]
    mount_point: str
    tier: str = "ZONAL"
    share_name: str = "share"
    mount_name: str = ""
    """The name clients know it by (MountTarget.name); default the component's name."""
    private_services: pulumi.Resource | None = None
    """The private services connection to take the share's address from (None: direct peering)."""
    private_services_range: pulumi.Input[str] | None = None
    """The allocated range's name, with `private_services`."""
    client_ranges: Sequence[str] = ()
    """The only ranges that may mount the share, read-write (the nodes' subnet); empty: Filestore's default
    export, every private address of the network."""
    root_squash: bool = False
    """With `client_ranges`: clients' root acts as nobody (uid and gid 65534) on the share. The share's top
    directory belongs to root with mode 755 (Filestore's default), so under root squash no client can
    create anything there: make the users' directories first, with root squash off."""
    kms_key_name: str | None = None
    """A Cloud KMS key (in the instance's region) to encrypt the share with; default Google's own keys.
    Not on the BASIC_HDD and BASIC_SSD tiers; the Filestore service agent needs
    roles/cloudkms.cryptoKeyEncrypterDecrypter on it."""
    protect: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)


class GcpFilestore(pulumi.ComponentResource):
    """A Filestore instance with one NFS share, connected through private services access."""

    instance_name: pulumi.Output[str]
    """The Filestore instance."""
    mount_target: MountTarget
    """How nodes mount it."""

    def __init__(self, name: str, args: GcpFilestoreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        if args.root_squash and not args.client_ranges:
            check_inputs(FILESTORE_TYPE, [("root_squash", "needs client_ranges to squash root for")])
        super().__init__(FILESTORE_TYPE, name, None, opts)
        psa = args.private_services is not None
        instance = gcp.filestore.Instance(
            child(name, "share"),
            name=gcp_name(child(name, "share")),
            project=args.project,
            location=args.location,
            tier=args.tier,
            file_shares=gcp.filestore.InstanceFileSharesArgs(
                capacity_gb=args.capacity_gib, name=args.share_name, nfs_export_options=_exports(args)
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
            deletion_protection_enabled=args.protect,
            kms_key_name=args.kms_key_name,
            labels=dict(args.labels),
            description=f"clusterfab {name}",
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.protect,
                depends_on=[args.private_services] if args.private_services is not None else None,
            ),
        )
        address = instance.networks.apply(_first_address)
        source = pulumi.Output.concat(address, ":/", args.share_name)
        self.instance_name = instance.name
        self.mount_target = MountTarget(
            name=args.mount_name or name,
            fs_type="nfs",
            source=source,
            mount_point=args.mount_point,
            options=MOUNT_OPTIONS,
        )
        self.register_outputs({"instance_name": instance.name, "mount_source": source})
