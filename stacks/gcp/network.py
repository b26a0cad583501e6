"""The cluster's networks: the system network (plus the second gVNIC network RoCE machines use) and one
set of fabric networks per fabric kind in use.

Addresses are fixed slots of the cluster range (`clusterfab.addressing`): general network i is slot i,
the fabric networks follow in a fixed fabric order, and the last slot is reserved for private services
access (where Managed Lustre, Filestore and a managed database get their addresses). Fabric network
counts, MTUs and the RoCE network profile come from the catalog (`GcpMachineType.network`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import get_args

import pulumi
from cluster import Cluster

from clusterfab import addressing
from clusterfab.catalog.models import GcpMachineType
from clusterfab.core.vocab import Fabric
from components._naming import child
from components.gcp.network import (
    GcpFabricNetwork,
    GcpFabricNetworkArgs,
    GcpNetwork,
    GcpNetworkArgs,
    SubnetArgs,
    VpcArgs,
)

from .site import GcpRealizeError, machine_type

PSA_SLOT = addressing.GCP_PRIVATE_SERVICES_SLOT
"""The last block of the cluster range: allocated to private services access (Lustre, Filestore)."""
FABRIC_ORDER: tuple[Fabric, ...] = get_args(Fabric)
"""Fabric networks take their address slots in this order, so reordering node groups moves nothing."""


@dataclass(frozen=True)
class NetworkPlan:
    """Every network of the cluster: general VPCs (general[0] is the system VPC) and fabric VPCs."""

    general: tuple[VpcArgs, ...]
    fabrics: dict[Fabric, tuple[VpcArgs, ...]]
    psa_range: str | None


def plan_networks(
    *,
    project: str,
    zone: str,
    cidr: str,
    fabric_machines: Sequence[GcpMachineType],
    general_slots: int,
    private_services: bool,
    system_mtus: Sequence[int] = (),
) -> NetworkPlan:
    """The networks for node groups on `fabric_machines` (the machine types of groups with a fabric).

    `general_slots` address slots stay reserved for general networks (the most any catalog machine
    type uses), so adding a RoCE group to a TCPXO cluster moves no existing subnet. `system_mtus` are
    the MTUs other users of the system network ask for (TPU slices, Managed Lustre clients).
    """
    blocks = addressing.blocks(cidr)
    general_count = max((m.network.general_vpcs for m in fabric_machines), default=1)
    if general_count > general_slots:
        raise GcpRealizeError(
            f"{general_count} general networks do not fit in {general_slots} reserved slots"
        )
    general: list[VpcArgs] = []
    for index in range(general_count):
        users = [m for m in fabric_machines if m.network.general_vpcs > index]
        asked = [m.network.general_mtu for m in users] + (list(system_mtus) if index == 0 else [])
        # One VPC serves several users: the smallest MTU any of them asks for works for all.
        mtu = min(asked, default=None)
        role = "sys" if index == 0 else f"gvnic-{index}"
        general.append(
            VpcArgs(
                role,
                mtu,
                (SubnetArgs(f"{role}-subnet", str(blocks[index])),),
                google_access=True,
                flow_logs=True,
            )
        )
    slot = general_slots
    fabrics: dict[Fabric, tuple[VpcArgs, ...]] = {}
    for fabric in FABRIC_ORDER:
        machines = [m for m in fabric_machines if m.fabric == fabric]
        if machines:
            fabrics[fabric], slot = _fabric_vpcs(
                fabric, machines, blocks, slot=slot, project=project, zone=zone
            )
    return NetworkPlan(tuple(general), fabrics, str(blocks[PSA_SLOT]) if private_services else None)


def _fabric_vpcs(
    fabric: Fabric,
    machines: list[GcpMachineType],
    blocks: list[IPv4Network],
    *,
    slot: int,
    project: str,
    zone: str,
) -> tuple[tuple[VpcArgs, ...], int]:
    """One fabric's VPCs from address slot `slot` on; returns them and the next free slot."""
    vpcs: list[VpcArgs] = []
    gpu_mtu = min((m.network.gpu_mtu for m in machines if m.network.gpu_mtu), default=None)
    for index in range(max(m.network.gpu_vpcs for m in machines)):
        if slot >= PSA_SLOT:
            break
        vpcs.append(VpcArgs(f"gpu-{index}", gpu_mtu, (SubnetArgs(f"gpu-{index}-subnet", str(blocks[slot])),)))
        slot += 1
    rdma_subnets = max(m.network.rdma_subnets for m in machines)
    if rdma_subnets:
        profiles = {m.network.rdma_profile for m in machines}
        if len(profiles) != 1 or None in profiles:
            raise GcpRealizeError(f"{fabric} machine types disagree on the RDMA network profile: {profiles}")
        subnets = []
        for index in range(rdma_subnets):
            if slot >= PSA_SLOT:
                break
            subnets.append(SubnetArgs(f"subnet-{index}", str(blocks[slot])))
            slot += 1
        vpcs.append(
            VpcArgs(
                "vpc",
                min(m.network.rdma_mtu for m in machines if m.network.rdma_mtu),
                tuple(subnets),
                network_profile=f"projects/{project}/global/networkProfiles/{zone}-{profiles.pop()}",
            )
        )
    needed = max(m.network.gpu_vpcs + m.network.rdma_subnets for m in machines)
    if sum(len(v.subnets) for v in vpcs) < needed:
        raise GcpRealizeError(
            f"the {fabric} fabric needs {needed} subnets; the cluster range has too few address blocks left"
        )
    return tuple(vpcs), slot


def networks(
    cluster: Cluster, project: str, opts: pulumi.ResourceOptions, *, scheduler_services: bool
) -> tuple[GcpNetwork, dict[Fabric, GcpFabricNetwork]]:
    """The system network and the fabric networks; `scheduler_services`: the scheduler's hosts need
    private services access too."""
    spec, catalog = cluster.spec, cluster.input.catalog
    plan = plan_networks(
        project=project,
        zone=spec.zone,
        cidr=spec.cidr,
        fabric_machines=[machine_type(g) for g in spec.node_groups if g.fabric is not None],
        general_slots=max(m.network.general_vpcs for m in catalog.gcp_machine_types.values()),
        # Managed storage and a managed database (the scheduler's) take their addresses from it.
        private_services=bool(spec.storage) or scheduler_services,
        system_mtus=[
            *(t.generation.network_mtu for t in spec.tpu_slices if t.generation.network_mtu),
            *(s.tier.network_mtu for s in spec.storage if s.tier.network_mtu),
        ],
    )
    network = GcpNetwork(
        child(spec.name, "net"),
        GcpNetworkArgs(
            project=project,
            region=spec.region,
            cidr=spec.cidr,
            general=plan.general,
            private_services_range=plan.psa_range,
            ssh_ingress_cidrs=spec.ssh_ingress_cidrs,
            labels=cluster.tags("network"),
        ),
        opts,
    )
    fabrics = {
        fabric: GcpFabricNetwork(
            child(spec.name, fabric),
            GcpFabricNetworkArgs(project=project, region=spec.region, vpcs=vpcs),
            opts,
        )
        for fabric, vpcs in plan.fabrics.items()
    }
    return network, fabrics
