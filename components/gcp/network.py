"""A GCP cluster's networks: the system VPC every node and file system uses, and per fabric the extra
networks its GPU NICs need.

What networks a fabric needs (counts, MTUs, the RoCE network profile) is the caller's decision, given
as VpcArgs: TCPX (A3 High) adds 4 GPU VPCs, TCPXO (A3 Mega) 8, both at MTU 8244; RoCE (A3 Ultra, A4,
A4X) adds a second gVNIC VPC and one RDMA VPC with the zone's `vpc-roce` profile and one subnet per
MRDMA NIC. Nodes have no external IPs: they reach the internet through Cloud NAT and Google APIs
through Private Google Access; SSH is open to IAP's range (and `ssh_ingress_cidrs`) only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from clusterfab.core.vocab import IAP_TCP_FORWARDING_RANGE
from components._naming import child, gcp_name

TYPE = "clusterfab:network:GcpNetwork"
FABRIC_TYPE = "clusterfab:network:GcpFabricNetwork"


@dataclass(frozen=True)
class SubnetArgs:
    role: str
    """Logical-name suffix of the subnet."""
    cidr: str


@dataclass(frozen=True)
class VpcArgs:
    """One VPC and its subnets."""

    role: str
    """Logical-name suffix of the VPC: sys, gvnic-1, gpu-0 .. gpu-7, vpc (an RDMA VPC)."""
    mtu: int | None
    """None: GCP's default."""
    subnets: tuple[SubnetArgs, ...]
    network_profile: str | None = None
    """projects/P/global/networkProfiles/<zone>-vpc-roce for an RDMA VPC."""
    google_access: bool = False
    """Private Google Access: general networks reach Google APIs (GCS, logging) without NAT."""
    flow_logs: bool = False
    """VPC Flow Logs on the subnets, at Google's defaults when enabled (5-second aggregation, half the
    flows sampled, all metadata): who talked to whom, for incident response. Meant for the general
    networks; GPU-NIC and RDMA networks carry only NCCL traffic at hundreds of Gb/s, where logs cost much
    and show little."""

    @property
    def takes_firewall_rules(self) -> bool:
        """RDMA (RoCE) networks support no VPC firewall rules: Google rejects them
        (cloud.google.com/firewall/docs/firewall-for-roce); the RoCE network carries only NCCL traffic."""
        return self.network_profile is None or not self.network_profile.endswith("-vpc-roce")


# Google's defaults for subnet flow logs (cloud.google.com/vpc/docs/flow-logs#log-sampling).
_FLOW_LOGS = gcp.compute.SubnetworkLogConfigArgs(
    aggregation_interval="INTERVAL_5_SEC", flow_sampling=0.5, metadata="INCLUDE_ALL_METADATA"
)


@dataclass(frozen=True)
class _Vpc:
    network: gcp.compute.Network
    subnets: list[gcp.compute.Subnetwork]


def _vpc(owner: pulumi.Resource, name: str, plan: VpcArgs, project: str, region: str) -> _Vpc:
    """One VPC with its subnets and a rule letting traffic flow within them (NCCL, RDMA, Lustre)."""
    own = pulumi.ResourceOptions(parent=owner)
    network = gcp.compute.Network(
        child(name, plan.role),
        name=gcp_name(child(name, plan.role)),
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
            name=gcp_name(child(name, subnet.role)),
            project=project,
            region=region,
            network=network.id,
            ip_cidr_range=subnet.cidr,
            private_ip_google_access=plan.google_access,
            log_config=_FLOW_LOGS if plan.flow_logs else None,
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
        name=gcp_name(child(name, f"{role}-internal")),
        project=project,
        network=vpc.network.id,
        direction="INGRESS",
        allows=[gcp.compute.FirewallAllowArgs(protocol="all")],
        source_ranges=list(sources),
        description="all traffic between the cluster's own addresses",
        opts=pulumi.ResourceOptions(parent=owner),
    )


@dataclass(frozen=True, kw_only=True)
class GcpNetworkArgs:
    """Inputs of GcpNetwork."""

    project: str
    region: str
    cidr: str
    """The cluster's whole range: the system VPC allows all traffic from it (nodes and file systems)."""
    general: Sequence[VpcArgs]
    """General (gVNIC) networks; the first is the system VPC, each has one subnet."""
    private_services_range: str | None = None
    """A block of `cidr` for private services access (Managed Lustre, Filestore); None: no managed storage."""
    ssh_ingress_cidrs: Sequence[str] = ()
    """Ranges allowed to reach nodes on port 22 besides IAP's."""
    labels: Mapping[str, str] = field(default_factory=dict)


