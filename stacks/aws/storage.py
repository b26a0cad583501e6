"""The cluster's storage: the bucket (playbook bundle, boot scripts, health records) and FSx for Lustre."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
from cluster import Cluster, StorageExport

from clusterfab.health import HEALTH_PREFIX
from clusterfab.spec import LustreStorage
from components._contracts import MountTarget
from components._naming import child
from components.aws.bucket import AwsClusterBucket, AwsClusterBucketArgs
from components.aws.lustre import AwsFsxLustre, AwsFsxLustreArgs
from components.aws.network import AwsNetwork

from .site import required


def deploy_identity() -> pulumi.Output[str]:
    """The principal that runs the program, as a policy's aws:PrincipalArn names it: the role of an
    assumed-role session (its issuer, with the role's path), else the user."""
    caller = aws.get_caller_identity_output()
    return aws.iam.get_session_context_output(arn=caller.arn).issuer_arn


def bucket(cluster: Cluster, opts: pulumi.ResourceOptions) -> AwsClusterBucket:
    spec = cluster.spec
    return AwsClusterBucket(
        child(spec.name, "artifacts"),
        AwsClusterBucketArgs(
            protect=spec.protected,
            objects={"bundle": (cluster.bundle.key, cluster.bundle.path)},
            kms_key_arn=spec.bucket_kms_key,
            # The health record `promote` trusts comes from whoever deploys the stack, nobody else.
            guarded_prefixes={HEALTH_PREFIX: [deploy_identity()]},
            tags=cluster.tags("artifacts"),
        ),
        opts,
    )


def file_systems(
    cluster: Cluster, network: AwsNetwork, opts: pulumi.ResourceOptions
) -> tuple[dict[str, MountTarget], dict[str, StorageExport]]:
    """Every file system of the blueprint: where the nodes mount it, and its outputs."""
    mounts: dict[str, MountTarget] = {}
    storage: dict[str, StorageExport] = {}
    for item in cluster.spec.storage:
        if not isinstance(item, LustreStorage):
            raise ValueError(f"storage {item.name}: AWS offers no {item.kind} (validation rejects it)")
        fs = _lustre(cluster, item, network, opts)
        mounts[item.name] = fs.mount_target
        storage[item.name] = StorageExport.of(fs.mount_target, fs.file_system_id)
    return mounts, storage


def _lustre(
    cluster: Cluster, item: LustreStorage, network: AwsNetwork, opts: pulumi.ResourceOptions
) -> AwsFsxLustre:
    return AwsFsxLustre(
        child(cluster.spec.name, item.name),
        AwsFsxLustreArgs(
            vpc_id=network.vpc_id,
            subnet_id=network.node_subnet_id,
            client_security_group_id=network.node_security_group_id,
            capacity_gib=item.capacity_gib,
            mount_point=item.mount_point,
            mount_name=item.name,
            deployment_type="PERSISTENT_2" if item.tier.tier == "PERSISTENT_2" else "SCRATCH_2",
            lustre_version=required(item.tier.lustre_version, f"the Lustre version of FSx {item.tier.tier}"),
            per_unit_storage_throughput=item.throughput_mbps_per_tib,
            import_path=item.import_path,
            export_changes=item.export_changes,
            efa_enabled=item.efa,
            kms_key_arn=item.kms_key,
            protect=item.protected,
            tags=cluster.tags(f"storage-{item.name}"),
        ),
        opts,
    )
