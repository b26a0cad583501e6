"""Azure resource group and network built from their Args under the mock engine: exact resources and
inputs, per-role NSG rules, no default outbound access, NAT egress, the storage service endpoint."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from clusterfab.plan.engine import PlanError, ProgramRun
from tests.components.azure_harness import LOCATION, NAT_IP, RESOURCE_GROUP, build, by_name, types

VNET = "10.20.0.0/16"
TAGS = {"clusterfab-blueprint": "ml"}


def network(
    lustre: str | None = "10.20.32.0/24",
    zone: str | None = "1",
    more: tuple[tuple[str, str, int], ...] = (),
    bastion: str | None = None,
) -> ProgramRun:
    """`lustre`: the first file system's subnet (file system `scratch`, /24 needed); `more`: further
    file systems (name, subnet, longest prefix)."""
    from components.azure.network import AzureLustreSubnet, AzureNetwork, AzureNetworkArgs

    first = [("scratch", lustre, 24)] if lustre else []
    subnets = [AzureLustreSubnet(file_system=f, cidr=c, min_prefix=p) for f, c, p in [*first, *more]]

    def program() -> None:
        net = AzureNetwork(
            "ml-net",
            AzureNetworkArgs(
                resource_group_name=RESOURCE_GROUP,
                location=LOCATION,
                address_space=[VNET],
                node_cidr="10.20.0.0/20",
                controller_cidr="10.20.16.0/24",
                lustre_subnets=subnets,
                bastion_cidr=bastion,
                zone=zone,
                tags=TAGS,
            ),
        )
        if net.bastion_subnet_id is not None:
            pulumi.export("bastion_subnet_id", net.bastion_subnet_id)
        pulumi.export("nat_public_ip", net.nat_public_ip)
        pulumi.export("node_subnet_id", net.node_subnet_id)
        pulumi.export("controller_subnet_id", net.controller_subnet_id)
        pulumi.export("lustre_subnet_ids", net.lustre_subnet_ids)
        pulumi.export("vnet_id", net.vnet_id)

    return build(program)


SSH_FROM_VNET = {
    "name": "AllowSshFromVnet",
    "priority": 100,
    "direction": "Inbound",
    "access": "Allow",
    "protocol": "Tcp",
    "sourceAddressPrefix": VNET,
    "sourcePortRange": "*",
    "destinationAddressPrefix": "*",
    "destinationPortRange": "22",
    "description": "SSH only from inside the VNet (nodes have no public IP)",
}
DENY_INTERNET = {
    "name": "DenyInternetInbound",
    "priority": 4096,
    "direction": "Inbound",
    "access": "Deny",
    "protocol": "*",
    "sourceAddressPrefix": "Internet",
    "sourcePortRange": "*",
    "destinationAddressPrefix": "*",
    "destinationPortRange": "*",
    "description": "nothing from the Internet reaches this subnet",
}


def subnet(cidr: str, role: str, **extra: Any) -> dict[str, Any]:
    return {
        "addressPrefix": cidr,
        "defaultOutboundAccess": False,
        "natGateway": {"id": "ml-net-nat-id"},
        "networkSecurityGroup": {"id": f"ml-net-{role}-nsg-id"},
        # pulumi-azure-native's own defaults for a subnet (the SDK adds them)
        "privateEndpointNetworkPolicies": "Disabled",
        "privateLinkServiceNetworkPolicies": "Enabled",
        "resourceGroupName": RESOURCE_GROUP,
        "virtualNetworkName": "ml-net-vnet",
        **extra,
    }


def test_resource_group_is_created_where_and_as_told() -> None:
    from components.azure.resource_group import AzureResourceGroup, AzureResourceGroupArgs

    def program() -> None:
        group = AzureResourceGroup("ml", AzureResourceGroupArgs(location=LOCATION, protect=True, tags=TAGS))
        pulumi.export("name", group.resource_group_name)

    run = build(program)
    assert types(run) == {
        "ml": "clusterfab:core:AzureResourceGroup",
        "ml-rg": "azure-native:resources:ResourceGroup",
    }
    group = by_name(run)["ml-rg"]
    assert group.inputs == {"location": LOCATION, "tags": TAGS}
    assert group.protect is True
    assert run.outputs == {"name": "ml-rg"}  # auto-named: the mock's name is the logical name


def test_network_has_a_vnet_three_subnets_an_nsg_each_and_a_nat_gateway() -> None:
    run = network()
    assert types(run) == {
        "ml-net": "clusterfab:network:AzureNetwork",
        "ml-net-vnet": "azure-native:network:VirtualNetwork",
        "ml-net-nat-ip": "azure-native:network:PublicIPAddress",
        "ml-net-nat": "azure-native:network:NatGateway",
        "ml-net-nodes-nsg": "azure-native:network:NetworkSecurityGroup",
        "ml-net-nodes": "azure-native:network:Subnet",
        "ml-net-controller-nsg": "azure-native:network:NetworkSecurityGroup",
        "ml-net-controller": "azure-native:network:Subnet",
        "ml-net-lustre-nsg": "azure-native:network:NetworkSecurityGroup",
        "ml-net-lustre": "azure-native:network:Subnet",
    }
    made = by_name(run)
    component = made["ml-net"].urn
    assert all(r.parent == component for name, r in made.items() if name != "ml-net")
    assert made["ml-net-vnet"].inputs == {
        "addressSpace": {"addressPrefixes": [VNET]},
        "enableDdosProtection": False,
        "enableVmProtection": False,
        "location": LOCATION,
        "resourceGroupName": RESOURCE_GROUP,
        "tags": TAGS,
    }
    assert "subnets" not in made["ml-net-vnet"].inputs  # standalone subnets only


def test_subnets_have_no_default_outbound_access_and_leave_through_the_nat_gateway() -> None:
    made = by_name(network())
    assert made["ml-net-nodes"].inputs == subnet(
        "10.20.0.0/20", "nodes", serviceEndpoints=[{"service": "Microsoft.Storage"}]
    )
    assert made["ml-net-controller"].inputs == subnet("10.20.16.0/24", "controller")
    assert made["ml-net-lustre"].inputs == subnet("10.20.32.0/24", "lustre")
    # one subnet at a time: each waits for the one before it
    assert made["ml-net-nodes"].urn in made["ml-net-controller"].dependencies
    assert made["ml-net-controller"].urn in made["ml-net-lustre"].dependencies


def test_nat_gateway_is_standard_with_one_standard_static_public_ip_in_the_zone() -> None:
    made = by_name(network())
    assert made["ml-net-nat-ip"].inputs == {
        "location": LOCATION,
        "publicIPAddressVersion": "IPv4",
        "publicIPAllocationMethod": "Static",
        "resourceGroupName": RESOURCE_GROUP,
        "sku": {"name": "Standard", "tier": "Regional"},
        "tags": TAGS,
        "zones": ["1"],
    }
    assert made["ml-net-nat"].inputs == {
        "idleTimeoutInMinutes": 4,
        "location": LOCATION,
        "publicIpAddresses": [{"id": "ml-net-nat-ip-id"}],
        "resourceGroupName": RESOURCE_GROUP,
        "sku": {"name": "Standard"},
        "tags": TAGS,
        "zones": ["1"],
    }


def test_node_and_controller_nsgs_allow_ssh_from_the_vnet_only_and_deny_the_internet() -> None:
    made = by_name(network())
    for role in ("nodes", "controller"):
        assert made[f"ml-net-{role}-nsg"].inputs == {
            "location": LOCATION,
            "resourceGroupName": RESOURCE_GROUP,
            "securityRules": [SSH_FROM_VNET, DENY_INTERNET],
            "tags": TAGS,
        }


def test_lustre_nsg_allows_lnet_ports_988_and_1019_to_1023_within_the_vnet() -> None:
    lustre = by_name(network())["ml-net-lustre-nsg"].inputs
    assert lustre["securityRules"] == [
        {
            "name": "AllowLustreFromVnet",
            "priority": 100,
            "direction": "Inbound",
            "access": "Allow",
            "protocol": "Tcp",
            "sourceAddressPrefix": VNET,
            "sourcePortRange": "*",
            "destinationAddressPrefix": "10.20.32.0/24",
            "destinationPortRanges": ["988", "1019-1023"],
            "description": "Lustre clients in the VNet to the file system (LNet 988, 1019-1023)",
        },
        {
            "name": "AllowLustreToVnet",
            "priority": 100,
            "direction": "Outbound",
            "access": "Allow",
            "protocol": "Tcp",
            "sourceAddressPrefix": "10.20.32.0/24",
            "sourcePortRange": "*",
            "destinationAddressPrefix": VNET,
            "destinationPortRanges": ["988", "1019-1023"],
            "description": "The file system to its Lustre clients in the VNet",
        },
        DENY_INTERNET,
    ]


def test_no_rule_anywhere_allows_anything_from_the_internet() -> None:
    for nsg in (r for r in network().resources if r.type == "azure-native:network:NetworkSecurityGroup"):
        for rule in nsg.inputs["securityRules"]:
            if rule["direction"] == "Inbound" and rule["access"] == "Allow":
                assert rule["sourceAddressPrefix"] == VNET, (nsg.name, rule["name"])


def test_outputs_are_the_subnets_vnet_and_nat_address() -> None:
    assert network().outputs == {
        "nat_public_ip": NAT_IP,
        "node_subnet_id": "ml-net-nodes-id",
        "controller_subnet_id": "ml-net-controller-id",
        "lustre_subnet_ids": {"scratch": "ml-net-lustre-id"},
        "vnet_id": "ml-net-vnet-id",
    }


def test_without_amlfs_there_is_no_lustre_subnet_and_without_a_zone_no_zones() -> None:
    run = network(lustre=None, zone=None)
    names = set(by_name(run))
    assert {"ml-net-lustre", "ml-net-lustre-nsg"}.isdisjoint(names)
    assert run.outputs["lustre_subnet_ids"] == {}
    made = by_name(run)
    assert "zones" not in made["ml-net-nat"].inputs
    assert "zones" not in made["ml-net-nat-ip"].inputs


@pytest.mark.parametrize(
    ("space", "nodes", "message"),
    [
        ("172.16.0.0/12", "172.16.0.0/20", "address_space: 172.16.0.0/12 overlaps 172.16.0.0/16"),
        (VNET, "10.21.0.0/20", "node_cidr: 10.21.0.0/20 is not inside the address space"),
        (VNET, "10.20.16.0/20", "node_cidr: 10.20.16.0/20 overlaps controller_cidr (10.20.16.0/24)"),
    ],
)
def test_ranges_that_azure_or_the_layout_refuses_are_refused(space: str, nodes: str, message: str) -> None:
    from components.azure.network import AzureNetwork, AzureNetworkArgs

    def program() -> None:
        AzureNetwork(
            "ml-net",
            AzureNetworkArgs(
                resource_group_name=RESOURCE_GROUP,
                location=LOCATION,
                address_space=[space],
                node_cidr=nodes,
                controller_cidr="10.20.16.0/24" if space == VNET else "172.17.16.0/24",
            ),
        )

    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        build(program)
    assert message in str(info.value)


def test_each_file_system_has_its_own_subnet_and_nsg_the_first_under_the_shared_subnets_names() -> None:
    run = network(more=(("archive", "10.20.48.0/25", 25),))
    made = by_name(run)
    assert made["ml-net-lustre"].inputs == subnet("10.20.32.0/24", "lustre")
    assert made["ml-net-lustre-archive"].inputs == subnet("10.20.48.0/25", "lustre-archive")
    rules = made["ml-net-lustre-archive-nsg"].inputs["securityRules"]
    assert [(r["sourceAddressPrefix"], r["destinationAddressPrefix"]) for r in rules] == [
        (VNET, "10.20.48.0/25"),
        ("10.20.48.0/25", VNET),
        ("Internet", "*"),
    ]
    assert made["ml-net-lustre"].urn in made["ml-net-lustre-archive"].dependencies
    assert run.outputs["lustre_subnet_ids"] == {
        "scratch": "ml-net-lustre-id",
        "archive": "ml-net-lustre-archive-id",
    }


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (
            (("archive", "10.20.48.0/27", 25),),
            "lustre_subnets[1].cidr: 10.20.48.0/27 is smaller than the /25 file system archive needs",
        ),
        ((("scratch", "10.20.48.0/25", 25),), "lustre_subnets[1].file_system: scratch has two subnets"),
        (
            (("archive", "10.20.32.128/25", 25),),
            "lustre_subnets[0].cidr: 10.20.32.0/24 overlaps lustre_subnets[1].cidr (10.20.32.128/25)",
        ),
    ],
)
def test_lustre_subnets_azure_or_the_file_system_would_refuse_are_refused(
    more: tuple[tuple[str, str, int], ...], message: str
) -> None:
    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        network(more=more)
    assert message in str(info.value)


def test_the_bastion_subnet_has_azures_one_name_and_neither_nsg_nor_nat_and_comes_last() -> None:
    """AzureBastionSubnet is the only name Bastion takes (learn.microsoft.com/azure/bastion/
    configuration-settings); Bastion is a gateway with its own public address, so the subnet has no NAT
    gateway and no NSG (one there would need Bastion's own rules)."""
    run = network(bastion="10.20.240.0/26")
    made = by_name(run)
    assert made["ml-net-bastion"].inputs == {
        "addressPrefix": "10.20.240.0/26",
        # the SDK's defaults, as on every subnet
        "privateEndpointNetworkPolicies": "Disabled",
        "privateLinkServiceNetworkPolicies": "Enabled",
        "resourceGroupName": RESOURCE_GROUP,
        "subnetName": "AzureBastionSubnet",
        "virtualNetworkName": "ml-net-vnet",
    }
    assert "ml-net-bastion-nsg" not in made
    # Azure refuses concurrent changes to one VNet's subnets: it waits for the one before it.
    assert [d.rpartition("::")[2] for d in made["ml-net-bastion"].dependencies if "Subnet" in d] == [
        "ml-net-lustre"
    ]
    assert run.outputs["bastion_subnet_id"] == "ml-net-bastion-id"
    assert "bastion_subnet_id" not in network().outputs
    assert "ml-net-bastion" not in by_name(network())


def test_a_bastion_subnet_smaller_than_a_26_is_refused() -> None:
    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        network(bastion="10.20.240.0/27")
    assert "bastion_cidr: 10.20.240.0/27 is smaller than Bastion's /26" in str(info.value)
