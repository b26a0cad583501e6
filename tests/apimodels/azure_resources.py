"""Planned pulumi-azure-native resources, checked against Azure's REST API specification of their type
at the API version the SDK uses (the entry point: `azure_resource_problems(plan)`).

Per Pulumi type token: the fixture and ARM resource type (`Microsoft.X/things@version`, the version the
SDK's docstring names: "Uses Azure REST API version ..."), and the inputs that are the parameters of the
REST path (`PUT .../resourceGroups/{resourceGroupName}/providers/Microsoft.Compute/virtualMachineScaleSets/
{vmScaleSetName}`): those are no part of the body. The last of them is the resource's name, checked
against the body type's `name`. Everything else is mapped back to the request body (azure_spec.py) and
checked there. The cloud API-model test (test_api_models.py) leaves these types to this check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterfab.plan.project import Plan
from tests.apimodels.azure_spec import Spec, body_problems, request_body_of, spec

PREFIX = "azure-native:"
PROVIDER = "pulumi:providers:azure-native"
"""Its inputs configure the client (subscription, credentials): no resource of the API."""


@dataclass(frozen=True)
class AzureType:
    fixture: str
    arm_type: str
    path: tuple[str, ...]
    """The Pulumi inputs that are the REST path's parameters, the resource's own name last."""

    @property
    def spec(self) -> Spec:
        return spec(self.fixture)


COMPUTE = "microsoft.compute@2024-11-01.json"
NETWORK = "microsoft.network@2024-05-01.json"
STORAGE = "microsoft.storage@2024-01-01.json"
MYSQL = "microsoft.dbformysql@2023-12-30.json"
PRIVATE_DNS = "microsoft.network@2024-06-01.json"
RG = "resourceGroupName"

AZURE: dict[str, AzureType] = {
    "azure-native:resources:ResourceGroup": AzureType(
        "microsoft.resources@2024-03-01.json", "Microsoft.Resources/resourceGroups@2024-03-01", (RG,)
    ),
    "azure-native:network:VirtualNetwork": AzureType(
        NETWORK, "Microsoft.Network/virtualNetworks@2024-05-01", (RG, "virtualNetworkName")
    ),
    "azure-native:network:Subnet": AzureType(
        NETWORK,
        "Microsoft.Network/virtualNetworks/subnets@2024-05-01",
        (RG, "virtualNetworkName", "subnetName"),
    ),
    "azure-native:network:NetworkSecurityGroup": AzureType(
        NETWORK, "Microsoft.Network/networkSecurityGroups@2024-05-01", (RG, "networkSecurityGroupName")
    ),
    "azure-native:network:NatGateway": AzureType(
        NETWORK, "Microsoft.Network/natGateways@2024-05-01", (RG, "natGatewayName")
    ),
    "azure-native:network:PublicIPAddress": AzureType(
        NETWORK, "Microsoft.Network/publicIPAddresses@2024-05-01", (RG, "publicIpAddressName")
    ),
    "azure-native:storage:StorageAccount": AzureType(
        STORAGE, "Microsoft.Storage/storageAccounts@2024-01-01", (RG, "accountName")
    ),
    "azure-native:storage:BlobContainer": AzureType(
        STORAGE,
        "Microsoft.Storage/storageAccounts/blobServices/containers@2024-01-01",
        (RG, "accountName", "containerName"),
    ),
    "azure-native:managedidentity:UserAssignedIdentity": AzureType(
        "microsoft.managedidentity@2023-01-31.json",
        "Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31",
        (RG, "resourceName"),
    ),
    "azure-native:authorization:RoleAssignment": AzureType(
        "microsoft.authorization@2022-04-01.json",
        "Microsoft.Authorization/roleAssignments@2022-04-01",
        ("scope", "roleAssignmentName"),
    ),
    "azure-native:compute:VirtualMachineScaleSet": AzureType(
        COMPUTE, "Microsoft.Compute/virtualMachineScaleSets@2024-11-01", (RG, "vmScaleSetName")
    ),
    "azure-native:compute:CapacityReservationGroup": AzureType(
        COMPUTE,
        "Microsoft.Compute/capacityReservationGroups@2024-11-01",
        (RG, "capacityReservationGroupName"),
    ),
    "azure-native:compute:CapacityReservation": AzureType(
        COMPUTE,
        "Microsoft.Compute/capacityReservationGroups/capacityReservations@2024-11-01",
        (RG, "capacityReservationGroupName", "capacityReservationName"),
    ),
    "azure-native:compute:ProximityPlacementGroup": AzureType(
        COMPUTE, "Microsoft.Compute/proximityPlacementGroups@2024-11-01", (RG, "proximityPlacementGroupName")
    ),
    "azure-native:compute:VirtualMachine": AzureType(
        COMPUTE, "Microsoft.Compute/virtualMachines@2024-11-01", (RG, "vmName")
    ),
    "azure-native:compute:Disk": AzureType(
        "microsoft.compute@2024-03-02.json", "Microsoft.Compute/disks@2024-03-02", (RG, "diskName")
    ),
    "azure-native:network:NetworkInterface": AzureType(
        NETWORK, "Microsoft.Network/networkInterfaces@2024-05-01", (RG, "networkInterfaceName")
    ),
    "azure-native:network:BastionHost": AzureType(
        NETWORK, "Microsoft.Network/bastionHosts@2024-05-01", (RG, "bastionHostName")
    ),
    "azure-native:compute:VirtualMachineExtension": AzureType(
        COMPUTE, "Microsoft.Compute/virtualMachines/extensions@2024-11-01", (RG, "vmName", "vmExtensionName")
    ),
    "azure-native:keyvault:Vault": AzureType(
        "microsoft.keyvault@2024-11-01.json", "Microsoft.KeyVault/vaults@2024-11-01", (RG, "vaultName")
    ),
    "azure-native:storagecache:AmlFilesystem": AzureType(
        "microsoft.storagecache@2024-03-01.json",
        "Microsoft.StorageCache/amlFilesystems@2024-03-01",
        (RG, "amlFilesystemName"),
    ),
    "azure-native:dbformysql:Server": AzureType(
        "microsoft.dbformysql@2024-02-01-preview.json",
        "Microsoft.DBforMySQL/flexibleServers@2024-02-01-preview",
        (RG, "serverName"),
    ),
    "azure-native:dbformysql:Database": AzureType(
        MYSQL, "Microsoft.DBforMySQL/flexibleServers/databases@2023-12-30", (RG, "serverName", "databaseName")
    ),
    "azure-native:dbformysql:Configuration": AzureType(
        MYSQL,
        "Microsoft.DBforMySQL/flexibleServers/configurations@2023-12-30",
        (RG, "serverName", "configurationName"),
    ),
    "azure-native:privatedns:PrivateZone": AzureType(
        PRIVATE_DNS, "Microsoft.Network/privateDnsZones@2024-06-01", (RG, "privateZoneName")
    ),
    "azure-native:privatedns:VirtualNetworkLink": AzureType(
        PRIVATE_DNS,
        "Microsoft.Network/privateDnsZones/virtualNetworkLinks@2024-06-01",
        (RG, "privateZoneName", "virtualNetworkLinkName"),
    ),
    "azure-native:authorization:RoleDefinition": AzureType(
        "microsoft.authorization@2022-05-01-preview.json",
        "Microsoft.Authorization/roleDefinitions@2022-05-01-preview",
        ("scope", "roleDefinitionId"),
    ),
}

BLOB = "azure-native:storage:Blob"
BLOB_INPUTS = frozenset(
    {
        "accessTier", "accountName", "blobName", "containerName", "contentMd5", "contentType",
        "metadata", "resourceGroupName", "source", "type",
    }
)  # fmt: skip
"""A blob is no resource of Azure Resource Manager: the provider writes it through the Blob service's
data-plane API (Put Blob), which no ARM specification describes. What is checked: its inputs are the
SDK's (`storage/blob.py`), and its account and container names satisfy the ARM specification of the
storage account and container they name."""


def checked_here(type_: str) -> bool:
    """Whether this module, not the cloud API-model table, checks a planned resource type."""
    return type_.startswith(PREFIX) or type_ == PROVIDER


CLIENT_NAMES: dict[str, dict[str, str]] = {
    # Microsoft.Storage 2024-01-01 storage.json: StorageAccountPropertiesCreateParameters'
    # `supportsHttpsTrafficOnly` ("x-ms-client-name": "EnableHttpsTrafficOnly") and `networkAcls`
    # ("NetworkRuleSet"), VirtualNetworkRule's `id` ("VirtualNetworkResourceId"); pulumi-azure-native names
    # its inputs by the client names.
    # Microsoft.Authorization 2022-05-01-preview: RoleDefinitionProperties' `type` ("x-ms-client-name":
    # "roleType").
    "azure-native:authorization:RoleDefinition": {"roleType": "type"},
    "azure-native:storage:StorageAccount": {
        "enableHttpsTrafficOnly": "supportsHttpsTrafficOnly",
        "networkRuleSet": "networkAcls",
        "networkRuleSet.virtualNetworkRules[].virtualNetworkResourceId": "id",
    },
}
"""Per type, the inputs pulumi-azure-native names by the specification's `x-ms-client-name`: the input's
path (`a.b[].c`: c of every item of b) -> the body's (wire) name."""

