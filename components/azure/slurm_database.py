"""Slurm's accounting database on Azure Database for MySQL flexible server (`scheduler.accounting: managed`).

The server has private access only: it sits in a subnet delegated to it (AzureNetwork.database_subnet_id),
which the controller subnet alone reaches on MySQL's port, with no public network access, and its name
resolves in a private DNS zone of its own, linked to the cluster's VNet (Azure requires both for private
access: learn.microsoft.com/azure/mysql/flexible-server/concepts-networking-vnet). It takes encrypted
connections only (require_secure_transport, ON by default, is set explicitly), its data and backups are
encrypted at rest by the service, backups are kept `backup_retention_days`, storage grows on its own, and
with `protect` Pulumi refuses to delete or replace it.

Azure keeps no administrator password for the controller to read (as RDS does in Secrets Manager) and has
no users API (as Cloud SQL's Admin API has). The server is created with a random administrator password
that Pulumi keeps as a secret and never changes after (its later value is ignored); at its first boot the
controller makes its own administrator password on its state disk and gives it to the server through
Resource Manager with its managed identity, whose custom role allows reading and updating this one server
and nothing else (no delete, no firewall rules, no other resource), then makes slurmdbd's user as that
administrator (clusterfab_slurm_nodes' azure_mysql.py). slurmdbd's database is made here; deleting it from
the stack would drop the accounting, so it is protected with the server.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
from pulumi_azure_native import authorization, dbformysql, privatedns

from components._errors import check_inputs
from components._naming import child

TYPE = "clusterfab:slurm:AzureSlurmDatabase"
ADMINISTRATOR = "clusterfab"
"""The server's administrator login: not one of the names Azure reserves (azure_superuser, admin,
administrator, root, guest, public)."""
DNS_ZONE_SUFFIX = ".private.mysql.database.azure.com"
"""A private access server's private DNS zone must end with this (concepts-networking-vnet)."""
FLAGS = {
    # On by default; set so that no later default can turn it off.
    "require_secure_transport": "ON",
    # SchedMD's accounting guide: a lock wait long enough for slurmdbd's archive and purge.
    "innodb_lock_wait_timeout": "900",
    "max_allowed_packet": str(16 * 1024 * 1024),
}
"""Server parameters (those of the embedded MariaDB the server stands in for)."""
CONTROLLER_ACTIONS = (
    "Microsoft.DBforMySQL/flexibleServers/read",
    "Microsoft.DBforMySQL/flexibleServers/write",
)
"""What the controller's accounting program calls: Servers - Get (the server's state, host name and
administrator login) and Servers - Update (its administrator password)."""
NAME = re.compile(r"[a-z0-9][-a-z0-9]{1,61}[a-z0-9]")
"""Flexible server names: 3-63 lowercase letters, digits and hyphens, no hyphen first or last (the REST
API's pattern `^[a-z0-9][-a-z0-9]*(?<!-)$`, and the service's length limits)."""
TIERS = ("Burstable", "GeneralPurpose", "MemoryOptimized")
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
STORAGE_GIB = (20, 16384)
BACKUP_DAYS = (1, 35)


@dataclass(frozen=True, kw_only=True)
class AzureSlurmDatabaseSettings:
    """What the blueprint decides of the server; defaults: MySQL 8.4, General Purpose Standard_D2ads_v5,
    50 GiB, 7 days of backups."""

    name: str
    """The server's name: the controller finds it by this name in its own resource group."""
    database: str = "slurm_acct_db"
    """slurmdbd's database (its StorageLoc)."""
    version: str = "8.4"
    sku_name: str = "Standard_D2ads_v5"
    sku_tier: str = "GeneralPurpose"
    storage_gib: int = 50
    backup_retention_days: int = 7


@dataclass(frozen=True, kw_only=True)
class AzureSlurmDatabaseArgs:
    """Inputs of AzureSlurmDatabase: the settings and where the Slurm controller reaches the server."""

    settings: AzureSlurmDatabaseSettings
    resource_group_name: pulumi.Input[str]
    resource_group_id: pulumi.Input[str]
    """The stack's resource group: the one scope the custom role may be assigned in."""
    location: str
    zone: str | None = None
    """The controller's availability zone: the server is placed in it; None: Azure chooses."""
    vnet_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    """The subnet delegated to Microsoft.DBforMySQL/flexibleServers."""
    controller_principal_id: pulumi.Input[str]
    """The controller's identity: it gets the custom role on this server."""
    protect: bool = True
    tags: Mapping[str, str] = field(default_factory=dict)


def _problems(args: AzureSlurmDatabaseArgs) -> list[tuple[str, str]]:
    settings = args.settings
    problems = []
    if not NAME.fullmatch(settings.name):
        problems.append(
            (
                "settings.name",
                f"'{settings.name}' is not a flexible server name: 3-63 lowercase letters, digits or "
                "hyphens, no hyphen first or last",
            )
        )
    if settings.sku_tier not in TIERS:
        problems.append(("settings.sku_tier", f"'{settings.sku_tier}' is not one of {', '.join(TIERS)}"))
    low, high = STORAGE_GIB
    if not low <= settings.storage_gib <= high:
        problems.append(("settings.storage_gib", f"a flexible server has {low} to {high} GiB of storage"))
    low, high = BACKUP_DAYS
    if not low <= settings.backup_retention_days <= high:
        problems.append(("settings.backup_retention_days", f"keep backups {low} to {high} days"))
    return problems


