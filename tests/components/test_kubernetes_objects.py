"""KubernetesObjects under the mock engine: one provider for the cluster, each manifest the
pulumi-kubernetes resource of its kind with the manifest as its inputs, named by kind, namespace and name,
and what the objects after a Namespace or PriorityClass need made to wait for it."""

from __future__ import annotations

from typing import Any

import pytest

from clusterfab.plan.engine import PlannedResource, run_program
from clusterfab.scheduler.kubernetes.software import in_cluster_objects
from components.kubernetes.objects import KubernetesObjects, KubernetesObjectsArgs
from tests.factories import spec

URN = "urn:pulumi:dev::team-infra::clusterfab:kubernetes:Objects$"
KUBECONFIG = '{"apiVersion": "v1", "kind": "Config"}'


def applied(objects: list[dict[str, Any]]) -> list[PlannedResource]:
    def program() -> None:
        KubernetesObjects(
            "system",
            KubernetesObjectsArgs(kubeconfig=KUBECONFIG, cluster_identifier="cluster-1", objects=objects),
        )

    return run_program(program, project="team-infra", stack="dev").resources


def eks_objects() -> list[dict[str, Any]]:
    cluster = spec(
        "aws",
        node_groups=[{"name": "train", "machine_type": "p5.48xlarge", "count": 2}],
        scheduler={"kind": "kubernetes"},
    )
    return in_cluster_objects(cluster, "aws")


def test_each_object_becomes_its_kinds_resource_through_the_clusters_provider() -> None:
    objects = eks_objects()
    resources = applied(objects)
    assert sorted((r.type, r.name) for r in resources) == [
        ("clusterfab:kubernetes:Objects", "system"),
        ("kubernetes:apps/v1:DaemonSet", "system-daemonset/clusterfab-monitoring/dcgm-exporter"),
        ("kubernetes:apps/v1:DaemonSet", "system-daemonset/clusterfab-monitoring/node-exporter"),
        ("kubernetes:apps/v1:DaemonSet", "system-daemonset/kube-system/aws-efa-k8s-device-plugin"),
        ("kubernetes:apps/v1:DaemonSet", "system-daemonset/kube-system/nvidia-device-plugin-daemonset"),
        ("kubernetes:core/v1:Namespace", "system-namespace/clusterfab-monitoring"),
        ("kubernetes:core/v1:Service", "system-service/clusterfab-monitoring/dcgm-exporter"),
        ("kubernetes:scheduling.k8s.io/v1:PriorityClass", "system-priorityclass/clusterfab-node-agents"),
        ("pulumi:providers:kubernetes", "system-provider"),
    ]
    by_name = {r.name: r for r in resources}
    assert by_name["system-provider"].inputs == {
        "clusterIdentifier": "cluster-1",
        "enableServerSideApply": "true",
        "kubeconfig": KUBECONFIG,
    }
    provider = f"{URN}pulumi:providers:kubernetes::system-provider::system-provider-id"
    inputs = {}
    for resource in resources:
        if resource.type.startswith("kubernetes:"):
            assert resource.provider == provider, resource.name
            assert resource.parent == "urn:pulumi:dev::team-infra::clusterfab:kubernetes:Objects::system"
            inputs[resource.name] = resource.inputs
    # Every manifest is applied as it is: the top-level fields (a PriorityClass's globalDefault and
    # preemptionPolicy) and the nested ones under their Kubernetes names.
    assert inputs == {
        "system-namespace/clusterfab-monitoring": objects[0],
        "system-priorityclass/clusterfab-node-agents": objects[1],
        "system-daemonset/kube-system/nvidia-device-plugin-daemonset": objects[2],
        "system-daemonset/kube-system/aws-efa-k8s-device-plugin": objects[3],
        "system-daemonset/clusterfab-monitoring/dcgm-exporter": objects[4],
        "system-service/clusterfab-monitoring/dcgm-exporter": objects[5],
        "system-daemonset/clusterfab-monitoring/node-exporter": objects[6],
    }
    assert objects[1]["preemptionPolicy"] == "Never"


def test_objects_wait_for_the_namespaces_and_priority_classes_before_them() -> None:
    namespace = f"{URN}kubernetes:core/v1:Namespace::system-namespace/clusterfab-monitoring"
    priority = (
        f"{URN}kubernetes:scheduling.k8s.io/v1:PriorityClass::system-priorityclass/clusterfab-node-agents"
    )
    dependencies = {
        # The engine reports a resource's dependencies in no fixed order.
        r.name: tuple(sorted(r.dependencies))
        for r in applied(eks_objects())
        if r.type.startswith("kubernetes:")
    }
    assert dependencies == {
        "system-namespace/clusterfab-monitoring": (),
        "system-priorityclass/clusterfab-node-agents": (namespace,),
        "system-daemonset/kube-system/nvidia-device-plugin-daemonset": (namespace, priority),
        "system-daemonset/kube-system/aws-efa-k8s-device-plugin": (namespace, priority),
        "system-daemonset/clusterfab-monitoring/dcgm-exporter": (namespace, priority),
        "system-service/clusterfab-monitoring/dcgm-exporter": (namespace, priority),
        "system-daemonset/clusterfab-monitoring/node-exporter": (namespace, priority),
    }


@pytest.mark.parametrize(
    ("manifest", "type_", "name"),
    [
        (
            {
                "apiVersion": "networking.gke.io/v1",
                "kind": "GKENetworkParamSet",
                "metadata": {"name": "gpu-nic-1"},
                "spec": {"vpc": "net-1", "vpcSubnet": "subnet-1", "deviceMode": "NetDevice"},
            },
            "kubernetes:networking.gke.io/v1:GKENetworkParamSet",
            "system-gkenetworkparamset/gpu-nic-1",
        ),
        (
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": "n"},
                "data": {"k": "v"},
            },
            "kubernetes:core/v1:ConfigMap",
            "system-configmap/n/c",
        ),
    ],
    ids=["custom-resource", "configmap"],
)
def test_a_custom_resource_and_a_typed_kind_carry_the_manifest_as_it_is(
    manifest: dict[str, Any], type_: str, name: str
) -> None:
    made = [r for r in applied([manifest]) if r.type.startswith("kubernetes:")]
    assert [(r.type, r.name, r.inputs) for r in made] == [(type_, name, manifest)]
