"""The Kubernetes scheduler's own parts: its recorded facts, how its section resolves, the team objects it
renders and the kubeconfig it writes for GKE and EKS."""

from __future__ import annotations

import datetime as dt

import pytest
from ruamel.yaml import YAML

from clusterfab.catalog import load_catalog
from clusterfab.clouds.kubernetes import credentials
from clusterfab.scheduler.kubernetes.facts import kubernetes_facts
from clusterfab.scheduler.kubernetes.kubeconfig import kubeconfig
from clusterfab.scheduler.kubernetes.render import render_kubernetes
from clusterfab.scheduler.kubernetes.section import Kubernetes
from tests.factories import spec

GROUP = {"name": "trainers", "machine_type": "a3-megagpu-8g", "count": 2}
AWS_GROUP = {"name": "trainers", "machine_type": "p5.48xlarge", "count": 2}


def test_every_fact_names_a_recorded_source() -> None:
    sources = load_catalog().sources
    facts = kubernetes_facts()
    named = [s for plane in facts.control_planes for s in plane.source]
    named += [s for machine in facts.system_machines for s in machine.source]
    assert [s for s in named if s not in sources] == []


def test_the_recorded_versions_are_the_services_published_ones() -> None:
    # GKE: the Regular channel's default for new clusters from 2026-09-17 (S-GKE-REGULAR-2026-09-17); the
    # ends of support from the sources' tables (S-EOL-GKE, S-EOL-EKS).
    gke, eks = (kubernetes_facts().control_plane(cloud) for cloud in ("gcp", "aws"))
    assert gke is not None
    assert eks is not None
    assert (gke.service, gke.release_channel, gke.default_version) == ("GKE", "REGULAR", "1.35")
    latest = gke.version("1.35")
    assert latest is not None
    assert latest.standard_support_ends == dt.date(2027, 2, 28)
    assert (eks.service, eks.release_channel, eks.default_version) == ("EKS", None, "1.35")
    assert [(v.minor, v.standard_support_ends.isoformat()) for v in eks.versions] == [
        ("1.33", "2026-07-29"),
        ("1.34", "2026-12-02"),
        ("1.35", "2027-03-27"),
    ]


def test_a_section_without_settings_takes_the_catalogs_defaults() -> None:
    gke = spec("gcp", node_groups=[GROUP], scheduler={"kind": "kubernetes"})
    eks = spec("aws", node_groups=[AWS_GROUP], scheduler={"kind": "kubernetes"})
    assert gke.scheduler == Kubernetes("GKE", "1.35", "REGULAR", "e2-standard-8", 2)
    assert eks.scheduler == Kubernetes("EKS", "1.35", None, "c7i.2xlarge", 2)


def test_written_settings_resolve_as_written() -> None:
    written = {
        "kind": "kubernetes",
        "version": "1.34",
        "system_nodes": {"machine_type": "c7i.4xlarge", "count": 3},
    }
    assert spec("aws", node_groups=[AWS_GROUP], scheduler=written).scheduler == Kubernetes(
        "EKS", "1.34", None, "c7i.4xlarge", 3
    )


def test_render_writes_each_teams_namespace_and_its_users_binding() -> None:
    teams = [
        {"name": "research", "max_gpus": 16, "priority": "high", "users": ["alice@example.com", "bob"]},
        {"name": "interns", "max_gpus": 8},
    ]
    files = render_kubernetes(spec("gcp", node_groups=[GROUP], scheduler={"kind": "kubernetes"}, teams=teams))
    assert list(files) == ["teams.yaml", "kueue.yaml", "agent.yaml"]
    assert list(YAML(typ="safe").load_all(files["teams.yaml"])) == [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": "research",
                "labels": {
                    "app.kubernetes.io/managed-by": "clusterfab",
                    "clusterfab.dev/cluster": "test-cluster",
                    "clusterfab.dev/team": "research",
                    "clusterfab.dev/priority": "high",
                },
            },
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {
                "name": "research-edit",
                "namespace": "research",
                "labels": {"app.kubernetes.io/managed-by": "clusterfab", "clusterfab.dev/team": "research"},
            },
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice@example.com"},
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"},
            ],
        },
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": "interns",
                "labels": {
                    "app.kubernetes.io/managed-by": "clusterfab",
                    "clusterfab.dev/cluster": "test-cluster",
                    "clusterfab.dev/team": "interns",
                    "clusterfab.dev/priority": "normal",
                },
            },
        },
    ]


def test_the_gke_kubeconfig_runs_gkes_credential_plugin() -> None:
    credential = credentials("gcp")(cluster="kube-dev", location="us-central1", project="demo")
    assert kubeconfig(
        context="kube-dev",
        endpoint="gke-0123.us-central1.gke.goog",
        certificate_authority="Q0E=",
        credential=credential,
    ) == {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kube-dev",
                "cluster": {
                    "server": "https://gke-0123.us-central1.gke.goog",
                    "certificate-authority-data": "Q0E=",
                },
            }
        ],
        "users": [
            {
                "name": "kube-dev",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "gke-gcloud-auth-plugin",
                        "args": [],
                        "installHint": "Install gke-gcloud-auth-plugin: gcloud components install "
                        "gke-gcloud-auth-plugin "
                        "(https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl)",
                        "provideClusterInfo": False,
                        "interactiveMode": "IfAvailable",
                    }
                },
            }
        ],
        "contexts": [{"name": "kube-dev", "context": {"cluster": "kube-dev", "user": "kube-dev"}}],
        "current-context": "kube-dev",
    }


def test_the_eks_kubeconfig_asks_aws_eks_get_token_for_the_cluster_in_its_region() -> None:
    credential = credentials("aws")(cluster="kube-dev-eks", location="us-east-1", project=None)
    config = kubeconfig(
        context="kube-dev",
        endpoint="https://ABC.gr7.us-east-1.eks.amazonaws.com",
        certificate_authority="Q0E=",
        credential=credential,
    )
    assert config["clusters"][0]["cluster"]["server"] == "https://ABC.gr7.us-east-1.eks.amazonaws.com"
    assert config["users"][0]["user"]["exec"]["command"] == "aws"
    assert config["users"][0]["user"]["exec"]["args"] == [
        "--region", "us-east-1", "eks", "get-token", "--cluster-name", "kube-dev-eks", "--output", "json",
    ]  # fmt: skip


def test_a_cloud_without_a_managed_kubernetes_has_no_credential_plugin() -> None:
    with pytest.raises(LookupError, match="azure has no managed Kubernetes in clusterfab"):
        credentials("azure")


def test_a_monitored_kubernetes_cluster_gets_a_monitoring_node() -> None:
    # The control plane is the cloud's: nothing of the scheduler's can host Prometheus, so the cluster
    # gets its own monitoring node, which finds the node pools' nodes by their node group label.
    monitored = spec(
        "gcp", node_groups=[GROUP], scheduler={"kind": "kubernetes"}, monitoring={"kind": "prometheus"}
    )
    assert monitored.monitoring is not None
    assert monitored.monitoring.host == "node"
    assert monitored.monitoring.machine is not None
    assert monitored.scheduler == Kubernetes("GKE", "1.35", "REGULAR", "e2-standard-8", 2)
