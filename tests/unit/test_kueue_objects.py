"""The Kueue objects of a Kubernetes cluster: flavors per node group, a queue per team in one cohort with
its GPU quota laid on the flavors in order, what no team's quota covers left to the cohort."""

from __future__ import annotations

from typing import Any

from clusterfab.scheduler.kubernetes.queues import kueue_objects
from tests.crd_schema import crd_problems
from tests.factories import spec

LABELS = {"app.kubernetes.io/managed-by": "clusterfab"}
GROUPS = [
    {"name": "mega", "machine_type": "a3-megagpu-8g", "count": 4, "capacity": {"kind": "spot"}},
    {"name": "high", "machine_type": "a3-highgpu-8g", "count": 2},
]
TEAMS = [
    {"name": "research", "max_gpus": 40, "priority": "high"},
    {"name": "interns", "max_gpus": 8, "priority": "low"},
]


def _by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def _gpu_group(quotas: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [
                {"name": name, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": quota}]}
                for name, quota in quotas.items()
            ],
        }
    ]


def test_each_team_gets_its_gpus_on_the_flavors_in_order_and_the_cohort_the_rest() -> None:
    objects = kueue_objects(
        spec("gcp", node_groups=GROUPS, scheduler={"kind": "kubernetes"}, teams=TEAMS), "gcp"
    )
    assert [o["kind"] for o in objects] == [
        "Topology",
        "ResourceFlavor",
        "ResourceFlavor",
        "WorkloadPriorityClass",
        "WorkloadPriorityClass",
        "WorkloadPriorityClass",
        "Cohort",
        "ClusterQueue",
        "ClusterQueue",
        "LocalQueue",
        "LocalQueue",
    ]
    assert _by_kind(objects, "ResourceFlavor")[0] == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "mega-spot", "labels": LABELS},
        "spec": {
            "nodeLabels": {"clusterfab.dev/node-group": "mega"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "topologyName": "clusterfab",
        },
    }
    research, interns = _by_kind(objects, "ClusterQueue")
    # 40 GPUs: all 32 of mega's 4 nodes, then 8 of high's 16; the interns' 8 land on mega again.
    assert research["spec"] == {
        "cohortName": "clusterfab",
        "namespaceSelector": {"matchLabels": {"clusterfab.dev/team": "research"}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": _gpu_group({"mega-spot": 32, "high-on-demand": 8}),
        "preemption": {
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": {"policy": "LowerPriority"},
            "withinClusterQueue": "LowerPriority",
        },
    }
    assert interns["spec"]["resourceGroups"] == _gpu_group({"mega-spot": 8, "high-on-demand": 0})
    # high's 16 GPUs: 8 are research's, the other 8 no team's: the cohort holds them for whoever borrows.
    (cohort,) = _by_kind(objects, "Cohort")
    assert cohort["spec"] == {"resourceGroups": _gpu_group({"mega-spot": 0, "high-on-demand": 8})}
    assert _by_kind(objects, "LocalQueue") == [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": team, "namespace": team, "labels": LABELS},
            "spec": {"clusterQueue": team},
        }
        for team in ("research", "interns")
    ]
    assert [(o["metadata"]["name"], o["value"]) for o in _by_kind(objects, "WorkloadPriorityClass")] == [
        ("clusterfab-low", 250),
        ("clusterfab-normal", 500),
        ("clusterfab-high", 750),
    ]


def test_the_topology_is_the_clouds_network_hierarchy() -> None:
    gke = kueue_objects(spec("gcp", node_groups=GROUPS, scheduler={"kind": "kubernetes"}), "gcp")[0]
    eks_groups = [{"name": "p5", "machine_type": "p5.48xlarge", "count": 2}]
    eks = kueue_objects(spec("aws", node_groups=eks_groups, scheduler={"kind": "kubernetes"}), "aws")[0]
    assert [level["nodeLabel"] for level in gke["spec"]["levels"]] == [
        "cloud.google.com/gce-topology-block",
        "cloud.google.com/gce-topology-subblock",
        "cloud.google.com/gce-topology-host",
        "kubernetes.io/hostname",
    ]
    assert [level["nodeLabel"] for level in eks["spec"]["levels"]] == [
        "topology.k8s.aws/network-node-layer-1",
        "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-3",
        "kubernetes.io/hostname",
    ]


def test_without_teams_one_default_queue_holds_everything_and_a_tpu_slice_counts_chips() -> None:
    slices = [{"name": "pods", "generation": "v5p", "topology": "2x2x4", "slices": 2}]
    objects = kueue_objects(
        spec(
            "gcp",
            zone="us-central1-a",
            node_groups=GROUPS[:1],
            tpu_slices=slices,
            scheduler={"kind": "kubernetes"},
        ),
        "gcp",
    )
    (queue,) = _by_kind(objects, "ClusterQueue")
    assert queue["metadata"]["name"] == "default"
    assert queue["spec"]["namespaceSelector"] == {}
    assert queue["spec"]["resourceGroups"] == [
        *_gpu_group({"mega-spot": 32}),
        {
            "coveredResources": ["google.com/tpu"],
            "flavors": [
                {"name": "pods-on-demand", "resources": [{"name": "google.com/tpu", "nominalQuota": 32}]}
            ],
        },
    ]
    tpu = _by_kind(objects, "ResourceFlavor")[1]
    assert tpu["spec"] == {
        "nodeLabels": {"clusterfab.dev/tpu-slice": "pods"},
        "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    assert _by_kind(objects, "Cohort") == []  # the default queue holds every GPU and chip
    assert _by_kind(objects, "LocalQueue")[0]["metadata"]["namespace"] == "default"


FLEX = [
    {
        "name": "flex",
        "machine_type": "a3-highgpu-8g",
        "count": 4,
        "capacity": {"kind": "flex_start", "max_run_duration_hours": 24},
    },
    *GROUPS[:1],
]


def test_on_gke_a_flex_start_flavor_waits_for_queued_provisioning_in_every_queue() -> None:
    objects = kueue_objects(
        spec("gcp", node_groups=FLEX, scheduler={"kind": "kubernetes"}, teams=TEAMS), "gcp"
    )
    assert [
        o["metadata"]["name"] for o in objects if o["kind"] in ("AdmissionCheck", "ProvisioningRequestConfig")
    ] == [
        "dws-config",
        "dws-prov",
    ]
    for queue in _by_kind(objects, "ClusterQueue"):
        assert queue["spec"]["admissionChecksStrategy"] == {
            "admissionChecks": [{"name": "dws-prov", "onFlavors": ["flex-flex-start"]}]
        }


def test_every_kueue_object_is_valid_for_the_pinned_crds() -> None:
    specs = [
        ("gcp", spec("gcp", node_groups=GROUPS, scheduler={"kind": "kubernetes"}, teams=TEAMS)),
        ("gcp", spec("gcp", node_groups=FLEX, scheduler={"kind": "kubernetes"}, teams=TEAMS)),
        (
            "aws",
            spec(
                "aws",
                node_groups=[{"name": "p5", "machine_type": "p5.48xlarge", "count": 2}],
                scheduler={"kind": "kubernetes"},
            ),
        ),
    ]
    checked = 0
    for cloud, cluster in specs:
        for manifest in kueue_objects(cluster, cloud):
            assert crd_problems(manifest) == [], manifest["kind"]
            checked += 1
    assert checked == 31  # 11 + 13 + 7 objects
