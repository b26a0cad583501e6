"""Which input changes make pulumi-azure-native replace a resource: a pinned table, read by hand.

pulumi-azure-native bridges no Terraform provider. Its own Diff (provider/pkg/provider/diff.go,
calculateDetailedDiff) marks a change as a replacement when the changed input is

1. a URL path parameter of the resource's PUT operation (`resourceGroupName`, the resource's own name
   parameter such as `vmScaleSetName`, `scope` of an extension resource; never `subscriptionId`, which the
   provider fills in from its configuration),
2. a request-body property whose metadata says ForceNew: provider/pkg/gen/properties.go `forceNew` sets it
   on a resource's own properties (the flattened `properties` included) when the REST specification marks
   the property, or the definition it references, create-only (`x-ms-mutability` with "create" and
   without "update"), or when provider/pkg/gen/replacement.go's hand-kept `forceNewMap` names it; a
   create-only property of a nested type does not replace the resource (`forceNewSetOnReferencedType`,
   e.g. a storage account's `encryption.services.blob.keyType`),
3. or anything below such a property (calculateValueDiff: a changed `sku.name` under a replacing `sku`).

The provider's metadata, generated from the specifications, ships inside its plugin binary, which is not
installed here, and the specifications' repository (Azure/azure-rest-api-specs) is too large to check
out. So each rule below was read by hand from the files it names (repository @ commit : path), at the
API version pulumi-azure-native 3.29.0 uses for the type (tests/fixtures/azure_specs/README.md); the
script checks every property a rule names against the installed SDK's inputs. A rule whose
specification file was not read says so in `unconfirmed`.
"""

from __future__ import annotations

from typing import Any

PROVIDER = "pulumi/pulumi-azure-native"
SPECS = "Azure/azure-rest-api-specs"

# pulumi-azure-native's code. The index holds these files at the commits named, which need not be the
# v3.29.0 tag's; the logic read is older than 3.0 and the forceNewMap entries for these types match the
# commit another reading pinned (1b7112af).
DIFF_GO = f"{PROVIDER} @ 03707ff7fc10b70f7dd23ec847a3ce1e9264c124 : provider/pkg/provider/diff.go"
PROPERTIES_GO = f"{PROVIDER} @ 000c531859797e289e572f526c7e15f5e2127833 : provider/pkg/gen/properties.go"
REPLACEMENT_GO = f"{PROVIDER} @ 1b7112af33c62b247daed1028686bf279f4d5e69 : provider/pkg/gen/replacement.go"
PROVIDER_GO = f"{PROVIDER} @ 006a62afe453b416e5d5c98d2d91c4c7281f52f9 : provider/pkg/provider/provider.go"
STORAGE_GO = (
    f"{PROVIDER} @ 03dca9175173230c58e2708c0b1c82e92e89b8df : "
    "provider/pkg/resources/customresources/custom_storage.go"
)

