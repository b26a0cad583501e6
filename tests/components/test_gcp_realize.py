"""The GCP realizer's pure decisions: address slots of the fabric networks, NICs, Filestore location."""

from __future__ import annotations

import pytest

from clusterfab.catalog import load_catalog
from tests.components.harness import stacks_module
from tests.factories import spec

gcp_network = stacks_module("stacks.gcp.network")
gcp_compute = stacks_module("stacks.gcp.compute")
gcp_site = stacks_module("stacks.gcp.site")
CATALOG = load_catalog()
GCP = CATALOG.gcp_machine_types
GENERAL_SLOTS = max(m.network.general_vpcs for m in GCP.values())


def networks(*machines: str, storage: bool = False) -> object:
    return gcp_network.plan_networks(
        project="p",
        zone="us-central1-b",
        cidr="10.0.0.0/16",
        fabric_machines=[GCP[m] for m in machines],
        general_slots=GENERAL_SLOTS,
        private_services=storage,
    )


def test_general_networks_take_the_first_slots_and_psa_the_last() -> None:
    plan = networks("a4-highgpu-8g", storage=True)
    assert [(v.role, v.mtu, [s.cidr for s in v.subnets]) for v in plan.general] == [
        ("sys", 8896, ["10.0.0.0/20"]),
        ("gvnic-1", 8896, ["10.0.16.0/20"]),
    ]
    (rdma,) = plan.fabrics["rdma"]
    assert [s.cidr for s in rdma.subnets] == [f"10.0.{16 * slot}.0/20" for slot in range(2, 10)]
    assert rdma.network_profile == "projects/p/global/networkProfiles/us-central1-b-vpc-roce"
    assert plan.psa_range == "10.0.240.0/20"
    assert gcp_network.PSA_SLOT == 15


def test_slots_run_out_before_the_psa_block() -> None:
    with pytest.raises(gcp_site.GcpRealizeError, match="needs 8 subnets"):
        networks("a3-megagpu-8g", "a3-ultragpu-8g")


def test_fabric_nics_follow_the_machine_type() -> None:
    a4 = spec("gcp", node_groups=[{"name": "g", "machine_type": "a4-highgpu-8g", "count": 2}])
    group = a4.node_groups[0]
    nics = gcp_compute._nics(group, group.machine)
    assert [(n.network, n.nic_type) for n in nics] == [("general", "GVNIC")] * 2 + [("fabric", "MRDMA")] * 8
    bare = spec(
        "gcp", node_groups=[{"name": "g", "machine_type": "a4-highgpu-8g", "count": 2, "fabric": "none"}]
    )
    assert [n.network for n in gcp_compute._nics(bare.node_groups[0], group.machine)] == ["general"]


@pytest.mark.parametrize(
    ("tier", "location"),
    [
        ("BASIC_HDD", "zone"),
        ("BASIC_SSD", "zone"),
        ("ZONAL", "zone"),
        ("REGIONAL", "region"),
        ("ENTERPRISE", "region"),
    ],
)
def test_filestore_tiers_say_where_their_instances_live(tier: str, location: str) -> None:
    assert CATALOG.storage_tier("gcp", "filestore", tier).location == location
