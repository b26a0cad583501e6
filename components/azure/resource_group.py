"""The cluster's resource group: every other Azure component creates its resources in it.

The caller creates it (this component) and passes its name to the others, so each component stays
usable in a resource group a platform team already has. Deleting a resource group deletes everything
in it (learn.microsoft.com/azure/azure-resource-manager/management/delete-resource-group): `protect`
guards it in production.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
from pulumi_azure_native import resources

from components._naming import child

TYPE = "clusterfab:core:AzureResourceGroup"


@dataclass(frozen=True, kw_only=True)
class AzureResourceGroupArgs:
    """Inputs of AzureResourceGroup."""

    location: str
    """The Azure region (e.g. southcentralus): the group's metadata lives there."""
    name: str | None = None
    """The group's name (1-90 letters, digits, `-_.()`), unique in the subscription; None: auto-named."""
    protect: bool = False
    """Protect the group from deletion (it takes every resource of the cluster with it)."""
    tags: Mapping[str, str] = field(default_factory=dict)


class AzureResourceGroup(pulumi.ComponentResource):
    """One resource group, named by the caller (or auto-named: `<name>-rg` and a random suffix)."""

    resource_group_name: pulumi.Output[str]
    """The group's name: every other component's `resource_group_name`."""
    resource_group_id: pulumi.Output[str]
    """/subscriptions/S/resourceGroups/N."""

    def __init__(
        self, name: str, args: AzureResourceGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        group = resources.ResourceGroup(
            child(name, "rg"),
            resource_group_name=args.name,
            location=args.location,
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        self.resource_group_name = group.name
        self.resource_group_id = group.id
        self.register_outputs({"resource_group_name": group.name, "resource_group_id": group.id})
