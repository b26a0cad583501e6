"""GCP networks per fabric: exact VPC and subnet counts, MTUs, the RoCE profile, firewall, NAT, PSA."""

from __future__ import annotations

import pytest

from clusterfab.plan.engine import PlanError
from clusterfab.plan.project import Plan
from tests.components.harness import GCP_HEAD, all_of, children, gcp_plan, one, plan_configured

NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"


# A4 and A4X are not sold on-demand (gcp.yaml purchase_options): their groups consume a reservation.
RESERVED_ONLY = {"a4-highgpu-8g", "a4x-highgpu-4g"}


def group(machine: str, name: str = "g", count: int = 2) -> str:
    reserved = ", capacity: {kind: reservation, reservation: my-reservation}"
    capacity = reserved if machine in RESERVED_ONLY else ""
    return f"  - {{name: {name}, machine_type: {machine}, count: {count}{capacity}}}\n"


def fabric_plan(machine: str, name: str) -> Plan:
    return gcp_plan("network: {cidr: 10.8.0.0/16}\nnode_groups:\n" + group(machine), name=name)


def networks(plan: Plan) -> dict[str, int | None]:
    """Logical network name -> MTU (None: GCP's default)."""
    return {r.name: r.inputs.get("mtu") for r in all_of(plan, NETWORK)}


def subnets(plan: Plan) -> dict[str, str]:
    return {r.name: r.inputs["ipCidrRange"] for r in all_of(plan, SUBNET)}


def test_a3_high_tcpx_gets_a_system_vpc_and_4_gpu_vpcs_at_mtu_8244() -> None:
    plan = fabric_plan("a3-highgpu-8g", "tcpx")
    assert networks(plan) == {
        "tcpx-cluster-net-sys": 8244,
        **{f"tcpx-cluster-gpudirect-tcpx-gpu-{i}": 8244 for i in range(4)},
    }
    # general network 0 is slot 0; slot 1 stays reserved for a second general network
    assert subnets(plan) == {
        "tcpx-cluster-net-sys-subnet": "10.8.0.0/20",
        **{f"tcpx-cluster-gpudirect-tcpx-gpu-{i}-subnet": f"10.8.{(i + 2) * 16}.0/20" for i in range(4)},
    }
    assert all(r.inputs["autoCreateSubnetworks"] is False for r in all_of(plan, NETWORK))
    assert all("networkProfile" not in r.inputs for r in all_of(plan, NETWORK))


def test_a3_mega_tcpxo_gets_a_system_vpc_and_8_gpu_vpcs_at_mtu_8244() -> None:
    plan = fabric_plan("a3-megagpu-8g", "tcpxo")
    assert networks(plan) == {
        "tcpxo-cluster-net-sys": 8244,
        **{f"tcpxo-cluster-gpudirect-tcpxo-gpu-{i}": 8244 for i in range(8)},
    }
    assert len(subnets(plan)) == 9
    fabric = one(plan, "clusterfab:network:GcpFabricNetwork")
    assert fabric.name == "tcpxo-cluster-gpudirect-tcpxo"
    assert len(children(plan, fabric)) == 8 * 3  # network, subnet, internal firewall per GPU VPC


@pytest.mark.parametrize("machine", ["a3-ultragpu-8g", "a4-highgpu-8g"])
def test_roce_gets_2_gvnic_vpcs_and_one_rdma_vpc_with_8_subnets(machine: str) -> None:
    plan = fabric_plan(machine, "roce")
    assert networks(plan) == {
        "roce-cluster-net-sys": 8896,
        "roce-cluster-net-gvnic-1": 8896,
        "roce-cluster-rdma-vpc": 8896,
    }
    rdma = one(plan, NETWORK, "roce-cluster-rdma-vpc").inputs
    assert rdma["networkProfile"] == "projects/test-project/global/networkProfiles/us-central1-b-vpc-roce"
    rdma_subnets = {n: c for n, c in subnets(plan).items() if n.startswith("roce-cluster-rdma-")}
    assert rdma_subnets == {f"roce-cluster-rdma-subnet-{i}": f"10.8.{(i + 2) * 16}.0/20" for i in range(8)}
    assert all(
        r.inputs["network"] == "roce-cluster-rdma-vpc-id"
        for r in all_of(plan, SUBNET)
        if r.name.startswith("roce-cluster-rdma-")
    )
    assert subnets(plan)["roce-cluster-net-gvnic-1-subnet"] == "10.8.16.0/20"


def test_a4x_rdma_vpc_has_4_subnets() -> None:
    plan = fabric_plan("a4x-highgpu-4g", "gb")
    assert networks(plan) == {
        "gb-cluster-net-sys": 8896,
        "gb-cluster-net-gvnic-1": 8896,
        "gb-cluster-rdma-vpc": 8896,
    }
    assert sorted(n for n in subnets(plan) if n.startswith("gb-cluster-rdma-")) == [
        f"gb-cluster-rdma-subnet-{i}" for i in range(4)
    ]


