"""KubernetesObjects: plain Kubernetes objects applied to one cluster through its own provider.

The objects are built (and schema-checked) elsewhere as plain manifests, whose values may be Pulumi
inputs (a VPC's name known once it exists); this component only applies them. Each becomes the
pulumi-kubernetes resource of its kind, named `<namespace>/<name>` within the component, so adding an
object never renames another; kinds the SDK has no class for (custom resources) become
`apiextensions.CustomResource`. Helm charts given with the objects are installed through the same
provider (components.kubernetes.helm), and the objects of the APIs a chart serves wait for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components._naming import child
from components.kubernetes.helm import HelmChart, HelmReleases, HelmReleasesArgs

TYPE = "clusterfab:kubernetes:Objects"

_CLASSES: dict[tuple[str, str], Any] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
    ("storage.k8s.io/v1", "StorageClass"): k8s.storage.v1.StorageClass,
    ("v1", "PersistentVolume"): k8s.core.v1.PersistentVolume,
}

_FIRST = ("Namespace", "PriorityClass")
"""Kinds the objects after them may need to exist first (a pod of a DaemonSet is refused while its
PriorityClass is missing), like custom resource definitions."""


@dataclass(frozen=True)
class KubernetesObjectsArgs:
    kubeconfig: pulumi.Input[str]
    """The cluster's kubeconfig as JSON or YAML (clusterfab.scheduler.kubernetes.kubeconfig)."""
    cluster_identifier: pulumi.Input[str]
    """What names the cluster for good (its id): the provider, and with it every object applied through
    it, is replaced only when this changes. Without it a new kubeconfig (another endpoint, when the API's
    access changes) would replace the provider and recreate every namespace and what runs in it."""
    objects: Sequence[Mapping[str, Any]]
    """Plain manifests, in the order they are applied (a namespace before what lives in it)."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """What must exist first (the node pools a DaemonSet's pods land on)."""
    charts: Sequence[HelmChart] = field(default_factory=tuple)
    """Helm charts installed after `depends_on`, in order; the objects of the API groups a chart serves
    (its custom resources) wait for its release."""


class KubernetesObjects(pulumi.ComponentResource):
    def __init__(
        self, name: str, args: KubernetesObjectsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        self.provider = k8s.Provider(
            child(name, "provider"),
            kubeconfig=args.kubeconfig,
            cluster_identifier=args.cluster_identifier,
            # Server-side apply: the API server owns defaulting, and a field another manager set stays.
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.charts = (
            HelmReleases(
                child(name, "charts"),
                HelmReleasesArgs(provider=self.provider, charts=args.charts, depends_on=args.depends_on),
                pulumi.ResourceOptions(parent=self),
            )
            if args.charts
            else None
        )
        self.resources: dict[str, pulumi.CustomResource] = {}
        previous: list[pulumi.Resource] = list(args.depends_on)
        for manifest in args.objects:
            key = object_key(manifest)
            served = self.charts.waits_for(str(manifest["apiVersion"])) if self.charts else []
            after = [*previous, *served]
            resource = _resource(
                child(name, key),
                manifest,
                pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=after),
            )
            self.resources[key] = resource
            if manifest["kind"] in _FIRST or manifest["kind"].endswith("Definition"):
                previous = [*previous, resource]
        self.register_outputs({})


def object_key(manifest: Mapping[str, Any]) -> str:
    """`<kind>/<namespace>/<name>` in lower case (cluster-scoped objects without the namespace)."""
    metadata = manifest["metadata"]
    parts = [str(manifest["kind"]).lower(), metadata.get("namespace"), metadata["name"]]
    return "/".join(str(part) for part in parts if part)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _resource(name: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    api_version, kind = manifest["apiVersion"], manifest["kind"]
    fields = {key: value for key, value in manifest.items() if key not in ("apiVersion", "kind")}
    cls = _CLASSES.get((api_version, kind))
    if cls is not None:
        # The SDK's classes take the top-level fields by their Python names (a PriorityClass's
        # `globalDefault` is `global_default`); nested values keep the manifest's own names.
        keywords = {_snake(key): value for key, value in fields.items()}
        resource: pulumi.CustomResource = cls(name, opts=opts, **keywords)
        return resource
    return CustomObject(name, manifest, opts)


class CustomObject(pulumi.CustomResource):
    """An object of a custom resource with every top-level field of its manifest: the SDK's
    `apiextensions.CustomResource` takes `spec` alone, and a Kueue WorkloadPriorityClass keeps its `value`
    beside it. Registered as pulumi-kubernetes registers a custom resource (`kubernetes:<apiVersion>:<kind>`),
    its fields under their Kubernetes names."""

    def __init__(self, name: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions) -> None:
        token = f"kubernetes:{manifest['apiVersion']}:{manifest['kind']}"
        super().__init__(token, name, dict(manifest), opts)
