"""Slurm on AWS: the controller (slurmctld, slurmdbd and its database on a protected state volume), the
login nodes, the munge key's secret, and the rules that let Slurm's daemons reach each other.

Nothing listens on a public address: the controller and login nodes have no public IP and no SSH rule;
people reach them with SSM Session Manager. The munge key never passes through the stack or user data:
the stack creates an empty Secrets Manager secret, the controller fills it at its first boot, and the
controller's role alone may read or write it (the secret's own policy refuses every other principal, and
any request from outside the cluster's NAT address). GPU and login nodes hold no right to it: they fetch
the key from the controller's key service as root (a privileged source port), so a job that reached a
node's credentials would still find no key. Slurm's ports are open only between the cluster's security
groups: slurmctld (6817) and the key service (6816) to nodes and login nodes, slurmd (6818) to the
controller and login nodes, slurmdbd (6819) to the login nodes (sacct, sreport), and srun's port range
back to the login nodes from the nodes. The state volume is snapshotted every day by a Data Lifecycle
Manager policy that selects it by its tag; a lost or damaged volume comes back from the last snapshot.
The roles' and the secret's policy documents are in components.aws.slurm_iam.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pulumi_aws as aws

from clusterfab.core.vocab import MUNGE_KEY_PORT, SLURM_ROLE_TAG
from components._errors import check_inputs, slurm_controller_problems, snapshot_problems
from components._naming import child
from components.aws._boot import (
    FOLLOWED_INPUTS,
    digest_statements,
    digest_tag,
    followed_script,
    user_data,
)
from components.aws._iam import ec2_trust_policy, service_trust_policy
from components.aws.slurm_database import (
    AwsSlurmDatabase,
    AwsSlurmDatabaseArgs,
    AwsSlurmDatabaseSettings,
)
from components.aws.slurm_database import controller_statements as database_statements
from components.aws.slurm_iam import (
    ElasticNodes,
    NodeScope,
    client_policy,
    controller_policy,
    elastic_statements,
    munge_secret_policy,
    node_naming_statements,
)

CONTROLLER_TYPE = "clusterfab:slurm:AwsSlurmController"
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
SLURMDBD_PORT = 6819
SRUN_PORTS = (60001, 63000)
SNAPSHOT_TAG = "clusterfab-snapshots"
"""The tag the state volume's snapshot policy selects it by (its value: the volume's resource name)."""
DLM_SERVICE_POLICY = "policy/service-role/AWSDataLifecycleManagerServiceRole"
"""AWS's managed policy for Data Lifecycle Manager's snapshot policies (what its default role carries)."""
STATE_DEVICE = "/dev/sdf"
"""Where the state volume is attached (Nitro instances show it as an NVMe device with this name as its
EBS device name, which the controller's role looks up)."""


@dataclass(frozen=True, kw_only=True)
class AwsSlurmControllerArgs:
    """Inputs of AwsSlurmController; defaults: c7i.4xlarge, a 100 GiB gp3 state volume, one login node."""

    cluster: str
    munge_secret_name: str
    """The munge key's secret: nodes name it at boot, before any output of this component is known."""
    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    availability_zone: pulumi.Input[str]
    """The subnet's zone: the state volume must be in the controller's zone."""
    node_security_group_id: pulumi.Input[str]
    egress_ip: pulumi.Input[str]
    """The cluster's NAT gateway address: the munge key's secret answers requests from it alone."""
    bucket_name: pulumi.Input[str]
    bucket_arn: pulumi.Input[str]
    bucket_kms_key_arn: str | None = None
    """The bucket's customer-managed key: the Slurm files are encrypted with it, and the controller and
    login nodes may decrypt with it through S3."""
    image_id: str
    private_ip: str
    """The controller's fixed address (slurm.conf names it before the instance exists)."""
    instance_type: str = "c7i.4xlarge"
    root_volume_gib: int = 50
    state_volume_gib: int = 100
    volume_type: str = "gp3"
    kms_key_arn: str | None = None
    """A customer-managed KMS key (its ARN) for the controller's state and root volumes; default the
    account's EBS default key."""
    protect: bool = True
    """Keep the state volume (slurmctld state, the accounting database) from deletion and replacement."""
    snapshot_time_utc: str = "03:00"
    """The hour (HH:00, UTC) the state volume's daily snapshot starts (Data Lifecycle Manager starts it
    within the hour after)."""
    snapshots_kept: int = 7
    """How many daily snapshots of the state volume are kept (the oldest goes when a new one is made)."""
    boot_script: pulumi.Input[str] = ""
    boot_script_key: str | None = None
    """Where the bucket keeps the controller's current boot script, for a script that follows the stack
    (`components.aws._boot`): an update rewrites the object, never the instance's user data (which would
    stop and start it). None: the user data follows the script."""
    files: tuple[str, Path] | None = None
    """(object key, local path) of the rendered Slurm files the controller's boot fetches."""
    login_count: int = 1
    login_instance_type: str = "c7i.2xlarge"
    login_boot_script: pulumi.Input[str] = ""
    login_boot_script_key: str | None = None
    """As `boot_script_key`, for the login nodes' script."""
    region: str
    """The region the controller runs in and acts on (its rights name it)."""
    node_instance_profile_arns: Sequence[pulumi.Input[str]] = ()
    """The instance profiles of the Slurm node groups: the controller names and replaces only instances
    that carry one of them (and the cluster's tags)."""
    elastic_node_role_arns: Sequence[pulumi.Input[str]] = ()
    """The roles of the node groups with elastic nodes: the controller creates their instances and passes
    these roles (only to EC2). Empty: the controller creates and deletes no instance."""
    elastic_instance_profile_arns: Sequence[pulumi.Input[str]] = ()
    elastic_launch_template_arns: Sequence[pulumi.Input[str]] = ()
    """The launch templates those groups' instances are launched from, and only from."""
    elastic_instance_types: Sequence[str] = ()
    elastic_volume_keys: Sequence[str] = ()
    """Customer-managed keys (ARNs) of those groups' boot volumes."""
    database: AwsSlurmDatabaseSettings | None = None
    """Managed accounting: slurmdbd's database on RDS (in the controller's zone, encrypted with its key,
    protected with its state). None: MariaDB on the state volume."""
    tags: Mapping[str, str] = field(default_factory=dict)


def _problems(args: AwsSlurmControllerArgs) -> list[tuple[str, str]]:
    problems = slurm_controller_problems("state_volume_gib", args.state_volume_gib, args.login_count)
    problems += snapshot_problems(args.snapshot_time_utc, args.snapshots_kept)
    elastic = {
        "elastic_node_role_arns": args.elastic_node_role_arns,
        "elastic_instance_profile_arns": args.elastic_instance_profile_arns,
        "elastic_launch_template_arns": args.elastic_launch_template_arns,
        "elastic_instance_types": args.elastic_instance_types,
    }
    if any(elastic.values()):
        # Each right of the elastic nodes names all of them: none may be left to a wildcard.
        problems += [(key, "elastic nodes need their roles, profiles, templates and types") for key, v in
                     elastic.items() if not v]  # fmt: skip
    if any(elastic.values()) and not args.node_instance_profile_arns:
        problems.append(("node_instance_profile_arns", "the elastic groups' profiles must be among them"))
    return problems


def _rule(
    name: str,
    group: pulumi.Input[str],
    source: pulumi.Input[str],
    ports: tuple[int, int],
    *,
    why: str,
    opts: pulumi.ResourceOptions,
) -> aws.vpc.SecurityGroupIngressRule:
    return aws.vpc.SecurityGroupIngressRule(
        name,
        security_group_id=group,
        referenced_security_group_id=source,
        ip_protocol="tcp",
        from_port=ports[0],
        to_port=ports[1],
        description=why,
        opts=opts,
    )


class AwsSlurmController(pulumi.ComponentResource):
    """The munge key's secret, the Slurm security group and its rules, the controller with its state
    volume, and the login nodes."""

    instance_id: pulumi.Output[str]
    """What `aws ssm start-session --target` takes."""
    login_instance_ids: list[pulumi.Output[str]]
    munge_secret_arn: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    role_name: pulumi.Output[str]
    database: AwsSlurmDatabase | None
    """The accounting database (managed accounting)."""

    def __init__(
        self, name: str, args: AwsSlurmControllerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(CONTROLLER_TYPE, _problems(args))
        super().__init__(CONTROLLER_TYPE, name, None, opts)
        self._name, self._args = name, args
        self._own = pulumi.ResourceOptions(parent=self)
        secret = aws.secretsmanager.Secret(
            child(name, "munge-key"),
            name=args.munge_secret_name,
            description=f"munge key of Slurm cluster {args.cluster}; written by its controller at first boot",
            # The key is made again at the next first boot: a destroyed stack must free the name at once.
            recovery_window_in_days=0,
            tags=dict(args.tags),
            opts=self._own,
        )
        group = self._security_group()
        depends = self._files()
        self.database = self._database(group)
        database_access: pulumi.Input[list[dict[str, Any]]] = []
        if self.database is not None:
            depends.append(self.database)
            database_access = pulumi.Output.all(self.database.arn, self.database.master_secret_arn).apply(
                lambda v: database_statements(v[0], v[1], args.kms_key_arn)
            )
        role, profile = self._role(
            "role",
            pulumi.Output.all(
                args.bucket_arn, secret.arn, self._scope(), self._elastic(), database_access
            ).apply(
                lambda v: controller_policy(
                    v[0],
                    v[1],
                    node_naming_statements(args.tags, v[2]),
                    args.bucket_kms_key_arn,
                    elastic=elastic_statements(args.tags, v[2], v[3]) if v[3] is not None else (),
                    database=v[4],
                    follow=digest_statements(args.boot_script_key),
                )
            ),
        )
        self._secret_policy(secret, role)
        instance = self._controller(profile, group, depends)
        self._state_volume(instance)
        client_role, logins = self._logins(group, depends)
        self.instance_id = instance.id
        self.login_instance_ids = [login.id for login in logins]
        self.munge_secret_arn = secret.arn
        self.security_group_id = group.id
        self.role_name = role.name
        self.register_outputs(
            {
                "instance_id": instance.id,
                "login_instance_ids": self.login_instance_ids,
                "munge_secret_arn": secret.arn,
                "security_group_id": group.id,
                "login_role_name": client_role.name,
            }
        )

    def _secret_policy(self, secret: aws.secretsmanager.Secret, role: aws.iam.Role) -> None:
        """The munge key's own policy: its value for the controller's role alone, from the cluster's NAT."""
        aws.secretsmanager.SecretPolicy(
            child(self._name, "munge-key-policy"),
            secret_arn=secret.arn,
            policy=pulumi.Output.all(secret.arn, role.arn, self._args.egress_ip).apply(
                lambda v: munge_secret_policy(v[0], v[1], v[2])
            ),
            block_public_policy=True,
            opts=self._own,
        )

    def _scope(self) -> pulumi.Output[NodeScope]:
        """The deployment's account and partition (the caller's identity), the region, the node groups'
        instance profiles."""
        args = self._args
        identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        return pulumi.Output.all(identity, pulumi.Output.all(*args.node_instance_profile_arns)).apply(
            lambda v: NodeScope(
                partition=v[0].arn.split(":")[1], region=args.region, account=v[0].account_id, profiles=v[1]
            )
        )

    def _elastic(self) -> pulumi.Output[ElasticNodes | None]:
        """The elastic node groups' templates, profiles and roles, or None without elastic groups."""
        args = self._args
        return pulumi.Output.all(
            pulumi.Output.all(*args.elastic_launch_template_arns),
            pulumi.Output.all(*args.elastic_instance_profile_arns),
            pulumi.Output.all(*args.elastic_node_role_arns),
            args.subnet_id,
            args.node_security_group_id,
        ).apply(
            lambda v: (
                ElasticNodes(
                    templates=v[0],
                    instance_types=args.elastic_instance_types,
                    profiles=v[1],
                    roles=v[2],
                    subnet_id=v[3],
                    security_group_id=v[4],
                    volume_keys=args.elastic_volume_keys,
                )
                if v[0]
                else None
            )
        )

    def _security_group(self) -> aws.ec2.SecurityGroup:
        name, args, own = self._name, self._args, self._own
        group = aws.ec2.SecurityGroup(
            child(name, "sg"),
            vpc_id=args.vpc_id,
            description="clusterfab Slurm controller and login nodes: Slurm ports from the cluster only",
            egress=[
                aws.ec2.SecurityGroupEgressArgs(
                    protocol="-1", from_port=0, to_port=0, cidr_blocks=["0.0.0.0/0"]
                )
            ],
            tags={**args.tags, "Name": child(name, "sg")},
            opts=own,
        )
        nodes, slurm = args.node_security_group_id, group.id
        rules = (
            # (name, the group that lets in, from whom, ports, why)
            ("slurmctld-nodes", slurm, nodes, (SLURMCTLD_PORT, SLURMCTLD_PORT), "slurmd to slurmctld"),
            ("slurmctld-login", slurm, slurm, (SLURMCTLD_PORT, SLURMCTLD_PORT), "clients to slurmctld"),
            ("munge-key-nodes", slurm, nodes, (MUNGE_KEY_PORT, MUNGE_KEY_PORT), "nodes fetch the munge key"),
            (
                "munge-key-login",
                slurm,
                slurm,
                (MUNGE_KEY_PORT, MUNGE_KEY_PORT),
                "login nodes fetch the key",
            ),
            ("slurmdbd-login", slurm, slurm, (SLURMDBD_PORT, SLURMDBD_PORT), "sacct, sreport to slurmdbd"),
            ("srun-login", slurm, nodes, SRUN_PORTS, "slurmd to srun on the login nodes"),
            ("slurmd-nodes", nodes, slurm, (SLURMD_PORT, SLURMD_PORT), "slurmctld and srun to slurmd"),
        )
        for rule, target, source, ports, why in rules:
            _rule(child(name, rule), target, source, ports, why=why, opts=own)
        return group

    def _database(self, group: aws.ec2.SecurityGroup) -> AwsSlurmDatabase | None:
        args = self._args
        if args.database is None:
            return None
        return AwsSlurmDatabase(
            child(self._name, "accounting"),
            AwsSlurmDatabaseArgs(
                cluster=args.cluster,
                settings=args.database,
                vpc_id=args.vpc_id,
                subnet_id=args.subnet_id,
                availability_zone=args.availability_zone,
                client_security_group_id=group.id,
                kms_key_arn=args.kms_key_arn,
                protect=args.protect,
                tags=args.tags,
            ),
            self._own,
        )

    def _files(self) -> list[pulumi.Resource]:
        name, args = self._name, self._args
        if args.files is None:
            return []
        key, path = args.files
        return [
            aws.s3.BucketObjectv2(
                child(name, "files"),
                bucket=args.bucket_name,
                key=key,
                source=pulumi.FileAsset(str(path)),
                server_side_encryption="aws:kms",
                kms_key_id=args.bucket_kms_key_arn,
                tags=dict(args.tags),
                opts=self._own,
            )
        ]

    def _role(self, suffix: str, policy: pulumi.Input[str]) -> tuple[aws.iam.Role, aws.iam.InstanceProfile]:
        name, args, own = self._name, self._args, self._own
        role = aws.iam.Role(
            child(name, suffix),
            assume_role_policy=ec2_trust_policy(),
            description=f"clusterfab Slurm {suffix.removesuffix('-role') or 'controller'} of {args.cluster}",
            tags=dict(args.tags),
            opts=own,
        )
        aws.iam.RolePolicy(child(name, f"{suffix}-policy"), role=role.id, policy=policy, opts=own)
        profile = aws.iam.InstanceProfile(
            child(name, f"{suffix}-profile"), role=role.name, tags=dict(args.tags), opts=own
        )
        return role, profile

    def _instance(
        self,
        resource: str,
        *,
        instance_type: str,
        profile: aws.iam.InstanceProfile,
        group: aws.ec2.SecurityGroup,
        boot_script: pulumi.Input[str],
        depends: Sequence[pulumi.Resource],
        role: str,
        script_key: str | None,
        private_ip: str | None = None,
        more_groups: Sequence[pulumi.Input[str]] = (),
        kms_key_arn: str | None = None,
    ) -> aws.ec2.Instance:
        args = self._args
        return aws.ec2.Instance(
            resource,
            ami=args.image_id,
            instance_type=instance_type,
            subnet_id=args.subnet_id,
            private_ip=private_ip,
            vpc_security_group_ids=[group.id, *more_groups],
            associate_public_ip_address=False,
            iam_instance_profile=profile.name,
            metadata_options=aws.ec2.InstanceMetadataOptionsArgs(
                http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1
            ),
            root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(
                volume_size=args.root_volume_gib,
                volume_type=args.volume_type,
                encrypted=True,
                kms_key_id=kms_key_arn,
                delete_on_termination=True,
                tags={**args.tags, "Name": f"{resource}-root"},
            ),
            user_data_base64=user_data(boot_script),
            user_data_replace_on_change=False,
            ebs_optimized=True,
            tags={
                **args.tags,
                "Name": resource,
                SLURM_ROLE_TAG: role,
                **digest_tag(boot_script, script_key),
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=list(depends),
                ignore_changes=FOLLOWED_INPUTS if script_key is not None else None,
            ),
        )

    def _followed(
        self, suffix: str, script: pulumi.Input[str], key: str | None, after: Sequence[pulumi.Resource]
    ) -> list[pulumi.Resource]:
        args = self._args
        return followed_script(
            child(self._name, suffix),
            script=script,
            key=key,
            bucket_name=args.bucket_name,
            kms_key_arn=args.bucket_kms_key_arn,
            tags=args.tags,
            parent=self,
            after=after,
        )

    def _controller(
        self, profile: aws.iam.InstanceProfile, group: aws.ec2.SecurityGroup, depends: list[pulumi.Resource]
    ) -> aws.ec2.Instance:
        args = self._args
        return self._instance(
            child(self._name, "controller"),
            instance_type=args.instance_type,
            profile=profile,
            group=group,
            boot_script=args.boot_script,
            depends=[*depends, *self._followed("boot", args.boot_script, args.boot_script_key, depends)],
            role="controller",
            script_key=args.boot_script_key,
            private_ip=args.private_ip,
            kms_key_arn=args.kms_key_arn,
        )

    def _state_volume(self, instance: aws.ec2.Instance) -> None:
        name, args = self._name, self._args
        state = child(name, "state")
        volume = aws.ebs.Volume(
            state,
            availability_zone=args.availability_zone,
            size=args.state_volume_gib,
            type=args.volume_type,
            encrypted=True,
            kms_key_id=args.kms_key_arn,
            final_snapshot=True,
            tags={**args.tags, "Name": state, SNAPSHOT_TAG: state},
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect),
        )
        aws.ec2.VolumeAttachment(
            child(name, "state-attachment"),
            device_name=STATE_DEVICE,
            volume_id=volume.id,
            instance_id=instance.id,
            opts=self._own,
        )
        self._snapshots(state)

    def _snapshots(self, volume: str) -> None:
        """A daily snapshot of the state volume, the last `snapshots_kept` kept, by Data Lifecycle Manager
        with the rights of its default role (AWS's managed policy: snapshots inherit the volume's key, and
        creating one needs no right to it)."""
        name, args, own = self._name, self._args, self._own
        identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        role = aws.iam.Role(
            child(name, "snapshots-role"),
            assume_role_policy=service_trust_policy("dlm.amazonaws.com"),
            description=f"clusterfab Slurm state snapshots of {args.cluster}: Data Lifecycle Manager",
            tags=dict(args.tags),
            opts=own,
        )
        aws.iam.RolePolicyAttachment(
            child(name, "snapshots-service"),
            role=role.name,
            policy_arn=identity.apply(lambda me: f"arn:{me.arn.split(':')[1]}:iam::aws:{DLM_SERVICE_POLICY}"),
            opts=own,
        )
        aws.dlm.LifecyclePolicy(
            child(name, "snapshots"),
            # The API's description is letters, digits, spaces, _ and - only.
            description=f"clusterfab Slurm state of {args.cluster} daily {args.snapshots_kept} kept",
            execution_role_arn=role.arn,
            state="ENABLED",
            policy_details=aws.dlm.LifecyclePolicyPolicyDetailsArgs(
                policy_type="EBS_SNAPSHOT_MANAGEMENT",
                resource_types=["VOLUME"],
                target_tags={SNAPSHOT_TAG: volume},
                schedules=[
                    aws.dlm.LifecyclePolicyPolicyDetailsScheduleArgs(
                        name="daily",
                        create_rule=aws.dlm.LifecyclePolicyPolicyDetailsScheduleCreateRuleArgs(
                            interval=24, interval_unit="HOURS", times=args.snapshot_time_utc
                        ),
                        retain_rule=aws.dlm.LifecyclePolicyPolicyDetailsScheduleRetainRuleArgs(
                            count=args.snapshots_kept
                        ),
                        copy_tags=True,
                    )
                ],
            ),
            tags=dict(args.tags),
            opts=own,
        )

    def _logins(
        self,
        group: aws.ec2.SecurityGroup,
        depends: list[pulumi.Resource],
    ) -> tuple[aws.iam.Role, list[aws.ec2.Instance]]:
        """The login nodes' role and instances, which follow the bucket's copy of their boot script."""
        args = self._args
        role, profile = self._role(
            "login-role",
            pulumi.Output.from_input(args.bucket_arn).apply(
                lambda bucket: client_policy(
                    bucket, args.bucket_kms_key_arn, follow=digest_statements(args.login_boot_script_key)
                )
            ),
        )
        if args.login_count:
            followed = self._followed(
                "login-boot", args.login_boot_script, args.login_boot_script_key, depends
            )
            depends = [*depends, *followed]
        return role, [self._login(i, profile, group, depends) for i in range(args.login_count)]

    def _login(
        self,
        index: int,
        profile: aws.iam.InstanceProfile,
        group: aws.ec2.SecurityGroup,
        depends: list[pulumi.Resource],
    ) -> aws.ec2.Instance:
        args = self._args
        return self._instance(
            child(self._name, f"login-{index}"),
            instance_type=args.login_instance_type,
            profile=profile,
            group=group,
            boot_script=args.login_boot_script,
            depends=depends,
            role="login",
            script_key=args.login_boot_script_key,
            # The nodes' group too: users' jobs and their files (the shared file systems admit the nodes).
            more_groups=[args.node_security_group_id],
        )
