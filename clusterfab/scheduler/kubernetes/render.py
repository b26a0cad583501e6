"""`clusterfab render kubernetes`: the cluster's own objects, as YAML documents by file (the Kueue objects
are clusterfab.scheduler.kubernetes.queues').

Per team a Namespace (labelled with the cluster, the stack-independent team name and its priority) and a
RoleBinding that gives the team's `users` the built-in `edit` ClusterRole in it: on GKE a user is the
Google account's e-mail address, on EKS the username of its access entry (architecture §11.2). The
program applies the same objects.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ruamel.yaml import YAML

from clusterfab.scheduler.base import RenderError
from clusterfab.scheduler.kubernetes.agent_files import package_files
from clusterfab.scheduler.kubernetes.labels import CLUSTER_LABEL, MANAGED_BY, PRIORITY_LABEL, TEAM_LABEL
from clusterfab.scheduler.kubernetes.manifests.queue_agent import queue_agent_objects
from clusterfab.scheduler.kubernetes.queues import kueue_objects
from clusterfab.scheduler.kubernetes.section import KIND, Kubernetes
from clusterfab.scheduler.kubernetes.software import kubernetes_software
from clusterfab.spec.model import ClusterSpec, Team

TEAM_ROLE = "edit"
"""The built-in ClusterRole a team's users get in its namespace: they run and manage workloads there,
and cannot change its RBAC or quotas (Kubernetes' user-facing roles)."""


def kubernetes_section(spec: ClusterSpec) -> Kubernetes | None:
    return spec.scheduler if isinstance(spec.scheduler, Kubernetes) else None


def require_kubernetes(spec: ClusterSpec) -> Kubernetes:
    section = kubernetes_section(spec)
    if section is None:
        raise RenderError(f"{spec.name} has no {KIND} scheduler")
    return section


def team_objects(spec: ClusterSpec) -> list[dict[str, Any]]:
    """Each team's Namespace and RoleBinding, in the order `apply` creates them."""
    objects: list[dict[str, Any]] = []
    for team in spec.teams:
        objects.append(namespace(spec.name, team))
        if team.users:
            objects.append(role_binding(team))
    return objects


def namespace(cluster: str, team: Team) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": team.name,
            "labels": {
                **MANAGED_BY,
                CLUSTER_LABEL: cluster,
                TEAM_LABEL: team.name,
                PRIORITY_LABEL: team.priority,
            },
        },
    }


def role_binding(team: Team) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": f"{team.name}-{TEAM_ROLE}",
            "namespace": team.name,
            "labels": {**MANAGED_BY, TEAM_LABEL: team.name},
        },
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": TEAM_ROLE},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user} for user in team.users
        ],
    }


def agent_objects(spec: ClusterSpec) -> list[dict[str, Any]]:
    """The queue agent that keeps the teams' GPU-hour budgets (manifests/queue_agent.py); none without
    teams. It listens on its node's port where the monitoring host scrapes it."""
    image = kubernetes_software().piece("queue-agent").image("python")
    return queue_agent_objects(spec, image, package_files(), monitored=spec.monitoring is not None)


def render_kubernetes(spec: ClusterSpec) -> dict[str, str]:
    """teams.yaml (namespaces and RoleBindings), kueue.yaml (flavors, topology, priorities, the cohort
    and the queues) and agent.yaml (the queue agent), as `up` applies them."""
    require_kubernetes(spec)
    files = {"teams.yaml": documents(team_objects(spec), f"# {spec.name}: team namespaces and their users\n")}
    queues = kueue_objects(spec, spec.cloud)
    if queues:
        files["kueue.yaml"] = documents(queues, f"# {spec.name}: Kueue flavors, priorities and queues\n")
    agent = agent_objects(spec)
    if agent:
        files["agent.yaml"] = documents(
            agent, f"# {spec.name}: the queue agent (GPU-hour budgets, queue metrics)\n"
        )
    return files


def documents(objects: Sequence[Mapping[str, Any]], header: str) -> str:
    """Objects as one YAML stream (`---` between documents), keys in the objects' order."""
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096
    stream = io.StringIO()
    stream.write(header)
    for index, item in enumerate(objects):
        if index:
            stream.write("---\n")
        yaml.dump(json.loads(json.dumps(item)), stream)
    return stream.getvalue()
