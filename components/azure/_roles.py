"""Role assignments the Azure components make: built-in roles, each scoped to one blob container, one
vault, one scale set, the stack's own resource group (Reader, for the Slurm controller's node sync and
node discovery), or the one Key Vault secret the blueprint names for the SMTP password.

Role definition ids are Azure's built-in ids, the same in every tenant (learn.microsoft.com/azure/
role-based-access-control/built-in-roles/storage, .../general and .../compute, read 2026-11-29). A
scope is always a resource id that the caller's stack made (a container, the stack's resource group) or
the one secret the blueprint names, never a subscription, a management group or a wildcard.
"""

from __future__ import annotations

from typing import Literal, get_args

import pulumi
from pulumi_azure_native import authorization

PrincipalType = Literal["User", "ServicePrincipal", "Group"]
"""The principal types a role assignment names (roleAssignments' principalType); Azure refuses an assignment
whose type is not the principal's ("UnmatchedPrincipalType")."""
PRINCIPAL_TYPES: tuple[str, ...] = get_args(PrincipalType)

STORAGE_BLOB_DATA_READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
"""Storage Blob Data Reader: read and list blobs (data actions .../containers/blobs/read) and nothing
else; the nodes' role on the bundle container."""
STORAGE_BLOB_DATA_CONTRIBUTOR = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
"""Storage Blob Data Contributor: read, write and delete blobs; the deploy identity's role on the bundle
container, which it uploads to with Entra ID once shared keys are off."""
READER = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
"""Reader: `*/read` on the control plane, no data actions (learn.microsoft.com/azure/
role-based-access-control/built-in-roles/general#reader); what azure_sd_configs needs to list VMs, scale
set VMs and their network interfaces."""
VIRTUAL_MACHINE_CONTRIBUTOR = "9980e02c-c2be-4d73-94e8-173b1dc7cf3c"
"""Virtual Machine Contributor: manage virtual machines and scale sets (Microsoft.Compute/
virtualMachineScaleSets/*), not the networks or storage they use (learn.microsoft.com/azure/
role-based-access-control/built-in-roles/compute#virtual-machine-contributor); the Slurm controller's role on
each Slurm scale set, whose failed VMs its node sync deletes and whose capacity it restores."""
KEY_VAULT_SECRETS_USER = "4633458b-17de-408a-b874-0445c86b69e6"
"""Key Vault Secrets User: read secret contents (Microsoft.KeyVault/vaults/secrets/getSecret/action and
readMetadata), no writes (learn.microsoft.com/azure/role-based-access-control/built-in-roles/security#key-
vault-secrets-user); the controller's role on the SMTP password's secret."""
VIRTUAL_MACHINE_ADMINISTRATOR_LOGIN = "1c0163c0-47e6-4577-8991-ea5c82e286e4"
"""Virtual Machine Administrator Login: sign in to a VM with Microsoft Entra ID as an administrator (data
action Microsoft.Compute/virtualMachines/loginAsAdmin/action; learn.microsoft.com/azure/
role-based-access-control/built-in-roles/compute#virtual-machine-administrator-login); the deployer's role
on the Slurm controller VM, for the dashboard's tunnel."""
VIRTUAL_MACHINE_USER_LOGIN = "fb879df8-f326-4884-b1cf-06f3ad86be52"
"""Virtual Machine User Login: sign in to a VM with Microsoft Entra ID as a regular user (data action
Microsoft.Compute/virtualMachines/login/action; the same page); the operators' role on the Slurm controller
VM, enough for the dashboard's tunnel to Grafana's loopback port."""
GROUP_MARK = "/resourceGroups/"
"""What a resource group's id contains (and a subscription's does not)."""
CONTAINER_MARK = "/blobServices/default/containers/"
VAULT_MARK = "/providers/Microsoft.KeyVault/vaults/"
SECRET_MARK = "/secrets/"
"""What a Key Vault secret's resource id contains, in this order."""
"""What a blob container's resource id contains (and a storage account's, a group's or a subscription's
does not)."""


def role_definition_id(subscription_id: pulumi.Input[str], role: str) -> pulumi.Output[str]:
    """The subscription-scoped id of a built-in role, as role assignments name it."""
    return pulumi.Output.concat(
        "/subscriptions/", subscription_id, "/providers/Microsoft.Authorization/roleDefinitions/", role
    )


def container_scope_problems(field_name: str, scope: pulumi.Input[str]) -> list[tuple[str, str]]:
    """A known scope that is not one blob container's id (an Output is checked where it is made)."""
    if isinstance(scope, str) and (CONTAINER_MARK not in scope or "*" in scope):
        return [(field_name, f"'{scope}' is not a blob container's resource id")]
    return []


def grant(
    logical: str,
    *,
    owner: pulumi.Resource,
    subscription_id: pulumi.Input[str],
    role: str,
    scope: pulumi.Input[str],
    principal_id: pulumi.Input[str],
    principal_type: str | None,
    description: str,
) -> authorization.RoleAssignment:
    """One built-in role on one resource the caller's stack made (a container, a vault, the stack's
    resource group) or one secret the blueprint names; the assignment's name is a GUID the provider
    generates."""
    return authorization.RoleAssignment(
        logical,
        scope=scope,
        role_definition_id=role_definition_id(subscription_id, role),
        principal_id=principal_id,
        # A managed identity's assignment names its type, so Azure need not find the new principal in
        # Entra ID first ("PrincipalNotFound" while it replicates) - learn.microsoft.com/azure/
        # role-based-access-control/role-assignments-template#new-service-principal.
        principal_type=principal_type,
        description=description,
        opts=pulumi.ResourceOptions(parent=owner),
    )


def secret_scope_problems(field_name: str, scope: str) -> list[tuple[str, str]]:
    """A scope that is not one Key Vault secret's id: .../providers/Microsoft.KeyVault/vaults/V/secrets/N,
    nothing after the name."""
    vault, _, rest = scope.partition(VAULT_MARK)
    name, secret, tail = rest.partition(SECRET_MARK)
    if not (vault and name and "/" not in name and secret and tail and "/" not in tail) or "*" in scope:
        return [(field_name, f"'{scope}' is not a Key Vault secret's resource id")]
    return []


def group_scope_problems(field_name: str, scope: pulumi.Input[str]) -> list[tuple[str, str]]:
    """A known scope that is not one resource group's id: /subscriptions/S/resourceGroups/G exactly."""
    if isinstance(scope, str):
        parts = scope.strip("/").split("/")
        if len(parts) != 4 or f"/{parts[2]}/" != GROUP_MARK or "*" in scope:
            return [(field_name, f"'{scope}' is not a resource group's id")]
    return []
