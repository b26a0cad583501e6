"""The cluster's GCP networks: the system VPC every node and file system uses, and per fabric the extra
networks its GPU NICs need.

The counts, MTUs and the RoCE network profile come from the catalog (`GcpMachineType.network`), never
from code: TCPX (A3 High) adds 4 GPU VPCs, TCPXO (A3 Mega) 8, both at MTU 8244; RoCE (A3 Ultra, A4,
A4X) adds a second gVNIC VPC and one RDMA VPC with the zone's `vpc-roce` profile and one subnet per
MRDMA NIC (8, or 4 on A4X). Networks are shared: one set per fabric kind in use, whatever the number
of node groups on it.

Addresses are fixed slots of the blueprint's range (`clusterfab.addressing`): general network i is
slot i, the fabric networks follow in a fixed fabric order, and the last slot is reserved for private
services access (the range Managed Lustre and Filestore get their addresses from). Nodes have no
external IPs: they reach the internet through Cloud NAT and Google APIs through Private Google Access;
SSH is open to IAP's range (and the blueprint's ssh_ingress_cidrs) only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import get_args

import pulumi
import pulumi_gcp as gcp

from clusterfab import addressing
from clusterfab.catalog.models import GcpMachineType
from clusterfab.core.vocab import Fabric
from components._naming import child
from components.gcp import GcpPlanError

TYPE = "clusterfab:network:GcpNetwork"
FABRIC_TYPE = "clusterfab:network:GcpFabricNetwork"

IAP_SSH_RANGE = "35.235.240.0/20"
"""The range IAP TCP forwarding connects from (Google's documented, fixed range)."""
PSA_SLOT = addressing.GCP_PRIVATE_SERVICES_SLOT
"""The last block of the cluster range: allocated to private services access (Lustre, Filestore)."""
FABRIC_ORDER: tuple[Fabric, ...] = get_args(Fabric)
"""Fabric networks take their address slots in this order, so reordering node groups moves nothing."""


@dataclass(frozen=True)
class SubnetPlan:
    role: str
    """Logical-name suffix of the subnet (and its firewall source)."""
    cidr: str


@dataclass(frozen=True)
class VpcPlan:
    role: str
    """Logical-name suffix of the VPC: sys, gvnic-1, gpu-0 .. gpu-7, vpc (the RDMA VPC)."""
    mtu: int | None
    """None: GCP's default (the catalog says nothing for clusters without a GPU fabric)."""
    subnets: tuple[SubnetPlan, ...]
    network_profile: str | None = None
    google_access: bool = False
    """Private Google Access: general networks reach Google APIs (GCS, logging) without NAT."""


@dataclass(frozen=True)
class FabricNetworkPlan:
    fabric: Fabric
    vpcs: tuple[VpcPlan, ...]

    @property
    def nic_subnets(self) -> int:
        """How many NICs the fabric's networks can take (one per subnet, in order)."""
        return sum(len(v.subnets) for v in self.vpcs)


@dataclass(frozen=True)
class NetworkPlan:
    """Pure decisions for every network of the cluster."""

    project: str
    region: str
    zone: str
    cidr: str
    general: tuple[VpcPlan, ...]
    """General (gVNIC) networks; general[0] is the system VPC."""
    fabrics: tuple[FabricNetworkPlan, ...]
    psa_range: str | None
    """Private services access range (set when the cluster has managed storage)."""
    ssh_ingress_cidrs: tuple[str, ...]

    def fabric(self, fabric: Fabric) -> FabricNetworkPlan:
        return next(f for f in self.fabrics if f.fabric == fabric)


def plan_network(
    *,
    project: str,
    region: str,
    zone: str,
    cidr: str,
    fabric_machines: Sequence[GcpMachineType],
    general_slots: int,
    private_services: bool,
    ssh_ingress_cidrs: Sequence[str] = (),
) -> NetworkPlan:
    """The networks for node groups on `fabric_machines` (the machine types of groups with a fabric).

    `general_slots` address slots stay reserved for general networks (the most any catalog machine
    type uses), so adding a RoCE group to a TCPXO cluster moves no existing subnet.
    """
    blocks = addressing.blocks(cidr)
    general_count = max((m.network.general_vpcs for m in fabric_machines), default=1)
    if general_count > general_slots:
        raise GcpPlanError(f"{general_count} general networks do not fit in {general_slots} reserved slots")
    general: list[VpcPlan] = []
    for index in range(general_count):
        users = [m for m in fabric_machines if m.network.general_vpcs > index]
        # One VPC serves several machine types: the smallest MTU any of them asks for works for all.
        mtu = min((m.network.general_mtu for m in users), default=None)
        role = "sys" if index == 0 else f"gvnic-{index}"
        subnet = SubnetPlan(f"{role}-subnet", str(blocks[index]))
        general.append(VpcPlan(role, mtu, (subnet,), google_access=True))

    slot = general_slots
    fabrics: list[FabricNetworkPlan] = []
    for fabric in FABRIC_ORDER:
        machines = [m for m in fabric_machines if m.fabric == fabric]
        if not machines:
            continue
        vpcs: list[VpcPlan] = []
        gpu_mtu = min((m.network.gpu_mtu for m in machines if m.network.gpu_mtu), default=None)
        for index in range(max(m.network.gpu_vpcs for m in machines)):
            if slot >= PSA_SLOT:
                break
            role = f"gpu-{index}"
            vpcs.append(VpcPlan(role, gpu_mtu, (SubnetPlan(f"{role}-subnet", str(blocks[slot])),)))
            slot += 1
        rdma_subnets = max(m.network.rdma_subnets for m in machines)
        if rdma_subnets:
            profiles = {m.network.rdma_profile for m in machines}
            if len(profiles) != 1 or None in profiles:
                raise GcpPlanError(f"{fabric} machine types disagree on the RDMA network profile: {profiles}")
            subnets = []
            for index in range(rdma_subnets):
                if slot >= PSA_SLOT:
                    break
                subnets.append(SubnetPlan(f"subnet-{index}", str(blocks[slot])))
                slot += 1
            vpcs.append(
                VpcPlan(
                    "vpc",
                    min(m.network.rdma_mtu for m in machines if m.network.rdma_mtu),
                    tuple(subnets),
                    network_profile=f"projects/{project}/global/networkProfiles/{zone}-{profiles.pop()}",
                )
            )
        planned = FabricNetworkPlan(fabric, tuple(vpcs))
        needed = max(m.network.gpu_vpcs + m.network.rdma_subnets for m in machines)
        if planned.nic_subnets < needed:
            kinds = ", ".join(f for f in FABRIC_ORDER if any(m.fabric == f for m in fabric_machines))
            raise GcpPlanError(
                f"the fabrics {kinds} need more subnets than the {addressing.BLOCKS - 1} address blocks of "
                f"{cidr} leave after private services access; put these node groups in separate clusters"
            )
        fabrics.append(planned)

    return NetworkPlan(
        project=project,
        region=region,
        zone=zone,
        cidr=str(ipaddress.IPv4Network(cidr)),
        general=tuple(general),
        fabrics=tuple(fabrics),
        psa_range=str(blocks[PSA_SLOT]) if private_services else None,
        ssh_ingress_cidrs=tuple(ssh_ingress_cidrs),
    )


@dataclass(frozen=True)
class _Vpc:
    network: gcp.compute.Network
    subnets: list[gcp.compute.Subnetwork]


def _vpc(owner: pulumi.Resource, name: str, plan: VpcPlan, project: str, region: str) -> _Vpc:
    """One VPC with its subnets and a rule letting traffic flow within them (NCCL, RDMA, Lustre)."""
    own = pulumi.ResourceOptions(parent=owner)
    network = gcp.compute.Network(
        child(name, plan.role),
        project=project,
        auto_create_subnetworks=False,
        mtu=plan.mtu,
        network_profile=plan.network_profile,
        routing_mode="REGIONAL",
        description=f"clusterfab {name} {plan.role}",
        opts=own,
    )
    subnets = [
        gcp.compute.Subnetwork(
            child(name, subnet.role),
            project=project,
            region=region,
            network=network.id,
            ip_cidr_range=subnet.cidr,
            private_ip_google_access=plan.google_access,
            opts=own,
        )
        for subnet in plan.subnets
    ]
    return _Vpc(network, subnets)


def _allow_within(
    owner: pulumi.Resource, name: str, *, role: str, vpc: _Vpc, project: str, sources: Sequence[str]
) -> None:
    gcp.compute.Firewall(
        child(name, f"{role}-internal"),
        project=project,
        network=vpc.network.id,
        direction="INGRESS",
        allows=[gcp.compute.FirewallAllowArgs(protocol="all")],
        source_ranges=list(sources),
        description="all traffic between the cluster's own addresses",
        opts=pulumi.ResourceOptions(parent=owner),
    )


@dataclass(frozen=True)
class GcpNetworkArgs:
    plan: NetworkPlan
    labels: Mapping[str, str] = field(default_factory=dict)


class GcpNetwork(pulumi.ComponentResource):
    """System VPC (+ the second gVNIC VPC RoCE machines use), firewall, Cloud NAT, private services access."""

    system_network_id: pulumi.Output[str]
    """The system VPC (projects/P/global/networks/N): nodes' first NIC, TPU VMs, file systems."""
    system_network_name: pulumi.Output[str]
    """The system VPC's name."""
    system_subnetwork_id: pulumi.Output[str]
    """The system subnet."""
    general_subnetworks: list[pulumi.Output[str]]
    """Self links of the general networks' subnets, general network i at index i."""
    network_self_links: dict[str, pulumi.Output[str]]
    """Every VPC of this component by role."""
    private_services: gcp.servicenetworking.Connection | None
    """The private services connection managed storage waits for (None without managed storage)."""
    private_services_range: pulumi.Output[str] | None
    """Name of the allocated range (Filestore's reserved_ip_range)."""

    def __init__(self, name: str, args: GcpNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        plan = args.plan
        own = pulumi.ResourceOptions(parent=self)
        vpcs = [_vpc(self, name, general, plan.project, plan.region) for general in plan.general]
        system = vpcs[0]
        # The system VPC carries the file systems' traffic too: their servers sit in the PSA block,
        # which is inside the cluster range, so one rule over the whole range covers nodes and storage.
        _allow_within(self, name, role="sys", vpc=system, project=plan.project, sources=[plan.cidr])
        for general, vpc in zip(plan.general[1:], vpcs[1:], strict=True):
            _allow_within(
                self,
                name,
                role=general.role,
                vpc=vpc,
                project=plan.project,
                sources=[s.cidr for s in general.subnets],
            )

        gcp.compute.Firewall(
            child(name, "sys-iap-ssh"),
            project=plan.project,
            network=system.network.id,
            direction="INGRESS",
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
            source_ranges=[IAP_SSH_RANGE],
            description="SSH through IAP TCP forwarding only (nodes have no external IP)",
            opts=own,
        )
        if plan.ssh_ingress_cidrs:
            gcp.compute.Firewall(
                child(name, "sys-ssh"),
                project=plan.project,
                network=system.network.id,
                direction="INGRESS",
                allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
                source_ranges=list(plan.ssh_ingress_cidrs),
                description="SSH from the blueprint's ssh_ingress_cidrs",
                opts=own,
            )

        router = gcp.compute.Router(
            child(name, "router"),
            project=plan.project,
            region=plan.region,
            network=system.network.id,
            opts=own,
        )
        gcp.compute.RouterNat(
            child(name, "nat"),
            project=plan.project,
            region=plan.region,
            router=router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            opts=own,
        )

        self.private_services = None
        self.private_services_range = None
        if plan.psa_range is not None:
            block = ipaddress.IPv4Network(plan.psa_range)
            psa_range = gcp.compute.GlobalAddress(
                child(name, "psa-range"),
                project=plan.project,
                purpose="VPC_PEERING",
                address_type="INTERNAL",
                address=str(block.network_address),
                prefix_length=block.prefixlen,
                network=system.network.id,
                labels=dict(args.labels),
                description="private services access: Managed Lustre and Filestore addresses",
                opts=own,
            )
            self.private_services = gcp.servicenetworking.Connection(
                child(name, "psa"),
                network=system.network.id,
                service="servicenetworking.googleapis.com",
                reserved_peering_ranges=[psa_range.name],
                opts=own,
            )
            self.private_services_range = psa_range.name

        self.system_network_id = system.network.id
        self.system_network_name = system.network.name
        self.system_subnetwork_id = system.subnets[0].id
        self.general_subnetworks = [vpc.subnets[0].self_link for vpc in vpcs]
        self.network_self_links = {
            g.role: v.network.self_link for g, v in zip(plan.general, vpcs, strict=True)
        }
        self.register_outputs(
            {
                "system_network_id": self.system_network_id,
                "system_subnetwork_id": self.system_subnetwork_id,
                "general_subnetworks": self.general_subnetworks,
                "network_self_links": self.network_self_links,
            }
        )


@dataclass(frozen=True)
class GcpFabricNetworkArgs:
    plan: FabricNetworkPlan
    project: str
    region: str


class GcpFabricNetwork(pulumi.ComponentResource):
    """The GPU VPCs (TCPX / TCPXO) or the RDMA VPC and its subnets (RoCE) of one fabric kind."""

    nic_subnetworks: list[pulumi.Output[str]]
    """Subnet self links in NIC order: GPU NIC i attaches to entry i."""
    network_self_links: dict[str, pulumi.Output[str]]
    """The fabric's VPCs by role."""

    def __init__(
        self, name: str, args: GcpFabricNetworkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(FABRIC_TYPE, name, None, opts)
        vpcs = [_vpc(self, name, vpc, args.project, args.region) for vpc in args.plan.vpcs]
        for plan, vpc in zip(args.plan.vpcs, vpcs, strict=True):
            _allow_within(
                self,
                name,
                role=plan.role,
                vpc=vpc,
                project=args.project,
                sources=[s.cidr for s in plan.subnets],
            )
        self.nic_subnetworks = [s.self_link for vpc in vpcs for s in vpc.subnets]
        self.network_self_links = {
            p.role: v.network.self_link for p, v in zip(args.plan.vpcs, vpcs, strict=True)
        }
        self.register_outputs(
            {"nic_subnetworks": self.nic_subnetworks, "network_self_links": self.network_self_links}
        )
