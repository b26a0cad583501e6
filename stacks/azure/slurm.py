"""Slurm on Azure: the controller (which keeps the munge key in the cluster's Key Vault and serves it to root
on the nodes) and the login nodes. The GPU nodes join Slurm by their scale set's fabric unit, claiming
their nodes themselves; the controller's node sync releases the claims of VMs that are gone, replaces
failed VMs and keeps each scale set at its unit's size, with Reader on the stack's resource group and
Virtual Machine Contributor on each Slurm scale set; an elastic group's own scale sets grow by one VM for
each node Slurm resumes and shrink by the VMs its suspend program deletes."""

from __future__ import annotations

import hashlib

import pulumi
from cluster import Cluster, SchedulerRealized
from slurm_common import (
    SLURM_ITEM,
    controller_boot,
    hosts_monitoring,
    login_boot,
    slurm_export,
    slurm_files,
    slurmd_vars,
)

from clusterfab.clouds.azure.database import mysql_tier
from clusterfab.clouds.azure.discovery import SUBSCRIPTION_SETTING
from clusterfab.clouds.azure.vault import vault_secret
from clusterfab.core.items import CONTROLLER_ITEM, LOGIN_ITEM
from clusterfab.core.naming import physical
from clusterfab.monitoring.host import RenderedArchive
from clusterfab.scheduler.slurm.hostvars import accounting_database_name, munge_secret_name, slurm_node_groups
from clusterfab.scheduler.slurm.nodes.accounting import DATABASE as ACCOUNTING_DATABASE
from clusterfab.scheduler.slurm.render import controller_address, controller_host, fabric_units, require_slurm
from components._contracts import MountTarget
from components._naming import child
from components.azure.controller_access import AzureControllerAccess, AzureControllerAccessArgs
from components.azure.identity import AzureNodeIdentity, AzureNodeIdentityArgs
from components.azure.slurm import (
    AzureEntraLogin,
    AzureSlurmController,
    AzureSlurmControllerArgs,
    AzureSlurmHost,
    AzureSlurmVault,
    AzureSlurmVaultArgs,
)
from components.azure.slurm_database import (
    AzureSlurmDatabase,
    AzureSlurmDatabaseArgs,
    AzureSlurmDatabaseSettings,
)

from .compute import boot_launcher, image
from .site import AzureScheduler, Site, operators

VAULT_PREFIX_MAX = 15
"""A vault name is <cluster>-<stack> cut to 15 characters, a dash and 8 hex digits: 24, Key Vault's most."""


def vault_name(cluster: Cluster, admin_key: pulumi.Output[str]) -> pulumi.Output[str]:
    """Key Vault names are global, and a deleted vault keeps its name while it can be recovered (7 days at
    least, longer than a destroy and a new `up`): the suffix is a hash of the stack's administrator key,
    made once per stack, so a recreated stack never asks for the name its deleted vault still holds."""
    prefix = physical(cluster.spec.name, cluster.stack, max_length=VAULT_PREFIX_MAX)
    return admin_key.apply(lambda key: f"{prefix}-{hashlib.sha256(key.encode()).hexdigest()[:8]}")


def subscription(cluster: Cluster) -> str | None:
    """The subscription Prometheus on the controller discovers the nodes in (the stack's
    azure-native:subscriptionId); None without monitoring. The files are rendered before the provider
    answers with the deployer's subscription, so only the stack's setting can name it."""
    if not hosts_monitoring(cluster.spec):
        return None
    found = cluster.input.settings.provider_settings.get(SUBSCRIPTION_SETTING)
    if found is None:
        raise pulumi.RunError(
            f"monitoring on Azure needs the stack setting {SUBSCRIPTION_SETTING}, the subscription "
            f"Prometheus discovers the nodes in: `pulumi config set {SUBSCRIPTION_SETTING} "
            f"$(az account show --query id -o tsv) --stack {cluster.stack}`"
        )
    return found


