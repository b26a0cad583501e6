"""An Azure cluster's network: one VNet with a node subnet, a controller subnet, one subnet per AMLFS
file system (Azure wants each file system in a subnet of its own, sized for its capacity) and, where the
cluster has hosts, the subnet of its Azure Bastion (components/azure/bastion.py).

Nodes have no public IPs. Every subnet turns Azure's implicit default outbound access off and leaves
the VNet through one NAT gateway with a Standard static public IP (Microsoft: explicit outbound
connectivity is "the recommended approach" -
learn.microsoft.com/azure/virtual-network/ip-services/default-outbound-access). Each subnet role has its
own NSG: SSH only from the VNet's own ranges, an explicit deny of anything from the Internet (below
Azure's default rules it changes nothing today, and it states the intent where policy checks read it),
and on each AMLFS subnet the Lustre ports within the VNet. The node subnet has the Microsoft.Storage
service endpoint, which the cluster bucket's network rule names.

The Bastion's subnet is named AzureBastionSubnet, as Azure requires, and has neither NSG nor NAT gateway:
Bastion is a managed gateway with its own public address, and an NSG on its subnet must carry Bastion's own
list of rules (learn.microsoft.com/azure/bastion/bastion-nsg), which Azure's defaults already allow;
nothing else is placed in it.

Subnets are standalone resources and the VNet lists none inline: pulumi-azure-native warns that mixing
the two deletes subnets (`VirtualNetwork.subnets` docstring).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
from pulumi_azure_native import network

from components._errors import check_inputs
from components._naming import child

TYPE = "clusterfab:network:AzureNetwork"

RDMA_RANGE = ipaddress.IPv4Network("172.16.0.0/16")
"""Reserved by Azure's RDMA (InfiniBand) network: "make sure that the virtual network address space does
not overlap" it (learn.microsoft.com/azure/virtual-machines/setup-infiniband)."""
LUSTRE_PORTS = ("988", "1019-1023")
"""The ports AMLFS needs between clients and servers (learn.microsoft.com/azure/azure-managed-lustre/
amlfs-prerequisites, "Subnet access and permissions")."""
KEY_VAULT_SERVICE = "Microsoft.KeyVault"
"""The service endpoint a key vault's virtual network rule requires on the subnet
(learn.microsoft.com/azure/key-vault/general/network-security)."""
STORAGE_SERVICE = "Microsoft.Storage"
"""The service endpoint a storage account's virtual network rule requires on the subnet
(learn.microsoft.com/azure/storage/common/storage-network-security)."""
BASTION_SUBNET = "AzureBastionSubnet"
"""The one name Azure Bastion accepts for its subnet (learn.microsoft.com/azure/bastion/
configuration-settings)."""
BASTION_PREFIX = 26
"""The Bastion subnet's longest prefix: "/26 or larger"."""
MYSQL_DELEGATION = "Microsoft.DBforMySQL/flexibleServers"
"""The service a flexible server's subnet is delegated to; the subnet then holds flexible servers alone
(learn.microsoft.com/azure/mysql/flexible-server/concepts-networking-vnet)."""
MYSQL_PORT = "3306"
INTERNET = "Internet"
"""The NSG service tag for addresses outside the VNet that are reachable from the Internet
(learn.microsoft.com/azure/virtual-network/service-tags-overview)."""
LAST_CUSTOM_PRIORITY = 4096
"""NSG rule priorities run from 100 (first) to 4096 (last custom rule); Azure's default rules follow at
65000-65500 (learn.microsoft.com/azure/virtual-network/network-security-groups-overview)."""


@dataclass(frozen=True, kw_only=True)
class AzureLustreSubnet:
    """The subnet of one AMLFS file system."""

    file_system: str
    """The file system's name: its key in `AzureNetwork.lustre_subnet_ids` and, for all but the first, part
    of the subnet's name."""
    cidr: str
    min_prefix: int
    """The longest prefix the file system's capacity allows (the caller's table: /27 for 4-16 TiB up to /23
    for 200-400 TiB); the subnet may be larger, never smaller."""


