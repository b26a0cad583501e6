"""Planned Kubernetes objects, checked against the Kubernetes OpenAPI schema of the cluster's version.

The program applies in-cluster objects through pulumi-kubernetes (components/kubernetes/objects.py): each
`kubernetes:*` resource's inputs are the object's manifest, which kubernetes-validate checks in strict
mode (an unknown field is an error) against the schema it bundles for that Kubernetes version, offline.
The cloud API-model test (test_api_models.py) leaves these types, and the provider that applies them,
to this check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kubernetes_validate

from clusterfab.plan.project import Plan
from clusterfab.scheduler.kubernetes.facts import kubernetes_facts

PROVIDER = "pulumi:providers:kubernetes"
"""Its inputs (the kubeconfig, server-side apply) configure the client: no object of the API."""

CLUSTER_VERSION_INPUTS = {
    "aws:eks/cluster:Cluster": "version",
    "gcp:container/cluster:Cluster": "minMasterVersion",
}
"""Where a plan says its control plane's version (EKS `version`, GKE `minMasterVersion`)."""

WITHOUT_SCHEMA: dict[tuple[str, str], str] = {
    ("networking.gke.io/v1", "GKENetworkParamSet"): "GKE's multi-networking custom resource",
    ("networking.gke.io/v1", "Network"): "GKE's multi-networking custom resource",
}
"""Kinds that are not Kubernetes' own, so not in its OpenAPI schema: each checked elsewhere or not at all,
and named here so that an unknown kind is a problem, never silently unchecked."""


def checked_here(type_: str) -> bool:
    """Whether this module, not the cloud API-model table, checks a planned resource type."""
    return type_.startswith("kubernetes:") or type_ == PROVIDER


def cluster_version(plan: Plan) -> str:
    """The planned control plane's `major.minor.0`: the version input of its cluster resource, else the
    default version of a new cluster (facts.yaml)."""
    for resource in plan.resources:
        key = CLUSTER_VERSION_INPUTS.get(resource.type)
        value = resource.inputs.get(key) if key else None
        if isinstance(value, str) and value:
            major, minor = value.split(".")[:2]
            return f"{major}.{minor}.0"
    defaults = {c.default_version for c in kubernetes_facts().control_planes}
    return f"{max(defaults, key=lambda v: tuple(int(p) for p in v.split('.')))}.0"


def kubernetes_resource_problems(plan: Plan, version: str | None = None) -> list[str]:
    """What the Kubernetes schema of `version` (default: the plan's cluster version) rejects in the
    planned `kubernetes:*` resources, one line per problem (`<kind> <namespace/name> <field path>: why`),
    sorted: the engine registers resources in no fixed order."""
    version = version or cluster_version(plan)
    problems: list[str] = []
    for resource in plan.resources:
        if resource.type.startswith("kubernetes:"):
            problems += object_problems(resource.inputs, version)
    return sorted(problems)


def object_problems(manifest: Mapping[str, Any], version: str) -> list[str]:
    metadata = manifest.get("metadata") or {}
    name = "/".join(str(p) for p in (metadata.get("namespace"), metadata.get("name")) if p)
    where = f"{manifest.get('kind')} {name}"
    if (manifest.get("apiVersion"), manifest.get("kind")) in WITHOUT_SCHEMA:
        return []
    try:
        kubernetes_validate.validate(dict(manifest), version, strict=True)
    except kubernetes_validate.ValidationError as error:
        path = ".".join(str(p) for p in error.absolute_path)
        return [f"{where} {path}: {error.message}"]
    except (
        kubernetes_validate.SchemaNotFoundError,
        kubernetes_validate.utils.VersionNotSupportedError,
    ) as error:
        return [f"{where}: {error.message}"]
    return []
