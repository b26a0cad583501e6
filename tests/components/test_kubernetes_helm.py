"""JobSet and Kueue installed as Helm releases through the cluster's provider: the exact release inputs of
the GKE and EKS example plans (the charts and versions Kueue's and JobSet's release tags publish, Kueue's
configuration for training), their order, and Kueue's objects applied only once Kueue is installed."""

from __future__ import annotations

from typing import Any

import pytest

from clusterfab.plan.engine import PlannedResource, run_program
from clusterfab.plan.project import Plan
from components.kubernetes.helm import HelmChart
from components.kubernetes.objects import KubernetesObjects, KubernetesObjectsArgs
from tests.components.harness import all_of, gcp_plan, plan_file
from tests.conftest import REPO

RELEASE = "kubernetes:helm.sh/v3:Release"
IMAGE = {"pullPolicy": "IfNotPresent"}
KUEUE_CONFIGURATION = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
clientConnection:
  burst: 500
  qps: 300
controller:
  groupKindConcurrency:
    ClusterQueue.kueue.x-k8s.io: 5
    Job.batch: 5
    LocalQueue.kueue.x-k8s.io: 5
    Pod: 5
    ResourceFlavor.kueue.x-k8s.io: 1
    Workload.kueue.x-k8s.io: 10
health:
  healthProbeBindAddress: :8081
integrations:
  frameworks:
  - batch/job
  - jobset.x-k8s.io/jobset
  - kubeflow.org/pytorchjob
kind: Configuration
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
metrics:
  bindAddress: :8443
  enableClusterQueueResources: true
resources:
  quotaCheckStrategy: IgnoreUndeclared
waitForPodsReady:
  blockAdmission: true
  requeuingStrategy:
    backoffBaseSeconds: 60
    backoffLimitCount: 5
    backoffMaxSeconds: 3600
    timestamp: Eviction
  timeout: 30m
webhook:
  port: 9443
"""
JOBSET_INPUTS = {
    "chart": "oci://registry.k8s.io/jobset/charts/jobset",
    "compat": "true",
    "createNamespace": True,
    "name": "jobset",
    "namespace": "jobset-system",
    "values": {"image": {"repository": "registry.k8s.io/jobset/jobset", "tag": "v0.12.0", **IMAGE}},
    "version": "0.12.0",
}
KUEUE_INPUTS = {
    "chart": "oci://registry.k8s.io/kueue/charts/kueue",
    "compat": "true",
    "createNamespace": True,
    "name": "kueue",
    "namespace": "kueue-system",
    "values": {
        "controllerManager": {
            "manager": {"image": {"repository": "registry.k8s.io/kueue/kueue", "tag": "v0.19.2", **IMAGE}}
        },
        "managerConfig": {"controllerManagerConfigYaml": KUEUE_CONFIGURATION},
    },
    "version": "0.19.2",
}


def _releases(plan: Plan) -> dict[str, PlannedResource]:
    return {r.name: r for r in all_of(plan, RELEASE)}


@pytest.mark.parametrize(
    ("example", "cluster"),
    [("gcp-gke-a3mega", "gke-mega"), ("aws-eks-p5", "eks-pretrain")],
    ids=["gke", "eks"],
)
def test_the_example_clusters_install_jobset_then_kueue_through_their_provider(
    example: str, cluster: str
) -> None:
    plan = plan_file(REPO / "blueprints" / "examples" / f"{example}.yaml", "prod")
    releases = _releases(plan)
    jobset, kueue = f"{cluster}-objects-charts-jobset", f"{cluster}-objects-charts-kueue"
    assert sorted(releases) == [jobset, kueue]
    assert releases[jobset].inputs == JOBSET_INPUTS
    assert releases[kueue].inputs == KUEUE_INPUTS
    objects = "urn:pulumi:prod::clusterfab::clusterfab:kubernetes:Objects"
    provider = (
        f"{objects}$pulumi:providers:kubernetes::{cluster}-objects-provider::{cluster}-objects-provider-id"
    )
    for release in releases.values():
        assert release.provider == provider
        assert release.parent == f"{objects}$clusterfab:kubernetes:HelmReleases::{cluster}-objects-charts"
    # Kueue's JobSet integration starts at once when JobSet's API is there first.
    assert releases[jobset].urn in releases[kueue].dependencies
    assert releases[kueue].urn not in releases[jobset].dependencies


def test_the_releases_wait_for_the_system_nodes_and_add_ons_as_the_other_objects_do() -> None:
    plan = plan_file(REPO / "blueprints" / "examples" / "aws-eks-p5.yaml", "prod")
    jobset = _releases(plan)["eks-pretrain-objects-charts-jobset"]
    prefix = "urn:pulumi:prod::clusterfab::clusterfab:kubernetes:"
    assert sorted(jobset.dependencies) == [
        f"{prefix}AwsEksAddons$aws:eks/addon:Addon::eks-pretrain-addons-aws-fsx-csi-driver",
        f"{prefix}AwsEksAddons$aws:eks/addon:Addon::eks-pretrain-addons-coredns",
        f"{prefix}AwsEksAddons$aws:eks/addon:Addon::eks-pretrain-addons-eks-node-monitoring-agent",
        f"{prefix}AwsEksAddons$aws:iam/role:Role::eks-pretrain-addons-aws-fsx-csi-driver-role",
        f"{prefix}AwsEksAddons$aws:iam/rolePolicy:RolePolicy::eks-pretrain-addons-aws-fsx-csi-driver-policy",
        f"{prefix}AwsEksNodeGroup$aws:ec2/launchTemplate:LaunchTemplate::eks-pretrain-system-lt",
        f"{prefix}AwsEksNodeGroup$aws:eks/nodeGroup:NodeGroup::eks-pretrain-system-nodes",
    ]


def test_gkes_queued_provisioning_check_is_applied_once_kueue_is_installed() -> None:
    body = """scheduler:
  kind: kubernetes
