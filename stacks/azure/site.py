"""Where an Azure cluster's components are built: the stack's resource group, its network, the cluster
bucket and the nodes' identity, and who deploys them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_azure_native as azure
from cluster import Cluster, SchedulerRealized

from clusterfab.clouds.azure import access
from clusterfab.clouds.azure.discovery import SUBSCRIPTION_SETTING
from clusterfab.core.vocab import CONFIG_NAMESPACE
from clusterfab.monitoring.host import RenderedArchive
from clusterfab.spec import ClusterSpec, NodeGroup
from components._contracts import MountTarget
from components.azure._roles import PrincipalType
from components.azure.bucket import AzureClusterBucket
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
    tenant_id: pulumi.Output[str]
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
        tenant_id=client.tenant_id,
        object_id=client.object_id,
        principal_type="User" if kind == "User" else "ServicePrincipal",
        ranges=tuple(config.get_object(DEPLOYER_RANGES_KEY) or ()),
    )


def operators() -> tuple[tuple[str, str], ...]:
    """Stack config `clusterfab:operators`: who else signs in to the Slurm controller for the dashboard
    (clusterfab.clouds.azure.access.operators); a malformed entry stops the program before anything is
    made."""
    try:
        return access.operators(pulumi.Config(CONFIG_NAMESPACE).get_object(access.OPERATORS_SETTING))
    except ValueError as error:
        raise pulumi.RunError(str(error)) from None


def same_subscription(named: str | None, who: Deployer) -> None:
    """Fail the deployment when the stack's azure-native:subscriptionId (which Prometheus' discovery lists)
    is not the subscription the credentials deploy to: an explicit provider reads no stack setting of its
    own, so the two could differ, and discovery would find no node."""
    if named is None:
        return

    def check(actual: str) -> str:
        if actual.lower() != named.lower():
            raise pulumi.RunError(
                f"the stack setting {SUBSCRIPTION_SETTING} is {named}, but the Azure credentials deploy to "
                f"subscription {actual}: `az account set --subscription {named}`, or correct the setting"
            )
        return actual

    who.subscription_id.apply(check)


@dataclass(frozen=True)
class AzureScheduler:
    """One scheduler kind on Azure (the realizer's table holds one per kind it realizes)."""

    node_vars: Callable[[Cluster, NodeGroup], dict[str, Any]]
    """gpu_node.yml's vars of the scheduler's part for a node group."""
    files: Callable[[Cluster], RenderedArchive | None]
    """The files its hosts fetch from the cluster bucket (the bucket uploads them), if it has hosts."""
    realize: Callable[[Site, list[MountTarget], RenderedArchive], SchedulerRealized]
    """Its own hosts, once the node groups and the file systems (for login nodes) exist."""


def _no_hosts(site: Site, mounts: list[MountTarget], files: RenderedArchive) -> SchedulerRealized:
    raise AssertionError("a scheduler without files builds no hosts")


WITHOUT_SCHEDULER = AzureScheduler(
    node_vars=lambda _cluster, _group: {}, files=lambda _cluster: None, realize=_no_hosts
)
"""The node groups alone."""


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
    deployer: Deployer
    scheduler: AzureScheduler
    scale_sets: Mapping[str, pulumi.Output[str]] = field(default_factory=dict)
    """Each fabric unit's scale set id, once the node groups exist (the scheduler's hosts are made after
    them: the Slurm controller's node sync gets a role on each)."""

    @property
    def spec(self) -> ClusterSpec:
        return self.cluster.spec

    @property
    def bucket_name(self) -> pulumi.Output[str]:
        """The cluster bucket as the stack outputs and the nodes' boot scripts name it:
        <storage account>/<container> (clusterfab.clouds.azure.store reads that form)."""
        return pulumi.Output.concat(self.bucket.account_name, "/", self.bucket.container_name)