_RM = "specification/{}/resource-manager"
COMMON_V3 = (
    f"{SPECS} @ 05432ee0bc8a3feb5bc0f6fd21f49bb7aeaf13af : "
    "specification/common-types/resource-management/v3/types.json"
)
COMMON_V4 = (
    f"{SPECS} @ 05432ee0bc8a3feb5bc0f6fd21f49bb7aeaf13af : "
    "specification/common-types/resource-management/v4/types.json"
)
_NET = "specification/network/resource-manager/Microsoft.Network/stable/2024-05-01"
NETWORK_JSON = f"{SPECS} @ ea83a2a3e90ca3f0420e9d0ef55a811523541aba : {_NET}/network.json"
PUBLIC_IP_JSON = f"{SPECS} @ 118093527e37893ae10b10d2e08291b6bdd7cf8d : {_NET}/publicIpAddress.json"
NSG_JSON = f"{SPECS} @ c93887028b4d26ea3c19a1c5be394b4f69e636c3 : {_NET}/networkSecurityGroup.json"
VNET_JSON = f"{SPECS} @ 4e8108cc8dd608db81c7d08502613e5917032ab7 : {_NET}/virtualNetwork.json"
_STORAGE = "specification/storage/resource-manager/Microsoft.Storage/stable/2024-01-01"
STORAGE_JSON = f"{SPECS} @ 5a2abff0f2e61dac85740375816a18d468786b7b : {_STORAGE}/storage.json"
STORAGE_COMMON_JSON = f"{SPECS} @ 4630601fb5cff97a4c41acc4456c8eb14444f659 : {_STORAGE}/common.json"
MSI_JSON = (
    f"{SPECS} @ 16c9ca7681ac3c81b41c6159d60e8bfabb32bc65 : "
    "specification/msi/resource-manager/Microsoft.ManagedIdentity/stable/2023-01-31/ManagedIdentity.json"
)
_COMPUTE = "specification/compute/resource-manager/Microsoft.Compute"
VMSS_JSON = (
    f"{SPECS} @ 04be2f1c1c9805e0014d90d904623350e66093c1 : "
    f"{_COMPUTE}/ComputeRP/stable/2024-11-01/virtualMachineScaleSet.json"
)
COMPUTE_COMMON_JSON = (
    f"{SPECS} @ 08272fcc1e9cf3e007cb7a333d777b99ceab7bf1 : {_COMPUTE}/common-types/v1/common.json"
)
AMLFS_JSON = (
    f"{SPECS} @ 18a3afb601dd34a6a0a8d915ba3ca1f27d899ef1 : "
    "specification/storagecache/resource-manager/Microsoft.StorageCache/stable/2024-03-01/amlfilesystem.json"
)

KEYVAULT_JSON = (
    f"{SPECS} @ 315e54b7359504c9af7e9783946a6b62f4434eb0 : "
    "specification/keyvault/resource-manager/Microsoft.KeyVault/stable/2024-11-01/keyvault.json"
)

_NOT_READ = (
    "the REST specification of this API version ({}) was not read: x-ms-mutability create-only properties, "
    "if it has any, are missing here (path parameters and forceNewMap entries are complete)"
)

