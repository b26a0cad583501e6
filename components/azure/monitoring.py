"""What the host that runs Prometheus needs on Azure to find the cluster's nodes: Reader on the stack's
resource group for its managed identity, nothing wider.

Prometheus' azure_sd_configs lists the subscription's VMs, scale set VMs and their network interfaces
(prometheus.io/docs/prometheus/2.45/configuration/configuration/#azure_sd_config). Every node, scale set
and network interface of the stack lives in its one resource group, so Reader there lets it read them all
and nothing of the subscription outside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization

from components._errors import check_inputs
from components._naming import child
from components.azure._roles import READER, group_scope_problems, role_definition_id

TYPE = "clusterfab:monitoring:AzureMonitoringAccess"


@dataclass(frozen=True, kw_only=True)
class AzureMonitoringAccessArgs:
    """Inputs of AzureMonitoringAccess."""

    subscription_id: pulumi.Input[str]
    """The subscription the role definition is named in."""
    resource_group_id: pulumi.Input[str]
    """The stack's resource group (/subscriptions/S/resourceGroups/G): the role's only scope."""
    principal_id: pulumi.Input[str]
    """The monitoring host's user-assigned identity (its object id)."""


class AzureMonitoringAccess(pulumi.ComponentResource):
    """Reader on one resource group for the monitoring host's identity."""

    def __init__(
        self, name: str, args: AzureMonitoringAccessArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(TYPE, group_scope_problems("resource_group_id", args.resource_group_id))
        super().__init__(TYPE, name, None, opts)
        authorization.RoleAssignment(
            child(name, "discovery-reader"),
            scope=args.resource_group_id,
            role_definition_id=role_definition_id(args.subscription_id, READER),
            principal_id=args.principal_id,
            # A managed identity's assignment names its type, so Azure need not find the new principal
            # in Entra ID first (see _roles.grant_on_container).
            principal_type="ServicePrincipal",
            description=f"clusterfab {name}: Prometheus discovers the cluster's nodes",
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({})