def test_fabric_networks_are_shared_by_node_groups_of_the_same_fabric() -> None:
    body = "node_groups:\n" + group("a3-megagpu-8g", "a") + group("a3-megagpu-8g", "b")
    plan = gcp_plan(body, name="shared")
    assert len(all_of(plan, NETWORK)) == 9
    assert len(all_of(plan, "clusterfab:network:GcpFabricNetwork")) == 1


def test_two_fabric_kinds_get_one_set_each_in_fixed_slots() -> None:
    body = (
        "network: {cidr: 10.8.0.0/16}\nnode_groups:\n"
        + group("a3-ultragpu-8g", "u")
        + group("a3-highgpu-8g", "h")
    )
    plan = gcp_plan(body, name="mixed")
    assert networks(plan) == {
        "mixed-cluster-net-sys": 8244,  # one system VPC: the smallest MTU its machine types ask for
        "mixed-cluster-net-gvnic-1": 8896,
        **{f"mixed-cluster-gpudirect-tcpx-gpu-{i}": 8244 for i in range(4)},
        "mixed-cluster-rdma-vpc": 8896,
    }
    cidrs = subnets(plan)
    assert cidrs["mixed-cluster-gpudirect-tcpx-gpu-0-subnet"] == "10.8.32.0/20"  # tcpx before rdma
    assert cidrs["mixed-cluster-rdma-subnet-7"] == "10.8.208.0/20"  # slot 13, below the PSA slot


def test_fabrics_that_need_more_than_the_range_fail_cleanly() -> None:
    # Validation (BP112) stops it before any component runs; the program fails with that finding.
    body = "node_groups:\n" + group("a3-ultragpu-8g", "u") + group("a3-megagpu-8g", "m")
    with pytest.raises(
        PlanError,
        match=r"error\[BP112\] node_groups\[1\].machine_type: the fabrics rdma, "
        r"gpudirect-tcpxo need 16 GPU network subnets; the cluster range leaves 13",
    ):
        gcp_plan(body, name="toomany")


def test_fabric_none_clusters_get_only_the_system_vpc_at_the_default_mtu() -> None:
    plan = gcp_plan(
        "node_groups:\n  - {name: g, machine_type: a3-megagpu-8g, count: 1, fabric: none}\n", name="nofab"
    )
    assert networks(plan) == {"nofab-cluster-net-sys": None}


def test_tpu_and_managed_lustre_clusters_get_the_system_vpc_at_8896() -> None:
    """Google's v5p guide and Managed Lustre's performance guide create the VPC with MTU 8896 (audit 15)."""
    tpu = gcp_plan(
        "tpu_slices:\n  - {name: s, generation: v5p, topology: 2x2x1}\n", name="tpumtu", zone="us-central1-a"
    )
    assert networks(tpu) == {"tpumtu-cluster-net-sys": 8896}
    lustre = gcp_plan(
        "node_groups:\n  - {name: g, machine_type: a3-megagpu-8g, count: 1, fabric: none}\n"
        "storage:\n  - {name: fs, kind: lustre, capacity_gib: 18000, throughput_mbps_per_tib: 500}\n",
        name="lfsmtu",
    )
    assert networks(lustre) == {"lfsmtu-cluster-net-sys": 8896}


def test_firewall_allows_the_cluster_range_internally_and_ssh_only_from_iap() -> None:
    plan = fabric_plan("a3-ultragpu-8g", "fw")
    rules = {r.name: r.inputs for r in all_of(plan, FIREWALL)}
    assert rules["fw-cluster-net-sys-internal"]["sourceRanges"] == ["10.8.0.0/16"]
    assert rules["fw-cluster-net-sys-internal"]["allows"] == [{"protocol": "all"}]
    assert rules["fw-cluster-net-gvnic-1-internal"]["sourceRanges"] == ["10.8.16.0/20"]
    # Google rejects VPC firewall rules on a RoCE network (audit item 11; firewall-for-roce).
    rdma = one(plan, "gcp:compute/network:Network", "fw-cluster-rdma-vpc").urn
    assert [
        r.name for r in all_of(plan, FIREWALL) if rdma.rsplit("::", 1)[1] in str(r.inputs["network"])
    ] == []
    assert "fw-cluster-rdma-vpc-internal" not in rules
    ssh = {n: r for n, r in rules.items() if any("22" in a.get("ports", []) for a in r["allows"])}
    assert list(ssh) == ["fw-cluster-net-sys-iap-ssh"]
    assert ssh["fw-cluster-net-sys-iap-ssh"]["sourceRanges"] == ["35.235.240.0/20"]
    assert ssh["fw-cluster-net-sys-iap-ssh"]["allows"] == [{"protocol": "tcp", "ports": ["22"]}]
    assert all(r["direction"] == "INGRESS" for r in rules.values())
    assert all("0.0.0.0/0" not in r["sourceRanges"] for r in rules.values())


