"""GKE multi-networking: the Kubernetes objects that give pods a node's additional NICs.

Each additional node network (a GPU VPC of TCPX / TCPXO, the RDMA VPC's subnets, a second gVNIC network)
becomes a GKENetworkParamSet naming the VPC and subnet and how the NIC is handed to a pod (`NetDevice`:
the whole gVNIC device; `RDMA`: the RDMA device), and a Network of type Device that pods name in their
`networking.gke.io/interfaces` annotation; as Cluster Toolkit's gke-cluster module applies them
(modules/scheduler/gke-cluster/templates/gke-network-paramset.yaml.tftpl, network-object.yaml.tftpl).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pulumi

API_VERSION = "networking.gke.io/v1"
DeviceMode = Literal["NetDevice", "RDMA"]


@dataclass(frozen=True)
class PodNetwork:
    """One additional node network as pods see it."""

    name: str
    """The Network's name pods ask for: `vpc1`.. (GPUDirect-TCPX/TCPXO), `gvnic-1`, `rdma-0`.. (RDMA)."""
    vpc: pulumi.Input[str]
    """The VPC's name."""
    subnet: pulumi.Input[str]
    """The subnet's name."""
    device_mode: DeviceMode


def network_objects(networks: Sequence[PodNetwork]) -> list[dict[str, Any]]:
    """The GKENetworkParamSet and Network of each network, in that order."""
    objects: list[dict[str, Any]] = []
    for network in networks:
        objects.append(
            {
                "apiVersion": API_VERSION,
                "kind": "GKENetworkParamSet",
                "metadata": {"name": network.name},
                "spec": {"vpc": network.vpc, "vpcSubnet": network.subnet, "deviceMode": network.device_mode},
            }
        )
        objects.append(
            {
                "apiVersion": API_VERSION,
                "kind": "Network",
                "metadata": {"name": network.name},
                "spec": {
                    "parametersRef": {
                        "group": "networking.gke.io",
                        "kind": "GKENetworkParamSet",
                        "name": network.name,
                    },
                    "type": "Device",
                },
            }
        )
    return objects
