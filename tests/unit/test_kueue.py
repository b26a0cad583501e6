"""Kueue and JobSet on a Kubernetes cluster: the charts and their values as the pinned releases publish
them, Kueue's configuration for training, GKE's queued provisioning admission check, and the CRD schema
check (tests/crd_schema.py) on those objects. The expected values are written out: the charts' paths and
versions from Kueue's and JobSet's release tags, the admission objects as Cluster Toolkit's DWS flex-start
example writes them (kueue.x-k8s.io/v1beta2)."""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest
from ruamel.yaml import YAML

from clusterfab.scheduler.kubernetes.kueue import (
    ChartRelease,
    admission_objects,
    kueue_configuration,
    provisioning_groups,
    training_charts,
)
from clusterfab.spec.model import ClusterSpec
from tests.crd_schema import crd_problems, stored_kinds
from tests.factories import spec

FLEX = {"kind": "flex_start", "max_run_duration_hours": 24}


def kubernetes(cloud: str, groups: list[dict[str, Any]]) -> ClusterSpec:
    return spec(cloud, node_groups=groups, scheduler={"kind": "kubernetes"})


def gke_flex() -> ClusterSpec:
    return kubernetes(
        "gcp",
        [
            {"name": "flex", "machine_type": "a3-ultragpu-8g", "count": 2, "capacity": FLEX},
            {"name": "steady", "machine_type": "a3-ultragpu-8g", "count": 1},
        ],
    )


CONFIGURATION = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
  enableClusterQueueResources: true
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 10
    LocalQueue.kueue.x-k8s.io: 5
    ClusterQueue.kueue.x-k8s.io: 5
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: 300
  burst: 500
waitForPodsReady:
  timeout: 30m
  blockAdmission: true
  requeuingStrategy:
    timestamp: Eviction
    backoffLimitCount: 5
    backoffBaseSeconds: 60
    backoffMaxSeconds: 3600
integrations:
  frameworks:
  - batch/job
  - jobset.x-k8s.io/jobset
  - kubeflow.org/pytorchjob
resources:
  quotaCheckStrategy: IgnoreUndeclared
"""
"""The chart's own configuration at v0.19.2 (charts/kueue/values.yaml) with all-or-nothing admission and
the three job kinds; no fairSharing section (off) and no feature gates (TopologyAwareScheduling is on by
default); the queues' quotas checked for the resources they declare (accelerators) alone."""


def load(text: str) -> Any:
    return YAML(typ="safe").load(io.StringIO(text))


def test_jobset_then_kueue_are_installed_from_their_release_charts() -> None:
    charts = training_charts(
        kubernetes("aws", [{"name": "t", "machine_type": "p5.48xlarge", "count": 1}]), "aws"
    )
    image = {"pullPolicy": "IfNotPresent"}
    assert [(c.name, c.chart, c.version, c.namespace, c.serves) for c in charts] == [
        (
            "jobset",
            "oci://registry.k8s.io/jobset/charts/jobset",
            "0.12.0",
            "jobset-system",
            ("jobset.x-k8s.io",),
        ),
        ("kueue", "oci://registry.k8s.io/kueue/charts/kueue", "0.19.2", "kueue-system", ("kueue.x-k8s.io",)),
    ]
    assert charts[0].values == {
        "image": {"repository": "registry.k8s.io/jobset/jobset", "tag": "v0.12.0", **image}
    }
    kueue = charts[1].values
    assert kueue["controllerManager"] == {
        "manager": {"image": {"repository": "registry.k8s.io/kueue/kueue", "tag": "v0.19.2", **image}}
    }
    assert list(kueue) == ["controllerManager", "managerConfig"]
    assert load(kueue["managerConfig"]["controllerManagerConfigYaml"]) == load(CONFIGURATION)


def test_kueue_is_configured_for_all_or_nothing_training_on_both_clouds() -> None:
    configuration = kueue_configuration()
    assert configuration == load(CONFIGURATION)
    assert "fairSharing" not in configuration
    assert "featureGates" not in configuration
    gke = training_charts(gke_flex(), "gcp")
    eks = training_charts(
        kubernetes("aws", [{"name": "t", "machine_type": "p5.48xlarge", "count": 1}]), "aws"
    )
    assert gke == eks


def test_a_cluster_of_tpu_slices_only_gets_kueue_too() -> None:
    tpus = spec(
        "gcp",
        node_groups=[],
        tpu_slices=[{"name": "v5p", "generation": "v5p", "topology": "2x2x2"}],
        scheduler={"kind": "kubernetes"},
    )
    assert [c.name for c in training_charts(tpus, "gcp")] == ["jobset", "kueue"]
    assert all(isinstance(c, ChartRelease) for c in training_charts(tpus, "gcp"))


ADMISSION = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata:
  name: dws-config
spec:
  provisioningClassName: queued-provisioning.gke.io
  managedResources:
  - nvidia.com/gpu
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: dws-prov
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters:
    apiGroup: kueue.x-k8s.io
    kind: ProvisioningRequestConfig
    name: dws-config
