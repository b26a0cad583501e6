"""GCP GPU node groups: the template's NICs per fabric, scheduling per capacity, placement, MIG, identity."""

from __future__ import annotations

import pytest

from clusterfab.outputs import NodeGroupOutput, read_outputs
from clusterfab.plan.engine import PlanError
from clusterfab.plan.project import Plan
from tests.components.harness import all_of, boot_vars, children, gcp_plan, one, plan_file, startup_script
from tests.conftest import REPO

TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
AUTOSCALER = "gcp:compute/autoscaler:Autoscaler"


# A4 and A4X are not sold on-demand (gcp.yaml purchase_options): unless a test says how they are bought,
# their groups consume a reservation.
RESERVED_ONLY = {"a4-highgpu-8g", "a4x-highgpu-4g"}


def group(machine: str, extra: str = "", size: str = "count: 4") -> str:
    if machine in RESERVED_ONLY and "capacity:" not in extra:
        extra += "    capacity: {kind: reservation, reservation: my-reservation}\n"
    return f"node_groups:\n  - name: g\n    machine_type: {machine}\n    {size}\n{extra}"


def template(plan: Plan) -> dict:  # type: ignore[type-arg]
    return one(plan, TEMPLATE).inputs


def nics(machine: str, extra: str = "") -> list[tuple[str, str]]:
    plan = gcp_plan(group(machine, extra), name="nic")
    interfaces = template(plan)["networkInterfaces"]
    assert all("accessConfigs" not in i and "ipv6AccessConfigs" not in i for i in interfaces)
    prefix = "https://mock.googleapis.com/nic-cluster-"
    assert all(i["subnetwork"].startswith(prefix) for i in interfaces)
    return [(i["nicType"], i["subnetwork"].removeprefix(prefix)) for i in interfaces]


def test_a3_high_has_the_system_nic_then_4_gpu_nics() -> None:
    assert nics("a3-highgpu-8g") == [("GVNIC", "net-sys-subnet")] + [
        ("GVNIC", f"gpudirect-tcpx-gpu-{i}-subnet") for i in range(4)
    ]


def test_a3_mega_has_the_system_nic_then_8_gpu_nics() -> None:
    assert nics("a3-megagpu-8g") == [("GVNIC", "net-sys-subnet")] + [
        ("GVNIC", f"gpudirect-tcpxo-gpu-{i}-subnet") for i in range(8)
    ]


@pytest.mark.parametrize("machine", ["a3-ultragpu-8g", "a4-highgpu-8g"])
def test_roce_machines_have_2_gvnic_then_8_mrdma_nics(machine: str) -> None:
    assert nics(machine) == [("GVNIC", "net-sys-subnet"), ("GVNIC", "net-gvnic-1-subnet")] + [
        ("MRDMA", f"rdma-subnet-{i}") for i in range(8)
    ]


def test_a4x_has_2_gvnic_then_4_mrdma_nics() -> None:
    assert nics("a4x-highgpu-4g") == [("GVNIC", "net-sys-subnet"), ("GVNIC", "net-gvnic-1-subnet")] + [
        ("MRDMA", f"rdma-subnet-{i}") for i in range(4)
    ]


def test_fabric_none_keeps_only_the_system_nic_and_no_placement() -> None:
    assert nics("a3-ultragpu-8g", "    fabric: none\n    placement: none\n") == [("GVNIC", "net-sys-subnet")]


