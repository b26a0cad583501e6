"""The GCP components' pure planning functions, without the engine (and without the blueprint rules,
so the components' own guards are exercised too)."""

from __future__ import annotations

import pytest

from clusterfab.blueprint.models import NodeGroupSpec, TpuSliceSpec
from clusterfab.catalog import load_catalog
from components.gcp import GcpPlanError
from components.gcp.network import PSA_SLOT, NetworkPlan, plan_network
from components.gcp.node_group import plan_node_group
from components.gcp.storage import lustre_filesystem_name, plan_filestore
from components.gcp.tpu import plan_tpu

CATALOG = load_catalog()
GCP = CATALOG.gcp_machine_types
GENERAL_SLOTS = max(m.network.general_vpcs for m in GCP.values())


def network(*machines: str, storage: bool = False) -> NetworkPlan:
    return plan_network(
        project="p",
        region="us-central1",
        zone="us-central1-b",
        cidr="10.0.0.0/16",
        fabric_machines=[GCP[m] for m in machines],
        general_slots=GENERAL_SLOTS,
        private_services=storage,
    )


def test_general_networks_take_the_first_slots_and_psa_the_last() -> None:
    plan = plan_network(
        project="p",
        region="us-central1",
        zone="us-central1-b",
        cidr="10.0.0.0/16",
        fabric_machines=[GCP["a4-highgpu-8g"]],
        general_slots=GENERAL_SLOTS,
        private_services=True,
    )
    assert [(v.role, v.mtu, [s.cidr for s in v.subnets]) for v in plan.general] == [
        ("sys", 8896, ["10.0.0.0/20"]),
        ("gvnic-1", 8896, ["10.0.16.0/20"]),
    ]
    (rdma,) = plan.fabric("rdma").vpcs
    assert [s.cidr for s in rdma.subnets] == [f"10.0.{16 * slot}.0/20" for slot in range(2, 10)]
    assert plan.psa_range == "10.0.240.0/20"
    assert PSA_SLOT == 15


def test_slots_run_out_before_the_psa_block() -> None:
    with pytest.raises(GcpPlanError, match="need more subnets"):
        network("a3-megagpu-8g", "a3-ultragpu-8g")


def group(**fields: object) -> NodeGroupSpec:
    return NodeGroupSpec.model_validate(
        {"name": "g", "machine_type": "a4-highgpu-8g", **fields}, strict=False
    )


def test_node_group_guards_the_placement_limits_itself() -> None:
    with pytest.raises(GcpPlanError, match="at most 150 a4-highgpu-8g VMs"):
        plan_node_group(group(count=151, placement_max_distance=2), GCP["a4-highgpu-8g"], CATALOG)
    with pytest.raises(GcpPlanError, match="does not support placement max distance 1"):
        plan_node_group(group(count=4, placement_max_distance=1), GCP["a4-highgpu-8g"], CATALOG)
    with pytest.raises(GcpPlanError, match="by accelerator topology"):
        plan_node_group(
            group(machine_type="a4x-highgpu-4g", count=4, placement_max_distance=2),
            GCP["a4x-highgpu-4g"],
            CATALOG,
        )


def test_node_group_capacity_guards() -> None:
    with pytest.raises(GcpPlanError, match="GCP has no capacity_block capacity"):
        plan_node_group(
            group(count=2, capacity={"kind": "capacity_block", "reservation": "r"}),
            GCP["a4-highgpu-8g"],
            CATALOG,
        )
    with pytest.raises(GcpPlanError, match=r"needs capacity\.max_run_duration_hours"):
        plan_node_group(group(count=2, capacity={"kind": "flex_start"}), GCP["a4-highgpu-8g"], CATALOG)


def test_node_group_nic_counts() -> None:
    plan = plan_node_group(group(count=2), GCP["a4-highgpu-8g"], CATALOG)
    assert (plan.general_nics, plan.gpu_nics) == (2, 8)
    assert {n.nic_type for n in plan.nics if n.network == "fabric"} == {"MRDMA"}


def test_tpu_plans_count_cores_for_v5p_and_chips_for_v6e() -> None:
    v5p = plan_tpu(TpuSliceSpec(name="s", generation="v5p", topology="8x8x8"), CATALOG)
    assert (v5p.accelerator_type, v5p.hosts_per_slice) == ("v5p-1024", 128)
    v6e = plan_tpu(
        TpuSliceSpec(name="s", generation="v6e", topology="2x4", runtime_version="custom"), CATALOG
    )
    assert (v6e.accelerator_type, v6e.runtime_version) == ("v6e-8", "custom")


@pytest.mark.parametrize(
    ("name", "filesystem"), [("lustre", "lustre"), ("scratch-2", "scratch2"), ("datasets-eu", "datasets")]
)
def test_lustre_filesystem_names_fit_8_alphanumerics(name: str, filesystem: str) -> None:
    assert lustre_filesystem_name(name) == filesystem


@pytest.mark.parametrize(
    ("tier", "location"),
    [("BASIC_HDD", "z"), ("BASIC_SSD", "z"), ("ZONAL", "z"), ("REGIONAL", "r"), ("ENTERPRISE", "r")],
)
def test_filestore_location_follows_the_tier(tier: str, location: str) -> None:
    plan = plan_filestore(
        name="n",
        tier=tier,
        region="r",
        zone="z",
        capacity_gib=1024,
        share_name="s",
        mount_point="/m",
        protect=False,
    )
    assert plan.location == location
