"""Slurm on Azure: the controller VM (slurmctld, slurmdbd and MariaDB on a protected state disk), the login
VMs, and the Key Vault that keeps the munge key.

Nothing listens on a public address: the VMs have no public IP and people reach them through Run Command
or Bastion (clusterfab.clouds.azure.access). The controller has a fixed private address in the controller
subnet, which slurm.conf names before it exists, and a Premium SSD state disk of its own resource, attached
at LUN 0: replacing the VM never takes the disk, and with `protect` Pulumi refuses to delete it.

The munge key never passes through the stack or the custom or user data: the stack creates an empty Key
Vault (RBAC authorization, soft delete, no access from outside the controller subnet), the controller makes
the key at its first boot and stores it there, and the controller's identity alone holds a role on the
vault (Key Vault Secrets Officer, on the vault alone). GPU and login nodes hold no right to it: they fetch
the key from the controller's key service as root, so a job that reached a node's identity still finds no
key (the AWS and GCP controllers do the same).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
from pulumi_azure_native import compute, keyvault, network

from clusterfab.core.vocab import IDENTITY_TAG, SLURM_ROLE_TAG
from components._errors import check_inputs, slurm_controller_problems
from components._naming import child
from components.azure._linux import encoded, linux_login, username_problems
from components.azure._roles import (
    PRINCIPAL_TYPES,
    READER,
    VIRTUAL_MACHINE_ADMINISTRATOR_LOGIN,
    VIRTUAL_MACHINE_USER_LOGIN,
    grant,
)
from components.azure.node_group import AzureImage

VAULT_TYPE = "clusterfab:slurm:AzureSlurmVault"
CONTROLLER_TYPE = "clusterfab:slurm:AzureSlurmController"

KEY_VAULT_SECRETS_OFFICER = "b86a8fe4-44ce-4948-aee5-eccb2c155cd7"
"""Key Vault Secrets Officer: read, write and delete a vault's secrets and nothing of its keys,
certificates or access (learn.microsoft.com/azure/role-based-access-control/built-in-roles/security,
read 2026-11-29): what the controller needs to make the munge key at its first boot and read it after."""
ENTRA_LOGIN_EXTENSION = "AADSSHLoginForLinux"
"""The VM extension that lets Microsoft Entra ID accounts sign in over SSH (the Bastion's tunnel). It supports
Ubuntu 16.04 to 24.04, the controller's image, and needs outbound HTTPS to packages.microsoft.com,
login.microsoftonline.com and pas.windows.net, which the controller subnet's NAT gateway gives it
(learn.microsoft.com/entra/identity/devices/howto-vm-sign-in-azure-ad-linux, "Supported Linux distributions"
and "Network", read 2026-11-29)."""
_VAULT_NAME = re.compile(r"^[a-zA-Z](?!.*--)[a-zA-Z0-9-]{1,22}[a-zA-Z0-9]$")
"""A vault name: 3-24 letters, digits and single dashes, starting with a letter and not ending with a dash
(learn.microsoft.com/azure/key-vault/general/about-keys-secrets-certificates#vault-name-and-object-name)."""
SOFT_DELETE_DAYS = (7, 90)
"""How long a deleted vault and its secrets can be recovered: 7 to 90 days (the same page)."""
_OBJECT_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
STATE_LUN = 0
"""The state disk's logical unit: the host finds it at /dev/disk/azure/data/by-lun/0 (clusterfab.clouds.azure
.hostvars.CONTROLLER_STATE_DEVICE)."""


@dataclass(frozen=True, kw_only=True)
class AzureSlurmVaultArgs:
    """Inputs of AzureSlurmVault."""

    resource_group_name: pulumi.Input[str]
    location: str
    vault_name: pulumi.Input[str]
    """3-24 characters, unique in Azure (a deleted vault keeps its name for `soft_delete_days`)."""
    tenant_id: pulumi.Input[str]
    subscription_id: pulumi.Input[str]
    """The subscription the role definition is named in."""
    subnet_id: pulumi.Input[str]
    """The controller subnet (with the Microsoft.KeyVault service endpoint): the only network admitted."""
    controller_principal_id: pulumi.Input[str]
    """The controller identity's object id: the only principal with a role on the vault."""
    soft_delete_days: int = 7
    protect: bool = True
    """Purge protection on (a deleted vault stays recoverable for `soft_delete_days`, and cannot be purged
    sooner), and Pulumi refuses to delete the vault."""
    tags: Mapping[str, str] = field(default_factory=dict)


def _vault_problems(args: AzureSlurmVaultArgs) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if isinstance(args.vault_name, str) and not _VAULT_NAME.fullmatch(args.vault_name):
        problems.append(
            ("vault_name", f"'{args.vault_name}' is not a Key Vault name (3-24 letters, digits, dashes)")
        )
    low, high = SOFT_DELETE_DAYS
    if not low <= args.soft_delete_days <= high:
        problems.append(("soft_delete_days", f"must be {low} to {high}"))
    return problems


class AzureSlurmVault(pulumi.ComponentResource):
    """The Key Vault of the munge key, readable by the controller alone and from its subnet alone."""

    vault_id: pulumi.Output[str]
    vault_uri: pulumi.Output[str]
    """https://<name>.vault.azure.net/: where the controller reads and writes the secret."""

    def __init__(
        self, name: str, args: AzureSlurmVaultArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(VAULT_TYPE, _vault_problems(args))
        super().__init__(VAULT_TYPE, name, None, opts)
        vault = keyvault.Vault(
            child(name, "vault"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            vault_name=args.vault_name,
            properties=keyvault.VaultPropertiesArgs(
                tenant_id=args.tenant_id,
                sku=keyvault.SkuArgs(family="A", name=keyvault.SkuName.STANDARD),
                # Azure RBAC, not access policies: the one role assignment below is all the access.
                enable_rbac_authorization=True,
                soft_delete_retention_in_days=args.soft_delete_days,
                enable_purge_protection=True if args.protect else None,
                enabled_for_deployment=False,
                enabled_for_disk_encryption=False,
                enabled_for_template_deployment=False,
                # Deny by default, the controller subnet only, and no trusted-service exception.
                network_acls=keyvault.NetworkRuleSetArgs(
                    default_action=keyvault.NetworkRuleAction.DENY,
                    bypass=keyvault.NetworkRuleBypassOptions.NONE,
                    virtual_network_rules=[keyvault.VirtualNetworkRuleArgs(id=args.subnet_id)],
                ),
            ),
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        grant(
            child(name, "controller-secrets"),
            owner=self,
            subscription_id=args.subscription_id,
            role=KEY_VAULT_SECRETS_OFFICER,
            scope=vault.id,
            principal_id=args.controller_principal_id,
            principal_type="ServicePrincipal",
            description=f"clusterfab {name}: the Slurm controller keeps the munge key",
        )
        self.vault_id = vault.id
        self.vault_uri = vault.properties.apply(lambda p: p.vault_uri or "")
        self.register_outputs({"vault_id": self.vault_id, "vault_uri": self.vault_uri})


@dataclass(frozen=True, kw_only=True)
class AzureSlurmHost:
    """What a controller or login VM is: its size, name, boot and identity."""

    vm_size: str
    computer_name: str
    """The host name (slurmctld and slurmdbd check the controller's `hostname -s`)."""
    identity_id: pulumi.Input[str]
    launcher: str
    """Custom data, run once by cloud-init: the per-boot launcher of the user data (never changes)."""
    boot_script: pulumi.Input[str]
    """User data: the host's boot script, which changes in place."""
    private_ip: str | None = None
    """A fixed private address in the subnet; None: Azure's choice."""


@dataclass(frozen=True, kw_only=True)
class AzureEntraLogin:
    """Microsoft Entra ID sign-in to the controller (what the Bastion's SSH tunnel signs in with) and the
    one principal given administrator login there: the deployer.

    Sign-in needs the VM's system-assigned identity, which the instance metadata service then issues tokens
    for by default: the VM's tag IDENTITY_TAG names the client id of its own identity, which the boot script,
    the node programs and the report upload name in their token requests; Prometheus' discovery names none
    (its configuration is written before the identity exists), so the system-assigned identity gets the
    Reader on the resource group that discovery needs, and nothing else."""

    subscription_id: pulumi.Input[str]
    principal_id: pulumi.Input[str]
    """The deployer (Virtual Machine Administrator Login on the controller)."""
    principal_type: str
    own_client_id: pulumi.Input[str]
    """The client id of the controller's user-assigned identity."""
    resource_group_id: pulumi.Input[str]
    """The stack's resource group: the system-assigned identity's Reader scope."""
    operators: Sequence[tuple[str, str]] = ()
    """Other people who open the dashboard: (object id, principal type: User, Group or ServicePrincipal),
    each given Virtual Machine User Login on the controller (a regular user's sign-in, no sudo)."""


@dataclass(frozen=True, kw_only=True)
class AzureSlurmControllerArgs:
    """Inputs of AzureSlurmController; the catalog's defaults: Standard_D16s_v5 and Standard_D8s_v5."""

    cluster: str
    resource_group_name: pulumi.Input[str]
    location: str
    zone: str | None = None
    subnet_id: pulumi.Input[str]
    """The controller subnet."""
    image: AzureImage
    ssh_public_key: pulumi.Input[str]
    admin_username: str = "clusterfab"
    controller: AzureSlurmHost
    logins: tuple[AzureSlurmHost, ...] = ()
    os_disk_gib: int = 64
    disk_type: str = "Premium_LRS"
    state_disk_gib: int = 100
    protect: bool = True
    """Keep the state disk (slurmctld's state, the accounting database) from deletion and replacement."""
    entra_login: AzureEntraLogin | None = None
    """Sign-in to the controller with Microsoft Entra ID; None: no one signs in (Run Command only)."""
    tags: Mapping[str, str] = field(default_factory=dict)


def _problems(args: AzureSlurmControllerArgs) -> list[tuple[str, str]]:
    problems = slurm_controller_problems("state_disk_gib", args.state_disk_gib, len(args.logins))
    if args.controller.private_ip is None:
        problems.append(("controller.private_ip", "slurm.conf names the controller's address: give it"))
    problems += username_problems(args.admin_username)
    login = args.entra_login
    for index, (principal, kind) in enumerate(login.operators if login is not None else ()):
        if kind not in PRINCIPAL_TYPES:
            problems.append(
                (f"entra_login.operators[{index}]", f"'{kind}' is not one of {', '.join(PRINCIPAL_TYPES)}")
            )
        if not _OBJECT_ID.fullmatch(principal):
            problems.append(
                (f"entra_login.operators[{index}]", f"'{principal}' is not an object id (a GUID)")
            )
    return problems


class AzureSlurmController(pulumi.ComponentResource):
    """The controller VM with its state disk, and the login VMs."""

    controller_id: pulumi.Output[str]
    """The controller VM's resource id (what Run Command names)."""
    login_ids: pulumi.Output[list[str]]
    state_disk_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: AzureSlurmControllerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(CONTROLLER_TYPE, _problems(args))
        super().__init__(CONTROLLER_TYPE, name, None, opts)
        self._name, self._args = name, args
        disk = compute.Disk(
            child(name, "state"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            zones=[args.zone] if args.zone else None,
            sku=compute.DiskSkuArgs(name=args.disk_type),
            creation_data=compute.CreationDataArgs(create_option=compute.DiskCreateOption.EMPTY),
            disk_size_gb=args.state_disk_gib,
            # Managed disks are encrypted at rest with platform keys; the VM's encryption at host covers
            # its caches too.
            public_network_access=compute.PublicNetworkAccess.DISABLED,
            network_access_policy=compute.NetworkAccessPolicy.DENY_ALL,
            tags={**args.tags, SLURM_ROLE_TAG: "controller"},
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        controller = self._vm("controller", args.controller, disk)
        if args.entra_login is not None:
            self._entra_login(controller, args.entra_login)
        logins = [self._vm(f"login-{index}", host, None) for index, host in enumerate(args.logins)]
        self.controller_id = controller.id
        self.login_ids = pulumi.Output.all(*[vm.id for vm in logins]).apply(list)
        self.state_disk_id = disk.id
        self.register_outputs(
            {"controller_id": self.controller_id, "login_ids": self.login_ids, "state_disk_id": disk.id}
        )

    def _vm(self, role: str, host: AzureSlurmHost, state: compute.Disk | None) -> compute.VirtualMachine:
        name, args = self._name, self._args
        kind = "controller" if state is not None else "login"
        nic = self._nic(role, host, kind)
        return compute.VirtualMachine(
            child(name, role),
            resource_group_name=args.resource_group_name,
            location=args.location,
            zones=[args.zone] if args.zone else None,
            hardware_profile=compute.HardwareProfileArgs(vm_size=host.vm_size),
            storage_profile=self._storage_profile(state),
            os_profile=self._os_profile(host),
            network_profile=compute.NetworkProfileArgs(
                network_interfaces=[compute.NetworkInterfaceReferenceArgs(id=nic.id, primary=True)]
            ),
            # The host encrypts temp disks and OS / data disk caches (encryption at host, as the nodes').
            security_profile=compute.SecurityProfileArgs(encryption_at_host=True),
            identity=compute.VirtualMachineIdentityArgs(
                type=self._identity_type(state is not None), user_assigned_identities=[host.identity_id]
            ),
            user_data=pulumi.Output.from_input(host.boot_script).apply(encoded),
            tags={**args.tags, SLURM_ROLE_TAG: kind, **self._identity_tag(state is not None)},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _identity_type(self, controller: bool) -> compute.ResourceIdentityType:
        """Entra ID sign-in needs the VM's system-assigned identity; the VM's own work uses the user-assigned
        one, which its tag names (AzureEntraLogin)."""
        if controller and self._args.entra_login is not None:
            return compute.ResourceIdentityType.SYSTEM_ASSIGNED_USER_ASSIGNED
        return compute.ResourceIdentityType.USER_ASSIGNED

    def _identity_tag(self, controller: bool) -> dict[str, pulumi.Input[str]]:
        login = self._args.entra_login
        return {IDENTITY_TAG: login.own_client_id} if controller and login is not None else {}

    def _entra_login(self, vm: compute.VirtualMachine, login: AzureEntraLogin) -> None:
        """The AADSSHLoginForLinux extension (publisher Microsoft.Azure.ActiveDirectory, handler 1.0 - learn.
        microsoft.com/entra/identity/devices/howto-vm-sign-in-azure-ad-linux) and Virtual Machine
        Administrator Login on this VM alone for the deployer, who opens `clusterfab dashboard`; Virtual
        Machine User Login on it for each operator the stack names."""
        args = self._args
        compute.VirtualMachineExtension(
            child(self._name, "entra-login"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            vm_name=vm.name,
            vm_extension_name=ENTRA_LOGIN_EXTENSION,
            publisher="Microsoft.Azure.ActiveDirectory",
            type=ENTRA_LOGIN_EXTENSION,
            type_handler_version="1.0",
            auto_upgrade_minor_version=True,
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        grant(
            child(self._name, "admin-login"),
            owner=self,
            subscription_id=login.subscription_id,
            role=VIRTUAL_MACHINE_ADMINISTRATOR_LOGIN,
            scope=vm.id,
            principal_id=login.principal_id,
            principal_type=login.principal_type,
            description=f"clusterfab {self._name}: the deployer signs in to the controller (dashboard)",
        )
        for index, (principal, kind) in enumerate(login.operators):
            grant(
                child(self._name, f"operator-login-{index}"),
                owner=self,
                subscription_id=login.subscription_id,
                role=VIRTUAL_MACHINE_USER_LOGIN,
                scope=vm.id,
                principal_id=principal,
                principal_type=kind,
                description=f"clusterfab {self._name}: an operator signs in to the controller (dashboard)",
            )
        system = vm.identity.apply(lambda identity: identity.principal_id if identity else "")
        grant(
            child(self._name, "system-reader"),
            owner=self,
            subscription_id=login.subscription_id,
            role=READER,
            scope=login.resource_group_id,
            principal_id=system,
            principal_type="ServicePrincipal",
            description=f"clusterfab {self._name}: Prometheus discovers the nodes with the default identity",
        )

    def _nic(self, role: str, host: AzureSlurmHost, kind: str) -> network.NetworkInterface:
        """One accelerated NIC in the controller subnet, without a public IP configuration."""
        args = self._args
        return network.NetworkInterface(
            child(self._name, f"{role}-nic"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            # Dsv5 sizes support accelerated networking (the size page's feature table).
            enable_accelerated_networking=True,
            ip_configurations=[
                # Dictionaries: a subnet referenced by id alone (SubnetArgs would add a subnet's policy
                # defaults to the reference).
                network.NetworkInterfaceIPConfigurationArgsDict(
                    name="primary",
                    primary=True,
                    subnet=network.SubnetArgsDict(id=args.subnet_id),
                    private_ip_allocation_method="Static" if host.private_ip else "Dynamic",
                    private_ip_address=host.private_ip,
                )
            ],
            tags={**args.tags, SLURM_ROLE_TAG: kind},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _storage_profile(self, state: compute.Disk | None) -> compute.StorageProfileArgs:
        """The image's OS disk (deleted with the VM) and, on the controller, the state disk at LUN 0."""
        args = self._args
        data_disks = (
            [
                compute.DataDiskArgs(
                    lun=STATE_LUN,
                    create_option=compute.DiskCreateOptionTypes.ATTACH,
                    managed_disk=compute.ManagedDiskParametersArgs(id=state.id),
                    # The disk outlives the VM: a replaced controller finds its state on it.
                    delete_option=compute.DiskDeleteOptionTypes.DETACH,
                )
            ]
            if state is not None
            else None
        )
        return compute.StorageProfileArgs(
            image_reference=compute.ImageReferenceArgs(
                publisher=args.image.publisher,
                offer=args.image.offer,
                sku=args.image.sku,
                version=args.image.version,
            ),
            os_disk=compute.OSDiskArgs(
                create_option=compute.DiskCreateOptionTypes.FROM_IMAGE,
                caching=compute.CachingTypes.READ_WRITE,
                disk_size_gb=args.os_disk_gib,
                managed_disk=compute.ManagedDiskParametersArgs(storage_account_type=args.disk_type),
                delete_option=compute.DiskDeleteOptionTypes.DELETE,
            ),
            data_disks=data_disks,
        )

    def _os_profile(self, host: AzureSlurmHost) -> compute.OSProfileArgs:
        user = self._args.admin_username
        return compute.OSProfileArgs(
            computer_name=host.computer_name,
            admin_username=user,
            custom_data=encoded(host.launcher),
            linux_configuration=linux_login(user, self._args.ssh_public_key),
        )
