"""Azure Bastion for the cluster's hosts: how an operator reaches a VM's port (`clusterfab dashboard`'s
Grafana tunnel) with no port open to the internet and no public address on any VM.

A Standard Bastion with native client support (tunneling): `az network bastion ssh` forwards a port over
SSH, which "Connections via native client require the Bastion Standard SKU" makes the smallest SKU that
serves it (learn.microsoft.com/azure/bastion/connect-vm-native-client-linux; the Developer SKU has no
native client and Basic no CLI connections - the SKU comparison table). It takes a Standard static public
IPv4 address (the managed gateway's, not a VM's) and the VNet's AzureBastionSubnet. Shareable links, IP
connect and file copy stay off: the one path in is a signed-in operator's SSH to a VM by its resource id.
The gateway is named `<resource group>-bastion`, where clusterfab.clouds.azure.access looks for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
from pulumi_azure_native import network

from components._naming import child
from components.azure.network import standard_static_ip

TYPE = "clusterfab:network:AzureBastion"
SCALE_UNITS = 2
"""A Standard Bastion's smallest (and default) number of instances."""


@dataclass(frozen=True, kw_only=True)
class AzureBastionArgs:
    """Inputs of AzureBastion."""

    resource_group_name: pulumi.Input[str]
    location: str
    bastion_name: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    """The VNet's AzureBastionSubnet (AzureNetwork.bastion_subnet_id)."""
    tags: Mapping[str, str] = field(default_factory=dict)


class AzureBastion(pulumi.ComponentResource):
    """The Bastion host and its public address."""

    bastion_id: pulumi.Output[str]

    def __init__(self, name: str, args: AzureBastionArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        own = pulumi.ResourceOptions(parent=self)
        # Bastion takes a Standard SKU static IPv4 address (learn.microsoft.com/azure/bastion/
        # configuration-settings, "Public IP address").
        ip = standard_static_ip(
            child(name, "ip"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            tags=args.tags,
            opts=own,
        )
        bastion = network.BastionHost(
            child(name, "host"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            bastion_host_name=args.bastion_name,
            sku=network.SkuArgs(name="Standard"),
            scale_units=SCALE_UNITS,
            enable_tunneling=True,
            enable_ip_connect=False,
            enable_shareable_link=False,
            enable_file_copy=False,
            ip_configurations=[
                network.BastionHostIPConfigurationArgs(
                    name="primary",
                    subnet=network.SubResourceArgs(id=args.subnet_id),
                    public_ip_address=network.SubResourceArgs(id=ip.id),
                )
            ],
            tags=dict(args.tags),
            opts=own,
        )
        self.bastion_id = bastion.id
        self.register_outputs({"bastion_id": self.bastion_id})
