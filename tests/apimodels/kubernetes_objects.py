"""Planned Kubernetes objects, checked against the Kubernetes OpenAPI schema of the cluster's version.

The program applies in-cluster objects through pulumi-kubernetes (components/kubernetes/objects.py): each
`kubernetes:*` resource's inputs are the object's manifest, which kubernetes-validate checks in strict
mode (an unknown field is an error) against the schema it bundles for that Kubernetes version, offline;
the custom resources of Kueue and JobSet are checked against their pinned releases' CRD schemas instead
(tests/crd_schema.py). A Helm release (`kubernetes:helm.sh/v3:Release`, components/kubernetes/helm.py) is
no object of the API: its chart and version must be a pin of software.yaml, and every value it sets one
the chart's default values at that version have (tests/fixtures/charts/), since Helm ignores any other.
The cloud API-model test (test_api_models.py) leaves these types, and the provider that applies them,
to this check.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import kubernetes_validate
from ruamel.yaml import YAML

from clusterfab.plan.project import Plan
from clusterfab.scheduler.kubernetes.facts import kubernetes_facts
from clusterfab.scheduler.kubernetes.software import kubernetes_software
from tests.crd_schema import crd_problems, crd_schema

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
CHART_VALUES = Path(__file__).resolve().parents[1] / "fixtures" / "charts"
"""`<chart>-<version>-values.yaml`: each pinned chart's default values."""
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
        if resource.type == HELM_RELEASE:
            problems += release_problems(resource.inputs)
        elif resource.type.startswith("kubernetes:"):
            problems += object_problems(resource.inputs, version)
    return sorted(problems)


def object_problems(manifest: Mapping[str, Any], version: str) -> list[str]:
    metadata = manifest.get("metadata") or {}
    name = "/".join(str(p) for p in (metadata.get("namespace"), metadata.get("name")) if p)
    where = f"{manifest.get('kind')} {name}"
    if (manifest.get("apiVersion"), manifest.get("kind")) in WITHOUT_SCHEMA:
        return []
    if crd_schema(str(manifest.get("apiVersion")), str(manifest.get("kind"))) is not None:
        return crd_problems(manifest)
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


def release_problems(inputs: Mapping[str, Any]) -> list[str]:
    """What is wrong with a planned Helm release: a chart or version software.yaml does not pin, or a
    value the chart does not have (`Release <namespace>/<name> <what>`)."""
    where = f"Release {inputs.get('namespace')}/{inputs.get('name')}"
    pins = {p.chart.reference: p.chart for p in kubernetes_software().pieces if p.chart is not None}
    pin = pins.get(str(inputs.get("chart")))
    if pin is None:
        return [f"{where}: software.yaml pins no chart {inputs.get('chart')}"]
    if inputs.get("version") != pin.version:
        return [f"{where}: version {inputs.get('version')}, software.yaml pins {pin.version}"]
    defaults = YAML(typ="safe").load((CHART_VALUES / f"{pin.name}-{pin.version}-values.yaml").read_text())
    return [
        f"{where} values.{path}: the chart has no such value"
        for path in _unknown(inputs.get("values"), defaults)
    ]


def _unknown(values: Any, defaults: Any, prefix: str = "") -> Iterator[str]:
    """The paths of `values` the chart's defaults lack. A map the defaults leave empty (`podAnnotations: {}`)
    takes any key."""
    for key, value in (values or {}).items():
        if not isinstance(defaults, dict) or key not in defaults:
            yield f"{prefix}{key}"
        elif isinstance(value, dict) and isinstance(defaults[key], dict) and defaults[key]:
            yield from _unknown(value, defaults[key], f"{prefix}{key}.")