def initial_password() -> str:
    """A password for the server's creation alone (the controller replaces it at its first boot): 32
    random letters and digits and a hyphen, which meets Azure's rule of three of four character kinds."""
    while True:
        word = "".join(secrets.choice(_ALPHABET) for _ in range(32))
        if any(c.islower() for c in word) and any(c.isupper() for c in word):
            return f"{word[:16]}-{word[16:]}"


class AzureSlurmDatabase(pulumi.ComponentResource):
    """The flexible server, its private DNS zone and the controller's right to set its password."""

    server_name: pulumi.Output[str]
    host: pulumi.Output[str]
    """The server's host name (its fully qualified domain name, private in the VNet)."""

    def __init__(
        self, name: str, args: AzureSlurmDatabaseArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        zone, link = self._dns_zone()
        server = self._server(zone, link)
        kept = pulumi.ResourceOptions(parent=self, protect=args.protect)
        dbformysql.Database(
            child(name, "database"),
            resource_group_name=args.resource_group_name,
            server_name=server.name,
            database_name=args.settings.database,
            charset="utf8mb4",
            collation="utf8mb4_0900_ai_ci",
            opts=kept,
        )
        for key, value in FLAGS.items():
            dbformysql.Configuration(
                child(name, key.replace("_", "-")),
                resource_group_name=args.resource_group_name,
                server_name=server.name,
                configuration_name=key,
                value=value,
                source="user-override",
                opts=pulumi.ResourceOptions(parent=self),
            )
        self._rights(server)
        self.server_name = server.name
        self.host = server.fully_qualified_domain_name.apply(lambda host: host or "")
        self.register_outputs({"server_name": self.server_name, "host": self.host})

    def _dns_zone(self) -> tuple[privatedns.PrivateZone, privatedns.VirtualNetworkLink]:
        name, args = self._name, self._args
        zone = privatedns.PrivateZone(
            child(name, "dns"),
            resource_group_name=args.resource_group_name,
            private_zone_name=f"{args.settings.name}{DNS_ZONE_SUFFIX}",
            location="global",
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        link = privatedns.VirtualNetworkLink(
            child(name, "dns-link"),
            resource_group_name=args.resource_group_name,
            private_zone_name=zone.name,
            virtual_network_link_name=args.settings.name,
            location="global",
            virtual_network=privatedns.SubResourceArgs(id=args.vnet_id),
            registration_enabled=False,
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        return zone, link

    def _server(self, zone: privatedns.PrivateZone, link: privatedns.VirtualNetworkLink) -> dbformysql.Server:
        args, settings = self._args, self._args.settings
        return dbformysql.Server(
            child(self._name, "server"),
            resource_group_name=args.resource_group_name,
            server_name=settings.name,
            location=args.location,
            availability_zone=args.zone,
            version=settings.version,
            sku=dbformysql.MySQLServerSkuArgs(name=settings.sku_name, tier=settings.sku_tier),
            administrator_login=ADMINISTRATOR,
            administrator_login_password=pulumi.Output.secret(initial_password()),
            storage=dbformysql.StorageArgs(
                storage_size_gb=settings.storage_gib, auto_grow="Enabled", auto_io_scaling="Enabled"
            ),
            backup=dbformysql.BackupArgs(
                backup_retention_days=settings.backup_retention_days, geo_redundant_backup="Disabled"
            ),
            high_availability=dbformysql.HighAvailabilityArgs(mode="Disabled"),
            network=dbformysql.NetworkArgs(
                delegated_subnet_resource_id=args.subnet_id,
                private_dns_zone_resource_id=zone.id,
                public_network_access="Disabled",
            ),
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.protect,
                depends_on=[link],
                # The controller owns the password after the first boot; a new random one each run is
                # not a change.
                ignore_changes=["administratorLoginPassword"],
            ),
        )

    def _rights(self, server: dbformysql.Server) -> None:
        """The controller may read and update this server (its administrator password), nothing else."""
        name, args = self._name, self._args
        role = authorization.RoleDefinition(
            child(name, "password-role"),
            scope=args.resource_group_id,
            role_name=pulumi.Output.concat(
                "clusterfab accounting password ", args.settings.name, " ", args.resource_group_id
            ),
            description="Read the Slurm accounting server and set its administrator password",
            role_type="CustomRole",
            permissions=[authorization.PermissionArgs(actions=list(CONTROLLER_ACTIONS))],
            assignable_scopes=[args.resource_group_id],
            opts=pulumi.ResourceOptions(parent=self),
        )
        authorization.RoleAssignment(
            child(name, "password"),
            scope=server.id,
            role_definition_id=role.id,
            principal_id=args.controller_principal_id,
            principal_type="ServicePrincipal",
            description=f"clusterfab {name}: the Slurm controller sets the accounting server's password",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[role]),
        )
