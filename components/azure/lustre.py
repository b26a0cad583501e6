"""Azure Managed Lustre (AMLFS): a Lustre file system in its own subnet, with an optional blob
integration (Lustre HSM) that imports a container's contents and archives back to it. The integration's
logging container, which must be "a separate container in the same storage account" (Microsoft.StorageCache
AmlFilesystemHsmSettings.loggingContainer), is made here beside the data container; the data container is
the operator's and is never managed.

Facts (learn.microsoft.com/azure/azure-managed-lustre/amlfs-prerequisites and create-file-system-portal):
one file system per subnet; size, throughput tier and key type are fixed at creation, and so is the
blob integration; a weekly 30-minute maintenance window is required. Clients mount it with the command
the file system reports (`clientInfo.mountCommand`, built on `clientInfo.mgsAddress`). The tier (SKU) and its
capacity steps are the catalog's and the blueprint rules' to check; this component takes them as given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pulumi
from pulumi_azure_native import storage, storagecache

from components._errors import check_inputs
from components._naming import child

TYPE = "clusterfab:storage:AzureManagedLustre"

Weekday = Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d")


@dataclass(frozen=True, kw_only=True)
class AzureLustreHsm:
    """The blob integration: where the namespace is imported from and archived to."""

    container_id: str
    """The data container's resource id, .../storageAccounts/<account>/blobServices/default/containers/<c>
    (the HPC Cache resource provider needs Storage Account Contributor and Storage Blob Data Contributor on
    its account - amlfs-prerequisites)."""
    logging_container: str
    """The name of the container made in the same account for import and export logs."""
    import_prefix: str = "/"
    """Only blobs under this prefix are imported at creation."""


_CONTAINER_ID = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/(?P<group>[^/]+)/providers/Microsoft\.Storage/storageAccounts/"
    r"(?P<account>[^/]+)/blobServices/default/containers/(?P<container>[^/*]+)$",
    re.IGNORECASE,
)
_CONTAINER_NAME = re.compile(r"[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}")


@dataclass(frozen=True, kw_only=True)
class AzureManagedLustreArgs:
    """Inputs of AzureManagedLustre."""

    resource_group_name: pulumi.Input[str]
    location: str
    subnet_id: pulumi.Input[str]
    """The file system's own subnet (AzureNetwork.lustre_subnet_ids)."""
    sku: str
    """The throughput tier, e.g. AMLFS-Durable-Premium-125 (MB/s per TiB)."""
    storage_capacity_tib: int
    """A multiple of the tier's step (4, 8, 16 or 48 TiB)."""
    zone: str
    """The one availability zone it lives in (the API takes a single zone)."""
    maintenance_day: Weekday
    maintenance_time_utc: str
    """HH:MM, UTC: the start of the weekly 30-minute window."""
    hsm: AzureLustreHsm | None = None
    protect: bool = False
    """Protect the file system from deletion and replacement (it holds the training data)."""
    tags: Mapping[str, str] = field(default_factory=dict)


def _problems(args: AzureManagedLustreArgs) -> list[tuple[str, str]]:
    problems = []
    if args.storage_capacity_tib <= 0:
        problems.append(("storage_capacity_tib", "must be positive"))
    if not _TIME.fullmatch(args.maintenance_time_utc):
        problems.append(("maintenance_time_utc", f"'{args.maintenance_time_utc}' is not HH:MM"))
    if args.hsm is not None:
        if not args.hsm.import_prefix.startswith("/"):
            problems.append(("hsm.import_prefix", "starts with /"))
        if _CONTAINER_ID.fullmatch(args.hsm.container_id) is None:
            problems.append(("hsm.container_id", f"'{args.hsm.container_id}' is not a blob container's id"))
        if _CONTAINER_NAME.fullmatch(args.hsm.logging_container) is None:
            problems.append(
                ("hsm.logging_container", f"'{args.hsm.logging_container}' is not a blob container name")
            )
    return problems


class AzureManagedLustre(pulumi.ComponentResource):
    """One AMLFS file system."""

    filesystem_id: pulumi.Output[str]
    mgs_address: pulumi.Output[str]
    """The Lustre management service's IP address (clientInfo.mgsAddress)."""
    mount_command: pulumi.Output[str]
    """The client mount command Azure recommends (clientInfo.mountCommand)."""

    def __init__(
        self, name: str, args: AzureManagedLustreArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        hsm = self._hsm(name, args.hsm) if args.hsm is not None else None
        filesystem = storagecache.AmlFilesystem(
            child(name, "amlfs"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            filesystem_subnet=args.subnet_id,
            sku=storagecache.SkuNameArgs(name=args.sku),
            storage_capacity_ti_b=args.storage_capacity_tib,
            zones=[args.zone],
            maintenance_window=storagecache.AmlFilesystemMaintenanceWindowArgs(
                day_of_week=storagecache.MaintenanceDayOfWeekType(args.maintenance_day),
                time_of_day_utc=args.maintenance_time_utc,
            ),
            hsm=hsm,
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        self.filesystem_id = filesystem.id
        self.mgs_address = filesystem.client_info.apply(lambda info: info.mgs_address)
        self.mount_command = filesystem.client_info.apply(lambda info: info.mount_command)
        self.register_outputs(
            {
                "filesystem_id": filesystem.id,
                "mgs_address": self.mgs_address,
                "mount_command": self.mount_command,
            }
        )

    def _hsm(self, name: str, hsm: AzureLustreHsm) -> storagecache.AmlFilesystemHsmArgs:
        """The integration's settings, with its logging container made in the data container's account
        (no public access; deleting the stack deletes the logs, never the data container)."""
        where = _CONTAINER_ID.fullmatch(hsm.container_id)
        assert where is not None  # checked by _problems
        logs = storage.BlobContainer(
            child(name, "hsm-logs"),
            resource_group_name=where["group"],
            account_name=where["account"],
            container_name=hsm.logging_container,
            public_access=storage.PublicAccess.NONE,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return storagecache.AmlFilesystemHsmArgs(
            settings=storagecache.AmlFilesystemHsmSettingsArgs(
                container=hsm.container_id,
                logging_container=logs.id,
                import_prefix=hsm.import_prefix,
            )
        )