def test_on_demand_template_security_and_boot_disk() -> None:
    plan = gcp_plan(group("a3-ultragpu-8g", "    boot_disk_gib: 750\n"), name="tpl")
    inputs = template(plan)
    assert inputs["machineType"] == "a3-ultragpu-8g"
    assert inputs["scheduling"] == {
        "provisioningModel": "STANDARD",
        "onHostMaintenance": "TERMINATE",
        "automaticRestart": True,
    }
    assert "reservationAffinity" not in inputs
    (disk,) = inputs["disks"]
    assert {k: disk[k] for k in ("boot", "autoDelete", "diskType", "diskSizeGb", "sourceImage")} == {
        "boot": True,
        "autoDelete": True,
        "diskType": "hyperdisk-balanced",
        "diskSizeGb": 750,
        "sourceImage": (
            "projects/ubuntu-os-accelerator-images/global/images/family/ubuntu-accelerator-2404-amd64-with-nvidia-580"
        ),
    }
    assert "diskEncryptionKey" not in disk  # Google-managed encryption
    assert inputs["shieldedInstanceConfig"] == {
        # the node software loads DKMS-built (unsigned) modules: see components/gcp/node_group.py
        "enableSecureBoot": False,
        "enableVtpm": True,
        "enableIntegrityMonitoring": True,
    }
    assert inputs["serviceAccount"] == {
        "email": "tpl-cluster-g-sa@mock-project.iam.gserviceaccount.com",
        "scopes": ["https://www.googleapis.com/auth/cloud-platform"],
    }
    metadata = inputs["metadata"]
    assert (metadata["enable-oslogin"], metadata["enable-guest-attributes"]) == ("TRUE", "TRUE")
    assert metadata["startup-script"].startswith("#!/bin/bash\n")
    assert inputs["labels"] == {
        "clusterfab-blueprint": "tpl-cluster",
        "clusterfab-stack": "plan",
        "clusterfab-component": "node-group-g",
        "clusterfab-node-group": "g",
    }
    assert disk["labels"] == inputs["labels"]


def test_a3_mega_boots_from_pd_ssd_and_arm_from_the_arm_image() -> None:
    assert template(gcp_plan(group("a3-megagpu-8g"), name="pd"))["disks"][0]["diskType"] == "pd-ssd"
    arm = template(gcp_plan(group("a4x-highgpu-4g"), name="arm"))["disks"][0]
    assert arm["sourceImage"].endswith("ubuntu-accelerator-2404-arm64-with-nvidia-580")


def test_explicit_image_wins() -> None:
    plan = gcp_plan(group("a3-megagpu-8g", "    image: projects/p/global/images/mine\n"), name="img")
    assert template(plan)["disks"][0]["sourceImage"] == "projects/p/global/images/mine"


def test_spot_scheduling() -> None:
    plan = gcp_plan(group("a3-megagpu-8g", "    capacity: {kind: spot}\n"), name="spot")
    assert template(plan)["scheduling"] == {
        "provisioningModel": "SPOT",
        "preemptible": True,
        "automaticRestart": False,
        "instanceTerminationAction": "DELETE",
        "onHostMaintenance": "TERMINATE",
    }
    assert "targetSizePolicies" not in one(plan, MIG).inputs


def test_flex_start_runs_for_the_blueprint_duration_and_arrives_all_at_once() -> None:
    extra = "    capacity: {kind: flex_start, max_run_duration_hours: 36}\n"
    plan = gcp_plan(group("a3-ultragpu-8g", extra), name="flex")
    inputs = template(plan)
    assert inputs["scheduling"] == {
        "provisioningModel": "FLEX_START",
        "automaticRestart": False,
        "instanceTerminationAction": "DELETE",
        "maxRunDuration": {"seconds": 36 * 3600},
        "onHostMaintenance": "TERMINATE",
    }
    assert inputs["reservationAffinity"] == {"type": "NO_RESERVATION"}
    mig = one(plan, MIG).inputs
    assert (mig["targetSize"], mig["targetSizePolicies"]) == (4, [{"mode": "BULK"}])


def test_flex_start_cannot_autoscale() -> None:
    extra = "    capacity: {kind: flex_start, max_run_duration_hours: 8}\n"
    with pytest.raises(
        PlanError, match=r"error\[BP120\] node_groups\[0\].autoscaling: flex-start capacity arrives"
    ):
        gcp_plan(group("a3-ultragpu-8g", extra, size="autoscaling: {min: 0, max: 4}"), name="flexauto")


def test_reservation_affinity_targets_the_named_reservation() -> None:
    extra = "    capacity: {kind: reservation, reservation: a3u-prod-reservation}\n"
    inputs = template(gcp_plan(group("a3-ultragpu-8g", extra), name="res"))
    assert inputs["reservationAffinity"] == {
        "type": "SPECIFIC_RESERVATION",
        "specificReservation": {
            "key": "compute.googleapis.com/reservation-name",
            "values": ["a3u-prod-reservation"],
        },
    }
    assert inputs["scheduling"]["provisioningModel"] == "STANDARD"