# Per type: `replace_on` (Pulumi input names), `read` (what each came from), and why in a sentence.
AZURE: dict[str, dict[str, Any]] = {
    "azure-native:resources:ResourceGroup": {
        "replace_on": ["location", "resourceGroupName"],
        "read": [REPLACEMENT_GO + " (Resources/ResourceGroup: location)", DIFF_GO],
        "why": "path /subscriptions/{subscriptionId}/resourcegroups/{resourceGroupName}; forceNewMap "
        "location",
        "unconfirmed": {"replace_on": _NOT_READ.format("Microsoft.Resources 2024-03-01 resources.json")},
    },
    "azure-native:network:VirtualNetwork": {
        "replace_on": ["location", "resourceGroupName", "virtualNetworkName"],
        "read": [REPLACEMENT_GO + " (Network/VirtualNetwork: location)", VNET_JSON, NETWORK_JSON, DIFF_GO],
        "why": "path parameters; forceNewMap location; no x-ms-mutability on VirtualNetwork, "
        "VirtualNetworkPropertiesFormat or network.json's Resource",
    },
    "azure-native:network:Subnet": {
        "replace_on": ["resourceGroupName", "subnetName", "virtualNetworkName"],
        "read": [REPLACEMENT_GO + " (Network/Subnet: none)", VNET_JSON, DIFF_GO],
        "why": "path parameters only: no x-ms-mutability on Subnet or SubnetPropertiesFormat (the "
        "specification describes defaultOutboundAccess as settable at creation only, but does not mark it, "
        "so the provider updates it in place and Azure refuses the change)",
    },
    "azure-native:network:NetworkSecurityGroup": {
        "replace_on": ["networkSecurityGroupName", "resourceGroupName"],
        "read": [NSG_JSON, NETWORK_JSON, DIFF_GO],
        "why": "path parameters only: no x-ms-mutability on NetworkSecurityGroup, its properties or "
        "network.json's Resource (location included), and no forceNewMap entry",
    },
    "azure-native:network:NatGateway": {
        "replace_on": ["natGatewayName", "resourceGroupName"],
        "read": [REPLACEMENT_GO + " (no Network/NatGateway entry)", NETWORK_JSON, DIFF_GO],
        "why": "path parameters; no forceNewMap entry; network.json's Resource location is not create-only",
        "unconfirmed": {"replace_on": _NOT_READ.format("Microsoft.Network 2024-05-01 natGateway.json")},
    },
    "azure-native:network:PublicIPAddress": {
        "replace_on": [
            "location",
            "publicIPAddressVersion",
            "publicIPPrefix",
            "publicIpAddressName",
            "resourceGroupName",
            "sku",
        ],
        "read": [
            REPLACEMENT_GO
            + " (Network/PublicIPAddress: location, publicIPAddressVersion, publicIPPrefix, sku)",
            PUBLIC_IP_JSON,
            NETWORK_JSON,
            DIFF_GO,
        ],
        "why": "path parameters and forceNewMap; no x-ms-mutability in publicIpAddress.json (zones included)",
    },
    "azure-native:storage:StorageAccount": {
        "replace_on": ["accountName", "isHnsEnabled", "location", "resourceGroupName"],
        "read": [
            REPLACEMENT_GO + " (Storage/StorageAccount: isHnsEnabled, location)",
            STORAGE_JSON,
            STORAGE_COMMON_JSON,
            DIFF_GO,
        ],
        "why": "path parameters and forceNewMap; StorageAccountCreateParameters and "
        "StorageAccountPropertiesCreateParameters mark nothing create-only (EncryptionService.keyType is "
        "create-only but nested: not a replacement)",
    },
    "azure-native:storage:BlobContainer": {
        "replace_on": ["accountName", "containerName", "resourceGroupName"],
        "read": [REPLACEMENT_GO + " (Storage/BlobContainer: none)", DIFF_GO],
        "why": "path parameters of .../storageAccounts/{accountName}/blobServices/default/containers/"
        "{containerName}; forceNewMap lists none",
        "unconfirmed": {"replace_on": _NOT_READ.format("Microsoft.Storage 2024-01-01 blob.json")},
    },
    "azure-native:storage:Blob": {
        "replace_on": [
            "accountName",
            "blobName",
            "containerName",
            "contentMd5",
            "resourceGroupName",
            "source",
            "type",
        ],
        "read": [STORAGE_GO + " (newBlob: PutParameters and ForceNew body properties)", DIFF_GO],
        "why": "a custom resource written to the Blob service's data plane: its metadata's path parameters "
        "(resource group, account, container, blob name) and ForceNew contentMd5, source and type; "
        "accessTier, contentType and metadata change in place",
    },
    "azure-native:managedidentity:UserAssignedIdentity": {
        "replace_on": ["location", "resourceGroupName", "resourceName"],
        "read": [MSI_JSON, COMMON_V4, DIFF_GO],
        "why": "path parameters; location is create-only in common-types v4 TrackedResource, which Identity "
        "extends",
    },
    "azure-native:authorization:RoleAssignment": {
        "replace_on": ["principalId", "roleAssignmentName", "scope"],
        "read": [REPLACEMENT_GO + " (Authorization/RoleAssignment: principalId, scope)", DIFF_GO],
        "why": "path /{scope}/providers/Microsoft.Authorization/roleAssignments/{roleAssignmentName}; "
        "forceNewMap principalId, scope",
        "unconfirmed": {
            "replace_on": _NOT_READ.format(
                "Microsoft.Authorization 2022-04-01 authorization-RoleAssignmentsCalls.json"
            )
        },
    },
    "azure-native:compute:VirtualMachineScaleSet": {
        "replace_on": ["resourceGroupName", "vmScaleSetName"],
        "read": [VMSS_JSON, COMPUTE_COMMON_JSON, DIFF_GO],
        "why": "path parameters only: VirtualMachineScaleSet, VirtualMachineScaleSetProperties and the "
        "compute common Resource mark nothing create-only and forceNewMap has no Compute entry, so sku "
        "(size and capacity), zones and location change in place as far as the provider is concerned "
        "(Azure refuses a zone change: zones can be set only at creation)",
    },
    "azure-native:compute:VirtualMachine": {
        "replace_on": ["resourceGroupName", "vmName"],
        "read": [REPLACEMENT_GO + " (no Compute entry)", DIFF_GO],
        "why": "path parameters; forceNewMap has no Compute entry, so a changed zone, size or OS profile "
        "updates in place as far as the provider is concerned (Azure refuses a zone or computer name change)",
        "unconfirmed": {"replace_on": _NOT_READ.format("Microsoft.Compute 2024-11-01 virtualMachine.json")},
    },
    "azure-native:compute:Disk": {
        "replace_on": ["diskName", "resourceGroupName"],
        "read": [REPLACEMENT_GO + " (no Compute entry)", DIFF_GO],
        "why": "path parameters; forceNewMap has no Compute entry",
        "unconfirmed": {"replace_on": _NOT_READ.format("Microsoft.Compute 2024-03-02 disk.json")},
    },
    "azure-native:network:BastionHost": {
        "replace_on": ["bastionHostName", "resourceGroupName"],
        "read": [REPLACEMENT_GO + " (no Network/BastionHost entry)", NETWORK_JSON, DIFF_GO],
        "why": "path parameters; no forceNewMap entry; network.json's Resource location is not create-only",
        "unconfirmed": {"replace_on": _NOT_READ.format("Microsoft.Network 2024-05-01 bastionHost.json")},
    },
    "azure-native:compute:VirtualMachineExtension": {
        "replace_on": ["resourceGroupName", "vmExtensionName", "vmName"],
        "read": [REPLACEMENT_GO + " (no Compute entry)", DIFF_GO],
        "why": "path parameters; forceNewMap has no Compute entry",
        "unconfirmed": {
            "replace_on": _NOT_READ.format(
                "Microsoft.Compute 2024-11-01 virtualMachine.json, VirtualMachineExtension"
            )
        },
    },
    "azure-native:dbformysql:Server": {
        "replace_on": ["resourceGroupName", "serverName"],
        "read": [REPLACEMENT_GO + " (no DBforMySQL entry)", DIFF_GO],
        "why": "path parameters; forceNewMap has no DBforMySQL entry",
        "unconfirmed": {
            "replace_on": _NOT_READ.format("Microsoft.DBforMySQL 2024-02-01-preview FlexibleServers.json")
        },
    },
    "azure-native:dbformysql:Database": {
        "replace_on": ["databaseName", "resourceGroupName", "serverName"],
        "read": [REPLACEMENT_GO + " (no DBforMySQL entry)", DIFF_GO],
        "why": "path parameters; forceNewMap has no DBforMySQL entry",
        "unconfirmed": {"replace_on": _NOT_READ.format("Microsoft.DBforMySQL 2023-12-30 Databases.json")},
    },
    "azure-native:dbformysql:Configuration": {
        "replace_on": ["configurationName", "resourceGroupName", "serverName"],
        "read": [REPLACEMENT_GO + " (no DBforMySQL entry)", DIFF_GO],
        "why": "path parameters; forceNewMap has no DBforMySQL entry",
        "unconfirmed": {
            "replace_on": _NOT_READ.format("Microsoft.DBforMySQL 2023-12-30 Configurations.json")
        },
    },
    "azure-native:privatedns:PrivateZone": {
        "replace_on": ["privateZoneName", "resourceGroupName"],
        "read": [REPLACEMENT_GO + " (no PrivateDns entry)", DIFF_GO],
        "why": "path parameters; forceNewMap has no PrivateDns entry",
        "unconfirmed": {"replace_on": _NOT_READ.format("Microsoft.Network 2024-06-01 privatedns.json")},
    },
    "azure-native:privatedns:VirtualNetworkLink": {
        "replace_on": ["privateZoneName", "resourceGroupName", "virtualNetworkLinkName"],
        "read": [REPLACEMENT_GO + " (no PrivateDns entry)", DIFF_GO],
        "why": "path parameters; forceNewMap has no PrivateDns entry",
        "unconfirmed": {"replace_on": _NOT_READ.format("Microsoft.Network 2024-06-01 privatedns.json")},
    },
    "azure-native:authorization:RoleDefinition": {
        "replace_on": ["roleDefinitionId", "scope"],
        "read": [REPLACEMENT_GO + " (Authorization: RoleAssignment only)", DIFF_GO],
        "why": "path /{scope}/providers/Microsoft.Authorization/roleDefinitions/{roleDefinitionId}; "
        "forceNewMap names no RoleDefinition property",
        "unconfirmed": {
            "replace_on": _NOT_READ.format(
                "Microsoft.Authorization 2022-05-01-preview authorization-RoleDefinitionsCalls.json"
            )
        },
    },
    "azure-native:network:NetworkInterface": {
        "replace_on": ["networkInterfaceName", "resourceGroupName"],
        "read": [REPLACEMENT_GO + " (no Network/NetworkInterface entry)", NETWORK_JSON, DIFF_GO],
        "why": "path parameters; no forceNewMap entry; network.json's Resource location is not create-only",
        "unconfirmed": {"replace_on": _NOT_READ.format("Microsoft.Network 2024-05-01 networkInterface.json")},
    },
    "azure-native:keyvault:Vault": {
        "replace_on": ["resourceGroupName", "vaultName"],
        "read": [REPLACEMENT_GO + " (no KeyVault entry)", KEYVAULT_JSON, DIFF_GO],
        "why": "path parameters only: VaultCreateOrUpdateParameters and VaultProperties mark nothing "
        "create-only (createMode is create and update) and forceNewMap has no KeyVault entry",
    },
    "azure-native:storagecache:AmlFilesystem": {
        "replace_on": [
            "amlFilesystemName",
            "filesystemSubnet",
            "location",
            "resourceGroupName",
            "sku",
            "storageCapacityTiB",
            "zones",
        ],
        "read": [AMLFS_JSON, COMMON_V3, DIFF_GO],
        "why": "path parameters; x-ms-mutability read/create on zones, storageCapacityTiB, filesystemSubnet "
        "and the SkuName definition, and on location in common-types v3 TrackedResource (hsm.settings is "
        "create-only but nested: not a replacement)",
        "replace_when": [
            {
                "property": "hsm",
                "when": "always",
                "why": "amlfilesystem.json marks hsm.settings (container, loggingContainer, importPrefix) "
                "create-only: the provider updates in place, Azure refuses the change, so another blob "
                "integration (or one added or removed) means a new file system",
            }
        ],
    },
}

# A type clusterfab plans that is not in the golden plans yet, with its API version's file.
AZURE["azure-native:consumption:Budget"] = {
    "replace_on": ["budgetName", "scope"],
    "read": [DIFF_GO],
    "why": "path /{scope}/providers/Microsoft.Consumption/budgets/{budgetName}; no forceNewMap entry",
    "unconfirmed": {
        "replace_on": _NOT_READ.format("Microsoft.Consumption 2024-08-01 consumption_budget.json")
    },
}

AZURE_PROVIDER: dict[str, Any] = {
    "replace_on": [],
    "inherited": {},
    "read": [PROVIDER_GO + " (DiffConfig, getDefaultLocation)"],
    "why": "DiffConfig reports no change and no replacement for any configuration change; an unset location "
    "is filled from the resource's old inputs first (getDefaultLocation), so a location changed on the "
    "provider never reaches a resource created before",
}

READ_FROM = (
    f"{PROVIDER} provider code (diff.go, properties.go, replacement.go, custom_storage.go) and "
    f"{SPECS} files at the API versions it uses (pinned per type in `read`)"
)