node_groups:
  - name: flex
    machine_type: a3-ultragpu-8g
    count: 4
    capacity: {kind: flex_start, max_run_duration_hours: 24}
"""
    plan = gcp_plan(body, name="dws", zone="us-central1-b")
    kueue = _releases(plan)["dws-cluster-objects-charts-kueue"]
    made = {r.type: r for r in plan.resources if r.type.startswith("kubernetes:kueue.x-k8s.io/")}
    assert sorted(made) == [
        "kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck",
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
        "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue",
        "kubernetes:kueue.x-k8s.io/v1beta2:ProvisioningRequestConfig",
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor",
        "kubernetes:kueue.x-k8s.io/v1beta2:Topology",
        "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass",
    ]
    check = made["kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck"]
    assert check.inputs == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": "dws-prov"},
        "spec": {
            "controllerName": "kueue.x-k8s.io/provisioning-request",
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "ProvisioningRequestConfig",
                "name": "dws-config",
            },
        },
    }
    assert made["kubernetes:kueue.x-k8s.io/v1beta2:ProvisioningRequestConfig"].inputs["spec"] == {
        "managedResources": ["nvidia.com/gpu"],
        "provisioningClassName": "queued-provisioning.gke.io",
    }
    assert made["kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"].inputs["spec"][
        "admissionChecksStrategy"
    ] == {"admissionChecks": [{"name": "dws-prov", "onFlavors": ["flex-flex-start"]}]}
    for resource in made.values():
        assert kueue.urn in resource.dependencies


# --- the component alone --------------------------------------------------------------------------------


def _applied(objects: list[dict[str, Any]], charts: list[HelmChart]) -> dict[str, PlannedResource]:
    def program() -> None:
        KubernetesObjects(
            "system",
            KubernetesObjectsArgs(
                kubeconfig="{}", cluster_identifier="cluster-1", objects=objects, charts=charts
            ),
        )

    return {r.name: r for r in run_program(program, project="team-infra", stack="dev").resources}


def test_only_the_objects_of_a_charts_apis_wait_for_its_release() -> None:
    charts = [
        HelmChart(
            "first", "oci://registry.example/charts/first", "1.0.0", "first-system", serves=("first.example",)
        ),
        HelmChart(
            "second",
            "oci://registry.example/charts/second",
            "2.0.0",
            "second-system",
            {"a": 1},
            ("second.example",),
        ),
    ]
    objects = [
        {"apiVersion": "second.example/v1", "kind": "Thing", "metadata": {"name": "t"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}, "data": {}},
    ]
    made = _applied(objects, charts)
    base = "urn:pulumi:dev::team-infra::clusterfab:kubernetes:Objects$"
    first = f"{base}clusterfab:kubernetes:HelmReleases$kubernetes:helm.sh/v3:Release::system-charts-first"
    second = f"{base}clusterfab:kubernetes:HelmReleases$kubernetes:helm.sh/v3:Release::system-charts-second"
    assert made["system-charts-second"].inputs == {
        "chart": "oci://registry.example/charts/second",
        "compat": "true",
        "createNamespace": True,
        "name": "second",
        "namespace": "second-system",
        "values": {"a": 1},
        "version": "2.0.0",
    }
    assert made["system-charts-first"].dependencies == ()
    assert made["system-charts-second"].dependencies == (first,)
    assert made["system-thing/t"].dependencies == (second,)
    assert made["system-configmap/n/c"].dependencies == ()


def test_without_charts_no_release_component_is_made() -> None:
    made = _applied([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}], [])
    assert sorted(r.type for r in made.values()) == [
        "clusterfab:kubernetes:Objects",
        "kubernetes:core/v1:Namespace",
        "pulumi:providers:kubernetes",
    ]