def smtp_secret(cluster: Cluster) -> str | None:
    """The Key Vault secret Alertmanager on the controller reads the SMTP password from (its resource id,
    which validate has checked: BP154); None when the controller logs in to no mail relay."""
    monitoring = cluster.spec.monitoring
    if not hosts_monitoring(cluster.spec) or monitoring is None or monitoring.smtp is None:
        return None
    return monitoring.smtp.password_secret


def _smtp_inputs(cluster: Cluster, identity: AzureNodeIdentity) -> dict[str, pulumi.Input[str]]:
    """The alertmanager role's Azure settings: the vault it reads the password from, with the controller's
    identity (the one Key Vault Secrets User names)."""
    secret = smtp_secret(cluster)
    found = vault_secret(secret) if secret is not None else None
    if found is None:
        return {}
    return {"alertmanager_vault_url": found.vault_url, "alertmanager_client_id": identity.client_id}


def _files(cluster: Cluster) -> RenderedArchive:
    return slurm_files(cluster, project=subscription(cluster))


def _realize(site: Site, mounts: list[MountTarget], archive: RenderedArchive) -> SchedulerRealized:
    """The controller's identity and vault, its access to the scale sets (and, for its node discovery, the
    stack's resource group), then the controller and login VMs."""
    cluster, spec = site.cluster, site.spec
    identity, vault = _vault(site)
    units = {unit.name for group in slurm_node_groups(spec) for unit in fabric_units(spec, group) or ()}
    access = AzureControllerAccess(
        child(spec.name, "controller-access"),
        AzureControllerAccessArgs(
            subscription_id=site.deployer.subscription_id,
            resource_group_id=site.resource_group_id,
            scale_sets={unit: scale_set for unit, scale_set in site.scale_sets.items() if unit in units},
            principal_id=identity.principal_id,
            smtp_secret_id=smtp_secret(cluster),
        ),
        site.opts,
    )
    grants: list[pulumi.Resource] = [identity, vault, site.identity, access]
    database = _database(site, identity)
    if database is not None:
        grants.append(database)
    controller = AzureSlurmController(
        child(spec.name, SLURM_ITEM),
        _controller_args(site, mounts, archive, identity, vault),
        # The identities' role assignments exist before a host boots and fetches its files.
        pulumi.ResourceOptions.merge(site.opts, pulumi.ResourceOptions(depends_on=grants)),
    )
    secret = pulumi.Output.concat(vault.vault_uri, "secrets/", munge_secret_name(spec, cluster.stack))
    return slurm_export(
        cluster,
        controller=controller.controller_id,
        login=controller.login_ids,
        munge_secret=secret,
        accounting_database=database.host if database is not None else None,
    )


def _database(site: Site, identity: AzureNodeIdentity) -> AzureSlurmDatabase | None:
    """Managed accounting: Azure Database for MySQL as the catalog records it, named as the controller looks
    for it, in the subnet delegated to it; the controller's identity may set its administrator password."""
    cluster, spec = site.cluster, site.spec
    database = require_slurm(spec).database
    subnet = site.network.database_subnet_id
    if database is None or subnet is None:
        return None
    return AzureSlurmDatabase(
        child(spec.name, "slurm-db"),
        AzureSlurmDatabaseArgs(
            settings=AzureSlurmDatabaseSettings(
                name=accounting_database_name(spec, cluster.stack),
                database=ACCOUNTING_DATABASE,
                version=database.version,
                sku_name=database.machine_type,
                sku_tier=mysql_tier(database.machine_type),
                storage_gib=database.storage_gib,
                backup_retention_days=database.backup_days,
            ),
            resource_group_name=site.resource_group_name,
            resource_group_id=site.resource_group_id,
            location=spec.region,
            zone=spec.zone,
            vnet_id=site.network.vnet_id,
            subnet_id=subnet,
            controller_principal_id=identity.principal_id,
            protect=spec.protected,
            tags=cluster.tags("slurm-db"),
        ),
        site.opts,
    )


