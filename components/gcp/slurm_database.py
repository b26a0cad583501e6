"""Slurm's accounting database on Cloud SQL for MySQL (`scheduler.accounting: managed`).

The instance has a private address only, from the cluster network's private services access range (no
public IP, no authorized networks), and takes encrypted connections only (sslMode ENCRYPTED_ONLY); its
server certificate is signed by the instance's own CA (GOOGLE_MANAGED_INTERNAL_CA), which the controller
reads from the Admin API and slurmdbd checks the server against. Cloud SQL keeps no master password for us
to hold: the controller creates slurmdbd's user through the Admin API with a password it keeps on its state
disk, so no password passes through the stack. The controller's service account may get this one instance
and list, create and update its users (a custom role, conditioned on the instance's resource name), nothing
else. Storage is SSD, grows on its own up to `STORAGE_GROWTH` times its size, is encrypted (with the
controller's key when one is given), backed up daily with binary logs for point-in-time recovery, leaves a
final backup when deleted, and the instance is protected from deletion (Cloud SQL's own flag and Pulumi's)
where the environment is protected. slurmdbd's database is made here (slurmdbd would make it on its first
start, but the MariaDB Connector/C of Debian 13 trips over the answer to that statement and slurmdbd
stops); deleting it from the stack abandons it rather than dropping the accounting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components._errors import check_inputs
from components._naming import child

TYPE = "clusterfab:slurm:GcpSlurmDatabase"
FLAGS = {
    # SchedMD's accounting guide: a lock wait long enough for slurmdbd's archive and purge.
    "innodb_lock_wait_timeout": "900",
    "max_allowed_packet": str(16 * 1024 * 1024),
}
"""Database flags (those of the embedded MariaDB the Cloud SQL instance stands in for)."""
STORAGE_GROWTH = 4
"""Automatic storage increase may grow the disk up to this many times its size."""
TRANSACTION_LOG_DAYS_MAX = 7
"""Enterprise edition keeps binary logs for point-in-time recovery 1 to 7 days."""
FINAL_BACKUP_DAYS = 365
"""A deleted instance leaves a final backup, kept this long (the most Cloud SQL keeps one outside Backup
and DR): the teams' usage history outlives the cluster, as RDS's final snapshot does on AWS."""
NAME = re.compile(r"[a-z](?:[-a-z0-9]{0,82}[a-z0-9])?")
"""Cloud SQL instance names: lowercase letters, digits and hyphens, a letter first, at most 84 characters
with the project id (the stack's names stay within 63)."""
USER_PERMISSIONS = (
    "cloudsql.instances.get",
    "cloudsql.users.create",
    "cloudsql.users.list",
    "cloudsql.users.update",
)
"""What the controller's accounting program calls: instances.get (its address and server CA; polling the
operations of users calls, which name the instance), users.get (cloudsql.users.list), users.insert and
users.update (Cloud SQL's IAM permissions reference)."""


@dataclass(frozen=True, kw_only=True)
class GcpSlurmDatabaseSettings:
    """What the blueprint decides of the database; defaults: Cloud SQL for MySQL 8.4, Enterprise edition,
    db-custom-2-8192, 50 GiB of SSD, 7 days of backups."""

    name: str
    """The instance's name: the controller finds it by this name."""
    database: str = "slurm_acct_db"
    """slurmdbd's database (its StorageLoc)."""
    database_version: str = "MYSQL_8_4"
    edition: str = "ENTERPRISE"
    tier: str = "db-custom-2-8192"
    storage_gib: int = 50
    server_ca_mode: str = "GOOGLE_MANAGED_INTERNAL_CA"
    backup_retention_days: int = 7


@dataclass(frozen=True, kw_only=True)
class GcpSlurmDatabaseArgs:
    """Inputs of GcpSlurmDatabase: the settings and where the Slurm controller puts the database."""

    cluster: str
    settings: GcpSlurmDatabaseSettings
    project: str
    region: str
    zone: str
    """The controller's zone: the instance is placed in it."""
    network_id: pulumi.Input[str]
    """The system VPC, peered with Google's services: the instance's private address is reachable from it."""
    private_services_range: pulumi.Input[str]
    """The allocated range (its name) the instance takes its address from."""
    private_services: pulumi.Resource
    """The private services connection: the instance waits for it."""
    client_member: pulumi.Input[str]
    """The controller's service account (`serviceAccount:<email>`): it gets the user rights."""
    role_id: str
    """The custom role's id (letters, digits, underscores; unique per project)."""
    kms_key: str | None = None
    """A customer-managed Cloud KMS key for the instance's disk and backups (in the instance's region); the
    Cloud SQL service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter on it. Default Google's key."""
    protect: bool = True
    """Keep the instance from deletion and replacement (Cloud SQL's deletion protection and Pulumi's)."""
    labels: Mapping[str, str] = field(default_factory=dict)


def _problems(args: GcpSlurmDatabaseArgs) -> list[tuple[str, str]]:
    problems = []
    settings = args.settings
    if not NAME.fullmatch(settings.name) or len(settings.name) > 63:
        problems.append(
            (
                "settings.name",
                f"'{settings.name}' is not a Cloud SQL instance name: up to 63 lowercase letters, digits or "
                "hyphens, a letter first, no hyphen last",
            )
        )
    if not 10 <= settings.storage_gib <= 65536:
        problems.append(("settings.storage_gib", "Cloud SQL for MySQL allocates 10 to 65536 GiB of SSD"))
    if not 1 <= settings.backup_retention_days <= 365:
        problems.append(("settings.backup_retention_days", "keep 1 to 365 backups (0 would turn them off)"))
    if not re.fullmatch(r"[a-zA-Z0-9_.]{3,64}", args.role_id):
        problems.append(
            ("role_id", f"'{args.role_id}' is not a custom role id: 3-64 letters, digits, _ or .")
        )
    return problems


INSTANCE_TYPE = "sqladmin.googleapis.com/Instance"


def instance_condition(project: str, name: str) -> str:
    """IAM condition: of the Cloud SQL instances, this one only. Checks on anything that is not an instance
    pass (IAM's resource-based access pattern): the permissions are the role's alone, and a check such
    as the one of operations.get may name the operation rather than the instance."""
    return f'resource.type != "{INSTANCE_TYPE}" || resource.name == "projects/{project}/instances/{name}"'


class GcpSlurmDatabase(pulumi.ComponentResource):
    """The Cloud SQL for MySQL instance and the controller's rights on it."""

    name: pulumi.Output[str]
    connection_name: pulumi.Output[str]
    private_ip_address: pulumi.Output[str]
    """The instance's private address (the controller reads it from the Admin API at boot; this is for the
    stack's outputs)."""

    def __init__(
        self, name: str, args: GcpSlurmDatabaseArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        instance = self._instance()
        gcp.sql.Database(
            child(name, "database"),
            name=args.settings.database,
            instance=instance.name,
            project=args.project,
            deletion_policy="ABANDON",
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        self._rights()
        self.name = instance.name
        self.connection_name = instance.connection_name
        self.private_ip_address = instance.private_ip_address
        self.register_outputs({"name": instance.name, "private_ip_address": instance.private_ip_address})

    def _instance(self) -> gcp.sql.DatabaseInstance:
        args, settings = self._args, self._args.settings
        days = settings.backup_retention_days
        return gcp.sql.DatabaseInstance(
            child(self._name, "instance"),
            name=settings.name,
            project=args.project,
            region=args.region,
            database_version=settings.database_version,
            encryption_key_name=args.kms_key,
            deletion_protection=args.protect,
            settings=gcp.sql.DatabaseInstanceSettingsArgs(
                tier=settings.tier,
                edition=settings.edition,
                availability_type="ZONAL",
                location_preference=gcp.sql.DatabaseInstanceSettingsLocationPreferenceArgs(zone=args.zone),
                disk_type="PD_SSD",
                disk_size=settings.storage_gib,
                disk_autoresize=True,
                disk_autoresize_limit=settings.storage_gib * STORAGE_GROWTH,
                deletion_protection_enabled=args.protect,
                final_backup_config=gcp.sql.DatabaseInstanceSettingsFinalBackupConfigArgs(
                    enabled=True, retention_days=FINAL_BACKUP_DAYS
                ),
                ip_configuration=gcp.sql.DatabaseInstanceSettingsIpConfigurationArgs(
                    ipv4_enabled=False,
                    private_network=args.network_id,
                    allocated_ip_range=args.private_services_range,
                    ssl_mode="ENCRYPTED_ONLY",
                    server_ca_mode=settings.server_ca_mode,
                ),
                backup_configuration=gcp.sql.DatabaseInstanceSettingsBackupConfigurationArgs(
                    enabled=True,
                    binary_log_enabled=True,
                    transaction_log_retention_days=min(days, TRANSACTION_LOG_DAYS_MAX),
                    backup_retention_settings=gcp.sql.DatabaseInstanceSettingsBackupConfigurationBackupRetentionSettingsArgs(
                        retained_backups=days, retention_unit="COUNT"
                    ),
                ),
                database_flags=[
                    gcp.sql.DatabaseInstanceSettingsDatabaseFlagArgs(name=key, value=value)
                    for key, value in FLAGS.items()
                ],
                user_labels=dict(args.labels),
            ),
            opts=pulumi.ResourceOptions(
                parent=self, protect=args.protect, depends_on=[args.private_services]
            ),
        )

    def _rights(self) -> None:
        """The controller may get the instance and make slurmdbd's user on it: this instance only."""
        args = self._args
        role = gcp.projects.IAMCustomRole(
            child(self._name, "users-role"),
            project=args.project,
            role_id=args.role_id,
            title=f"clusterfab Slurm accounting users of {args.cluster}",
            description="Find the Slurm accounting database and give slurmdbd's user its password",
            permissions=list(USER_PERMISSIONS),
            opts=pulumi.ResourceOptions(parent=self),
        )
        gcp.projects.IAMMember(
            child(self._name, "users"),
            project=args.project,
            role=role.name,
            member=args.client_member,
            condition=gcp.projects.IAMMemberConditionArgs(
                title="clusterfab Slurm accounting database only",
                expression=instance_condition(args.project, args.settings.name),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