def test_fixed_group_is_a_zonal_mig_of_count_on_the_unique_template() -> None:
    plan = gcp_plan(group("a3-megagpu-8g", size="count: 16"), name="mig")
    mig = one(plan, MIG).inputs
    assert (mig["zone"], mig["targetSize"], mig["baseInstanceName"]) == (
        "us-central1-b",
        16,
        "mig-cluster-plan-g-bea69bf1",  # sha256 of 'mig-cluster\0plan\0g', its first 8 hex digits
    )
    assert mig["versions"] == [
        {"name": "primary", "instanceTemplate": "https://mock.googleapis.com/mig-cluster-g-template?u"}
    ]
    assert mig["updatePolicy"] == {
        "type": "OPPORTUNISTIC",
        "minimalAction": "REPLACE",
        "replacementMethod": "RECREATE",
        "maxSurgeFixed": 0,
        "maxUnavailableFixed": 1,
    }
    assert mig["waitForInstances"] is False
    assert all_of(plan, AUTOSCALER) == []


def test_autoscaled_group_starts_at_min_with_no_gce_autoscaler_and_carries_its_max() -> None:
    """Audit item 17: the old autoscaler scaled on agent.googleapis.com/gpu/utilization, which nothing
    emitted (no Ops Agent) and which a group at 0 nodes can never emit. The size is left to whoever
    resizes the group; the template records the group's most nodes for the cost policy."""
    plan = gcp_plan(group("a3-megagpu-8g", size="autoscaling: {min: 2, max: 12}"), name="auto")
    mig = one(plan, MIG)
    assert mig.inputs["targetSize"] == 2
    assert all_of(plan, AUTOSCALER) == []
    assert one(plan, TEMPLATE).inputs["labels"]["clusterfab-max-nodes"] == "12"


def test_compact_placement_is_a_high_throughput_workload_policy_on_the_mig() -> None:
    plan = gcp_plan(group("a3-megagpu-8g"), name="cp")
    policy = one(plan, POLICY).inputs
    assert (policy["region"], policy["workloadPolicy"]) == ("us-central1", {"type": "HIGH_THROUGHPUT"})
    assert one(plan, MIG).inputs["resourcePolicies"] == {
        "workloadPolicy": "https://mock.googleapis.com/cp-cluster-g-placement"
    }


@pytest.mark.parametrize(("distance", "topology"), [(2, "BLOCK"), (3, "CLUSTER")])
def test_max_distance_maps_to_the_topology_distance(distance: int, topology: str) -> None:
    extra = f"    placement_max_distance: {distance}\n"
    plan = gcp_plan(group("a4-highgpu-8g", extra, size="count: 150"), name=f"d{distance}")
    assert one(plan, POLICY).inputs["workloadPolicy"] == {
        "type": "HIGH_THROUGHPUT",
        "maxTopologyDistance": topology,
    }


def test_max_distance_caps_the_group_size() -> None:
    # A4 at max distance 2 (one block) holds at most 150 VMs (S-GCP-PP).
    extra = "    placement_max_distance: 2\n"
    with pytest.raises(PlanError, match="at most 150 a4-highgpu-8g VMs"):
        gcp_plan(group("a4-highgpu-8g", extra, size="count: 151"), name="cap")


def test_a4x_places_by_its_nvl72_accelerator_topology() -> None:
    plan = gcp_plan(group("a4x-highgpu-4g", size="count: 18"), name="nvl")
    assert one(plan, POLICY).inputs["workloadPolicy"] == {
        "type": "HIGH_THROUGHPUT",
        "acceleratorTopology": "1x72",
    }


def test_single_node_or_placement_none_gets_no_policy() -> None:
    single = gcp_plan(group("a3-megagpu-8g", size="count: 1"), name="one")
    assert all_of(single, POLICY) == []
    assert "resourcePolicies" not in one(single, MIG).inputs


