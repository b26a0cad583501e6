"""Where an Azure cluster's components are built: the stack's resource group, its network, the cluster
bucket and the nodes' identity, and who deploys them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure
from cluster import Cluster

from clusterfab.core.vocab import CONFIG_NAMESPACE
from clusterfab.spec import ClusterSpec
from components.azure.bucket import AzureClusterBucket, PrincipalType
from components.azure.identity import AzureNodeIdentity
from components.azure.network import AzureNetwork

DEPLOYER_RANGES_KEY = "deployerRanges"
"""Stack config `clusterfab:deployerRanges`: the public addresses (CIDRs) `pulumi up` runs from. The
cluster bucket's firewall denies everyone else, and the program uploads the playbook bundle through it."""
DEPLOYER_TYPE_KEY = "deployerPrincipalType"
"""Stack config `clusterfab:deployerPrincipalType`: User (default: `az login`) or ServicePrincipal (CI).
Azure refuses a role assignment whose principal type is not the principal's."""


@dataclass(frozen=True)
class Deployer:
    """Who runs the program: the subscription, the principal that uploads the bundle, and from where."""

    subscription_id: pulumi.Output[str]
    object_id: pulumi.Output[str]
    principal_type: PrincipalType
    ranges: Sequence[str]


def deployer(provider: azure.Provider) -> Deployer:
    config = pulumi.Config(CONFIG_NAMESPACE)
    client = azure.authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(provider=provider))
    kind = config.get(DEPLOYER_TYPE_KEY) or "User"
    if kind not in ("User", "ServicePrincipal"):
        raise ValueError(f"{CONFIG_NAMESPACE}:{DEPLOYER_TYPE_KEY} is {kind!r}: User or ServicePrincipal")
    return Deployer(
        subscription_id=client.subscription_id,
        object_id=client.object_id,
        principal_type="User" if kind == "User" else "ServicePrincipal",
        ranges=tuple(config.get_object(DEPLOYER_RANGES_KEY) or ()),
    )


@dataclass(frozen=True)
class Site:
    """The provider (in `opts`), the resource group every resource of the stack lives in, its network,
    the cluster bucket and the identity the nodes act as."""

    cluster: Cluster
    opts: pulumi.ResourceOptions
    resource_group_name: pulumi.Output[str]
    resource_group_id: pulumi.Output[str]
    network: AzureNetwork
    bucket: AzureClusterBucket
    identity: AzureNodeIdentity
    admin_key: pulumi.Output[str]
    """The administrator's SSH public key, whose private half nobody holds (components.azure.admin_key)."""

    @property
    def spec(self) -> ClusterSpec:
        return self.cluster.spec

    @property
    def bucket_name(self) -> pulumi.Output[str]:
        """The cluster bucket as the stack outputs and the nodes' boot scripts name it:
        <storage account>/<container> (clusterfab.clouds.azure.store reads that form)."""
        return pulumi.Output.concat(self.bucket.account_name, "/", self.bucket.container_name)