@dataclass(frozen=True, kw_only=True)
class AzureNetworkArgs:
    """Inputs of AzureNetwork."""

    resource_group_name: pulumi.Input[str]
    location: str
    address_space: Sequence[str]
    """The VNet's ranges (CIDRs); the subnets lie inside them, none overlaps 172.16.0.0/16."""
    node_cidr: str
    """The GPU nodes' subnet."""
    controller_cidr: str
    """The controller's (and login / monitoring hosts') subnet."""
    controller_service_endpoints: Sequence[str] = ()
    """Service endpoints of the controller subnet (Microsoft.Storage for the cluster bucket's network rule,
    Microsoft.KeyVault for the munge key's vault): a subnet without hosts has none."""
    lustre_subnets: Sequence[AzureLustreSubnet] = ()
    """One subnet per AMLFS file system, in a stable order: the first keeps the names of the one subnet all
    file systems once shared (`lustre`, `lustre-nsg`), so a stack made then keeps its subnet; the others are
    `lustre-<file system>`. Empty: no AMLFS."""
    bastion_cidr: str | None = None
    """The Bastion's subnet (/26 or larger); None: no Bastion."""
    database_cidr: str | None = None
    """The subnet delegated to Azure Database for MySQL flexible server (managed accounting), which the
    controller subnet alone reaches on MySQL's port; None: no managed database."""
    zone: str | None = None
    """The availability zone of the NAT gateway and its IP (a NAT gateway is zonal or no-zone); None: no
    zone."""
    nat_idle_timeout_minutes: int = 4
    """TCP idle timeout of the NAT gateway: Azure's default, 4 (4-120 allowed,
    learn.microsoft.com/azure/nat-gateway/nat-gateway-resource)."""
    tags: Mapping[str, str] = field(default_factory=dict)


def _problems(args: AzureNetworkArgs) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    spaces = [ipaddress.IPv4Network(cidr) for cidr in args.address_space]
    if not spaces:
        problems.append(("address_space", "the VNet needs at least one range"))
    problems.extend(
        ("address_space", f"{space} overlaps {RDMA_RANGE}, which Azure's RDMA network reserves")
        for space in spaces
        if space.overlaps(RDMA_RANGE)
    )
    subnets = {"node_cidr": ipaddress.IPv4Network(args.node_cidr)}
    subnets["controller_cidr"] = ipaddress.IPv4Network(args.controller_cidr)
    problems.extend(_lustre_problems(args.lustre_subnets))
    for index, lustre in enumerate(args.lustre_subnets):
        subnets[f"lustre_subnets[{index}].cidr"] = ipaddress.IPv4Network(lustre.cidr)
    if args.database_cidr is not None:
        subnets["database_cidr"] = ipaddress.IPv4Network(args.database_cidr)
    if args.bastion_cidr is not None:
        subnets["bastion_cidr"] = ipaddress.IPv4Network(args.bastion_cidr)
        if subnets["bastion_cidr"].prefixlen > BASTION_PREFIX:
            problems.append(
                ("bastion_cidr", f"{args.bastion_cidr} is smaller than Bastion's /{BASTION_PREFIX}")
            )
    for key, subnet in subnets.items():
        if not any(subnet.subnet_of(space) for space in spaces):
            problems.append((key, f"{subnet} is not inside the address space"))
    keys = list(subnets)
    for i, key in enumerate(keys):
        problems.extend(
            (key, f"{subnets[key]} overlaps {other} ({subnets[other]})")
            for other in keys[i + 1 :]
            if subnets[key].overlaps(subnets[other])
        )
    if not 4 <= args.nat_idle_timeout_minutes <= 120:
        problems.append(("nat_idle_timeout_minutes", "must be between 4 and 120"))
    return problems


