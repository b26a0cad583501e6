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

from components._errors import check_inputs
from components._naming import child
from components.azure._roles import READER, grant, group_scope_problems

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
        grant(
            child(name, "discovery-reader"),
            owner=self,
            subscription_id=args.subscription_id,
            role=READER,
            scope=args.resource_group_id,
            principal_id=args.principal_id,
            principal_type="ServicePrincipal",
            description=f"clusterfab {name}: Prometheus discovers the cluster's nodes",
        )
        self.register_outputs({})