def _vault(site: Site) -> tuple[AzureNodeIdentity, AzureSlurmVault]:
    """The controller's own identity (the bundle, the boot verdicts) and the munge key's vault, on which
    that identity alone holds a role."""
    cluster, spec = site.cluster, site.spec
    identity = AzureNodeIdentity(
        child(spec.name, "slurm-controller"),
        AzureNodeIdentityArgs(
            resource_group_name=site.resource_group_name,
            location=spec.region,
            subscription_id=site.deployer.subscription_id,
            bundle_container_id=site.bucket.container_id,
            verdict_container_id=site.bucket.verdict_container_id,
            tags=cluster.tags("identity"),
        ),
        site.opts,
    )
    vault = AzureSlurmVault(
        child(spec.name, "slurm-vault"),
        AzureSlurmVaultArgs(
            resource_group_name=site.resource_group_name,
            location=spec.region,
            vault_name=vault_name(cluster, site.admin_key),
            tenant_id=site.deployer.tenant_id,
            subscription_id=site.deployer.subscription_id,
            subnet_id=site.network.controller_subnet_id,
            controller_principal_id=identity.principal_id,
            protect=spec.protected,
            tags=cluster.tags(SLURM_ITEM),
        ),
        site.opts,
    )
    return identity, vault


def _controller_args(
    site: Site,
    mounts: list[MountTarget],
    archive: RenderedArchive,
    identity: AzureNodeIdentity,
    vault: AzureSlurmVault,
) -> AzureSlurmControllerArgs:
    cluster, spec = site.cluster, site.spec
    slurm = require_slurm(spec)
    # One boot script for every login VM.
    login = login_boot(cluster, site.bucket_name, mounts)
    return AzureSlurmControllerArgs(
        cluster=spec.name,
        resource_group_name=site.resource_group_name,
        location=spec.region,
        zone=spec.zone,
        subnet_id=site.network.controller_subnet_id,
        image=image(slurm.controller.image),
        ssh_public_key=site.admin_key,
        controller=AzureSlurmHost(
            vm_size=slurm.controller.name,
            computer_name=controller_host(spec),
            identity_id=identity.identity_id,
            launcher=boot_launcher(cluster, CONTROLLER_ITEM),
            boot_script=controller_boot(
                cluster,
                site.bucket_name,
                archive,
                project=subscription(cluster),
                # Where the controller keeps the munge key, known once the vault and the identity exist.
                inputs={
                    "munge_key_vault_url": vault.vault_uri,
                    "munge_key_client_id": identity.client_id,
                    # The node sync's token: the same identity, which the scale sets' grants name.
                    "slurm_controller_client_id": identity.client_id,
                    **_smtp_inputs(cluster, identity),
                },
            ),
            private_ip=controller_address(spec),
        ),
        logins=tuple(
            AzureSlurmHost(
                vm_size=slurm.login.name if slurm.login else slurm.controller.name,
                computer_name=f"{spec.name}-{LOGIN_ITEM}-{index}",
                # The nodes' identity: the bundle and the boot verdicts, no right to the vault.
                identity_id=site.identity.identity_id,
                launcher=boot_launcher(cluster, LOGIN_ITEM),
                boot_script=login,
            )
            for index in range(slurm.login_count)
        ),
        state_disk_gib=slurm.disk_gib,
        disk_type=slurm.controller.disk_type,
        protect=spec.protected,
        # The deployer and the stack's operators sign in through its Bastion (`clusterfab dashboard`).
        entra_login=AzureEntraLogin(
            subscription_id=site.deployer.subscription_id,
            principal_id=site.deployer.object_id,
            principal_type=site.deployer.principal_type,
            own_client_id=identity.client_id,
            resource_group_id=site.resource_group_id,
            operators=operators(),
        ),
        tags=cluster.tags(SLURM_ITEM),
    )


SLURM = AzureScheduler(node_vars=slurmd_vars, files=_files, realize=_realize)
"""Slurm's entry in the Azure realizer's table of schedulers."""
