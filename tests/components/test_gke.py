"""GKE: the cluster, its node pools and the objects applied in it, planned from blueprints through the real
program under the mock engine; the expected inputs are written out (GKE's and Cluster Toolkit's values, the
catalog's dates), never derived from the code under test."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import kubernetes_validate
import pulumi
import pytest

from clusterfab.outputs import NodeGroupOutput, TpuSliceOutput, read_outputs
from clusterfab.plan.project import Plan
from clusterfab.scheduler.kubernetes.outputs import KubernetesOutput
from components.gcp.gke_node_pool import GkeNodePoolArgs, _problems
from tests.components.harness import all_of, gcp_plan, one, plan_file
from tests.conftest import REPO

EXAMPLE = REPO / "blueprints" / "examples" / "gcp-gke-a3mega.yaml"
CLUSTER = "gcp:container/cluster:Cluster"
POOL = "gcp:container/nodePool:NodePool"
PARAM_SET = "kubernetes:networking.gke.io/v1:GKENetworkParamSet"
NETWORK = "kubernetes:networking.gke.io/v1:Network"
MOCK_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMOCK\n-----END CERTIFICATE-----\n").decode()

KUBERNETES = """scheduler:
  kind: kubernetes
{extra}node_groups:
  - name: {group}
    machine_type: {machine}
    count: 4
{capacity}"""


def gke_plan(
    *,
    machine: str = "a3-megagpu-8g",
    capacity: str = "",
    extra: str = "",
    name: str = "gke",
    zone: str = "us-central1-a",
) -> Plan:
    """A GKE cluster with one node group `g4` of four nodes (the component tests' and API-model variants')."""
    body = KUBERNETES.format(extra=extra, group="g4", machine=machine, capacity=capacity)
    return gcp_plan(body, name=name, zone=zone)


def flex_start() -> Plan:
    """RoCE machines (a second gVNIC network and an RDMA VPC) on flex-start capacity."""
    return gke_plan(
        machine="a3-ultragpu-8g",
        capacity="    capacity: {kind: flex_start, max_run_duration_hours: 24}\n",
        name="flex",
        zone="us-central1-b",
    )


def api_ranges() -> Plan:
    """An API server reachable from two listed ranges; spot capacity."""
    extra = "  api_access_cidrs: [203.0.113.0/24, 198.51.100.16/28]\n"
    return gke_plan(extra=extra, capacity="    capacity: {kind: spot}\n", name="cidr")


def _prod() -> Plan:
    return plan_file(EXAMPLE, "prod")


def test_the_cluster_is_private_regional_and_upgraded_only_between_training_runs() -> None:
    cluster = one(_prod(), CLUSTER)
    assert {key: cluster.inputs[key] for key in sorted(cluster.inputs) if key not in ("resourceLabels",)} == {
        "addonsConfig": {
            "gcpFilestoreCsiDriverConfig": {"enabled": True},
            "lustreCsiDriverConfig": {"enabled": True},
        },
        "controlPlaneEndpointsConfig": {"dnsEndpointConfig": {"allowExternalTraffic": True}},
        "datapathProvider": "ADVANCED_DATAPATH",
        "deletionProtection": True,
        "description": "gke-mega (prod)",
        "enableMultiNetworking": True,
        "initialNodeCount": 1,
        "ipAllocationPolicy": {"clusterIpv4CidrBlock": "/14", "servicesIpv4CidrBlock": "/20"},
        "location": "us-central1",
        "maintenancePolicy": {
            "maintenanceExclusions": [
                {
                    # GKE 1.35's end of standard support (facts.yaml, S-EOL-GKE); the start is the day the
                    # catalog recorded the Regular channel's default.
                    "endTime": "2027-02-28T00:00:00Z",
                    "exclusionName": "training-runs",
                    "exclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES"},
                    "startTime": "2026-09-17T00:00:00Z",
                }
            ],
            "recurringWindow": {
                "endTime": "2026-01-03T12:00:00Z",
                "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU",
                "startTime": "2026-01-03T04:00:00Z",
            },
        },
        "masterAuthorizedNetworksConfig": {"cidrBlocks": [], "gcpPublicCidrsAccessEnabled": False},
        "minMasterVersion": "1.35",
        "name": "gke-mega-prod",
        "network": "gke-mega-net-sys-id",
        "networkingMode": "VPC_NATIVE",
        "nodeConfig": {
            "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
            "serviceAccount": "gke-mega-gke-nodes-sa@mock-project.iam.gserviceaccount.com",
            "workloadMetadataConfig": {"mode": "GKE_METADATA"},
        },
        "privateClusterConfig": {"enablePrivateEndpoint": True, "enablePrivateNodes": True},
        "project": "ml-platform-prod",
        "releaseChannel": {"channel": "REGULAR"},
        "removeDefaultNodePool": True,
        "subnetwork": "gke-mega-net-sys-subnet-id",
        "workloadIdentityConfig": {"workloadPool": "ml-platform-prod.svc.id.goog"},
    }
    assert cluster.protect is True


def test_the_nodes_run_as_a_service_account_with_the_node_role_only() -> None:
    plan = _prod()
    [grant] = all_of(plan, "gcp:projects/iAMMember:IAMMember")
    assert grant.inputs == {
        "member": "serviceAccount:gke-mega-gke-nodes-sa@mock-project.iam.gserviceaccount.com",
        "project": "ml-platform-prod",
        "role": "roles/container.defaultNodeServiceAccount",
    }
    assert one(plan, "gcp:serviceaccount/account:Account").inputs["accountId"] == "gke-mega-prod-gke-nodes"


def _pool(plan: Plan, name: str) -> dict[str, Any]:
    """A pool's inputs but its cluster's id, as a copy (the session's cached plans stay as planned)."""
    inputs = copy.deepcopy(one(plan, POOL, name).inputs)
    return {key: value for key, value in inputs.items() if key != "cluster"}


NODE_BASE = {
    "imageType": "COS_CONTAINERD",
    "metadata": {"disable-legacy-endpoints": "true"},
    "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
    "shieldedInstanceConfig": {"enableIntegrityMonitoring": True, "enableSecureBoot": True},
    "workloadMetadataConfig": {"mode": "GKE_METADATA"},
}


def test_a_reserved_tcpxo_group_is_one_gpu_pool_on_its_reservation_with_the_fabric_networks() -> None:
    pool = _pool(_prod(), "gke-mega-h100-pool")
    labels = pool["nodeConfig"].pop("resourceLabels")
    assert labels["clusterfab-component"] == "node-group-h100"
    assert pool == {
        "location": "us-central1",
        "management": {"autoRepair": True, "autoUpgrade": True},
        "name": "gpu-h100",
        "networkConfig": {
            "additionalNodeNetworkConfigs": [
                {
                    "network": f"gke-mega-gpudirect-tcpxo-gpu-{i}",
                    "subnetwork": f"gke-mega-gpudirect-tcpxo-gpu-{i}-subnet",
                }
                for i in range(8)
            ],
            "enablePrivateNodes": True,
        },
        "nodeConfig": {
            **NODE_BASE,
            "diskSizeGb": 400,
            "diskType": "pd-ssd",
            "ephemeralStorageLocalSsdConfig": {"localSsdCount": 0},
            "guestAccelerators": [
                {
                    "count": 8,
                    "gpuDriverInstallationConfig": {"gpuDriverVersion": "DEFAULT"},
                    "type": "nvidia-h100-mega-80gb",
                }
            ],
            "gvnic": {"enabled": True},
            "labels": {"clusterfab.dev/node-group": "h100"},
            "machineType": "a3-megagpu-8g",
            "reservationAffinity": {
                "consumeReservationType": "SPECIFIC_RESERVATION",
                "key": "compute.googleapis.com/reservation-name",
                "values": ["a3mega-us-central1-a"],
            },
            "serviceAccount": "gke-mega-gke-nodes-sa@mock-project.iam.gserviceaccount.com",
            "taints": [{"effect": "NO_SCHEDULE", "key": "nvidia.com/gpu", "value": "present"}],
        },
        "nodeCount": 8,
        "nodeLocations": ["us-central1-a"],
        "project": "ml-platform-prod",
        "upgradeSettings": {"maxSurge": 0, "maxUnavailable": 1, "strategy": "SURGE"},
    }


def test_each_slice_of_a_multislice_group_is_its_own_tpu_pool() -> None:
    plan = _prod()
    for index in (0, 1):
        pool = _pool(plan, f"gke-mega-v5p-{index}-pool")
        pool["nodeConfig"].pop("resourceLabels")
        assert pool == {
            "location": "us-central1",
            "management": {"autoRepair": True, "autoUpgrade": True},
            "name": f"tpu-v5p-{index}",
            "networkConfig": {"enablePrivateNodes": True},
            "nodeConfig": {
                **NODE_BASE,
                "diskSizeGb": 100,
                "diskType": "pd-balanced",
                "labels": {"clusterfab.dev/tpu-slice": "v5p"},
                # Cluster Toolkit's pkg/config/hardware.go: v5p-4 (four chips a VM) is ct5p-hightpu-4t.
                "machineType": "ct5p-hightpu-4t",
                "reservationAffinity": {"consumeReservationType": "NO_RESERVATION"},
                "serviceAccount": "gke-mega-gke-nodes-sa@mock-project.iam.gserviceaccount.com",
                "taints": [{"effect": "NO_SCHEDULE", "key": "google.com/tpu", "value": "present"}],
            },
            # 2x2x4: 16 chips on 4 hosts.
            "nodeCount": 4,
            "nodeLocations": ["us-central1-a"],
            "placementPolicy": {"tpuTopology": "2x2x4", "type": "COMPACT"},
            "project": "ml-platform-prod",
            "upgradeSettings": {"maxSurge": 0, "maxUnavailable": 1, "strategy": "SURGE"},
        }


def test_the_system_pool_is_the_sections_machines() -> None:
    pool = _pool(_prod(), "gke-mega-gke-system-pool")
    assert (pool["name"], pool["nodeConfig"]["machineType"], pool["nodeCount"]) == (
        "system",
        "e2-standard-8",
        2,
    )
    assert "taints" not in pool["nodeConfig"]
    assert "guestAccelerators" not in pool["nodeConfig"]


def test_flex_start_is_queued_provisioning_from_zero_outside_any_reservation() -> None:
    plan = flex_start()
    pool = _pool(plan, "flex-cluster-g4-pool")
    assert pool["autoscaling"] == {"locationPolicy": "ANY", "totalMaxNodeCount": 4, "totalMinNodeCount": 0}
    assert pool["queuedProvisioning"] == {"enabled": True}
    assert pool["management"] == {"autoRepair": False, "autoUpgrade": False}
    assert "nodeCount" not in pool
    assert "placementPolicy" not in pool
    assert pool["nodeConfig"]["flexStart"] is True
    assert pool["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    # A3 Ultra: the second gVNIC network, then the RDMA VPC's eight subnets.
    assert pool["networkConfig"]["additionalNodeNetworkConfigs"] == [
        {"network": "flex-cluster-net-gvnic-1", "subnetwork": "flex-cluster-net-gvnic-1-subnet"}
    ] + [
        {"network": "flex-cluster-rdma-vpc", "subnetwork": f"flex-cluster-rdma-subnet-{i}"} for i in range(8)
    ]
    modes = {r.inputs["metadata"]["name"]: r.inputs["spec"]["deviceMode"] for r in all_of(plan, PARAM_SET)}
    assert modes == {"gvnic-1": "NetDevice", **{f"rdma-{i}": "RDMA" for i in range(8)}}


def test_listed_ranges_alone_reach_a_public_ip_endpoint() -> None:
    plan = api_ranges()
    cluster = one(plan, CLUSTER).inputs
    assert cluster["privateClusterConfig"] == {"enablePrivateEndpoint": False, "enablePrivateNodes": True}
    assert cluster["masterAuthorizedNetworksConfig"] == {
        "cidrBlocks": [
            {"cidrBlock": "203.0.113.0/24", "displayName": "api-access-0"},
            {"cidrBlock": "198.51.100.16/28", "displayName": "api-access-1"},
        ],
        "gcpPublicCidrsAccessEnabled": False,
    }
    assert cluster["controlPlaneEndpointsConfig"] == {"dnsEndpointConfig": {"allowExternalTraffic": False}}
    config = json.loads(one(plan, "pulumi:providers:kubernetes").inputs["kubeconfig"])
    assert config["clusters"][0]["cluster"] == {
        "server": "https://10.255.0.5",
        "certificate-authority-data": MOCK_CA,
    }
    pool = _pool(plan, "cidr-cluster-g4-pool")
    assert (pool["nodeConfig"]["spot"], pool["placementPolicy"]) == (True, {"type": "COMPACT"})


def test_the_program_reaches_a_private_cluster_through_its_dns_endpoint() -> None:
    config = json.loads(one(_prod(), "pulumi:providers:kubernetes").inputs["kubeconfig"])
    assert config["clusters"] == [
        {
            "name": "gke_ml-platform-prod_us-central1_gke-mega-prod",
            # The DNS endpoint's certificate is publicly trusted: no cluster CA.
            "cluster": {
                "server": "https://gke-gke-mega-gke-cluster-123456789.mock-region.gke.goog",
                "certificate-authority-data": "",
            },
        }
    ]
    assert config["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"


def test_the_tcpxo_networks_are_given_to_pods_as_cluster_toolkit_names_them() -> None:
    plan = _prod()
    param_sets = {r.inputs["metadata"]["name"]: r.inputs for r in all_of(plan, PARAM_SET)}
    assert param_sets["vpc1"] == {
        "apiVersion": "networking.gke.io/v1",
        "kind": "GKENetworkParamSet",
        "metadata": {"name": "vpc1"},
        "spec": {
            "deviceMode": "NetDevice",
            "vpc": "gke-mega-gpudirect-tcpxo-gpu-0",
            "vpcSubnet": "gke-mega-gpudirect-tcpxo-gpu-0-subnet",
        },
    }
    assert sorted(param_sets) == [f"vpc{i}" for i in range(1, 9)]
    networks = {r.inputs["metadata"]["name"]: r.inputs for r in all_of(plan, NETWORK)}
    assert networks["vpc8"]["spec"] == {
        "parametersRef": {"group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": "vpc8"},
        "type": "Device",
    }


@pytest.mark.parametrize("kind", ["Namespace", "RoleBinding"])
def test_the_team_objects_applied_are_valid_kubernetes_objects(kind: str) -> None:
    found = [r.inputs for r in _prod().resources if r.type.endswith(f":{kind}")]
    objects = [o for o in found if "clusterfab.dev/team" in o["metadata"].get("labels", {})]
    assert len(objects) == 2  # the example's two teams (the monitoring namespace is the system software's)
    for manifest in objects:
        kubernetes_validate.validate(manifest, "1.35.0", strict=True)


def test_the_stack_exports_the_pools_and_the_cluster() -> None:
    outputs = read_outputs(plan_file(EXAMPLE, "dev").outputs)
    assert outputs.node_groups == {
        "h100": NodeGroupOutput(
            machine_type="a3-megagpu-8g",
            min_size=2,
            max_size=2,
            capacity="spot",
            placement="compact",
            fabric="gpudirect-tcpxo",
            group="gke-mega-h100-pool-id",
            template="",
            identity="gke-mega-gke-nodes-sa@mock-project.iam.gserviceaccount.com",
            interfaces=9,
            fabric_interfaces=8,
        )
    }
    assert outputs.tpu_slices == {
        "v5p": TpuSliceOutput(
            nodes=["gke-mega-v5p-pool-id"],
            accelerator_type="v5p-16",
            topology="2x2x2",
            runtime_version="v2-alpha-tpuv5",
            slices=1,
            hosts_per_slice=2,
            capacity="spot",
            identity="gke-mega-gke-nodes-sa@mock-project.iam.gserviceaccount.com",
        )
    }
    assert KubernetesOutput.model_validate(
        plan_file(EXAMPLE, "dev").outputs["scheduler"]
    ) == KubernetesOutput(
        kind="kubernetes",
        controller="gke-mega-dev",
        controller_address="gke-gke-mega-gke-cluster-123456789.mock-region.gke.goog",
        login=[],
        service="GKE",
        location="us-central1",
        version="1.35",
        certificate_authority="",
    )


def _args(**changes: Any) -> GkeNodePoolArgs:
    base: dict[str, Any] = {
        "name": "gpu-g",
        "cluster": "c",
        "project": "p",
        "location": "us-central1",
        "node_locations": ["us-central1-a"],
        "machine_type": "a3-megagpu-8g",
        "service_account_email": "sa@p.iam.gserviceaccount.com",
    }
    return GkeNodePoolArgs(**(base | changes))


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {"capacity": "queued", "autoscaling": (1, 4)},
            [("autoscaling", "queued provisioning scales a pool from 0 nodes")],
            id="queued-from-one",
        ),
        pytest.param(
            {"capacity": "reservation"},
            [("reservation", "a reservation pool needs the reservation's name")],
            id="reservation-unnamed",
        ),
        pytest.param(
            {"capacity": "spot", "reservation": "r"},
            [("reservation", "a spot pool consumes no reservation")],
            id="spot-reserved",
        ),
        pytest.param(
            {"max_surge": 0, "max_unavailable": 0},
            [("max_unavailable", "an upgrade must be able to replace at least one node")],
            id="no-upgrade-room",
        ),
        pytest.param(
            {"name": "gpu-" + "x" * 37},
            [("name", f"'gpu-{'x' * 37}' is longer than 40 characters")],
            id="long-name",
        ),
    ],
)
def test_a_node_pool_refuses_inputs_gke_refuses(
    changes: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    assert _problems(_args(**changes)) == expected


def test_the_component_raises_before_creating_anything() -> None:
    from components.gcp.gke_node_pool import GkeNodePool

    with pytest.raises(pulumi.InputPropertiesError, match="clusterfab:compute:GkeNodePool: reservation"):
        GkeNodePool("x", _args(capacity="reservation"))


def test_the_gpu_pools_nodes_carry_the_label_the_monitoring_host_finds_them_by() -> None:
    plan = _prod()
    gpu = _pool(plan, "gke-mega-h100-pool")["nodeConfig"]["resourceLabels"]
    system = _pool(plan, "gke-mega-gke-system-pool")["nodeConfig"]["resourceLabels"]
    assert gpu["clusterfab-node-group"] == "h100"
    assert system["clusterfab-component"] == "system-nodes"
    assert "clusterfab-node-group" not in system  # no GPU exporters there to scrape
