"""The nodes' identity: one user-assigned managed identity that may read the bundle container, nothing
else.

A user-assigned identity (not a scale set's system-assigned one) exists before the scale sets, so its
role assignment is in place when the first node boots, and every scale set of a node group shares it.
Its one role, Storage Blob Data Reader, is scoped to the container's resource id exactly: never a
storage account, resource group, subscription or wildcard.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
from pulumi_azure_native import managedidentity

from components._errors import check_inputs
from components._naming import child
from components.azure._roles import (
    STORAGE_BLOB_DATA_CONTRIBUTOR,
    STORAGE_BLOB_DATA_READER,
    container_scope_problems,
    grant,
)

TYPE = "clusterfab:identity:AzureNodeIdentity"


@dataclass(frozen=True, kw_only=True)
class AzureNodeIdentityArgs:
    """Inputs of AzureNodeIdentity."""

    resource_group_name: pulumi.Input[str]
    location: str
    subscription_id: pulumi.Input[str]
    """The subscription the role definition is named in."""
    bundle_container_id: pulumi.Input[str]
    """The bundle container's resource id (AzureClusterBucket.container_id): the role's only scope."""
    verdict_container_id: pulumi.Input[str] | None = None
    """The container the nodes write their boot verdicts to (AzureClusterBucket.verdict_container_id):
    Storage Blob Data Contributor there alone; None: the nodes write nothing."""
    tags: Mapping[str, str] = field(default_factory=dict)


class AzureNodeIdentity(pulumi.ComponentResource):
    """A user-assigned identity with Storage Blob Data Reader on the bundle container."""

    identity_id: pulumi.Output[str]
    """The identity's resource id: what a scale set's `identity.userAssignedIdentities` lists."""
    principal_id: pulumi.Output[str]
    """Its object id in Entra ID (what role assignments name)."""
    client_id: pulumi.Output[str]
    """Its client id: what a node asks IMDS for a token with (`client_id=`) when it has more than one."""

    def __init__(
        self, name: str, args: AzureNodeIdentityArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        problems = container_scope_problems("bundle_container_id", args.bundle_container_id)
        if args.verdict_container_id is not None:
            problems += container_scope_problems("verdict_container_id", args.verdict_container_id)
        check_inputs(TYPE, problems)
        super().__init__(TYPE, name, None, opts)
        identity = managedidentity.UserAssignedIdentity(
            child(name, "identity"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        grant(
            child(name, "bundle-reader"),
            owner=self,
            subscription_id=args.subscription_id,
            role=STORAGE_BLOB_DATA_READER,
            scope=args.bundle_container_id,
            principal_id=identity.principal_id,
            principal_type="ServicePrincipal",
            description=f"clusterfab {name}: nodes read their bootstrap bundle",
        )
        if args.verdict_container_id is not None:
            grant(
                child(name, "verdict-writer"),
                owner=self,
                subscription_id=args.subscription_id,
                role=STORAGE_BLOB_DATA_CONTRIBUTOR,
                scope=args.verdict_container_id,
                principal_id=identity.principal_id,
                principal_type="ServicePrincipal",
                description=f"clusterfab {name}: nodes record their boot verdicts",
            )
        self.identity_id = identity.id
        self.principal_id = identity.principal_id
        self.client_id = identity.client_id
        self.register_outputs(
            {
                "identity_id": identity.id,
                "principal_id": identity.principal_id,
                "client_id": identity.client_id,
            }
        )
