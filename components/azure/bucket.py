"""The cluster bucket on Azure: a storage account and one private blob container for what nodes boot from
(the playbook bundle, rendered variables), uploaded as blobs from assets the caller gives.

Secure by default, each setting with Microsoft's page for it: no anonymous access, TLS 1.2 or later over
HTTPS only, no shared keys (Entra ID only: the nodes' managed identity reads, the deploy identity
writes), infrastructure (double) encryption, and a firewall that denies all but the node subnet (through
its Microsoft.Storage service endpoint) and the deployer's own addresses.

Uploads go through the blob data plane from wherever `pulumi up` runs: that address must be in
`allowed_ip_ranges`, and with shared keys off the deploy identity needs a data role on the container
(`uploader_principal_id`). Whether pulumi-azure-native's Blob resource writes with Entra ID when shared
keys are off is not settled upstream (github.com/pulumi/pulumi-azure-native/issues/2015, /3709):
`allow_shared_key_access` lets a caller turn keys back on if its provider version needs them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
from pulumi_azure_native import storage

from clusterfab.core.naming import name_tag
from components._errors import check_inputs
from components._naming import child
from components._outputs import known_after
from components.azure._roles import STORAGE_BLOB_DATA_CONTRIBUTOR, PrincipalType, grant

TYPE = "clusterfab:storage:AzureClusterBucket"
ACCOUNT_NAME_MAX = 24
"""Storage account names: 3-24 lowercase letters and digits, unique across Azure
(learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules#microsoftstorage)."""
_CONTAINER_NAME = re.compile(r"[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}")
"""Container names: 3-63 lowercase letters, digits and single hyphens, starting and ending with a letter
or digit (same page)."""


def storage_account_name(name: str, stack: str) -> str:
    """A storage account name for component `name` in `stack`: its letters and digits (up to 16) and
    eight hex digits of both, so two stacks (or two clusters whose names differ only in hyphens) get
    different accounts."""
    letters = re.sub(r"[^a-z0-9]", "", name.lower())[: ACCOUNT_NAME_MAX - 8]
    return f"{letters}{name_tag(name, stack)}"


@dataclass(frozen=True, kw_only=True)
class AzureClusterBucketArgs:
    """Inputs of AzureClusterBucket."""

    resource_group_name: pulumi.Input[str]
    location: str
    node_subnet_id: pulumi.Input[str]
    """The subnet whose nodes may reach the account (it has the Microsoft.Storage service endpoint)."""
    host_subnet_id: pulumi.Input[str] | None = None
    """The subnet of the Slurm controller and login hosts, which read their files from the account too
    (with the same service endpoint); None: no such hosts."""
    subscription_id: pulumi.Input[str] = ""
    """The subscription the role definitions are named in; needed with `uploader_principal_id`."""
    container: str = "bootstrap"
    """The blob container's name."""
    verdict_container: str | None = None
    """A second private container, which the nodes write their boot verdicts to; None: none."""
    objects: Mapping[str, tuple[str, pulumi.Asset]] = field(default_factory=dict)
    """Blobs to upload: child role -> (blob name, asset), e.g. `bundle` -> ("bundles/<sha>.tar.gz", asset)."""
    allowed_ip_ranges: Sequence[str] = ()
    """Public addresses or CIDRs (IPv4, no private ranges) allowed through the firewall: where
    `pulumi up` runs, so it can upload."""
    uploader_principal_id: pulumi.Input[str] | None = None
    """The deploy identity's object id: gets Storage Blob Data Contributor on the container alone."""
    uploader_principal_type: PrincipalType = "User"
    """What the deploy identity is: a person signed in with `az login` (User) or a CI service principal.
    Azure refuses an assignment whose type is not the principal's ("UnmatchedPrincipalType")."""
    allow_shared_key_access: bool = False
    """Shared key (account key and SAS) authorization; off: Entra ID only
    (learn.microsoft.com/azure/storage/common/shared-key-authorization-prevent)."""
    account_sku: str = "Standard_LRS"
    """Redundancy: the bucket holds what a deployment can upload again, so locally redundant suffices."""
    protect: bool = False
    """Protect the account from deletion (stateful: it holds what nodes boot from)."""
    tags: Mapping[str, str] = field(default_factory=dict)


def _problems(args: AzureClusterBucketArgs) -> list[tuple[str, str]]:
    problems = []
    for field_name in ("container", "verdict_container"):
        value = getattr(args, field_name)
        if value is not None and not _CONTAINER_NAME.fullmatch(value):
            problems.append((field_name, f"'{value}' is not a blob container name"))
    if args.uploader_principal_id is not None and args.subscription_id == "":
        problems.append(("subscription_id", "the uploader's role assignment names its subscription"))
    return problems


class AzureClusterBucket(pulumi.ComponentResource):
    """A StorageV2 account (private, TLS 1.2+, Entra ID only, double encryption, firewall) and one
    private container with the uploaded objects."""

    account_name: pulumi.Output[str]
    account_id: pulumi.Output[str]
    container_name: pulumi.Output[str]
    container_id: pulumi.Output[str]
    """The container's resource id: the only scope the nodes' role assignment may take."""
    verdict_container_id: pulumi.Output[str] | None
    """The verdict container's resource id (None without one)."""
    container_url: pulumi.Output[str]
    """https://<account>.blob.<suffix>/<container>, known once `objects` are uploaded: a boot script that
    fetches them names it, so hosts are created, or follow it, only after the uploads."""

    def __init__(
        self, name: str, args: AzureClusterBucketArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        # Inputs name the account and container by the names given here (the plan shows them as Azure
        # will); `depends_on` keeps the order the outputs would have given.
        account_name = storage_account_name(name, pulumi.get_stack())
        account = self._account(account_name)
        container = storage.BlobContainer(
            child(name, "container"),
            resource_group_name=args.resource_group_name,
            account_name=account_name,
            container_name=args.container,
            public_access=storage.PublicAccess.NONE,
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect, depends_on=[account]),
        )
        self.verdict_container_id = None
        if args.verdict_container is not None:
            verdicts = storage.BlobContainer(
                child(name, "verdicts"),
                resource_group_name=args.resource_group_name,
                account_name=account_name,
                container_name=args.verdict_container,
                public_access=storage.PublicAccess.NONE,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[account]),
            )
            self.verdict_container_id = verdicts.id
        grants = self._uploader(container)
        uploads = [
            storage.Blob(
                child(name, role),
                resource_group_name=args.resource_group_name,
                account_name=account_name,
                container_name=args.container,
                blob_name=blob_name,
                source=asset,
                type=storage.BlobType.BLOCK,
                # An upload needs the container and the uploader's role in place first.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[container, *grants]),
            )
            for role, (blob_name, asset) in sorted(args.objects.items())
        ]
        # The names given above are the names Azure gives (the API takes them, not generates them): the
        # outputs carry them once the resources exist, so what names them waits for their creation.
        self.account_name = account.id.apply(lambda _: account_name)
        self.account_id = account.id
        self.container_name = container.id.apply(lambda _: args.container)
        self.container_id = container.id
        url = account.primary_endpoints.apply(lambda endpoints: f"{endpoints.blob}{args.container}")
        self.container_url = known_after(url, [container, *uploads])
        self.register_outputs(
            {
                "account_name": account.name,
                "container_id": container.id,
                "container_url": self.container_url,
            }
        )

    def _uploader(self, container: storage.BlobContainer) -> list[pulumi.Resource]:
        """The deploy identity's data role on the container, when the caller names the identity."""
        name, args = self._name, self._args
        if args.uploader_principal_id is None:
            return []
        uploader = grant(
            child(name, "uploader"),
            owner=self,
            subscription_id=args.subscription_id,
            role=STORAGE_BLOB_DATA_CONTRIBUTOR,
            scope=container.id,
            principal_id=args.uploader_principal_id,
            principal_type=args.uploader_principal_type,
            description=f"clusterfab {name}: the deploy identity uploads the bootstrap objects",
        )
        return [uploader]

    def _account(self, account_name: str) -> storage.StorageAccount:
        name, args = self._name, self._args
        return storage.StorageAccount(
            child(name, "account"),
            account_name=account_name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            kind="StorageV2",
            sku=storage.SkuArgs(name=args.account_sku),
            access_tier=storage.AccessTier.HOT,
            # No anonymous reads, whatever a container says (learn.microsoft.com/azure/storage/blobs/
            # anonymous-read-access-prevent).
            allow_blob_public_access=False,
            # TLS 1.0 and 1.1 are refused (learn.microsoft.com/azure/storage/common/
            # transport-layer-security-configure-minimum-version); `supportsHttpsTrafficOnly` in the
            # REST API refuses plain HTTP (.../storage-require-secure-transfer).
            minimum_tls_version="TLS1_2",
            enable_https_traffic_only=True,
            allow_shared_key_access=args.allow_shared_key_access,
            # The portal and tools default to Entra ID for this account.
            default_to_o_auth_authentication=True,
            allow_cross_tenant_replication=False,
            # A second layer of AES-256 with a different key, below the service's; only at creation
            # (learn.microsoft.com/azure/storage/common/infrastructure-encryption-enable).
            encryption=storage.EncryptionArgs(
                key_source="Microsoft.Storage",
                require_infrastructure_encryption=True,
                services=storage.EncryptionServicesArgs(
                    blob=storage.EncryptionServiceArgs(enabled=True, key_type="Account"),
                    file=storage.EncryptionServiceArgs(enabled=True, key_type="Account"),
                ),
            ),
            # Deny by default; the node (and host) subnets and the deployer's addresses only, and no
            # exception for "trusted Azure services"
            # (learn.microsoft.com/azure/storage/common/storage-network-security).
            network_rule_set=storage.NetworkRuleSetArgs(
                default_action=storage.DefaultAction.DENY,
                bypass="None",
                virtual_network_rules=[
                    storage.VirtualNetworkRuleArgs(
                        virtual_network_resource_id=subnet, action=storage.Action.ALLOW
                    )
                    for subnet in (args.node_subnet_id, args.host_subnet_id)
                    if subnet is not None
                ],
                ip_rules=[
                    storage.IPRuleArgs(i_p_address_or_range=cidr, action=storage.Action.ALLOW)
                    for cidr in args.allowed_ip_ranges
                ],
            ),
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
