"""Slurm's accounting database on Amazon RDS for MariaDB (`scheduler.accounting: managed`).

The instance lives in the cluster's zone, reachable on 3306 from the Slurm controller's security group
only, never publicly, and refuses unencrypted connections (require_secure_transport). RDS keeps its
master password in a Secrets Manager secret it creates and rotates (ManageMasterUserPassword), so no
password passes through the stack: the controller reads the secret at boot and makes slurmdbd's own user
with a password it keeps on its state disk. RDS requires a subnet group over two zones even for a
single-zone instance; the second subnet holds nothing and has no route out of the VPC. Storage is
encrypted (the controller's key when one is given), backed up daily for `backup_retention_days`, grows on
its own, and a final snapshot is taken when the instance is deleted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from components._errors import check_inputs
from components._naming import child

TYPE = "clusterfab:slurm:AwsSlurmDatabase"
PORT = 3306
MASTER_USER = "clusterfab"
"""The master user's name (its password is RDS's, in the secret it manages)."""
IDENTIFIER = re.compile(r"[a-z](?!.*--)[a-z0-9-]{0,61}[a-z0-9]")
"""RDS CreateDBInstance DBInstanceIdentifier: 1 to 63 letters, digits or hyphens, a letter first, no two
hyphens in a row, no hyphen last (stored lowercase)."""
PARAMETERS = {
    # Refuse unencrypted connections (11.8's default; stated so an older family cannot drop it).
    "require_secure_transport": "1",
    # SchedMD's accounting guide: a lock wait long enough for slurmdbd's archive and purge.
    "innodb_lock_wait_timeout": "900",
    "max_allowed_packet": str(16 * 1024 * 1024),
}
"""The DB parameter group's settings (those of the embedded MariaDB the RDS instance stands in for)."""
STORAGE_GROWTH = 4
"""Storage autoscaling may grow the allocated storage up to this many times its size."""


@dataclass(frozen=True, kw_only=True)
class AwsSlurmDatabaseSettings:
    """What the blueprint decides of the database; defaults: RDS for MariaDB 11.8 on db.m7g.large, 50 GiB
    of gp3, 7 days of backups."""

    identifier: str
    """The DB instance identifier: the controller finds the instance (endpoint, master secret) by it."""
    second_subnet_cidr: str
    """A range of the VPC for the subnet group's second subnet, in another zone of the region."""
    engine_version: str = "11.8"
    parameter_family: str = "mariadb11.8"
    instance_class: str = "db.m7g.large"
    storage_gib: int = 50
    ca: str = "rds-ca-rsa2048-g1"
    """The CA of the server certificate (the controller checks the server against its regional bundle)."""
    backup_retention_days: int = 7


@dataclass(frozen=True, kw_only=True)
class AwsSlurmDatabaseArgs:
    """Inputs of AwsSlurmDatabase: the settings and where the Slurm controller puts the database."""

    cluster: str
    settings: AwsSlurmDatabaseSettings
    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    """The cluster's private subnet: the instance is placed in its zone."""
    availability_zone: pulumi.Input[str]
    """That subnet's zone name."""
    client_security_group_id: pulumi.Input[str]
    """The Slurm controller's security group: the only one that reaches the database."""
    kms_key_arn: str | None = None
    """A customer-managed KMS key (ARN) for the storage, the snapshots and the master secret; default the
    account's RDS and Secrets Manager keys."""
    protect: bool = True
    """Keep the instance from deletion and replacement (deletion protection and Pulumi's protect)."""
    tags: Mapping[str, str] = field(default_factory=dict)


def _problems(args: AwsSlurmDatabaseArgs) -> list[tuple[str, str]]:
    problems = []
    settings = args.settings
    if not IDENTIFIER.fullmatch(settings.identifier):
        problems.append(
            (
                "settings.identifier",
                f"'{settings.identifier}' is not an RDS instance identifier: 1-63 lowercase letters, "
                "digits or hyphens, a letter first, no '--', no hyphen last",
            )
        )
    if not 20 <= settings.storage_gib <= 65536:
        problems.append(("settings.storage_gib", "RDS for MariaDB allocates 20 to 65536 GiB of gp3"))
    if not 1 <= settings.backup_retention_days <= 35:
        problems.append(
            ("settings.backup_retention_days", "keep 1 to 35 days of backups (0 would turn them off)")
        )
    return problems


def second_zone(others: Sequence[str]) -> str:
    """The first of the region's other available zones (get_availability_zones lists them in name order)."""
    if not others:
        raise ValueError("the region has no available zone besides the cluster's: RDS needs two")
    return others[0]


