"""FSx for Lustre: a file system in the node subnet, reachable only from the nodes' security group."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_aws as aws

from components._contracts import MountTarget
from components._errors import check_inputs
from components._naming import child

TYPE = "clusterfab:storage:AwsFsxLustre"
LUSTRE_PORTS = ((988, 988), (1018, 1023))
"""Lustre's TCP ports, which FSx needs open from clients and from the file system's own servers."""
MOUNT_OPTIONS = "relatime,flock"


@dataclass(frozen=True, kw_only=True)
class AwsFsxLustreArgs:
    """Inputs of AwsFsxLustre."""

    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    """The one subnet the file system lives in (its clients' subnet)."""
    client_security_group_id: pulumi.Input[str]
    """The clients' security group: it may reach the Lustre ports."""
    capacity_gib: int
    """Storage capacity: 1200, 2400, then multiples of 2400 GiB."""
    mount_point: str
    """Where clients mount it."""
    mount_name: str = ""
    """The name clients know it by (MountTarget.name); default the component's name."""
    deployment_type: Literal["PERSISTENT_2", "SCRATCH_2"] = "PERSISTENT_2"
    per_unit_storage_throughput: int | None = 250
    """PERSISTENT_2: MB/s per TiB (125, 250, 500, 1000); ignored for SCRATCH_2, which has a fixed one."""
    lustre_version: str = "2.15"
    """FSx's Lustre version (`file_system_type_version`)."""
    import_path: str | None = None
    """s3://bucket/prefix to link to the file system: new, changed and deleted objects are imported."""
    export_changes: bool = False
    """Also write new and changed files back to `import_path` (never deletions: a `rm -rf` on a node
    must not delete the source data set)."""
    efa_enabled: bool = False
    """PERSISTENT_2 only: an EFA-enabled file system (clients reach it over EFA and GPUDirect
    Storage); its security group then allows all traffic to and from itself and the clients' group."""
    backup_retention_days: int = 7
    """PERSISTENT_2: daily automatic backups kept this long (0 turns them off)."""
    kms_key_arn: str | None = None
    """PERSISTENT_2: a customer-managed KMS key (its ARN) to encrypt the file system and its backups with;
    default the FSx-managed key. Set at creation: a change replaces the file system."""
    protect: bool = False
    """Protect the file system (and its S3 link) from deletion and replacement."""
    tags: Mapping[str, str] = field(default_factory=dict)


class AwsFsxLustre(pulumi.ComponentResource):
    """FSx for Lustre (PERSISTENT_2 or SCRATCH_2), its security group, and an optional S3 link."""

    file_system_id: pulumi.Output[str]
    """The FSx file system id."""
    mount_target: MountTarget
    """How nodes mount it."""

    def __init__(self, name: str, args: AwsFsxLustreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        if args.kms_key_arn is not None and args.deployment_type != "PERSISTENT_2":
            # FSx for Lustre UG, Encrypting data at rest: "If you create a scratch file system, the data is
            # encrypted using keys managed by Amazon FSx."
            check_inputs(TYPE, [("kms_key_arn", "FSx encrypts scratch file systems with its own key only")])
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        self._tags = {**args.tags, "Name": name}
        sg = self._security_group()
        fs = self._file_system(sg)
        if args.deployment_type == "PERSISTENT_2" and args.import_path is not None:
            self._s3_link(fs, args.import_path)
        self.file_system_id = fs.id
        source = pulumi.Output.concat(fs.dns_name, "@tcp:/", fs.mount_name)
        self.mount_target = MountTarget(
            name=args.mount_name or name,
            fs_type="lustre",
            source=source,
            mount_point=args.mount_point,
            options=MOUNT_OPTIONS,
        )
        self.register_outputs({"file_system_id": fs.id, "mount_source": source})

    def _security_group(self) -> aws.ec2.SecurityGroup:
        name, args = self._name, self._args
        own = pulumi.ResourceOptions(parent=self)
        sg = aws.ec2.SecurityGroup(
            child(name, "sg"),
            vpc_id=args.vpc_id,
            tags=self._tags,
            opts=own,
            description="FSx for Lustre: Lustre ports from the nodes and from itself",
        )
        if args.efa_enabled:
            self._efa_rules(sg)
            return sg
        # FSx needs the Lustre ports open both ways between the file system and its clients (and among
        # its own servers): ParallelCluster's FSx validator checks inbound and outbound.
        for low, high in LUSTRE_PORTS:
            ports = f"{low}" if low == high else f"{low}-{high}"
            for peer, label in ((args.client_security_group_id, "nodes"), (sg.id, "self")):
                aws.vpc.SecurityGroupIngressRule(
                    child(name, f"lustre-{ports}-from-{label}"),
                    security_group_id=sg.id,
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    referenced_security_group_id=peer,
                    description=f"Lustre {ports} from {label}",
                    opts=own,
                )
                aws.vpc.SecurityGroupEgressRule(
                    child(name, f"lustre-{ports}-to-{label}"),
                    security_group_id=sg.id,
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    referenced_security_group_id=peer,
                    description=f"Lustre {ports} to {label}",
                    opts=own,
                )
        return sg

    def _efa_rules(self, sg: aws.ec2.SecurityGroup) -> None:
        """EFA needs all traffic in both directions, within the group and with the clients' group."""
        own = pulumi.ResourceOptions(parent=self)
        for peer, label in ((self._args.client_security_group_id, "nodes"), (sg.id, "self")):
            for direction, rule in (
                ("from", aws.vpc.SecurityGroupIngressRule),
                ("to", aws.vpc.SecurityGroupEgressRule),
            ):
                rule(
                    child(self._name, f"efa-{direction}-{label}"),
                    security_group_id=sg.id,
                    ip_protocol="-1",
                    referenced_security_group_id=peer,
                    description=f"EFA: all traffic {direction} {label}",
                    opts=own,
                )

    def _file_system(self, sg: aws.ec2.SecurityGroup) -> aws.fsx.LustreFileSystem:
        args = self._args
        persistent = args.deployment_type == "PERSISTENT_2"
        return aws.fsx.LustreFileSystem(
            child(self._name, "fs"),
            deployment_type=args.deployment_type,
            storage_capacity=args.capacity_gib,
            storage_type="SSD",
            # SCRATCH_2 has a fixed baseline; the API rejects a per-unit throughput for it.
            per_unit_storage_throughput=args.per_unit_storage_throughput if persistent else None,
            # pulumi-aws 7 takes the subnet as one string, not a list.
            subnet_ids=args.subnet_id,
            security_group_ids=[sg.id],
            file_system_type_version=args.lustre_version,
            data_compression_type="LZ4",
            metadata_configuration=(
                aws.fsx.LustreFileSystemMetadataConfigurationArgs(mode="AUTOMATIC") if persistent else None
            ),
            # SCRATCH_2 links S3 on the file system itself; PERSISTENT_2 uses an association below.
            import_path=None if persistent else args.import_path,
            efa_enabled=True if args.efa_enabled and persistent else None,
            kms_key_id=args.kms_key_arn,
            automatic_backup_retention_days=args.backup_retention_days if persistent else None,
            # pulumi-aws skips the final backup unless told otherwise; a deleted file system keeps one.
            skip_final_backup=False if persistent else None,
            tags=self._tags,
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )

    def _s3_link(self, fs: aws.fsx.LustreFileSystem, import_path: str) -> None:
        exported = ["NEW", "CHANGED"] if self._args.export_changes else None
        aws.fsx.DataRepositoryAssociation(
            child(self._name, "s3"),
            file_system_id=fs.id,
            data_repository_path=import_path,
            file_system_path="/",
            batch_import_meta_data_on_create=True,
            tags=self._tags,
            s3=aws.fsx.DataRepositoryAssociationS3Args(
                auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(
                    events=["NEW", "CHANGED", "DELETED"]
                ),
                auto_export_policy=(
                    aws.fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(events=exported)
                    if exported
                    else None
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=self._args.protect),
        )
