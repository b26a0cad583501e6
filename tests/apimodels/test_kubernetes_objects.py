"""Every Kubernetes object the program would apply, valid for the Kubernetes OpenAPI schema of the
cluster's version (issue 31 item 5): the planned `kubernetes:*` resources of the Kubernetes blueprints,
and, while the GKE and EKS realizers cannot plan them yet, the in-cluster software of the same
blueprints' specs directly. The check itself is shown to catch a wrong field, an unknown kind and an
unsupported version on a plan made from the KubernetesObjects component alone."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from clusterfab.plan.engine import PlannedResource, run_program
from clusterfab.plan.project import Plan
from clusterfab.scheduler.kubernetes.kueue import training_charts
from clusterfab.scheduler.kubernetes.section import Kubernetes
from clusterfab.scheduler.kubernetes.software import in_cluster_objects
from components.kubernetes.helm import HelmChart
from components.kubernetes.objects import KubernetesObjects, KubernetesObjectsArgs
from tests.apimodels.kubernetes_objects import (
    HELM_RELEASE,
    checked_here,
    cluster_version,
    kubernetes_resource_problems,
    object_problems,
)
from tests.components.harness import plan_text
from tests.conftest import EXAMPLES
from tests.factories import blueprint_yaml, validated


def _kind(path: Path) -> str | None:
    scheduler = (YAML(typ="safe").load(path.read_text()) or {}).get("scheduler") or {}
    return scheduler.get("kind") if isinstance(scheduler, dict) else None


OWN: dict[str, str] = {
    "eks-p5-efa": blueprint_yaml(
        "aws",
        name="eks-objects",
        node_groups=[
            {"name": "train", "machine_type": "p5.48xlarge", "count": 2},
            {"name": "spot", "machine_type": "p5.48xlarge", "count": 1, "fabric": "none"},
        ],
        scheduler={"kind": "kubernetes"},
    ),
    "gke-a3mega": blueprint_yaml(
        "gcp",
        name="gke-mega",
        node_groups=[
            {"name": "mega", "machine_type": "a3-megagpu-8g", "count": 2},
            {"name": "plain", "machine_type": "a3-megagpu-8g", "count": 1, "fabric": "none"},
        ],
        scheduler={"kind": "kubernetes"},
    ),
    "gke-a3ultra": blueprint_yaml(
        "gcp",
        name="gke-ultra",
        node_groups=[{"name": "ultra", "machine_type": "a3-ultragpu-8g", "count": 2}],
        scheduler={"kind": "kubernetes"},
    ),
}
"""Small Kubernetes blueprints of our own, beside the examples with `scheduler.kind: kubernetes`."""

BLUEPRINTS: dict[str, str] = {
    **{path.stem: path.read_text() for path in EXAMPLES if _kind(path) == "kubernetes"},
    **OWN,
}


def _plan(text: str) -> Plan:
    return plan_text(text)


@pytest.mark.parametrize("name", sorted(BLUEPRINTS))
def test_the_blueprints_in_cluster_software_is_valid_for_its_kubernetes_version(name: str) -> None:
    spec = validated(BLUEPRINTS[name]).spec
    assert isinstance(spec.scheduler, Kubernetes)
    objects = in_cluster_objects(spec, spec.cloud)
    assert objects != []
    version = f"{spec.scheduler.version}.0"
    assert [p for item in objects for p in object_problems(item, version)] == []


@pytest.mark.parametrize("name", sorted(BLUEPRINTS))
def test_every_planned_kubernetes_object_is_valid_for_the_clusters_version(name: str) -> None:
    plan = _plan(BLUEPRINTS[name])
    assert [r for r in plan.resources if r.type.startswith("kubernetes:")] != []
    assert kubernetes_resource_problems(plan) == []


# --- the check, on a plan of the component alone ---------------------------------------------------------


def _component_plan(objects: list[dict[str, Any]], cluster: PlannedResource | None = None) -> Plan:
    def program() -> None:
        KubernetesObjects(
            "system", KubernetesObjectsArgs(kubeconfig="{}", cluster_identifier="cluster-1", objects=objects)
        )

    resources = run_program(program, project="clusterfab", stack="dev").resources
    return Plan(
        blueprint="bp.yaml", env=None, stack="dev", resources=[*([cluster] if cluster else []), *resources]
    )


def _eks_objects() -> list[dict[str, Any]]:
    spec = validated(OWN["eks-p5-efa"]).spec
    return in_cluster_objects(spec, "aws")


def _eks_cluster(version: str) -> PlannedResource:
    return PlannedResource(
        urn="urn:pulumi:dev::clusterfab::aws:eks/cluster:Cluster::c",
        type="aws:eks/cluster:Cluster",
        name="c",
        parent=None,
        custom=True,
        protect=False,
        inputs={"version": version, "name": "c"},
    )


def test_the_check_passes_the_in_cluster_software() -> None:
    plan = _component_plan(_eks_objects())
    assert sorted({r.type for r in plan.resources if checked_here(r.type)}) == [
        "kubernetes:apps/v1:DaemonSet",
        "kubernetes:core/v1:Namespace",
        "kubernetes:core/v1:Service",
        "kubernetes:scheduling.k8s.io/v1:PriorityClass",
        "pulumi:providers:kubernetes",
    ]
    assert kubernetes_resource_problems(plan) == []


def test_the_check_catches_a_wrong_field_a_wrong_type_and_an_unknown_kind() -> None:
    objects = copy.deepcopy(_eks_objects())
    objects[2]["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = 3
    objects[4]["spec"]["template"]["spec"]["hostNetwrk"] = True
    objects.append(
        {"apiVersion": "kueue.x-k8s.io/v1beta3", "kind": "ClusterQueue", "metadata": {"name": "q"}}
    )
    # Kueue's kinds are checked against its CRD schemas: v1beta1's `cohort` is v1beta2's `cohortName`.
    objects.append(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "research"},
            "spec": {"cohort": "all"},
        }
    )
    objects.append(
        {
            "apiVersion": "networking.gke.io/v1",
            "kind": "Network",
            "metadata": {"name": "gpu-1"},
            "spec": {"type": "Device"},
        }
    )
    assert kubernetes_resource_problems(_component_plan(objects)) == [
        "ClusterQueue q: Couldn't find schema for kind ClusterQueue with api version kueue.x-k8s.io/v1beta3 "
        "for kubernetes version 1.35",
        "ClusterQueue research spec: Additional properties are not allowed ('cohort' was unexpected)",
        "DaemonSet clusterfab-monitoring/dcgm-exporter spec.template.spec: "
        "Additional properties are not allowed ('hostNetwrk' was unexpected)",
        "DaemonSet kube-system/nvidia-device-plugin-daemonset "
        "spec.template.spec.containers.0.imagePullPolicy: 3 is not of type 'string', 'null'",
    ]


def test_the_version_is_the_planned_clusters() -> None:
    plan = _component_plan(_eks_objects(), _eks_cluster("1.33"))
    assert cluster_version(plan) == "1.33.0"
    assert cluster_version(dataclasses.replace(plan, resources=plan.resources[1:])) == "1.35.0"
    unsupported = _component_plan(_eks_objects()[:1], _eks_cluster("1.99"))
    assert kubernetes_resource_problems(unsupported) == [
        "Namespace clusterfab-monitoring: kubernetes-validate does not support version 1.99"
    ]


def test_the_cloud_api_model_check_leaves_kubernetes_objects_to_this_one() -> None:
    from tests.apimodels.test_api_models import input_problems

    assert input_problems(_component_plan(_eks_objects())) == ([], [])


# --- Helm releases: no objects of the API, checked against their pins and their charts' values -----------


def _release_plan(charts: list[HelmChart]) -> Plan:
    def program() -> None:
        KubernetesObjects(
            "system",
            KubernetesObjectsArgs(kubeconfig="{}", cluster_identifier="cluster-1", objects=[], charts=charts),
        )

    return Plan(
        blueprint="bp.yaml",
        env=None,
        stack="dev",
        resources=run_program(program, project="clusterfab", stack="dev").resources,
    )


def _charts() -> list[HelmChart]:
    spec = validated(OWN["eks-p5-efa"]).spec
    return [HelmChart(**vars(chart)) for chart in training_charts(spec, "aws")]


def test_the_training_charts_set_only_values_their_pinned_charts_have() -> None:
    plan = _release_plan(_charts())
    assert sorted(r.name for r in plan.resources if r.type == HELM_RELEASE) == [
        "system-charts-jobset",
        "system-charts-kueue",
    ]
    assert kubernetes_resource_problems(plan) == []


def test_the_check_catches_an_unpinned_chart_or_version_and_a_value_the_chart_lacks() -> None:
    jobset, kueue = _charts()
    values = copy.deepcopy(dict(kueue.values))
    values["controllerManager"]["manager"]["imag"] = {"tag": "v0.19.2"}
    values["enableCertManagr"] = True
    values["controllerManager"]["manager"]["podAnnotations"] = {"any": "key"}  # a free-form map: any key
    charts = [
        dataclasses.replace(jobset, version="0.11.1"),
        dataclasses.replace(kueue, values=values),
        dataclasses.replace(jobset, name="other", chart="oci://registry.example.com/charts/other"),
    ]
    assert kubernetes_resource_problems(_release_plan(charts)) == [
        "Release jobset-system/jobset: version 0.11.1, software.yaml pins 0.12.0",
        "Release jobset-system/other: software.yaml pins no chart oci://registry.example.com/charts/other",
        "Release kueue-system/kueue values.controllerManager.manager.imag: the chart has no such value",
        "Release kueue-system/kueue values.enableCertManagr: the chart has no such value",
    ]