def test_node_group_children_and_least_privilege_identity() -> None:
    plan = gcp_plan(group("a3-megagpu-8g", size="autoscaling: {min: 0, max: 8}"), name="iam")
    node = one(plan, "clusterfab:compute:GcpGpuNodeGroup")
    assert children(plan, node) == [
        (MIG, "iam-cluster-g-mig"),
        (TEMPLATE, "iam-cluster-g-template"),
        (POLICY, "iam-cluster-g-placement"),
        ("gcp:projects/iAMMember:IAMMember", "iam-cluster-g-log-writer"),
        ("gcp:projects/iAMMember:IAMMember", "iam-cluster-g-metric-writer"),
        ("gcp:serviceaccount/account:Account", "iam-cluster-g-sa"),
        ("gcp:storage/bucketIAMMember:BucketIAMMember", "iam-cluster-g-bucket-reader"),
    ]
    member = "serviceAccount:iam-cluster-g-sa@mock-project.iam.gserviceaccount.com"
    roles = {
        (r.inputs["role"], r.inputs["project"]) for r in all_of(plan, "gcp:projects/iAMMember:IAMMember")
    }
    assert roles == {
        ("roles/logging.logWriter", "test-project"),
        ("roles/monitoring.metricWriter", "test-project"),
    }
    assert all(r.inputs["member"] == member for r in all_of(plan, "gcp:projects/iAMMember:IAMMember"))
    reader = one(plan, "gcp:storage/bucketIAMMember:BucketIAMMember").inputs
    assert reader == {
        "bucket": "iam-cluster-artifacts-bucket",
        "role": "roles/storage.objectViewer",
        "member": member,
    }
    account = one(plan, "gcp:serviceaccount/account:Account").inputs
    assert account["accountId"] == "iam-cluster-plan-g"


def test_startup_script_mounts_the_attached_storage_only() -> None:
    body = (
        group("a3-ultragpu-8g", "    attach: [data]\n")
        + "storage:\n"
        + "  - {name: data, kind: lustre, capacity_gib: 18000, throughput_mbps_per_tib: 500,"
        + " mount_point: /data}\n"
        + "  - {name: home, kind: filestore, tier: ZONAL, capacity_gib: 1024}\n"
    )
    script = startup_script(gcp_plan(body, name="boot"), TEMPLATE, "boot-cluster-g-template")
    variables = boot_vars(script)
    assert variables["storage_mounts_list"] == [
        {
            "name": "data",
            "fstype": "lustre",
            "source": "10.255.0.3@tcp:/mocklfs",
            "mount_point": "/data",
            "options": "defaults",
        }
    ]
    assert (
        variables["storage_mounts_lustre_repo_url"]
        == "https://us-apt.pkg.dev/projects/lustre-client-binaries"
    )
    assert (variables["gpu_node_fabric"], variables["rdma_gib_version"]) == ("rdma_gib", "1.1.0")
    assert "/mnt/home" not in script
    assert "(gcp)" in script
    assert "guest-attributes/clusterfab/health" in script


def test_outputs_describe_the_gcp_cluster() -> None:
    outputs = read_outputs(
        plan_file(REPO / "blueprints/examples/gcp-a3ultra-roce-lustre.yaml", "dev").outputs
    )
    assert outputs.node_groups == {
        "trainers": NodeGroupOutput(
            machine_type="a3-ultragpu-8g",
            min_size=2,
            max_size=2,
            capacity="flex_start",
            placement="compact",
            fabric="rdma",
            group="ultra-train-trainers-mig",
            template="https://mock.googleapis.com/ultra-train-trainers-template?u",
            identity="ultra-train-trainers-sa@mock-project.iam.gserviceaccount.com",
            interfaces=10,
            fabric_interfaces=8,
        )
    }
    assert outputs.blueprint.project == "ml-platform-dev"
    assert outputs.network == {
        "sys": "https://mock.googleapis.com/ultra-train-net-sys",
        "gvnic-1": "https://mock.googleapis.com/ultra-train-net-gvnic-1",
        "rdma-vpc": "https://mock.googleapis.com/ultra-train-rdma-vpc",
        "system_network_id": "ultra-train-net-sys-id",
        "system_subnetwork_id": "ultra-train-net-sys-subnet-id",
    }
    assert outputs.storage["lustre"].source == "10.255.0.3@tcp:/mocklfs"
    assert outputs.node_selector == {
        "labels.clusterfab-blueprint": "ultra-train",
        "labels.clusterfab-stack": "dev",
    }
    assert outputs.tpu_slices == {}
