"""The Azure cluster bucket, the nodes' identity and Azure Managed Lustre built from their Args under
the mock engine: exact inputs, secure storage defaults, role assignments scoped to the container alone."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from clusterfab.plan.engine import PlanError, ProgramRun
from tests.components.azure_harness import (
    CLIENT_ID,
    LOCATION,
    MGS_ADDRESS,
    MOUNT_COMMAND,
    PRINCIPAL_ID,
    RESOURCE_GROUP,
    SUBSCRIPTION,
    build,
    by_name,
    types,
)

SUBNET = "/subscriptions/s/resourceGroups/ml-rg/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes"
CONTAINER = (
    "/subscriptions/s/resourceGroups/ml-rg/providers/Microsoft.Storage/storageAccounts/a"
    "/blobServices/default/containers/bootstrap"
)
UPLOADER = "33333333-3333-3333-3333-333333333333"
# Built-in role ids (learn.microsoft.com/azure/role-based-access-control/built-in-roles/storage).
ROLES = f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions"
READER = f"{ROLES}/2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
CONTRIBUTOR = f"{ROLES}/ba92f5b4-2d11-453d-a403-e96b0029c9fe"
ACCOUNT = "mlbucketcd8f7ebb"
"""`ml-bucket`'s letters and the first 8 hex digits of sha256("ml-bucket\\0dev")."""


def bucket(**overrides: Any) -> ProgramRun:
    from components.azure.bucket import AzureClusterBucket, AzureClusterBucketArgs

    fields: dict[str, Any] = {
        "resource_group_name": RESOURCE_GROUP,
        "location": LOCATION,
        "node_subnet_id": SUBNET,
        "subscription_id": SUBSCRIPTION,
        "objects": {"bundle": ("bundles/0123.tar.gz", pulumi.StringAsset("bundle bytes"))},
        "allowed_ip_ranges": ["198.51.100.7"],
        "uploader_principal_id": UPLOADER,
        "uploader_principal_type": "ServicePrincipal",
        "tags": {"clusterfab-blueprint": "ml"},
        **overrides,
    }

    def program() -> None:
        made = AzureClusterBucket("ml-bucket", AzureClusterBucketArgs(**fields))
        pulumi.export("container_id", made.container_id)
        pulumi.export("container_url", made.container_url)

    return build(program)


def test_bucket_is_an_account_a_private_container_a_scoped_uploader_role_and_the_blobs() -> None:
    run = bucket()
    assert types(run) == {
        "ml-bucket": "clusterfab:storage:AzureClusterBucket",
        "ml-bucket-account": "azure-native:storage:StorageAccount",
        "ml-bucket-container": "azure-native:storage:BlobContainer",
        "ml-bucket-uploader": "azure-native:authorization:RoleAssignment",
        "ml-bucket-bundle": "azure-native:storage:Blob",
    }
    made = by_name(run)
    assert made["ml-bucket-container"].inputs == {
        "accountName": ACCOUNT,
        "containerName": "bootstrap",
        "publicAccess": "None",
        "resourceGroupName": RESOURCE_GROUP,
    }
    assert made["ml-bucket-bundle"].inputs == {
        "accountName": ACCOUNT,
        "blobName": "bundles/0123.tar.gz",
        "containerName": "bootstrap",
        "resourceGroupName": RESOURCE_GROUP,
        "source": "bundle bytes",
        "type": "Block",
    }
    assert made["ml-bucket-uploader"].inputs == {
        "description": "clusterfab ml-bucket: the deploy identity uploads the bootstrap objects",
        "principalId": UPLOADER,
        "principalType": "ServicePrincipal",
        "roleDefinitionId": CONTRIBUTOR,
        "scope": "ml-bucket-container-id",
    }
    # the upload waits for the container and the uploader's role
    assert {made["ml-bucket-container"].urn, made["ml-bucket-uploader"].urn} <= set(
        made["ml-bucket-bundle"].dependencies
    )
    assert run.outputs == {
        "container_id": "ml-bucket-container-id",
        "container_url": "https://ml-bucket-account.blob.core.windows.net/bootstrap",
    }


