"""The cluster's storage: the bucket (playbook bundle, hosts' files, health records) and Azure Managed
Lustre per file system."""

from __future__ import annotations

from typing import Final

import pulumi
from cluster import Cluster, StorageExport

from clusterfab.clouds.azure.blob import LOGS_SUFFIX, blob_import
from clusterfab.clouds.azure.lustre import capacity_tib
from clusterfab.core.naming import physical
from clusterfab.core.vocab import HEALTH_TAG
from clusterfab.monitoring.host import RenderedArchive
from clusterfab.spec import LustreStorage
from components._contracts import MountTarget
from components._naming import child
from components.azure.bucket import AzureClusterBucket, AzureClusterBucketArgs
from components.azure.lustre import AzureLustreHsm, AzureManagedLustre, AzureManagedLustreArgs
from components.azure.network import AzureNetwork

from .site import Deployer

LUSTRE_FS_NAME = "lustrefs"
"""The file system name every Managed Lustre file system has: clients mount <MGS>@tcp:/lustrefs
(learn.microsoft.com/azure/azure-managed-lustre/connect-clients)."""
LUSTRE_OPTIONS = "noatime,flock"
"""The mount options of the client command Azure gives for the file system (clientInfo.mountCommand)."""
MAINTENANCE_DAY: Final = "Sunday"
MAINTENANCE_TIME_UTC = "03:00"
"""Managed Lustre's required weekly 30-minute maintenance window: early Sunday, UTC."""


def bucket(
    cluster: Cluster,
    group: pulumi.Input[str],
    network: AzureNetwork,
    deployer: Deployer,
    *,
    files: RenderedArchive | None,
    opts: pulumi.ResourceOptions,
) -> AzureClusterBucket:
    """The cluster bucket with the playbook bundle and the scheduler hosts' `files`, which those hosts
    read from the controller subnet."""
    spec = cluster.spec
    objects = {"bundle": (cluster.bundle.key, pulumi.FileAsset(str(cluster.bundle.path)))}
    if files is not None:
        objects["files"] = (files.key, pulumi.FileAsset(str(files.path)))
    return AzureClusterBucket(
        child(spec.name, "artifacts"),
        AzureClusterBucketArgs(
            resource_group_name=group,
            location=spec.region,
            node_subnet_id=network.node_subnet_id,
            host_subnet_id=network.controller_subnet_id if files is not None else None,
            subscription_id=deployer.subscription_id,
            verdict_container=HEALTH_TAG,
            objects=objects,
            allowed_ip_ranges=deployer.ranges,
            uploader_principal_id=deployer.object_id,
            uploader_principal_type=deployer.principal_type,
            protect=spec.protected,
            tags=cluster.tags("artifacts"),
        ),
        opts,
    )


def file_systems(
    cluster: Cluster, group: pulumi.Input[str], network: AzureNetwork, opts: pulumi.ResourceOptions
) -> tuple[dict[str, MountTarget], dict[str, StorageExport]]:
    """Every file system of the blueprint: where the nodes mount it, and its outputs."""
    mounts: dict[str, MountTarget] = {}
    storage: dict[str, StorageExport] = {}
    for item in cluster.spec.storage:
        if not isinstance(item, LustreStorage) or item.name not in network.lustre_subnet_ids:
            raise ValueError(f"storage {item.name}: Azure offers no {item.kind} (validation rejects it)")
        fs = AzureManagedLustre(
            child(cluster.spec.name, item.name),
            AzureManagedLustreArgs(
                resource_group_name=group,
                location=cluster.spec.region,
                subnet_id=network.lustre_subnet_ids[item.name],
                sku=item.tier.tier,
                storage_capacity_tib=capacity_tib(item.capacity_gib),
                zone=cluster.spec.zone,
                maintenance_day=MAINTENANCE_DAY,
                maintenance_time_utc=MAINTENANCE_TIME_UTC,
                hsm=_hsm(cluster, item),
                protect=item.protected,
                tags=cluster.tags(f"storage-{item.name}"),
            ),
            opts,
        )
        target = MountTarget(
            name=item.name,
            fs_type="lustre",
            source=fs.mgs_address.apply(lambda mgs: f"{mgs}@tcp:/{LUSTRE_FS_NAME}"),
            mount_point=item.mount_point,
            options=LUSTRE_OPTIONS,
        )
        mounts[item.name] = target
        storage[item.name] = StorageExport.of(target, fs.filesystem_id)
    return mounts, storage


CONTAINER_NAME_MAX = 63


def _hsm(cluster: Cluster, item: LustreStorage) -> AzureLustreHsm | None:
    """The blob integration `import_path` names (validated: BP255), with a logging container named for
    the cluster, the stack and the file system, so two stacks importing one container log apart."""
    found = blob_import(item.import_path) if item.import_path is not None else None
    if found is None:
        return None
    logs = physical(cluster.spec.name, cluster.stack, item.name, LOGS_SUFFIX, max_length=CONTAINER_NAME_MAX)
    return AzureLustreHsm(container_id=found.container_id, logging_container=logs, import_prefix=found.prefix)