def _lustre_problems(lustre: Sequence[AzureLustreSubnet]) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    names = [subnet.file_system for subnet in lustre]
    problems.extend(
        (f"lustre_subnets[{index}].file_system", f"{name} has two subnets")
        for index, name in enumerate(names)
        if name in names[:index]
    )
    for index, subnet in enumerate(lustre):
        size = ipaddress.IPv4Network(subnet.cidr).prefixlen
        if size > subnet.min_prefix:
            problems.append(
                (
                    f"lustre_subnets[{index}].cidr",
                    f"{subnet.cidr} is smaller than the /{subnet.min_prefix} file system "
                    f"{subnet.file_system} needs",
                )
            )
    return problems


def lustre_role(index: int, subnet: AzureLustreSubnet) -> str:
    """The name part of a file system's subnet and NSG: `lustre` for the first (the name the one shared
    subnet had, so that it stays where it is), `lustre-<file system>` for the others."""
    return "lustre" if index == 0 else f"lustre-{subnet.file_system}"


def _rule(
    name: str,
    priority: int,
    *,
    direction: str,
    access: str,
    protocol: str,
    sources: Sequence[str],
    destinations: Sequence[str],
    ports: Sequence[str],
    description: str,
) -> network.SecurityRuleArgs:
    """An NSG rule; one prefix or port goes in the singular field, as Azure itself writes it."""
    return network.SecurityRuleArgs(
        name=name,
        priority=priority,
        direction=direction,
        access=access,
        protocol=protocol,
        source_address_prefix=sources[0] if len(sources) == 1 else None,
        source_address_prefixes=list(sources) if len(sources) > 1 else None,
        source_port_range="*",
        destination_address_prefix=destinations[0] if len(destinations) == 1 else None,
        destination_address_prefixes=list(destinations) if len(destinations) > 1 else None,
        destination_port_range=ports[0] if len(ports) == 1 else None,
        destination_port_ranges=list(ports) if len(ports) > 1 else None,
        description=description,
    )


def host_rules(vnet: Sequence[str]) -> list[network.SecurityRuleArgs]:
    """The node and controller subnets' rules: SSH from the VNet's own ranges, nothing from the Internet."""
    return [
        _rule(
            "AllowSshFromVnet",
            100,
            direction="Inbound",
            access="Allow",
            protocol="Tcp",
            sources=vnet,
            destinations=["*"],
            ports=["22"],
            description="SSH only from inside the VNet (nodes have no public IP)",
        ),
        _deny_internet(),
    ]


def lustre_rules(vnet: Sequence[str], lustre_cidr: str) -> list[network.SecurityRuleArgs]:
    """The AMLFS subnet's rules: Lustre's ports between the file system and the VNet, both ways."""
    ports = list(LUSTRE_PORTS)
    return [
        _rule(
            "AllowLustreFromVnet",
            100,
            direction="Inbound",
            access="Allow",
            protocol="Tcp",
            sources=vnet,
            destinations=[lustre_cidr],
            ports=ports,
            description="Lustre clients in the VNet to the file system (LNet 988, 1019-1023)",
        ),
        _rule(
            "AllowLustreToVnet",
            100,
            direction="Outbound",
            access="Allow",
            protocol="Tcp",
            sources=[lustre_cidr],
            destinations=vnet,
            ports=ports,
            description="The file system to its Lustre clients in the VNet",
        ),
        _deny_internet(),
    ]


def database_rules(controller_cidr: str, database_cidr: str) -> list[network.SecurityRuleArgs]:
    """The database subnet's rules: MySQL from the controller subnet (slurmdbd and the accounting program
    run there), the subnet's own traffic, nothing else from the VNet (the GPU nodes, where jobs run, reach
    no port of it), nothing from the Internet."""
    return [
        _rule(
            "AllowMySqlFromController",
            100,
            direction="Inbound",
            access="Allow",
            protocol="Tcp",
            sources=[controller_cidr],
            destinations=["*"],
            ports=[MYSQL_PORT],
            description="slurmdbd and the accounting program on the controller to the database",
        ),
        _rule(
            "AllowOwnSubnet",
            110,
            direction="Inbound",
            access="Allow",
            protocol="*",
            sources=[database_cidr],
            destinations=[database_cidr],
            ports=["*"],
            description="the service's own traffic inside its delegated subnet",
        ),
        _rule(
            "DenyVnetInbound",
            LAST_CUSTOM_PRIORITY - 1,
            direction="Inbound",
            access="Deny",
            protocol="*",
            sources=["VirtualNetwork"],
            destinations=["*"],
            ports=["*"],
            description="no other host of the VNet reaches the database",
        ),
        _deny_internet(),
    ]