def test_storage_account_is_private_tls12_https_entra_only_double_encrypted_behind_a_firewall() -> None:
    assert by_name(bucket())["ml-bucket-account"].inputs == {
        "accessTier": "Hot",
        "accountName": ACCOUNT,
        "allowBlobPublicAccess": False,
        "allowCrossTenantReplication": False,
        "allowSharedKeyAccess": False,
        "defaultToOAuthAuthentication": True,
        "enableHttpsTrafficOnly": True,
        "encryption": {
            "keySource": "Microsoft.Storage",
            "requireInfrastructureEncryption": True,
            "services": {
                "blob": {"enabled": True, "keyType": "Account"},
                "file": {"enabled": True, "keyType": "Account"},
            },
        },
        "kind": "StorageV2",
        "location": LOCATION,
        "minimumTlsVersion": "TLS1_2",
        "networkRuleSet": {
            "bypass": "None",
            "defaultAction": "Deny",
            "ipRules": [{"action": "Allow", "iPAddressOrRange": "198.51.100.7"}],
            "virtualNetworkRules": [{"action": "Allow", "virtualNetworkResourceId": SUBNET}],
        },
        "resourceGroupName": RESOURCE_GROUP,
        "sku": {"name": "Standard_LRS"},
        "tags": {"clusterfab-blueprint": "ml"},
    }


def test_without_an_uploader_there_is_no_role_assignment_and_protect_guards_account_and_container() -> None:
    run = bucket(uploader_principal_id=None, objects={}, protect=True)
    made = by_name(run)
    assert sorted(made) == ["ml-bucket", "ml-bucket-account", "ml-bucket-container"]
    assert made["ml-bucket-account"].protect
    assert made["ml-bucket-container"].protect


