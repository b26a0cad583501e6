"""Every planned pulumi-azure-native resource, valid for Azure's REST API specification of its type and
API version (issue 33 item 5; azure_resources.py, azure_spec.py).

The check is shown to hold on Azure's own request examples (the samples of the pinned type files) and to
reject a mutated one at the exact path; its mapping of Pulumi's flattened inputs back to the request body
is shown on exact cases and on resources the real SDK classes register under the mock engine."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import importlib
import inspect
import json
import re
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi_azure_native import (
    authorization,
    compute,
    dbformysql,
    keyvault,
    managedidentity,
    network,
    privatedns,
    resources,
    storage,
    storagecache,
)
from ruamel.yaml import YAML

from clusterfab.plan.engine import UNKNOWN, run_program
from clusterfab.plan.project import Plan
from tests.apimodels.azure_resources import (
    AZURE,
    BLOB,
    BLOB_INPUTS,
    azure_resource_problems,
    checked_here,
    input_problems,
    request_body,
)
from tests.apimodels.azure_spec import FIXTURES, body_problems, spec
from tests.apimodels.plans import CASES, VARIANTS, PlanCase
from tests.conftest import EXAMPLES

VMSS = "azure-native:compute:VirtualMachineScaleSet"


def _cloud(path: Path) -> Any:
    return (YAML(typ="safe").load(path.read_text()) or {}).get("cloud")


_AZURE_EXAMPLES = {path.stem for path in EXAMPLES if _cloud(path) == "azure"}
AZURE_CASES: list[PlanCase] = [
    case
    for case in CASES
    if case.id.split(".")[0] in _AZURE_EXAMPLES or (case.id in VARIANTS and case.id.startswith("azure-"))
]
"""The plans of the Azure examples (each environment) and the `azure-*` variants of plans.py."""


@pytest.mark.parametrize("case", AZURE_CASES, ids=[c.id for c in AZURE_CASES])
def test_every_planned_azure_resource_is_valid_for_its_rest_api_specification(case: PlanCase) -> None:
    plan = case.load()
    assert [r for r in plan.resources if r.type.startswith("azure-native:")] != []
    assert azure_resource_problems(plan) == []


# --- the fixtures: what they were extracted from, and which API versions the SDK uses --------------------

SOURCE = {"repository": "Azure/bicep-types-az", "commit": "1f896de2db966ad91e8f7d7d981e11d32e4f5d8d"}


def test_each_fixture_records_its_source_and_the_readme_lists_it() -> None:
    readme = (FIXTURES / "README.md").read_text()
    files = sorted(p.name for p in FIXTURES.glob("*.json"))
    assert files == sorted({azure.fixture for azure in AZURE.values()})
    for name in files:
        source = spec(name).source
        assert {k: source[k] for k in SOURCE} == SOURCE
        for kind in ("types", "samples"):
            assert f"`{source[kind]['path']}`" in readme, (name, kind)
            assert source[kind]["sha256"] in readme, (name, kind)
        digest = hashlib.sha256((FIXTURES / name).read_bytes()).hexdigest()
        assert digest in readme, f"README: sha256 of {name} is {digest}"


def _module(token: str) -> Any:
    _, module, name = token.split(":")
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    return importlib.import_module(f"pulumi_azure_native.{module}.{snake}")


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)


def _sdk_inputs(token: str) -> set[str]:
    """The inputs of the resource class (its constructor's keyword arguments, as the engine names them)."""
    resource = getattr(_module(token), token.rsplit(":", maxsplit=1)[-1])
    own = {"__self__", "resource_name", "opts", "__props__"}
    return {_camel(p) for p in inspect.signature(resource._internal_init).parameters if p not in own}


@pytest.mark.parametrize("token", sorted(AZURE))
def test_the_pinned_api_version_is_the_one_the_sdk_uses(token: str) -> None:
    """The SDK's docstring: "Uses Azure REST API version ..."; its path parameters are SDK inputs."""
    versions = set(re.findall(r"Uses Azure REST API version ([\w-]+)", inspect.getsource(_module(token))))
    assert versions == {AZURE[token].arm_type.split("@")[1]}
    assert set(AZURE[token].path) <= _sdk_inputs(token)


def test_the_blob_is_a_data_plane_resource() -> None:
    """No ARM API version in its docstring: the provider writes blobs through the Blob service."""
    assert re.findall(r"Azure REST API version", inspect.getsource(_module(BLOB))) == []
    assert _sdk_inputs(BLOB) == BLOB_INPUTS


# --- positive and negative controls: Azure's own request examples ----------------------------------------

SAMPLE_COUNTS = {
    "azure-native:authorization:RoleAssignment": 3,
    "azure-native:authorization:RoleDefinition": 1,
    "azure-native:dbformysql:Configuration": 1,
    "azure-native:dbformysql:Database": 1,
    "azure-native:dbformysql:Server": 4,
    "azure-native:privatedns:PrivateZone": 1,
    "azure-native:privatedns:VirtualNetworkLink": 1,
    "azure-native:compute:CapacityReservation": 1,
    "azure-native:compute:CapacityReservationGroup": 1,
    "azure-native:compute:Disk": 25,
    "azure-native:compute:VirtualMachine": 50,
    "azure-native:compute:VirtualMachineExtension": 2,
    "azure-native:network:BastionHost": 4,
    "azure-native:keyvault:Vault": 2,
    "azure-native:network:NetworkInterface": 2,
    "azure-native:compute:ProximityPlacementGroup": 1,
    VMSS: 49,
    "azure-native:managedidentity:UserAssignedIdentity": 1,
    "azure-native:network:NatGateway": 1,
    "azure-native:network:NetworkSecurityGroup": 2,
    "azure-native:network:PublicIPAddress": 4,
    "azure-native:network:Subnet": 5,
    "azure-native:network:VirtualNetwork": 9,
    "azure-native:resources:ResourceGroup": 1,
    "azure-native:storage:BlobContainer": 3,
    "azure-native:storage:StorageAccount": 12,
    "azure-native:storagecache:AmlFilesystem": 1,
}


def _samples(token: str) -> list[dict[str, Any]]:
    azure = AZURE[token]
    return azure.spec.samples[azure.arm_type]


def _body_problems(token: str, body: dict[str, Any]) -> list[str]:
    azure = AZURE[token]
    return body_problems(azure.spec, azure.spec.body(azure.arm_type), body, provided=frozenset({"name"}))


@pytest.mark.parametrize("token", sorted(AZURE))
def test_azures_own_request_examples_pass(token: str) -> None:
    samples = _samples(token)
    assert len(samples) == SAMPLE_COUNTS[token]
    assert {s["title"]: _body_problems(token, s["body"]) for s in samples} == {
        s["title"]: [] for s in samples
    }


def _vmss_example() -> dict[str, Any]:
    sample = next(
        s for s in _samples(VMSS) if s["title"] == "Create or update a scale set with capacity reservation."
    )
    return copy.deepcopy(sample["body"])


def test_a_mutated_example_fails_at_the_exact_paths() -> None:
    body = _vmss_example()
    assert _body_problems(VMSS, body) == []
    properties = body["properties"]
    properties["singlePlacementGroup"] = "yes"
    properties["uniqueId"] = "d053ec5a-8da6-495f-ab13-38216503c6d7"
    properties["virtualMachineProfile"]["priority"] = "Spto"
    nic = properties["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"][0]
    nic["properties"]["enableAcceleratedNetworkng"] = True
    nic["properties"]["ipConfigurations"][0]["properties"]["subnet"] = "subnet-1"
    properties["platformFaultDomainCount"] = 1.5
    del body["location"]
    assert sorted(_body_problems(VMSS, body)) == [
        "location: required by Microsoft.Compute/virtualMachineScaleSets, missing",
        "properties.platformFaultDomainCount: expected an integer, got number 1.5",
        "properties.singlePlacementGroup: expected a boolean, got string 'yes'",
        "properties.uniqueId: read-only (the API sets it; a request must not)",
        "properties.virtualMachineProfile.networkProfile.networkInterfaceConfigurations[0].properties."
        "enableAcceleratedNetworkng: not a property of VirtualMachineScaleSetNetworkConfigurationProperties",
        "properties.virtualMachineProfile.networkProfile.networkInterfaceConfigurations[0].properties."
        "ipConfigurations[0].properties.subnet: expected an object, got string 'subnet-1'",
        "properties.virtualMachineProfile.priority: 'Spto' is not one of Regular, Low, Spot",
    ]


def test_limits_and_required_properties_of_nested_objects_are_checked() -> None:
    token = "azure-native:network:NetworkSecurityGroup"
    rule: dict[str, Any] = {
        "name": "ssh",
        "properties": {"protocol": "Tcp", "access": "Deny", "direction": "Inbound"},
    }
    body = {"location": "westus", "properties": {"securityRules": [rule]}}
    assert _body_problems(token, body) == [
        "properties.securityRules[0].properties.priority: required by SecurityRulePropertiesFormat, missing"
    ]
    rule["properties"]["priority"] = 4097
    rule["properties"]["protocol"] = "tcp"
    # The specification's priority has no limits; its protocol enum is case-sensitive as written.
    assert _body_problems(token, body) == [
        "properties.securityRules[0].properties.protocol: 'tcp' is not one of Tcp, Udp, Icmp, Esp, *, Ah"
    ]


# --- Pulumi's flattened inputs back to the request body: exact cases -------------------------------------


def test_path_parameters_leave_the_body_and_properties_are_unflattened_at_every_level() -> None:
    inputs = {
        "resourceGroupName": "rg",
        "vmScaleSetName": "trainers",
        "location": "southcentralus",
        "sku": {"name": "Standard_ND96isr_H100_v5", "capacity": 16},
        "zones": ["1"],
        "singlePlacementGroup": True,
        "virtualMachineProfile": {
            "networkProfile": {
                "networkInterfaceConfigurations": [
                    {
                        "name": "eth0",
                        "primary": True,
                        "ipConfigurations": [{"name": "ip", "subnet": {"id": "subnet-id"}}],
                    }
                ]
            }
        },
    }
    assert request_body(VMSS, inputs) == {
        "location": "southcentralus",
        "sku": {"name": "Standard_ND96isr_H100_v5", "capacity": 16},
        "zones": ["1"],
        "properties": {
            "singlePlacementGroup": True,
            "virtualMachineProfile": {
                "networkProfile": {
                    "networkInterfaceConfigurations": [
                        {
                            "name": "eth0",
                            "properties": {
                                "primary": True,
                                "ipConfigurations": [
                                    {"name": "ip", "properties": {"subnet": {"id": "subnet-id"}}}
                                ],
                            },
                        }
                    ]
                }
            },
        },
    }


def test_subnets_and_security_rules_are_unflattened_and_unknown_keys_stay_where_they_were() -> None:
    vnet = {
        "resourceGroupName": "rg",
        "virtualNetworkName": "net",
        "addressSpace": {"addressPrefixes": ["10.1.0.0/16"]},
        "subnets": [
            {"name": "nodes", "addressPrefix": "10.1.0.0/24", "networkSecurityGroup": {"id": "nsg-id"}}
        ],
        "bogus": 1,
    }
    assert request_body("azure-native:network:VirtualNetwork", vnet) == {
        "bogus": 1,
        "properties": {
            "addressSpace": {"addressPrefixes": ["10.1.0.0/16"]},
            "subnets": [
                {
                    "name": "nodes",
                    "properties": {"addressPrefix": "10.1.0.0/24", "networkSecurityGroup": {"id": "nsg-id"}},
                }
            ],
        },
    }
    nsg = {"resourceGroupName": "rg", "securityRules": [{"name": "r", "priority": 100, "access": "Deny"}]}
    assert request_body("azure-native:network:NetworkSecurityGroup", nsg) == {
        "properties": {"securityRules": [{"name": "r", "properties": {"priority": 100, "access": "Deny"}}]}
    }
    identity = {"resourceGroupName": "rg", "resourceName": "nodes", "location": "westus", "tags": {"a": "b"}}
    assert request_body("azure-native:managedidentity:UserAssignedIdentity", identity) == {
        "location": "westus",
        "tags": {"a": "b"},
    }


def test_the_resource_name_is_checked_against_the_body_types_name() -> None:
    inputs = {
        "resourceGroupName": "rg",
        "accountName": "Bundle_Store",
        "kind": "StorageV2",
        "sku": {"name": "Standard_LRS"},
    }
    assert input_problems("azure-native:storage:StorageAccount", inputs) == [
        "accountName: 'Bundle_Store' does not match the pattern ^[a-z0-9]+$"
    ]


# --- resources the SDK's own classes register under the mock engine --------------------------------------


def _program() -> None:
    rg = resources.ResourceGroup("rg", resource_group_name="train-rg", location="southcentralus")
    vnet, lustre_subnet = _network(rg)
    _storage(rg)
    _compute(rg, vnet)
    _hosts(rg)
    _database(rg, vnet)
    storagecache.AmlFilesystem(
        "lustre",
        resource_group_name=rg.name,
        aml_filesystem_name="train-lustre",
        filesystem_subnet=lustre_subnet.id,
        storage_capacity_ti_b=16,
        sku=storagecache.SkuNameArgs(name="AMLFS-Durable-Premium-125"),
        zones=["1"],
        maintenance_window=storagecache.AmlFilesystemMaintenanceWindowArgs(
            day_of_week=storagecache.MaintenanceDayOfWeekType.SUNDAY, time_of_day_utc="02:00"
        ),
    )


def _database(rg: resources.ResourceGroup, vnet: network.VirtualNetwork) -> None:
    """A flexible server in a delegated subnet with its private DNS zone, a database, a server parameter and
    a custom role: the managed accounting database's resource types."""
    subnet = network.Subnet(
        "db",
        resource_group_name=rg.name,
        virtual_network_name=vnet.name,
        subnet_name="db",
        address_prefix="10.8.224.0/28",
        delegations=[
            network.DelegationArgs(name="mysql", service_name="Microsoft.DBforMySQL/flexibleServers")
        ],
    )
    zone = privatedns.PrivateZone(
        "zone", resource_group_name=rg.name, private_zone_name="acct.private.mysql.database.azure.com"
    )
    privatedns.VirtualNetworkLink(
        "zone-link",
        resource_group_name=rg.name,
        private_zone_name=zone.name,
        virtual_network_link_name="acct",
        location="global",
        virtual_network=privatedns.SubResourceArgs(id=vnet.id),
        registration_enabled=False,
    )
    server = dbformysql.Server(
        "acct",
        resource_group_name=rg.name,
        server_name="train-acct",
        version="8.0.21",
        sku=dbformysql.MySQLServerSkuArgs(name="Standard_B1ms", tier="Burstable"),
        administrator_login="trainer",
        administrator_login_password="Secret-Password-1",
        storage=dbformysql.StorageArgs(storage_size_gb=20),
        network=dbformysql.NetworkArgs(
            delegated_subnet_resource_id=subnet.id, private_dns_zone_resource_id=zone.id
        ),
    )
    dbformysql.Database("acct-db", resource_group_name=rg.name, server_name=server.name, database_name="acct")
    dbformysql.Configuration(
        "acct-tls",
        resource_group_name=rg.name,
        server_name=server.name,
        configuration_name="require_secure_transport",
        value="ON",
        source="user-override",
    )
    authorization.RoleDefinition(
        "acct-role",
        scope="/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/train-rg",
        role_name="read the server",
        permissions=[authorization.PermissionArgs(actions=["Microsoft.DBforMySQL/flexibleServers/read"])],
        assignable_scopes=["/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/train-rg"],
    )


def _hosts(rg: resources.ResourceGroup) -> None:
    """A VM with a NIC and an attached data disk, and a key vault: the Slurm hosts' resource types."""
    disk = compute.Disk(
        "state",
        resource_group_name=rg.name,
        sku=compute.DiskSkuArgs(name="Premium_LRS"),
        creation_data=compute.CreationDataArgs(create_option="Empty"),
        disk_size_gb=100,
    )
    nic = network.NetworkInterface(
        "nic",
        resource_group_name=rg.name,
        ip_configurations=[
            network.NetworkInterfaceIPConfigurationArgs(
                name="primary",
                subnet=network.SubnetArgs(id="host-subnet-id"),
                private_ip_address="10.0.16.10",
                private_ip_allocation_method="Static",
            )
        ],
    )
    vm = compute.VirtualMachine(
        "vm",
        resource_group_name=rg.name,
        hardware_profile=compute.HardwareProfileArgs(vm_size="Standard_D16s_v5"),
        network_profile=compute.NetworkProfileArgs(
            network_interfaces=[compute.NetworkInterfaceReferenceArgs(id=nic.id, primary=True)]
        ),
        storage_profile=compute.StorageProfileArgs(
            image_reference=compute.ImageReferenceArgs(
                publisher="Canonical", offer="ubuntu-24_04-lts", sku="server", version="latest"
            ),
            os_disk=compute.OSDiskArgs(create_option="FromImage"),
            data_disks=[
                compute.DataDiskArgs(
                    lun=0, create_option="Attach", managed_disk=compute.ManagedDiskParametersArgs(id=disk.id)
                )
            ],
        ),
    )
    compute.VirtualMachineExtension(
        "vm-login",
        resource_group_name=rg.name,
        vm_name=vm.name,
        vm_extension_name="AADSSHLoginForLinux",
        publisher="Microsoft.Azure.ActiveDirectory",
        type="AADSSHLoginForLinux",
        type_handler_version="1.0",
        auto_upgrade_minor_version=True,
    )
    keyvault.Vault(
        "vault",
        resource_group_name=rg.name,
        vault_name="train-kv",
        properties=keyvault.VaultPropertiesArgs(
            tenant_id="00000000-0000-0000-0000-000000000000",
            sku=keyvault.SkuArgs(family="A", name="standard"),
            enable_rbac_authorization=True,
        ),
    )


def _security_group(rg: resources.ResourceGroup) -> network.NetworkSecurityGroup:
    return network.NetworkSecurityGroup(
        "nsg",
        resource_group_name=rg.name,
        security_rules=[
            network.SecurityRuleArgs(
                name="lustre-in",
                priority=100,
                direction="Inbound",
                access="Allow",
                protocol="Tcp",
                source_address_prefix="VirtualNetwork",
                source_port_range="*",
                destination_address_prefix="VirtualNetwork",
                destination_port_ranges=["988", "1019-1023"],
            ),
            network.SecurityRuleArgs(
                name="no-internet-ssh",
                priority=4000,
                direction="Inbound",
                access="Deny",
                protocol="Tcp",
                source_address_prefix="Internet",
                source_port_range="*",
                destination_address_prefix="*",
                destination_port_range="22",
            ),
        ],
    )


def _network(rg: resources.ResourceGroup) -> tuple[network.VirtualNetwork, network.Subnet]:
    nsg = _security_group(rg)
    ip = network.PublicIPAddress(
        "nat-ip",
        resource_group_name=rg.name,
        public_ip_allocation_method="Static",
        sku=network.PublicIPAddressSkuArgs(name="Standard"),
    )
    nat = network.NatGateway(
        "nat",
        resource_group_name=rg.name,
        sku=network.NatGatewaySkuArgs(name="Standard"),
        public_ip_addresses=[network.SubResourceArgs(id=ip.id)],
        idle_timeout_in_minutes=4,
    )
    vnet = network.VirtualNetwork(
        "vnet",
        resource_group_name=rg.name,
        address_space=network.AddressSpaceArgs(address_prefixes=["10.8.0.0/16"]),
        subnets=[
            network.SubnetArgs(
                name="nodes",
                address_prefix="10.8.0.0/20",
                default_outbound_access=False,
                network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
                nat_gateway=network.SubResourceArgs(id=nat.id),
            ),
        ],
    )
    bastion_subnet = network.Subnet(
        "bastion-subnet",
        resource_group_name=rg.name,
        virtual_network_name=vnet.name,
        subnet_name="AzureBastionSubnet",
        address_prefix="10.8.240.0/26",
    )
    network.BastionHost(
        "bastion",
        resource_group_name=rg.name,
        bastion_host_name="train-rg-bastion",
        sku=network.SkuArgs(name="Standard"),
        enable_tunneling=True,
        ip_configurations=[
            network.BastionHostIPConfigurationArgs(
                name="primary",
                subnet=network.SubResourceArgs(id=bastion_subnet.id),
                public_ip_address=network.SubResourceArgs(id=ip.id),
            )
        ],
    )
    lustre_subnet = network.Subnet(
        "lustre-subnet",
        resource_group_name=rg.name,
        virtual_network_name=vnet.name,
        subnet_name="lustre",
        address_prefix="10.8.16.0/24",
        network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
    )
    return vnet, lustre_subnet


def _storage(rg: resources.ResourceGroup) -> None:
    account = storage.StorageAccount(
        "bundles",
        resource_group_name=rg.name,
        account_name="trainbundles",
        kind="StorageV2",
        sku=storage.SkuArgs(name="Standard_LRS"),
        minimum_tls_version="TLS1_2",
        allow_blob_public_access=False,
        public_network_access="Disabled",
        encryption=storage.EncryptionArgs(
            key_source="Microsoft.Storage",
            services=storage.EncryptionServicesArgs(
                blob=storage.EncryptionServiceArgs(enabled=True, key_type="Account")
            ),
        ),
    )
    container = storage.BlobContainer(
        "bundle",
        resource_group_name=rg.name,
        account_name=account.name,
        container_name="bundle",
        public_access=storage.PublicAccess.NONE,
    )
    storage.Blob(
        "bundle-tgz",
        resource_group_name=rg.name,
        account_name="trainbundles",
        container_name="bundle",
        blob_name="bundle.tgz",
        source=pulumi.StringAsset("bundle"),
        content_type="application/gzip",
    )
    identity = managedidentity.UserAssignedIdentity(
        "nodes", resource_group_name=rg.name, resource_name_="nodes"
    )
    authorization.RoleAssignment(
        "nodes-read-bundle",
        scope=container.id,
        principal_id=identity.principal_id,
        principal_type="ServicePrincipal",
        role_definition_id="/providers/Microsoft.Authorization/roleDefinitions/2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
    )


def _compute(rg: resources.ResourceGroup, vnet: network.VirtualNetwork) -> None:
    ppg = compute.ProximityPlacementGroup(
        "ppg", resource_group_name=rg.name, proximity_placement_group_type="Standard"
    )
    crg = compute.CapacityReservationGroup("crg", resource_group_name=rg.name, zones=["1"])
    compute.CapacityReservation(
        "cr",
        resource_group_name=rg.name,
        capacity_reservation_group_name=crg.name,
        sku=compute.SkuArgs(name="Standard_ND96isr_H100_v5", capacity=16),
        zones=["1"],
    )
    compute.VirtualMachineScaleSet(
        "trainers",
        resource_group_name=rg.name,
        sku=compute.SkuArgs(name="Standard_ND96isr_H100_v5", capacity=16, tier="Standard"),
        zones=["1"],
        orchestration_mode="Uniform",
        single_placement_group=True,
        overprovision=False,
        platform_fault_domain_count=1,
        proximity_placement_group=compute.SubResourceArgs(id=ppg.id),
        upgrade_policy=compute.UpgradePolicyArgs(mode=compute.UpgradeMode.MANUAL),
        virtual_machine_profile=_vm_profile(crg, vnet),
    )


def _vm_profile(
    crg: compute.CapacityReservationGroup, vnet: network.VirtualNetwork
) -> compute.VirtualMachineScaleSetVMProfileArgs:
    return compute.VirtualMachineScaleSetVMProfileArgs(
        priority="Spot",
        eviction_policy="Delete",
        billing_profile=compute.BillingProfileArgs(max_price=-1),
        capacity_reservation=compute.CapacityReservationProfileArgs(
            capacity_reservation_group=compute.SubResourceArgs(id=crg.id)
        ),
        network_profile=compute.VirtualMachineScaleSetNetworkProfileArgs(
            network_interface_configurations=[
                compute.VirtualMachineScaleSetNetworkConfigurationArgs(
                    name="eth0",
                    primary=True,
                    enable_accelerated_networking=True,
                    ip_configurations=[
                        compute.VirtualMachineScaleSetIPConfigurationArgs(
                            name="ip", subnet=compute.ApiEntityReferenceArgs(id=vnet.id)
                        )
                    ],
                )
            ]
        ),
        os_profile=compute.VirtualMachineScaleSetOSProfileArgs(
            computer_name_prefix="trainers",
            admin_username="azureuser",
            linux_configuration=compute.LinuxConfigurationArgs(
                disable_password_authentication=True,
                ssh=compute.SshConfigurationArgs(
                    public_keys=[
                        compute.SshPublicKeyArgs(
                            path="/home/azureuser/.ssh/authorized_keys", key_data="ssh-ed25519 AAAA"
                        )
                    ]
                ),
            ),
        ),
        storage_profile=compute.VirtualMachineScaleSetStorageProfileArgs(
            image_reference=compute.ImageReferenceArgs(
                publisher="microsoft-dsvm", offer="ubuntu-hpc", sku="2204", version="latest"
            ),
            os_disk=compute.VirtualMachineScaleSetOSDiskArgs(
                create_option="FromImage",
                caching=compute.CachingTypes.READ_ONLY,
                diff_disk_settings=compute.DiffDiskSettingsArgs(option="Local", placement="NvmeDisk"),
                managed_disk=compute.VirtualMachineScaleSetManagedDiskParametersArgs(
                    storage_account_type="Standard_LRS"
                ),
            ),
        ),
        security_profile=compute.SecurityProfileArgs(encryption_at_host=True),
    )


def _sdk_plan() -> Plan:
    run = run_program(_program, project="clusterfab", stack="dev")
    return Plan(blueprint="azure.yaml", env=None, stack="dev", resources=run.resources)


@pytest.fixture(scope="module")
def sdk_plan() -> Plan:
    return _sdk_plan()


def test_the_sdks_own_resources_map_and_validate(sdk_plan: Plan) -> None:
    assert sorted({r.type for r in sdk_plan.resources if checked_here(r.type)}) == sorted([*AZURE, BLOB])
    assert azure_resource_problems(sdk_plan) == []
    vmss = next(r for r in sdk_plan.resources if r.type == VMSS)
    body = request_body(VMSS, vmss.inputs)
    profile = body["properties"]["virtualMachineProfile"]
    nic = profile["networkProfile"]["networkInterfaceConfigurations"][0]
    assert nic == {
        "name": "eth0",
        "properties": {
            "primary": True,
            "enableAcceleratedNetworking": True,
            "ipConfigurations": [{"name": "ip", "properties": {"subnet": {"id": "vnet-id"}}}],
        },
    }
    assert body["properties"]["singlePlacementGroup"] is True
    lustre = next(r for r in sdk_plan.resources if r.type == "azure-native:storagecache:AmlFilesystem")
    assert request_body(lustre.type, lustre.inputs) == {
        "sku": {"name": "AMLFS-Durable-Premium-125"},
        "zones": ["1"],
        "properties": {
            "filesystemSubnet": "lustre-subnet-id",
            "storageCapacityTiB": 16,
            "maintenanceWindow": {"dayOfWeek": "Sunday", "timeOfDayUTC": "02:00"},
        },
    }


def _mutated(plan: Plan, name: str, change: dict[str, Any]) -> Plan:
    return dataclasses.replace(
        plan,
        resources=[
            dataclasses.replace(r, inputs={**copy.deepcopy(r.inputs), **change}) if r.name == name else r
            for r in plan.resources
        ],
    )


def test_the_check_catches_wrong_inputs_of_the_sdks_resources(sdk_plan: Plan) -> None:
    vmss = next(r for r in sdk_plan.resources if r.type == VMSS)
    profile = copy.deepcopy(vmss.inputs["virtualMachineProfile"])
    profile["evictionPolicy"] = "Stop"
    plan = _mutated(
        sdk_plan,
        "trainers",
        {"singlePlacementGroup": "yes", "uniqueId": "x", "virtualMachineProfile": profile},
    )
    # An input the offline plan cannot know (another resource's output) is left unchecked.
    plan = _mutated(
        plan, "lustre", {"storageCapacityTiB": UNKNOWN, "maintenanceWindow": {"dayOfWeek": "Funday"}}
    )
    plan = _mutated(plan, "bundles", {"minimumTlsVersion": "TLS1.2", "allowSharedKeyAcess": False})
    plan = _mutated(plan, "bundle-tgz", {"containerName": "b"})
    assert azure_resource_problems(plan) == [
        "azure-native:compute:VirtualMachineScaleSet trainers properties.singlePlacementGroup: "
        "expected a boolean, got string 'yes'",
        "azure-native:compute:VirtualMachineScaleSet trainers properties.uniqueId: "
        "read-only (the API sets it; a request must not)",
        "azure-native:compute:VirtualMachineScaleSet trainers properties.virtualMachineProfile."
        "evictionPolicy: 'Stop' is not one of Deallocate, Delete",
        "azure-native:storage:Blob bundle-tgz containerName: 'b' is shorter than the minimum length 3",
        "azure-native:storage:StorageAccount bundles allowSharedKeyAcess: not a property of "
        "Microsoft.Storage/storageAccounts",
        "azure-native:storage:StorageAccount bundles properties.minimumTlsVersion: "
        "'TLS1.2' is not one of TLS1_0, TLS1_1, TLS1_2, TLS1_3",
        "azure-native:storagecache:AmlFilesystem lustre properties.maintenanceWindow.dayOfWeek: "
        "'Funday' is not one of Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday",
    ]


def test_an_azure_type_without_a_pinned_specification_is_a_problem(sdk_plan: Plan) -> None:
    plan = dataclasses.replace(
        sdk_plan,
        resources=[
            dataclasses.replace(sdk_plan.resources[0], type="azure-native:network:LoadBalancer", name="lb")
        ],
    )
    assert azure_resource_problems(plan) == [
        "azure-native:network:LoadBalancer lb : no REST API specification pinned for this type "
        "(scripts/azure_specs.py, AZURE)"
    ]


def test_the_cloud_api_model_check_leaves_azure_resources_to_this_one(sdk_plan: Plan) -> None:
    from tests.apimodels.test_api_models import input_problems as cloud_input_problems

    assert cloud_input_problems(sdk_plan) == ([], [])


def test_the_fixture_holds_what_the_script_extracts_from_the_samples() -> None:
    """The samples' Bicep literals are read as JSON data (strings with escapes, numbers, nesting)."""
    from scripts.azure_specs import bicep_literal

    text = "{\n  a: 'it\\'s'\n  'b-c': [\n    1\n    -2.5\n    true\n    null\n  ]\n  d: {\n  }\n}"
    assert bicep_literal(text) == {"a": "it's", "b-c": [1, -2.5, True, None], "d": {}}
    assert json.loads(json.dumps(_samples(VMSS)[0]["body"])) == _samples(VMSS)[0]["body"]


def test_client_names_and_identity_lists_map_back_to_the_wire_form() -> None:
    """pulumi-azure-native names a few inputs by the specification's x-ms-client-name and takes user-assigned
    identities as a list: the body uses the wire names and the API's map."""
    inputs = {
        "resourceGroupName": "g",
        "accountName": "acct",
        "location": "southcentralus",
        "kind": "StorageV2",
        "sku": {"name": "Standard_LRS"},
        "enableHttpsTrafficOnly": True,
        "networkRuleSet": {
            "defaultAction": "Deny",
            "virtualNetworkRules": [{"virtualNetworkResourceId": "s"}],
        },
    }
    assert request_body("azure-native:storage:StorageAccount", inputs) == {
        "location": "southcentralus",
        "kind": "StorageV2",
        "sku": {"name": "Standard_LRS"},
        "properties": {
            "supportsHttpsTrafficOnly": True,
            "networkAcls": {"defaultAction": "Deny", "virtualNetworkRules": [{"id": "s"}]},
        },
    }
    scale_set = {
        "resourceGroupName": "g",
        "vmScaleSetName": "v",
        "identity": {"type": "UserAssigned", "userAssignedIdentities": ["i"]},
    }
    assert request_body("azure-native:compute:VirtualMachineScaleSet", scale_set) == {
        "identity": {"type": "UserAssigned", "userAssignedIdentities": {"i": {}}}
    }