def _deny_internet() -> network.SecurityRuleArgs:
    return _rule(
        "DenyInternetInbound",
        LAST_CUSTOM_PRIORITY,
        direction="Inbound",
        access="Deny",
        protocol="*",
        sources=[INTERNET],
        destinations=["*"],
        ports=["*"],
        description="nothing from the Internet reaches this subnet",
    )


def standard_static_ip(
    logical: str,
    *,
    resource_group_name: pulumi.Input[str],
    location: str,
    zones: list[str] | None = None,
    tags: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> network.PublicIPAddress:
    """A Standard SKU, regional, static public IPv4 address: what a NAT gateway and a Bastion each take."""
    return network.PublicIPAddress(
        logical,
        resource_group_name=resource_group_name,
        location=location,
        sku=network.PublicIPAddressSkuArgs(name="Standard", tier="Regional"),
        public_ip_allocation_method="Static",
        public_ip_address_version="IPv4",
        zones=zones,
        tags=dict(tags),
        opts=opts,
    )


class AzureNetwork(pulumi.ComponentResource):
    """VNet, per-role subnets and NSGs, NAT gateway with a static public IP for egress."""

    vnet_id: pulumi.Output[str]
    node_subnet_id: pulumi.Output[str]
    """The GPU nodes' subnet (scale sets' NICs, the bucket's network rule)."""
    controller_subnet_id: pulumi.Output[str]
    lustre_subnet_ids: dict[str, pulumi.Output[str]]
    """Each AMLFS file system's subnet, by file system name."""
    bastion_subnet_id: pulumi.Output[str] | None
    """AzureBastionSubnet; None without a Bastion."""
    database_subnet_id: pulumi.Output[str] | None
    """The subnet delegated to the accounting database; None without one."""
    nat_public_ip: pulumi.Output[str]
    """The address all egress leaves from (for allow lists elsewhere)."""

    def __init__(self, name: str, args: AzureNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        self._own = pulumi.ResourceOptions(parent=self)
        vnet = network.VirtualNetwork(
            child(name, "vnet"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            address_space=network.AddressSpaceArgs(address_prefixes=list(args.address_space)),
            tags=dict(args.tags),
            opts=self._own,
        )
        nat, ip = self._nat()
        roles = [("nodes", args.node_cidr, False), ("controller", args.controller_cidr, False)]
        roles.extend(
            (lustre_role(index, lustre), lustre.cidr, True)
            for index, lustre in enumerate(args.lustre_subnets)
        )
        subnets: dict[str, network.Subnet] = {}
        previous: network.Subnet | None = None
        for role, cidr, lustre in roles:
            previous = subnets[role] = self._subnet(vnet, nat, role, cidr, previous, lustre=lustre)
        self.database_subnet_id = None
        if args.database_cidr is not None:
            previous = self._database_subnet(vnet, args.database_cidr, previous)
            self.database_subnet_id = previous.id
        self.bastion_subnet_id = None
        if args.bastion_cidr is not None:
            self.bastion_subnet_id = network.Subnet(
                child(name, "bastion"),
                resource_group_name=args.resource_group_name,
                virtual_network_name=vnet.name,
                subnet_name=BASTION_SUBNET,
                address_prefix=args.bastion_cidr,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[previous] if previous else None),
            ).id
        self.vnet_id = vnet.id
        self.node_subnet_id = subnets["nodes"].id
        self.controller_subnet_id = subnets["controller"].id
        self.lustre_subnet_ids = {
            lustre.file_system: subnets[lustre_role(index, lustre)].id
            for index, lustre in enumerate(args.lustre_subnets)
        }
        self.nat_public_ip = ip.ip_address.apply(lambda address: address or "")
        self.register_outputs(
            {
                "vnet_id": self.vnet_id,
                "node_subnet_id": self.node_subnet_id,
                "controller_subnet_id": self.controller_subnet_id,
                "lustre_subnet_ids": self.lustre_subnet_ids,
                "bastion_subnet_id": self.bastion_subnet_id,
                "database_subnet_id": self.database_subnet_id,
                "nat_public_ip": self.nat_public_ip,
            }
        )

    def _nat(self) -> tuple[network.NatGateway, network.PublicIPAddress]:
        name, args, own = self._name, self._args, self._own
        zones = [args.zone] if args.zone else None
        # A NAT gateway takes Standard SKU static IPv4 addresses only
        # (learn.microsoft.com/azure/nat-gateway/nat-gateway-resource).
        ip = standard_static_ip(
            child(name, "nat-ip"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            zones=zones,
            tags=args.tags,
            opts=own,
        )
        nat = network.NatGateway(
            child(name, "nat"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            sku=network.NatGatewaySkuArgs(name="Standard"),
            public_ip_addresses=[network.SubResourceArgs(id=ip.id)],
            idle_timeout_in_minutes=args.nat_idle_timeout_minutes,
            zones=zones,
            tags=dict(args.tags),
            opts=own,
        )
        return nat, ip

    def _subnet(
        self,
        vnet: network.VirtualNetwork,
        nat: network.NatGateway,
        role: str,
        cidr: str,
        previous: network.Subnet | None,
        *,
        lustre: bool,
    ) -> network.Subnet:
        name, args = self._name, self._args
        vnet_ranges = list(args.address_space)
        rules = lustre_rules(vnet_ranges, cidr) if lustre else host_rules(vnet_ranges)
        endpoints = {"nodes": [STORAGE_SERVICE], "controller": list(args.controller_service_endpoints)}.get(
            role, []
        )
        nsg = network.NetworkSecurityGroup(
            child(name, f"{role}-nsg"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            security_rules=rules,
            tags=dict(args.tags),
            opts=self._own,
        )
        return network.Subnet(
            child(name, role),
            resource_group_name=args.resource_group_name,
            virtual_network_name=vnet.name,
            address_prefix=cidr,
            # No implicit outbound IP: egress goes through the NAT gateway alone (the AMLFS subnets too,
            # whose servers must reach the AzureCloud service tag - amlfs-prerequisites).
            default_outbound_access=False,
            nat_gateway=network.SubResourceArgs(id=nat.id),
            network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
            service_endpoints=[network.ServiceEndpointPropertiesFormatArgs(service=s) for s in endpoints]
            or None,
            # One subnet at a time: Azure refuses concurrent changes to one VNet's subnets
            # ("AnotherOperationInProgress").
            opts=pulumi.ResourceOptions(parent=self, depends_on=[previous] if previous else None),
        )

    def _database_subnet(
        self, vnet: network.VirtualNetwork, cidr: str, previous: network.Subnet | None
    ) -> network.Subnet:
        """The subnet delegated to Azure Database for MySQL flexible server, with its NSG; no NAT gateway and
        no default outbound access: the server answers the controller and starts no connection out."""
        name, args = self._name, self._args
        nsg = network.NetworkSecurityGroup(
            child(name, "database-nsg"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            security_rules=database_rules(args.controller_cidr, cidr),
            tags=dict(args.tags),
            opts=self._own,
        )
        return network.Subnet(
            child(name, "database"),
            resource_group_name=args.resource_group_name,
            virtual_network_name=vnet.name,
            address_prefix=cidr,
            default_outbound_access=False,
            network_security_group=network.NetworkSecurityGroupArgs(id=nsg.id),
            delegations=[network.DelegationArgs(name="mysql-flexible-server", service_name=MYSQL_DELEGATION)],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[previous] if previous else None),
        )
