"""The cluster's storage: the bucket (playbook bundle, boot scripts, health records), Managed Lustre and
Filestore."""

from __future__ import annotations

import pulumi
from cluster import Cluster, StorageExport

from clusterfab.core.naming import physical
from clusterfab.spec import FilestoreStorage, LustreStorage
from components._contracts import MountTarget
from components._naming import child
from components.gcp.bucket import GcpClusterBucket, GcpClusterBucketArgs
from components.gcp.storage import GcpFilestore, GcpFilestoreArgs, GcpManagedLustre, GcpManagedLustreArgs

from .site import Site


def bucket(cluster: Cluster, project: str, opts: pulumi.ResourceOptions) -> GcpClusterBucket:
    spec = cluster.spec
    return GcpClusterBucket(
        child(spec.name, "artifacts"),
        GcpClusterBucketArgs(
            project=project,
            location=spec.region,
            protect=spec.protected,
            objects={"bundle": (cluster.bundle.key, cluster.bundle.path)},
            kms_key_name=spec.bucket_kms_key,
            labels=cluster.tags("artifacts"),
        ),
        opts,
    )


def file_systems(site: Site) -> tuple[dict[str, MountTarget], dict[str, StorageExport]]:
    spec = site.spec
    mounts: dict[str, MountTarget] = {}
    exports: dict[str, StorageExport] = {}
    for item in spec.storage:
        component: GcpManagedLustre | GcpFilestore
        if isinstance(item, LustreStorage):
            component = GcpManagedLustre(
                child(spec.name, item.name),
                GcpManagedLustreArgs(
                    project=site.project,
                    zone=spec.zone,
                    instance_id=physical(spec.name, site.cluster.stack, item.name),
                    capacity_gib=item.capacity_gib,
                    per_unit_storage_throughput=item.throughput_mbps_per_tib or 0,
                    network_id=site.network.system_network_id,
                    mount_point=item.mount_point,
                    mount_name=item.name,
                    private_services=site.network.private_services,
                    kms_key=item.kms_key,
                    protect=item.protected,
                    labels=site.cluster.tags(f"storage-{item.name}"),
                ),
                site.opts,
            )
        else:
            component = _filestore(site, item)
        mounts[item.name] = component.mount_target
        exports[item.name] = StorageExport.of(component.mount_target, component.instance_name)
    return mounts, exports


def _filestore(site: Site, item: FilestoreStorage) -> GcpFilestore:
    spec, network = site.spec, site.network
    return GcpFilestore(
        child(spec.name, item.name),
        GcpFilestoreArgs(
            project=site.project,
            location=spec.region if item.tier.location == "region" else spec.zone,
            capacity_gib=item.capacity_gib,
            network_name=network.system_network_name,
            mount_point=item.mount_point,
            tier=item.tier.tier,
            share_name=item.share_name,
            mount_name=item.name,
            private_services=network.private_services,
            private_services_range=network.private_services_range,
            # The nodes' subnet only: nothing else of the network has any business with the share.
            client_ranges=(network.system_subnet_cidr,),
            root_squash=item.root_squash,
            kms_key_name=item.kms_key,
            protect=item.protected,
            labels=site.cluster.tags(f"storage-{item.name}"),
        ),
        site.opts,
    )