DOCUMENTED_ELSEWHERE: dict[tuple[str, str], str] = {
    (
        "azure-native:dbformysql:Server",
        "properties.version: '8.4' is not one of 5.7, 8.0.21",
    ): "MySQL 8.4 is generally available on flexible server (learn.microsoft.com/azure/mysql/"
    "concepts-version-policy, catalog source S-AZ-MYSQL-VERSIONS) and 8.0 leaves standard support on "
    "2026-12-31; the enum is extensible (modelAsString) and no stored specification version lists 8.4 yet "
    "(2024-12-30 and 2025-06-01-preview neither); Azure's CLI takes `--version 8.4` (how-to-upgrade) and "
    "its PowerShell model completes '8.4'.",
}
"""Problems the pinned specification reports for a value the service documents elsewhere, each with why it
is accepted: (type, problem) -> the reason and its sources. Every other value outside an extensible
enum stays a problem."""


def _renamed(value: Any, renames: Mapping[str, str], path: str = "") -> Any:
    """`value` with the keys at the `renames` paths given their wire names."""
    if isinstance(value, list):
        return [_renamed(item, renames, f"{path}[]") for item in value]
    if not isinstance(value, dict):
        return value
    found = {}
    for key, item in value.items():
        here = f"{path}.{key}" if path else key
        found[renames.get(here, key)] = _renamed(item, renames, here)
    return found


