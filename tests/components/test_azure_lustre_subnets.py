"""The Azure realizer's Managed Lustre subnets under the mock engine: one subnet per file system, each with
its own NSG, sized for its capacity by Microsoft's table (amlfs-prerequisites, "Network size
requirements": 4-16 TiB /27, 20-40 TiB /26, 44-92 TiB /25, 96-196 TiB /24, 200-400 TiB /23); the first
file system keeps the block and the names the one shared subnet had, and a second one moves nothing."""

from __future__ import annotations

from clusterfab.plan.project import Plan
from tests.components.harness import all_of, one
from tests.components.test_azure_realize import azure_plan

SUBNET = "azure-native:network:Subnet"
NSG = "azure-native:network:NetworkSecurityGroup"
AMLFS = "azure-native:storagecache:AmlFilesystem"
GROUP = "node_groups:\n  - name: gpus\n    machine_type: Standard_ND96isr_H100_v5\n    count: 2\n"
DATA = """  - name: data
    kind: lustre
    capacity_gib: 32768
    throughput_mbps_per_tib: 125
    mount_point: /data
"""
ARCHIVE = """  - name: archive
    kind: lustre
    capacity_gib: 49152
    throughput_mbps_per_tib: 40
    mount_point: /archive
"""


def lustre_plan(*file_systems: str) -> Plan:
    return azure_plan(GROUP + "storage:\n" + "".join(file_systems), name="fs")


def _subnets(plan: Plan) -> dict[str, str]:
    return {r.name: r.inputs["addressPrefix"] for r in all_of(plan, SUBNET)}


def test_one_file_system_keeps_the_block_and_names_the_shared_subnet_had() -> None:
    plan = lustre_plan(DATA)
    assert _subnets(plan) == {
        "fs-net-nodes": "10.20.0.0/20",
        "fs-net-controller": "10.20.16.0/20",
        "fs-net-lustre": "10.20.32.0/20",
    }
    assert one(plan, AMLFS, "fs-data-amlfs").inputs["filesystemSubnet"] == "fs-net-lustre-id"


def test_a_second_file_system_gets_its_own_subnet_of_its_size_and_moves_nothing() -> None:
    one_fs, two_fs = lustre_plan(DATA), lustre_plan(DATA, ARCHIVE)
    # 48 TiB: "44 TiB to 92 TiB /25 or larger", in block 3 (10.20.48.0/20), the first after the first's
    assert _subnets(two_fs) == {
        "fs-net-nodes": "10.20.0.0/20",
        "fs-net-controller": "10.20.16.0/20",
        "fs-net-lustre": "10.20.32.0/20",
        "fs-net-lustre-archive": "10.20.48.0/25",
    }
    assert one(two_fs, AMLFS, "fs-data-amlfs").inputs["filesystemSubnet"] == "fs-net-lustre-id"
    assert one(two_fs, AMLFS, "fs-archive-amlfs").inputs["filesystemSubnet"] == "fs-net-lustre-archive-id"
    for name in ("fs-net-lustre", "fs-net-lustre-nsg", "fs-data-amlfs"):
        before = next(r for r in one_fs.resources if r.name == name)
        after = next(r for r in two_fs.resources if r.name == name)
        assert (after.type, after.inputs) == (before.type, before.inputs), name
    # the new subnet waits for the one before it: Azure changes one subnet of a VNet at a time
    by_name = {r.name: r for r in two_fs.resources}
    assert by_name["fs-net-lustre"].urn in by_name["fs-net-lustre-archive"].dependencies


def test_each_file_systems_nsg_admits_lustre_to_its_own_subnet_only() -> None:
    nsgs = {r.name: r.inputs["securityRules"] for r in all_of(lustre_plan(DATA, ARCHIVE), NSG)}
    assert sorted(nsgs) == [
        "fs-net-controller-nsg",
        "fs-net-lustre-archive-nsg",
        "fs-net-lustre-nsg",
        "fs-net-nodes-nsg",
    ]
    archive = nsgs["fs-net-lustre-archive-nsg"]
    assert [(r["name"], r["direction"], r["access"]) for r in archive] == [
        ("AllowLustreFromVnet", "Inbound", "Allow"),
        ("AllowLustreToVnet", "Outbound", "Allow"),
        ("DenyInternetInbound", "Inbound", "Deny"),
    ]
    assert (archive[0]["destinationAddressPrefix"], archive[1]["sourceAddressPrefix"]) == (
        "10.20.48.0/25",
        "10.20.48.0/25",
    )
    assert archive[0]["destinationPortRanges"] == ["988", "1019-1023"]


DATA_CONTAINER = (
    "/subscriptions/5b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d/resourceGroups/data/providers/Microsoft.Storage/"
    "storageAccounts/mldata/blobServices/default/containers/datasets"
)
IMPORTED = DATA + f"    import_path: {DATA_CONTAINER}/imagenet/\n"


def test_a_blob_import_gives_the_file_system_its_container_prefix_and_a_logging_container_beside_it() -> None:
    plan = lustre_plan(IMPORTED)
    logs = one(plan, "azure-native:storage:BlobContainer", "fs-data-hsm-logs").inputs
    assert logs == {
        "accountName": "mldata",
        "containerName": "fs-plan-data-logs",
        "publicAccess": "None",
        "resourceGroupName": "data",
    }
    assert one(plan, "azure-native:storagecache:AmlFilesystem", "fs-data-amlfs").inputs["hsm"] == {
        "settings": {
            "container": DATA_CONTAINER,
            "importPrefix": "/imagenet",
            "loggingContainer": "fs-data-hsm-logs-id",
        }
    }
    # Without an import_path the file system has no integration and no second container.
    plain = lustre_plan(DATA)
    assert "hsm" not in one(plain, "azure-native:storagecache:AmlFilesystem", "fs-data-amlfs").inputs
    assert [r.name for r in all_of(plain, "azure-native:storage:BlobContainer")] == [
        r.name for r in all_of(plan, "azure-native:storage:BlobContainer") if r.name != "fs-data-hsm-logs"
    ]