class AwsSlurmDatabase(pulumi.ComponentResource):
    """The subnet group (the cluster's subnet and one more), a security group that admits the controller,
    the parameter group and the RDS for MariaDB instance."""

    arn: pulumi.Output[str]
    identifier: pulumi.Output[str]
    address: pulumi.Output[str]
    """The endpoint's DNS name (the controller reads it from RDS at boot; this is for the stack's outputs)."""
    master_secret_arn: pulumi.Output[str]
    """The Secrets Manager secret RDS keeps the master user's credentials in."""

    def __init__(
        self, name: str, args: AwsSlurmDatabaseArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        self._own = pulumi.ResourceOptions(parent=self)
        instance = self._instance(self._subnet_group(), self._security_group(), self._parameters())
        self.arn = instance.arn
        self.identifier = instance.identifier
        self.address = instance.address
        self.master_secret_arn = instance.master_user_secrets.apply(
            lambda secrets: str(secrets[0].secret_arn)
        )
        self.register_outputs(
            {"arn": instance.arn, "address": instance.address, "master_secret_arn": self.master_secret_arn}
        )

    def _subnet_group(self) -> aws.rds.SubnetGroup:
        """The cluster's subnet and a second one in the first other zone the account has."""
        name, args = self._name, self._args
        # The account's own zones (names map to zones per account), not Local or Wavelength Zones.
        zones = aws.get_availability_zones_output(
            state="available",
            exclude_names=pulumi.Output.from_input(args.availability_zone).apply(lambda zone: [zone]),
            filters=[
                aws.GetAvailabilityZonesFilterArgs(name="opt-in-status", values=["opt-in-not-required"])
            ],
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        second = aws.ec2.Subnet(
            child(name, "second-subnet"),
            vpc_id=args.vpc_id,
            cidr_block=args.settings.second_subnet_cidr,
            availability_zone=zones.names.apply(second_zone),
            map_public_ip_on_launch=False,
            tags={**args.tags, "Name": child(name, "second-subnet")},
            opts=self._own,
        )
        return aws.rds.SubnetGroup(
            child(name, "subnets"),
            description=f"clusterfab Slurm accounting of {args.cluster}",
            subnet_ids=[args.subnet_id, second.id],
            tags=dict(args.tags),
            opts=self._own,
        )

    def _security_group(self) -> aws.ec2.SecurityGroup:
        """MariaDB's port from the controller's group; nothing out."""
        name, args = self._name, self._args
        group = aws.ec2.SecurityGroup(
            child(name, "sg"),
            vpc_id=args.vpc_id,
            description="clusterfab Slurm accounting database: MariaDB from the Slurm controller only",
            egress=[],
            tags={**args.tags, "Name": child(name, "sg")},
            opts=self._own,
        )
        aws.vpc.SecurityGroupIngressRule(
            child(name, "from-controller"),
            security_group_id=group.id,
            referenced_security_group_id=args.client_security_group_id,
            ip_protocol="tcp",
            from_port=PORT,
            to_port=PORT,
            description="slurmdbd on the Slurm controller",
            opts=self._own,
        )
        return group

    def _parameters(self) -> aws.rds.ParameterGroup:
        args = self._args
        return aws.rds.ParameterGroup(
            child(self._name, "parameters"),
            family=args.settings.parameter_family,
            description=f"clusterfab Slurm accounting of {args.cluster}: TLS only, slurmdbd's settings",
            parameters=[
                aws.rds.ParameterGroupParameterArgs(name=key, value=value, apply_method="immediate")
                for key, value in PARAMETERS.items()
            ],
            tags=dict(args.tags),
            opts=self._own,
        )

    def _instance(
        self, subnets: aws.rds.SubnetGroup, group: aws.ec2.SecurityGroup, parameters: aws.rds.ParameterGroup
    ) -> aws.rds.Instance:
        args, settings = self._args, self._args.settings
        return aws.rds.Instance(
            child(self._name, "instance"),
            identifier=settings.identifier,
            engine="mariadb",
            engine_version=settings.engine_version,
            auto_minor_version_upgrade=True,
            instance_class=settings.instance_class,
            allocated_storage=settings.storage_gib,
            max_allocated_storage=settings.storage_gib * STORAGE_GROWTH,
            storage_type="gp3",
            storage_encrypted=True,
            kms_key_id=args.kms_key_arn,
            username=MASTER_USER,
            manage_master_user_password=True,
            master_user_secret_kms_key_id=args.kms_key_arn,
            db_subnet_group_name=subnets.name,
            availability_zone=args.availability_zone,
            multi_az=False,
            vpc_security_group_ids=[group.id],
            publicly_accessible=False,
            parameter_group_name=parameters.name,
            ca_cert_identifier=settings.ca,
            backup_retention_period=settings.backup_retention_days,
            copy_tags_to_snapshot=True,
            deletion_protection=args.protect,
            skip_final_snapshot=False,
            final_snapshot_identifier=f"{settings.identifier}-final",
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )


def controller_statements(
    database_arn: str, master_secret_arn: str, kms_key_arn: str | None = None
) -> list[dict[str, Any]]:
    """What the controller needs of the database: find it (endpoint, master secret) and read the master
    user's credentials to make slurmdbd's user."""
    statements: list[dict[str, Any]] = [
        {
            "Sid": "FindAccountingDatabase",
            "Effect": "Allow",
            "Action": "rds:DescribeDBInstances",
            "Resource": database_arn,
        },
        {
            "Sid": "ReadAccountingDatabaseMaster",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": master_secret_arn,
        },
    ]
    if kms_key_arn:
        statements.append(
            {
                "Sid": "DecryptAccountingDatabaseMaster",
                "Effect": "Allow",
                "Action": "kms:Decrypt",
                "Resource": kms_key_arn,
                "Condition": {"StringLike": {"kms:ViaService": "secretsmanager.*.amazonaws.com"}},
            }
        )
    return statements
