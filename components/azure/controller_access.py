"""What the Slurm controller's identity needs on Azure besides the munge key's vault: Reader on the stack's
resource group, and Virtual Machine Contributor on each Slurm scale set, nothing wider.

- Reader: the node sync lists the group's scale sets and their VMs, and Prometheus' azure_sd_configs (when
  the controller hosts monitoring) lists the VMs, scale set VMs and their network interfaces
  (prometheus.io/docs/prometheus/2.45/configuration/configuration/#azure_sd_config). Every node, scale set
  and network interface of the stack lives in its one resource group, so Reader there reads them all and
  nothing of the subscription outside it. One assignment serves both (Azure refuses a second assignment of
  one role to one principal at one scope).
- Virtual Machine Contributor on a scale set: the node sync deletes a failed VM from it and raises its
  capacity back to its fabric unit's size (Microsoft.Compute/virtualMachineScaleSets/*), on that scale set
  alone: not the controller, the login VMs or another cluster's.
- Key Vault Secrets User on one secret of the operator's, when Alertmanager on the controller logs in to a
  mail relay: read that secret's value (Microsoft.KeyVault/vaults/secrets/getSecret/action), on that secret
  alone (Key Vault assigns roles on a single secret: learn.microsoft.com/azure/key-vault/general/
  rbac-guide), never the vault.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi

from components._errors import check_inputs
from components._naming import child
from components.azure._roles import (
    KEY_VAULT_SECRETS_USER,
    READER,
    VIRTUAL_MACHINE_CONTRIBUTOR,
    grant,
    group_scope_problems,
    secret_scope_problems,
)

TYPE = "clusterfab:slurm:AzureControllerAccess"
SCALE_SET_MARK = "/providers/Microsoft.Compute/virtualMachineScaleSets/"
"""What a scale set's resource id contains (and a resource group's or a subscription's does not)."""


@dataclass(frozen=True, kw_only=True)
class AzureControllerAccessArgs:
    """Inputs of AzureControllerAccess."""

    subscription_id: pulumi.Input[str]
    """The subscription the role definitions are named in."""
    resource_group_id: pulumi.Input[str]
    """The stack's resource group (/subscriptions/S/resourceGroups/G): Reader's only scope."""
    scale_sets: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    """Each Slurm fabric unit's scale set id: Virtual Machine Contributor's scopes."""
    principal_id: pulumi.Input[str]
    """The controller's user-assigned identity (its object id)."""
    smtp_secret_id: str | None = None
    """The Key Vault secret holding the SMTP password (its resource id): Key Vault Secrets User's scope."""


def _problems(args: AzureControllerAccessArgs) -> list[tuple[str, str]]:
    problems = group_scope_problems("resource_group_id", args.resource_group_id)
    for unit, scope in sorted(args.scale_sets.items()):
        if isinstance(scope, str) and (SCALE_SET_MARK not in scope or "*" in scope):
            problems.append((f"scale_sets.{unit}", f"'{scope}' is not a scale set's resource id"))
    if args.smtp_secret_id is not None:
        problems += secret_scope_problems("smtp_secret_id", args.smtp_secret_id)
    return problems


class AzureControllerAccess(pulumi.ComponentResource):
    """Reader on one resource group, Virtual Machine Contributor on each named scale set and Key Vault
    Secrets User on the SMTP password's secret, for the controller's identity."""

    def __init__(
        self, name: str, args: AzureControllerAccessArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        grant(
            child(name, "reader"),
            owner=self,
            subscription_id=args.subscription_id,
            role=READER,
            scope=args.resource_group_id,
            principal_id=args.principal_id,
            principal_type="ServicePrincipal",
            description=f"clusterfab {name}: the node sync lists the scale sets, Prometheus the nodes",
        )
        for unit, scale_set in sorted(args.scale_sets.items()):
            grant(
                child(name, unit),
                owner=self,
                subscription_id=args.subscription_id,
                role=VIRTUAL_MACHINE_CONTRIBUTOR,
                scope=scale_set,
                principal_id=args.principal_id,
                principal_type="ServicePrincipal",
                description=f"clusterfab {name}: the node sync replaces failed VMs of fabric unit {unit}",
            )
        if args.smtp_secret_id is not None:
            grant(
                child(name, "smtp-password"),
                owner=self,
                subscription_id=args.subscription_id,
                role=KEY_VAULT_SECRETS_USER,
                scope=args.smtp_secret_id,
                principal_id=args.principal_id,
                principal_type="ServicePrincipal",
                description=f"clusterfab {name}: Alertmanager logs in to the mail relay",
            )
        self.register_outputs({})