def test_account_names_fit_azure_and_differ_per_stack() -> None:
    from components.azure.bucket import storage_account_name

    assert storage_account_name("ml-bucket", "dev") == ACCOUNT
    # 16 letters and digits, then 8 hex digits of sha256("a-very-long-cluster-name-bucket\0prod"): 24
    assert storage_account_name("a-very-long-cluster-name-bucket", "prod") == "averylongcluster384de861"
    assert storage_account_name("ml-bucket", "prod") != ACCOUNT


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"container": "Boot"}, "container: 'Boot' is not a blob container name"),
        ({"subscription_id": ""}, "subscription_id: the uploader's role assignment names its subscription"),
    ],
)
def test_bucket_args_azure_would_refuse_are_refused(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        bucket(**overrides)
    assert message in str(info.value)


def identity(container: str = CONTAINER) -> ProgramRun:
    from components.azure.identity import AzureNodeIdentity, AzureNodeIdentityArgs

    def program() -> None:
        made = AzureNodeIdentity(
            "ml-nodes",
            AzureNodeIdentityArgs(
                resource_group_name=RESOURCE_GROUP,
                location=LOCATION,
                subscription_id=SUBSCRIPTION,
                bundle_container_id=container,
                tags={"clusterfab-blueprint": "ml"},
            ),
        )
        pulumi.export("identity_id", made.identity_id)
        pulumi.export("principal_id", made.principal_id)
        pulumi.export("client_id", made.client_id)

    return build(program)


def test_node_identity_reads_the_bundle_container_and_nothing_else() -> None:
    run = identity()
    assert types(run) == {
        "ml-nodes": "clusterfab:identity:AzureNodeIdentity",
        "ml-nodes-identity": "azure-native:managedidentity:UserAssignedIdentity",
        "ml-nodes-bundle-reader": "azure-native:authorization:RoleAssignment",
    }
    made = by_name(run)
    assert made["ml-nodes-identity"].inputs == {
        "location": LOCATION,
        "resourceGroupName": RESOURCE_GROUP,
        "tags": {"clusterfab-blueprint": "ml"},
    }
    assert made["ml-nodes-bundle-reader"].inputs == {
        "description": "clusterfab ml-nodes: nodes read their bootstrap bundle",
        "principalId": PRINCIPAL_ID,
        "principalType": "ServicePrincipal",
        "roleDefinitionId": READER,
        "scope": CONTAINER,
    }
    assert run.outputs == {
        "identity_id": "ml-nodes-identity-id",
        "principal_id": PRINCIPAL_ID,
        "client_id": CLIENT_ID,
    }


@pytest.mark.parametrize(
    "scope",
    [
        f"/subscriptions/{SUBSCRIPTION}",
        "/subscriptions/s/resourceGroups/ml-rg",
        "/subscriptions/s/resourceGroups/ml-rg/providers/Microsoft.Storage/storageAccounts/a",
        "/subscriptions/s/resourceGroups/ml-rg/providers/Microsoft.Storage/storageAccounts/a/blobServices/default/containers/*",
    ],
)
def test_node_identity_refuses_any_scope_wider_than_one_container(scope: str) -> None:
    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        identity(scope)
    assert f"bundle_container_id: '{scope}' is not a blob container's resource id" in str(info.value)


def lustre(**overrides: Any) -> ProgramRun:
    from components.azure.lustre import AzureManagedLustre, AzureManagedLustreArgs

    fields: dict[str, Any] = {
        "resource_group_name": RESOURCE_GROUP,
        "location": LOCATION,
        "subnet_id": "ml-net-lustre-id",
        "sku": "AMLFS-Durable-Premium-125",
        "storage_capacity_tib": 32,
        "zone": "1",
        "maintenance_day": "Sunday",
        "maintenance_time_utc": "02:00",
        "tags": {"clusterfab-blueprint": "ml"},
        **overrides,
    }

    def program() -> None:
        made = AzureManagedLustre("ml-lustre", AzureManagedLustreArgs(**fields))
        pulumi.export("mgs_address", made.mgs_address)
        pulumi.export("mount_command", made.mount_command)

    return build(program)


def test_amlfs_takes_its_subnet_tier_capacity_one_zone_and_a_weekly_window() -> None:
    run = lustre(protect=True)
    assert types(run) == {
        "ml-lustre": "clusterfab:storage:AzureManagedLustre",
        "ml-lustre-amlfs": "azure-native:storagecache:AmlFilesystem",
    }
    amlfs = by_name(run)["ml-lustre-amlfs"]
    assert amlfs.inputs == {
        "filesystemSubnet": "ml-net-lustre-id",
        "location": LOCATION,
        "maintenanceWindow": {"dayOfWeek": "Sunday", "timeOfDayUTC": "02:00"},
        "resourceGroupName": RESOURCE_GROUP,
        "sku": {"name": "AMLFS-Durable-Premium-125"},
        "storageCapacityTiB": 32,
        "tags": {"clusterfab-blueprint": "ml"},
        "zones": ["1"],
    }
    assert amlfs.protect
    assert run.outputs == {"mgs_address": MGS_ADDRESS, "mount_command": MOUNT_COMMAND}


def test_amlfs_blob_integration_logs_to_a_container_of_its_own_beside_the_data() -> None:
    """The logging container must be another container of the data container's account; the component
    makes it there (private), and never manages the operator's data container."""
    from components.azure.lustre import AzureLustreHsm

    hsm = AzureLustreHsm(
        container_id=CONTAINER, logging_container="ml-dev-lustre-logs", import_prefix="/datasets"
    )
    run = lustre(hsm=hsm)
    assert types(run) == {
        "ml-lustre": "clusterfab:storage:AzureManagedLustre",
        "ml-lustre-hsm-logs": "azure-native:storage:BlobContainer",
        "ml-lustre-amlfs": "azure-native:storagecache:AmlFilesystem",
    }
    planned = by_name(run)
    assert planned["ml-lustre-hsm-logs"].inputs == {
        "accountName": "a",
        "containerName": "ml-dev-lustre-logs",
        "publicAccess": "None",
        "resourceGroupName": "ml-rg",
    }
    assert not planned["ml-lustre-hsm-logs"].protect
    assert planned["ml-lustre-amlfs"].inputs["hsm"] == {
        "settings": {
            "container": CONTAINER,
            "importPrefix": "/datasets",
            "loggingContainer": "ml-lustre-hsm-logs-id",
        }
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"maintenance_time_utc": "2:00"}, "maintenance_time_utc: '2:00' is not HH:MM"),
        ({"storage_capacity_tib": 0}, "storage_capacity_tib: must be positive"),
        (
            {
                "hsm": (
                    "/subscriptions/s/resourceGroups/ml-rg/providers/Microsoft.Storage/storageAccounts/a",
                    "logs",
                )
            },
            "hsm.container_id: '/subscriptions/s/resourceGroups/ml-rg/providers/Microsoft.Storage/"
            "storageAccounts/a' is not a blob container's id",
        ),
        ({"hsm": (CONTAINER, "Logs--x")}, "hsm.logging_container: 'Logs--x' is not a blob container name"),
    ],
)
def test_amlfs_args_azure_would_refuse_are_refused(overrides: dict[str, Any], message: str) -> None:
    from components.azure.lustre import AzureLustreHsm

    if "hsm" in overrides:
        container, logs = overrides["hsm"]
        overrides = {"hsm": AzureLustreHsm(container_id=container, logging_container=logs)}
    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        lustre(**overrides)
    assert message in str(info.value)