class GcpNetwork(pulumi.ComponentResource):
    """System VPC (+ the second gVNIC VPC RoCE machines use), firewall, Cloud NAT, private services access."""

    system_network_id: pulumi.Output[str]
    """The system VPC (projects/P/global/networks/N): nodes' first NIC, TPU VMs, file systems."""
    system_network_name: pulumi.Output[str]
    """The system VPC's name."""
    system_subnetwork_id: pulumi.Output[str]
    """The system subnet."""
    system_subnet_cidr: str
    """The system subnet's range: the addresses of nodes' first NICs, TPU VMs and the monitoring host, which
    are what mount the file systems (whose addresses come from the private services range, peered with
    the system VPC alone)."""
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
        self._name, self._args = name, args
        self._own = pulumi.ResourceOptions(parent=self)
        vpcs = [_vpc(self, name, general, args.project, args.region) for general in args.general]
        system = vpcs[0]
        # The system VPC carries the file systems' traffic too: their servers sit in the PSA block,
        # which is inside the cluster range, so one rule over the whole range covers nodes and storage.
        _allow_within(self, name, role="sys", vpc=system, project=args.project, sources=[args.cidr])
        for general, vpc in zip(args.general[1:], vpcs[1:], strict=True):
            _allow_within(
                self,
                name,
                role=general.role,
                vpc=vpc,
                project=args.project,
                sources=[s.cidr for s in general.subnets],
            )
        self._ssh(system)
        self._nat(system)
        self._private_services(system)
        self.system_network_id = system.network.id
        self.system_network_name = system.network.name
        self.system_subnetwork_id = system.subnets[0].id
        self.system_subnet_cidr = args.general[0].subnets[0].cidr
        self.general_subnetworks = [vpc.subnets[0].self_link for vpc in vpcs]
        self.network_self_links = {
            g.role: v.network.self_link for g, v in zip(args.general, vpcs, strict=True)
        }
        self.register_outputs(
            {
                "system_network_id": self.system_network_id,
                "system_subnetwork_id": self.system_subnetwork_id,
                "general_subnetworks": self.general_subnetworks,
                "network_self_links": self.network_self_links,
            }
        )

    def _ssh(self, system: _Vpc) -> None:
        name, args = self._name, self._args
        gcp.compute.Firewall(
            child(name, "sys-iap-ssh"),
            name=gcp_name(child(name, "sys-iap-ssh")),
            project=args.project,
            network=system.network.id,
            direction="INGRESS",
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
            source_ranges=[IAP_TCP_FORWARDING_RANGE],
            description="SSH through IAP TCP forwarding only (nodes have no external IP)",
            opts=self._own,
        )
        if args.ssh_ingress_cidrs:
            gcp.compute.Firewall(
                child(name, "sys-ssh"),
                name=gcp_name(child(name, "sys-ssh")),
                project=args.project,
                network=system.network.id,
                direction="INGRESS",
                allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
                source_ranges=list(args.ssh_ingress_cidrs),
                description="SSH from the blueprint's ssh_ingress_cidrs",
                opts=self._own,
            )

    def _nat(self, system: _Vpc) -> None:
        name, args = self._name, self._args
        router = gcp.compute.Router(
            child(name, "router"),
            name=gcp_name(child(name, "router")),
            project=args.project,
            region=args.region,
            network=system.network.id,
            opts=self._own,
        )
        gcp.compute.RouterNat(
            child(name, "nat"),
            name=gcp_name(child(name, "nat")),
            project=args.project,
            region=args.region,
            router=router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            opts=self._own,
        )

    def _private_services(self, system: _Vpc) -> None:
        name, args = self._name, self._args
        self.private_services = None
        self.private_services_range = None
        if args.private_services_range is None:
            return
        block = ipaddress.IPv4Network(args.private_services_range)
        psa_range = gcp.compute.GlobalAddress(
            child(name, "psa-range"),
            name=gcp_name(child(name, "psa-range")),
            project=args.project,
            purpose="VPC_PEERING",
            address_type="INTERNAL",
            address=str(block.network_address),
            prefix_length=block.prefixlen,
            network=system.network.id,
            labels=dict(args.labels),
            description="private services access: Managed Lustre and Filestore addresses",
            opts=self._own,
        )
        self.private_services = gcp.servicenetworking.Connection(
            child(name, "psa"),
            network=system.network.id,
            service="servicenetworking.googleapis.com",
            reserved_peering_ranges=[psa_range.name],
            opts=self._own,
        )
        self.private_services_range = psa_range.name


@dataclass(frozen=True, kw_only=True)
class GcpFabricNetworkArgs:
    """Inputs of GcpFabricNetwork."""

    project: str
    region: str
    vpcs: Sequence[VpcArgs]
    """The fabric's VPCs; their subnets, in order, are the GPU NICs' subnets."""


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
        vpcs = [_vpc(self, name, vpc, args.project, args.region) for vpc in args.vpcs]
        for plan, vpc in zip(args.vpcs, vpcs, strict=True):
            if not plan.takes_firewall_rules:
                continue
            _allow_within(
                self,
                name,
                role=plan.role,
                vpc=vpc,
                project=args.project,
                sources=[s.cidr for s in plan.subnets],
            )
        self.nic_subnetworks = [s.self_link for vpc in vpcs for s in vpc.subnets]
        self.network_self_links = {p.role: v.network.self_link for p, v in zip(args.vpcs, vpcs, strict=True)}
        self.register_outputs(
            {"nic_subnetworks": self.nic_subnetworks, "network_self_links": self.network_self_links}
        )
