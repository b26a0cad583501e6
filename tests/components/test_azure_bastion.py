"""The Azure Bastion built from its Args under the mock engine: a Standard Bastion with native client
tunneling (what `az network bastion ssh` needs: "Connections via native client require the Bastion Standard
SKU", learn.microsoft.com/azure/bastion/connect-vm-native-client-linux), its Standard static public IPv4
address, and nothing else turned on."""

from __future__ import annotations

from clusterfab.clouds.azure.access import bastion_name
from tests.components.azure_harness import LOCATION, RESOURCE_GROUP, build, by_name, types

SUBNET = (
    "/subscriptions/s/resourceGroups/ml-rg/providers/Microsoft.Network/virtualNetworks/v/subnets/"
    "AzureBastionSubnet"
)


def _bastion() -> dict[str, object]:
    from components.azure.bastion import AzureBastion, AzureBastionArgs

    def program() -> None:
        AzureBastion(
            "ml-bastion",
            AzureBastionArgs(
                resource_group_name=RESOURCE_GROUP,
                location=LOCATION,
                bastion_name=bastion_name("clusterfab-ml-dev"),
                subnet_id=SUBNET,
                tags={"clusterfab-blueprint": "ml"},
            ),
        )

    run = build(program)
    assert types(run) == {
        "ml-bastion": "clusterfab:network:AzureBastion",
        "ml-bastion-ip": "azure-native:network:PublicIPAddress",
        "ml-bastion-host": "azure-native:network:BastionHost",
    }
    return {name: resource.inputs for name, resource in by_name(run).items()}


def test_a_standard_bastion_with_tunneling_alone_named_where_dashboard_looks() -> None:
    made = _bastion()
    # (the SDK sends its defaults for the switches not set: all off)
    assert made["ml-bastion-host"] == {
        "bastionHostName": "clusterfab-ml-dev-bastion",
        "disableCopyPaste": False,
        "enableFileCopy": False,
        "enableIpConnect": False,
        "enableKerberos": False,
        "enablePrivateOnlyBastion": False,
        "enableSessionRecording": False,
        "enableShareableLink": False,
        "enableTunneling": True,
        "ipConfigurations": [
            {
                "name": "primary",
                "publicIPAddress": {"id": "ml-bastion-ip-id"},
                "subnet": {"id": SUBNET},
            }
        ],
        "location": LOCATION,
        "resourceGroupName": RESOURCE_GROUP,
        "scaleUnits": 2,
        "sku": {"name": "Standard"},
        "tags": {"clusterfab-blueprint": "ml"},
    }
    assert made["ml-bastion-ip"] == {
        "location": LOCATION,
        "publicIPAddressVersion": "IPv4",
        "publicIPAllocationMethod": "Static",
        "resourceGroupName": RESOURCE_GROUP,
        "sku": {"name": "Standard", "tier": "Regional"},
        "tags": {"clusterfab-blueprint": "ml"},
    }