"""


def test_a_gke_cluster_with_a_flex_start_group_gets_the_provisioning_request_check() -> None:
    cluster = gke_flex()
    expected = list(YAML(typ="safe").load_all(io.StringIO(ADMISSION)))
    assert admission_objects(cluster, "gcp") == expected
    assert provisioning_groups(cluster, "gcp") == ("flex",)


@pytest.mark.parametrize(
    ("cloud", "groups"),
    [
        ("gcp", [{"name": "steady", "machine_type": "a3-ultragpu-8g", "count": 1}]),
        ("gcp", [{"name": "s", "machine_type": "a3-megagpu-8g", "count": 1, "capacity": {"kind": "spot"}}]),
        ("aws", [{"name": "t", "machine_type": "p5.48xlarge", "count": 1}]),
    ],
    ids=["gke-on-demand", "gke-spot", "eks"],
)
def test_other_clusters_get_no_admission_check(cloud: str, groups: list[dict[str, Any]]) -> None:
    cluster = kubernetes(cloud, groups)
    assert admission_objects(cluster, cloud) == []
    assert provisioning_groups(cluster, cloud) == ()


# --- the CRD schema check ------------------------------------------------------------------------------


def test_the_schemas_of_the_pinned_releases_are_stored() -> None:
    kueue = [
        "AdmissionCheck",
        "ClusterQueue",
        "Cohort",
        "LocalQueue",
        "ProvisioningRequestConfig",
        "ResourceFlavor",
        "Topology",
        "WorkloadPriorityClass",
    ]
    assert stored_kinds() == sorted(
        [("jobset.x-k8s.io/v1alpha2", "JobSet")]
        + [(f"kueue.x-k8s.io/{version}", kind) for version in ("v1beta1", "v1beta2") for kind in kueue]
    )


def test_the_admission_objects_are_valid_for_kueues_schemas() -> None:
    assert [p for item in admission_objects(gke_flex(), "gcp") for p in crd_problems(item)] == []


def test_the_check_catches_unknown_fields_wrong_values_duplicates_and_a_missing_name() -> None:
    config, check = copy.deepcopy(admission_objects(gke_flex(), "gcp"))
    config["spec"]["managedResources"] = ["nvidia.com/gpu", "nvidia.com/gpu"]
    config["spec"]["podSetMergePolicy"] = "Merge"
    config["spec"]["provisioningClass"] = "queued-provisioning.gke.io"
    check["spec"]["parameters"]["kind"] = 3
    del check["metadata"]["name"]
    assert crd_problems(config) == [
        "ProvisioningRequestConfig dws-config spec: "
        "Additional properties are not allowed ('provisioningClass' was unexpected)",
        'ProvisioningRequestConfig dws-config spec.managedResources: duplicate value "nvidia.com/gpu" '
        "in a list of type set",
        "ProvisioningRequestConfig dws-config spec.podSetMergePolicy: "
        "'Merge' is not one of ['IdenticalPodTemplates', 'IdenticalWorkloadSchedulingRequirements']",
    ]
    assert crd_problems(check) == [
        "AdmissionCheck  metadata: 'name' is a required property",
        "AdmissionCheck  spec.parameters.kind: 3 is not of type 'string'",
    ]


def test_the_check_reads_quantities_list_maps_and_go_patterns_as_the_api_server_does() -> None:
    queue: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "research"},
        "spec": {
            "cohortName": "all",
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 64}]}
                    ],
                }
            ],
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        },
    }
    assert crd_problems(queue) == []
    resources = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    resources[0]["nominalQuota"] = "64Gi"
    assert crd_problems(queue) == []
    resources.append({"name": "nvidia.com/gpu", "nominalQuota": "8"})
    assert crd_problems(queue) == [
        'ClusterQueue research spec.resourceGroups.0.flavors.0.resources: duplicate key {"name": '
        '"nvidia.com/gpu"} in a list of type map'
    ]
    # An AdmissionCheck's parameters kind is `^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$` (RE2's flags after the
    # anchor): mixed case passes, a dot does not.
    check = admission_objects(gke_flex(), "gcp")[1]
    assert crd_problems(check) == []
    check["spec"]["parameters"]["kind"] = "ProvisioningRequestConfig.v1"
    assert crd_problems(check) == [
        "AdmissionCheck dws-prov spec.parameters.kind: 'ProvisioningRequestConfig.v1' does not match "
        "'(?i)^[a-z]([-a-z0-9]*[a-z0-9])?$'"  # the pattern as checked: its flags first
    ]


def test_a_kind_or_version_without_a_stored_schema_is_a_problem() -> None:
    assert crd_problems(
        {"apiVersion": "kueue.x-k8s.io/v1beta3", "kind": "ClusterQueue", "metadata": {"name": "q"}}
    ) == ["ClusterQueue q: no stored CRD schema for ClusterQueue in kueue.x-k8s.io/v1beta3"]
    assert crd_problems({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}) == [
        "Namespace n: no stored CRD schema for Namespace in v1"
    ]