def _identity_as_sent(identity: Any) -> Any:
    """pulumi-azure-native takes user-assigned identities as a list of their resource ids and sends the
    map the API defines (id -> {}): `ManagedServiceIdentity.userAssignedIdentities` (provider's
    `userAssignedIdentities` flattening, pulumi-azure-native v2 release notes)."""
    if isinstance(identity, dict) and isinstance(identity.get("userAssignedIdentities"), list):
        return {**identity, "userAssignedIdentities": {i: {} for i in identity["userAssignedIdentities"]}}
    return identity


def request_body(type_: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The ARM request body a planned resource's inputs become (the path's parameters left out)."""
    azure = AZURE[type_]
    given = {key: value for key, value in inputs.items() if key not in azure.path}
    body = _renamed(given, CLIENT_NAMES.get(type_, {}))
    if "identity" in body:
        body["identity"] = _identity_as_sent(body["identity"])
    return request_body_of(azure.spec, azure.arm_type, body)


def input_problems(type_: str, inputs: Mapping[str, Any]) -> list[str]:
    """`<body path>: <reason>` for what the type's specification rejects in these inputs."""
    if type_ == BLOB:
        return _blob_problems(inputs)
    azure = AZURE.get(type_)
    if azure is None:
        return [": no REST API specification pinned for this type (scripts/azure_specs.py, AZURE)"]
    s = azure.spec
    body_type = s.body(azure.arm_type)
    problems = _name_problems(s, body_type, inputs.get(azure.path[-1]), azure.path[-1])
    # The body's `name` is the path's; the provider fills `location` in from the resource group
    # (pulumi-azure-native provider.go, getDefaultLocation) when the inputs name one.
    provided = {"name"} | ({"location"} if RG in inputs else set())
    body = request_body(type_, inputs)
    found = problems + body_problems(s, body_type, body, provided=frozenset(provided))
    return [p for p in found if (type_, p) not in DOCUMENTED_ELSEWHERE]


def _name_problems(s: Spec, body_type: dict[str, Any], name: Any, key: str) -> list[str]:
    if name is None:
        return []  # the provider names it (auto-naming)
    name_type = s.at(body_type["properties"]["name"]["type"])
    return [f"{key}{p}" for p in body_problems(s, name_type, name)]


def _blob_problems(inputs: Mapping[str, Any]) -> list[str]:
    problems = [f"{key}: not an input of {BLOB}" for key in inputs if key not in BLOB_INPUTS]
    for type_, key in (
        ("azure-native:storage:StorageAccount", "accountName"),
        ("azure-native:storage:BlobContainer", "containerName"),
    ):
        azure = AZURE[type_]
        problems += _name_problems(azure.spec, azure.spec.body(azure.arm_type), inputs.get(key), key)
    return problems


def azure_resource_problems(plan: Plan) -> list[str]:
    """What Azure's REST API specifications reject in the plan's azure-native resources, one line per
    problem (`<type token> <resource name> <body path>: <reason>`), sorted."""
    return sorted(
        f"{resource.type} {resource.name} {problem}"
        for resource in plan.resources
        if resource.custom and resource.type.startswith(PREFIX)
        for problem in input_problems(resource.type, resource.inputs)
    )
