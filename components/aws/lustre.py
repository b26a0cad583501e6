"""FSx for Lustre: a file system in the node subnet, reachable only from the nodes' security group."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_aws as aws

from components._contracts import MountTarget
from components._naming import child

TYPE = "clusterfab:storage:AwsFsxLustre"
LUSTRE_PORTS = ((988, 988), (1018, 1023))
"""Lustre's TCP ports, which FSx needs open from clients and from the file system's own servers."""
MOUNT_OPTIONS = "relatime,flock"


@dataclass(frozen=True)
class LustrePlan:
    """Pure decisions for one FSx file system."""

    name: str
    deployment_type: Literal["PERSISTENT_2", "SCRATCH_2"]
    capacity_gib: int
    per_unit_throughput: int | None
    mount_point: str
    import_path: str | None
    protect: bool


def plan_lustre(
    *,
    name: str,
    deployment: str,
    capacity_gib: int,
    throughput: int | None,
    mount_point: str,
    import_path: str | None,
    protect: bool,
) -> LustrePlan:
    persistent = deployment == "persistent"
    return LustrePlan(
        name=name,
        deployment_type="PERSISTENT_2" if persistent else "SCRATCH_2",
        capacity_gib=capacity_gib,
        # SCRATCH_2 has a fixed baseline; the API rejects a per-unit throughput for it.
        per_unit_throughput=throughput if persistent else None,
        mount_point=mount_point,
        import_path=import_path,
        protect=protect,
    )


@dataclass(frozen=True)
class AwsFsxLustreArgs:
    plan: LustrePlan
    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    client_security_group_id: pulumi.Input[str]
    tags: Mapping[str, str] = field(default_factory=dict)


class AwsFsxLustre(pulumi.ComponentResource):
    """FSx for Lustre (PERSISTENT_2 or SCRATCH_2), its security group, and an optional S3 link."""

    file_system_id: pulumi.Output[str]
    """The FSx file system id."""
    mount_target: MountTarget
    """How nodes mount it."""

    def __init__(self, name: str, args: AwsFsxLustreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        plan = args.plan
        tags = {**args.tags, "Name": name}
        own = pulumi.ResourceOptions(parent=self)

        sg = aws.ec2.SecurityGroup(
            child(name, "sg"),
            vpc_id=args.vpc_id,
            tags=tags,
            opts=own,
            description="FSx for Lustre: Lustre ports from the nodes and from itself",
        )
        for low, high in LUSTRE_PORTS:
            ports = f"{low}" if low == high else f"{low}-{high}"
            for source, label in ((args.client_security_group_id, "nodes"), (sg.id, "self")):
                aws.vpc.SecurityGroupIngressRule(
                    child(name, f"lustre-{ports}-from-{label}"),
                    security_group_id=sg.id,
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    referenced_security_group_id=source,
                    description=f"Lustre {ports} from {label}",
                    opts=own,
                )
        aws.vpc.SecurityGroupEgressRule(
            child(name, "egress-to-self"),
            security_group_id=sg.id,
            ip_protocol="-1",
            referenced_security_group_id=sg.id,
            description="Lustre servers",
            opts=own,
        )

        persistent = plan.deployment_type == "PERSISTENT_2"
        fs = aws.fsx.LustreFileSystem(
            child(name, "fs"),
            deployment_type=plan.deployment_type,
            storage_capacity=plan.capacity_gib,
            storage_type="SSD",
            per_unit_storage_throughput=plan.per_unit_throughput,
            # pulumi-aws 7 takes the subnet as one string, not a list.
            subnet_ids=args.subnet_id,
            security_group_ids=[sg.id],
            file_system_type_version="2.15",
            data_compression_type="LZ4",
            metadata_configuration=(
                aws.fsx.LustreFileSystemMetadataConfigurationArgs(mode="AUTOMATIC") if persistent else None
            ),
            # SCRATCH_2 links S3 on the file system itself; PERSISTENT_2 uses an association below.
            import_path=None if persistent else plan.import_path,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, protect=plan.protect),
        )
        if persistent and plan.import_path is not None:
            events = ["NEW", "CHANGED", "DELETED"]
            aws.fsx.DataRepositoryAssociation(
                child(name, "s3"),
                file_system_id=fs.id,
                data_repository_path=plan.import_path,
                file_system_path="/",
                batch_import_meta_data_on_create=True,
                tags=tags,
                s3=aws.fsx.DataRepositoryAssociationS3Args(
                    auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(events=events),
                    auto_export_policy=aws.fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(events=events),
                ),
                opts=pulumi.ResourceOptions(parent=self, protect=plan.protect),
            )

        self.file_system_id = fs.id
        source = pulumi.Output.concat(fs.dns_name, "@tcp:/", fs.mount_name)
        self.mount_target = MountTarget(
            name=plan.name,
            fs_type="lustre",
            source=source,
            mount_point=plan.mount_point,
            options=MOUNT_OPTIONS,
        )
        self.register_outputs({"file_system_id": fs.id, "mount_source": source})