def test_ssh_ingress_cidrs_add_one_rule() -> None:
    plan = gcp_plan(
        "network: {ssh_ingress_cidrs: [192.0.2.0/24, 198.51.100.0/24]}\nnode_groups:\n"
        + group("a3-megagpu-8g"),
        name="ssh",
    )
    rule = one(plan, FIREWALL, "ssh-cluster-net-sys-ssh").inputs
    assert rule["sourceRanges"] == ["192.0.2.0/24", "198.51.100.0/24"]
    assert rule["allows"] == [{"protocol": "tcp", "ports": ["22"]}]


def test_nodes_reach_the_internet_through_cloud_nat() -> None:
    plan = fabric_plan("a3-megagpu-8g", "nat")
    router = one(plan, "gcp:compute/router:Router").inputs
    assert (router["network"], router["region"]) == ("nat-cluster-net-sys-id", "us-central1")
    nat = one(plan, "gcp:compute/routerNat:RouterNat").inputs
    assert nat["router"] == "nat-cluster-net-router"
    assert nat["natIpAllocateOption"] == "AUTO_ONLY"
    assert nat["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"
    assert one(plan, SUBNET, "nat-cluster-net-sys-subnet").inputs["privateIpGoogleAccess"] is True


def test_private_services_access_takes_the_last_block_only_with_storage() -> None:
    assert all_of(fabric_plan("a3-megagpu-8g", "nopsa"), "gcp:compute/globalAddress:GlobalAddress") == []
    body = (
        "network: {cidr: 10.8.0.0/16}\nnode_groups:\n"
        + group("a3-megagpu-8g")
        + "storage:\n  - {name: home, kind: filestore, tier: ZONAL, capacity_gib: 1024}\n"
    )
    plan = gcp_plan(body, name="psa")
    address = one(plan, "gcp:compute/globalAddress:GlobalAddress").inputs
    assert {k: address[k] for k in ("purpose", "addressType", "address", "prefixLength", "network")} == {
        "purpose": "VPC_PEERING",
        "addressType": "INTERNAL",
        "address": "10.8.240.0",
        "prefixLength": 20,
        "network": "psa-cluster-net-sys-id",
    }
    connection = one(plan, "gcp:servicenetworking/connection:Connection").inputs
    assert connection == {
        "network": "psa-cluster-net-sys-id",
        "service": "servicenetworking.googleapis.com",
        "reservedPeeringRanges": ["psa-cluster-net-psa-range"],
    }


def test_every_network_resource_is_in_the_blueprint_project() -> None:
    plan = fabric_plan("a3-ultragpu-8g", "proj")
    for resource in plan.resources:
        if resource.custom and resource.type.startswith("gcp:compute/"):
            assert resource.inputs["project"] == "test-project", resource.name


def test_project_from_pulumi_config_when_the_blueprint_has_none() -> None:
    text = (
        GCP_HEAD.format(name="cfg-cluster", zone="us-central1-b") + "node_groups:\n" + group("a3-megagpu-8g")
    )
    plan = plan_configured(text, (("gcp:project", "from-config"),))
    assert one(plan, NETWORK, "cfg-cluster-net-sys").inputs["project"] == "from-config"
    assert plan.outputs["blueprint"]["project"] == "from-config"


def test_no_project_at_all_is_a_clear_error() -> None:
    with pytest.raises(
        PlanError, match=r"no GCP project: set `project:` in the blueprint or the stack config `gcp:project`"
    ):
        gcp_plan("node_groups:\n" + group("a3-megagpu-8g"), name="noproj", project=False)


@pytest.mark.parametrize("machine", ["a3-ultragpu-8g", "a3-megagpu-8g"])
def test_flow_logs_on_the_general_subnets_only(machine: str) -> None:
    # Who talked to whom on the networks nodes, file systems and NAT share; none on the GPU / RDMA
    # networks, which carry only NCCL traffic.
    plan = fabric_plan(machine, "flow")
    logged = {r.name: r.inputs.get("logConfig") for r in all_of(plan, SUBNET)}
    general = {name for name in logged if name.endswith(("-sys-subnet", "-gvnic-1-subnet"))}
    assert general
    for name, config in logged.items():
        if name in general:
            assert config == {
                "aggregationInterval": "INTERVAL_5_SEC",
                "flowSampling": 0.5,
                "metadata": "INCLUDE_ALL_METADATA",
            }, name
        else:
            assert config is None, name
