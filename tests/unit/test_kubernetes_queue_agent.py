"""The queue agent's objects (issue 32 item 3): what the cluster's program applies to run the agent, with
the least rights that let it read the queues, hold one, post Events and keep its ledger; its program and
configuration as the agent itself reads them; a port on the node only where the monitoring host scrapes
it; nothing for a cluster without teams."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from clusterfab.scheduler.kubernetes.agent.config import parse
from clusterfab.scheduler.kubernetes.agent_files import package_files
from clusterfab.scheduler.kubernetes.render import agent_objects, render_kubernetes
from clusterfab.spec.model import ClusterSpec
from tests.apimodels.kubernetes_objects import object_problems
from tests.conftest import REPO
from tests.factories import example_spec
from tests.monitoring.conftest import spec_of

EKS = "aws-eks-p5"
MONITORED = REPO / "tests" / "fixtures" / "monitoring" / "kubernetes.yaml"


def _by_kind(objects: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for item in objects:
        found.setdefault(item["kind"], []).append(item)
    return found


def _spec(monitored: bool) -> ClusterSpec:
    """The EKS example (no monitoring), or with the monitoring of the monitoring tests' Kubernetes cluster."""
    spec = example_spec(EKS, "prod")
    if not monitored:
        return spec
    return dataclasses.replace(spec, monitoring=spec_of(MONITORED).monitoring)


def test_the_agent_may_read_the_queues_hold_one_post_events_and_keep_its_ledger_and_nothing_more() -> None:
    kinds = _by_kind(agent_objects(_spec(False)))
    cluster_roles = {r["metadata"]["name"]: r["rules"] for r in kinds["ClusterRole"]}
    assert cluster_roles == {
        "clusterfab-queue-agent": [
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": ["list", "patch"]},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues", "workloads"], "verbs": ["list"]},
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
        ],
        "clusterfab-queue-agent-events": [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}],
    }
    assert len(kinds["Role"]) == 1
    role = kinds["Role"][0]
    assert (role["metadata"]["namespace"], role["rules"]) == (
        "clusterfab-system",
        [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["clusterfab-gpu-hours"],
          "verbs": ["get", "patch"]}],
    )  # fmt: skip
    # Events only in the teams' namespaces, not cluster-wide.
    assert sorted((b["metadata"]["namespace"], b["roleRef"]["name"]) for b in kinds["RoleBinding"]) == [
        ("clusterfab-system", "clusterfab-queue-agent"),
        ("pretrain", "clusterfab-queue-agent-events"),
        ("research", "clusterfab-queue-agent-events"),
    ]
    subjects = {
        json.dumps(s) for b in kinds["RoleBinding"] + kinds["ClusterRoleBinding"] for s in b["subjects"]
    }
    assert subjects == {
        '{"kind": "ServiceAccount", "name": "clusterfab-queue-agent", "namespace": "clusterfab-system"}'
    }
    # The ledger exists before the agent, its data left to it.
    ledger = next(c for c in kinds["ConfigMap"] if c["metadata"]["name"] == "clusterfab-gpu-hours")
    assert "data" not in ledger


def test_the_program_is_the_agent_package_and_its_configuration_what_the_agent_accepts() -> None:
    spec = _spec(False)
    kinds = _by_kind(agent_objects(spec))
    maps = {c["metadata"]["name"]: c.get("data") for c in kinds["ConfigMap"]}
    assert maps["clusterfab-queue-agent-code"] == package_files()
    config = parse(json.loads(maps["clusterfab-queue-agent-config"]["agent.json"]), "agent.json")
    assert [(t.team, t.cluster_queue, t.gpu_hours_per_month) for t in config.teams] == [
        ("pretrain", "pretrain", 10000),
        ("research", "research", 4000),
    ]
    assert (config.namespace, config.ledger_configmap, config.warn_fraction) == (
        "clusterfab-system",
        "clusterfab-gpu-hours",
        0.8,
    )
    container = kinds["Deployment"][0]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "python:3.13.9-slim-trixie"
    assert container["command"] == [
        "python3", "-m", "clusterfab_queue_agent", "--config", "/etc/clusterfab/agent.json", "--port", "9410",
    ]  # fmt: skip
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts == {"code": "/opt/clusterfab/clusterfab_queue_agent", "config": "/etc/clusterfab"}
    assert {"name": "PYTHONPATH", "value": "/opt/clusterfab"} in container["env"]


def test_one_agent_on_the_system_nodes_with_a_node_port_only_when_monitored() -> None:
    quiet = _by_kind(agent_objects(_spec(False)))["Deployment"][0]
    watched = _by_kind(agent_objects(_spec(True)))["Deployment"][0]
    assert (quiet["spec"]["replicas"], quiet["spec"]["strategy"]) == (1, {"type": "Recreate"})
    ports = [c["ports"] for d in (quiet, watched) for c in d["spec"]["template"]["spec"]["containers"]]
    assert ports == [
        [{"name": "metrics", "containerPort": 9410}],
        [{"name": "metrics", "containerPort": 9410, "hostPort": 9410}],
    ]
    terms = quiet["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [
            {"key": "clusterfab.dev/node-group", "operator": "DoesNotExist"},
            {"key": "clusterfab.dev/tpu-slice", "operator": "DoesNotExist"},
        ]},
        {"matchExpressions": [{"key": "clusterfab.dev/node-group", "operator": "In", "values": ["system"]}]},
    ]  # fmt: skip
    assert "tolerations" not in quiet["spec"]["template"]["spec"]


def test_a_new_program_or_configuration_rolls_the_pod() -> None:
    spec = _spec(False)
    before = _by_kind(agent_objects(spec))["Deployment"][0]
    fewer = dataclasses.replace(spec, teams=spec.teams[:1])
    after = _by_kind(agent_objects(fewer))["Deployment"][0]
    key = "clusterfab.dev/program-sha256"
    assert (
        before["spec"]["template"]["metadata"]["annotations"][key]
        != after["spec"]["template"]["metadata"]["annotations"][key]
    )


def test_every_object_is_valid_for_the_clusters_kubernetes_version() -> None:
    spec = _spec(True)
    assert [p for o in agent_objects(spec) for p in object_problems(o, "1.35")] == []


def test_render_writes_the_agent_and_a_cluster_without_teams_has_none() -> None:
    spec = _spec(False)
    assert sorted(render_kubernetes(spec)) == ["agent.yaml", "kueue.yaml", "teams.yaml"]
    assert agent_objects(dataclasses.replace(spec, teams=())) == []
