"""An Azure GPU scale set (one InfiniBand fabric unit) built from its Args under the mock engine: the
exact scale set Azure's InfiniBand rules ask for, secure defaults, Spot and Regular capacity."""

from __future__ import annotations

import base64
from typing import Any

import pulumi
import pytest

from clusterfab.plan.engine import PlanError, ProgramRun
from tests.components.azure_harness import LOCATION, RESOURCE_GROUP, build, by_name, types

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests ops@example"
BOOT = "#!/bin/bash\necho boot\n"
IDENTITY = (
    "/subscriptions/s/resourceGroups/ml-rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/n"
)
SUBNET = "/subscriptions/s/resourceGroups/ml-rg/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes"


def scale_set(**overrides: Any) -> ProgramRun:
    from components.azure.node_group import AzureGpuScaleSet, AzureGpuScaleSetArgs, AzureImage

    fields: dict[str, Any] = {
        "resource_group_name": RESOURCE_GROUP,
        "location": LOCATION,
        "node_group": "trainers",
        "vm_size": "Standard_ND96isr_H100_v5",
        "capacity": 16,
        "subnet_id": SUBNET,
        "identity_id": IDENTITY,
        "image": AzureImage("microsoft-dsvm", "ubuntu-hpc", "2404", "24.04.2026072901"),
        "ssh_public_key": KEY,
        "boot_script": BOOT,
        "zone": "1",
        "os_disk_gib": 512,
        "tags": {"clusterfab-blueprint": "ml"},
        **overrides,
    }

    def program() -> None:
        unit = AzureGpuScaleSet("ml-trainers-0", AzureGpuScaleSetArgs(**fields))
        pulumi.export("id", unit.scale_set_id)
        pulumi.export("name", unit.scale_set_name)

    return build(program)


def vmss(run: ProgramRun) -> dict[str, Any]:
    return by_name(run)["ml-trainers-0-vmss"].inputs


def test_an_infiniband_unit_is_one_uniform_scale_set_with_exactly_these_inputs() -> None:
    run = scale_set()
    assert types(run) == {
        "ml-trainers-0": "clusterfab:compute:AzureGpuScaleSet",
        "ml-trainers-0-vmss": "azure-native:compute:VirtualMachineScaleSet",
    }
    assert vmss(run) == {
        "identity": {"type": "UserAssigned", "userAssignedIdentities": [IDENTITY]},
        "location": LOCATION,
        "orchestrationMode": "Uniform",
        "overprovision": False,
        "platformFaultDomainCount": 1,
        "resourceGroupName": RESOURCE_GROUP,
        "singlePlacementGroup": True,
        "sku": {"capacity": 16, "name": "Standard_ND96isr_H100_v5", "tier": "Standard"},
        "tags": {"clusterfab-blueprint": "ml", "clusterfab-node-group": "trainers"},
        "upgradePolicy": {"mode": "Manual"},
        "virtualMachineProfile": {
            "networkProfile": {
                "networkInterfaceConfigurations": [
                    {
                        "enableAcceleratedNetworking": True,
                        "ipConfigurations": [{"name": "primary", "primary": True, "subnet": {"id": SUBNET}}],
                        "name": "primary",
                        "primary": True,
                    }
                ]
            },
            "osProfile": {
                "adminUsername": "clusterfab",
                "computerNamePrefix": "ml-trainers-0",
                "linuxConfiguration": {
                    "disablePasswordAuthentication": True,
                    "provisionVMAgent": True,
                    "ssh": {
                        "publicKeys": [{"keyData": KEY, "path": "/home/clusterfab/.ssh/authorized_keys"}]
                    },
                },
            },
            "priority": "Regular",
            "scheduledEventsProfile": {
                "terminateNotificationProfile": {"enable": True, "notBeforeTimeout": "PT5M"}
            },
            "securityProfile": {"encryptionAtHost": True},
            "storageProfile": {
                "imageReference": {
                    "offer": "ubuntu-hpc",
                    "publisher": "microsoft-dsvm",
                    "sku": "2404",
                    "version": "24.04.2026072901",
                },
                "osDisk": {
                    "caching": "ReadWrite",
                    "createOption": "FromImage",
                    "diskSizeGB": 512,
                    "managedDisk": {"storageAccountType": "Premium_LRS"},
                },
            },
            "userData": "IyEvYmluL2Jhc2gKZWNobyBib290Cg==",
        },
        "zones": ["1"],
    }
    assert base64.b64decode(vmss(run)["virtualMachineProfile"]["userData"]).decode() == BOOT
    assert run.outputs == {"id": "ml-trainers-0-vmss-id", "name": "ml-trainers-0-vmss"}


def test_nodes_have_no_public_ip_configuration() -> None:
    nics = vmss(scale_set())["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"]
    assert len(nics) == 1
    assert all("publicIPAddressConfiguration" not in ip for ip in nics[0]["ipConfigurations"])


def test_spot_units_name_their_eviction_policy_and_never_evict_for_price() -> None:
    profile = vmss(scale_set(priority="Spot", eviction_policy="Delete"))["virtualMachineProfile"]
    assert (profile["priority"], profile["evictionPolicy"], profile["billingProfile"]) == (
        "Spot",
        "Delete",
        {"maxPrice": -1},
    )
    # Azure refuses terminate notifications on Spot VMs; they get Scheduled Events' Preempt instead.
    assert "scheduledEventsProfile" not in profile


def test_regular_units_take_the_terminate_notice_they_are_given() -> None:
    profile = vmss(scale_set(terminate_notice="PT15M"))["virtualMachineProfile"]
    assert profile["scheduledEventsProfile"] == {
        "terminateNotificationProfile": {"enable": True, "notBeforeTimeout": "PT15M"}
    }
    assert "billingProfile" not in profile
    assert "evictionPolicy" not in profile


def test_a_gb300_rack_turns_the_single_placement_group_off_when_told() -> None:
    inputs = vmss(scale_set(vm_size="Standard_ND128isr_GB300_v6", capacity=18, single_placement_group=False))
    assert (inputs["singlePlacementGroup"], inputs["sku"]["capacity"]) == (False, 18)


def test_one_hundred_vms_fill_a_placement_group() -> None:
    assert vmss(scale_set(capacity=100))["sku"]["capacity"] == 100


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"capacity": 101}, "capacity: a single placement group holds at most 100 VMs: split the unit"),
        ({"priority": "Spot"}, "eviction_policy: a Spot scale set names its eviction policy"),
        ({"eviction_policy": "Deallocate"}, "eviction_policy: only Spot VMs are evicted"),
        ({"terminate_notice": "PT20M"}, "terminate_notice: must be PT5M to PT15M"),
        ({"terminate_notice": "PT4M"}, "terminate_notice: must be PT5M to PT15M"),
        ({"ssh_public_key": " "}, "ssh_public_key: nodes take SSH keys only: give one"),
        ({"admin_username": "root"}, "admin_username: 'root' is not a usable Linux user name"),
        ({"capacity": -1}, "capacity: cannot be negative"),
    ],
)
def test_args_azure_would_refuse_or_that_break_a_fabric_unit_are_refused(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        scale_set(**overrides)
    assert message in str(info.value)


def test_more_than_one_hundred_vms_are_fine_without_a_single_placement_group() -> None:
    assert vmss(scale_set(capacity=144, single_placement_group=False))["sku"]["capacity"] == 144
