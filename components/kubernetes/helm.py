"""HelmReleases: Helm charts installed in one cluster through its provider, one `helm.v3.Release` each.

A release's chart is an OCI reference (`oci://registry/path/chart`) at a fixed version, installed in its own
namespace (created with it) with the values given; Pulumi waits for what the chart runs to become ready, so
objects of the APIs the chart serves (its custom resources, validated by its webhooks) can follow it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components._naming import child

TYPE = "clusterfab:kubernetes:HelmReleases"


@dataclass(frozen=True)
class HelmChart:
    name: str
    """The release's name, and the logical name's suffix."""
    chart: str
    """`oci://<registry path>/<chart>`."""
    version: str
    namespace: str
    values: Mapping[str, Any] = field(default_factory=dict)
    serves: tuple[str, ...] = ()
    """The API groups of the custom resources the chart installs: objects of them wait for the release."""


@dataclass(frozen=True)
class HelmReleasesArgs:
    provider: k8s.Provider
    """The cluster's provider (KubernetesObjects.provider)."""
    charts: Sequence[HelmChart]
    """In install order: each release waits for the ones before it."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)


class HelmReleases(pulumi.ComponentResource):
    def __init__(self, name: str, args: HelmReleasesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        self._charts = tuple(args.charts)
        self.releases: dict[str, k8s.helm.v3.Release] = {}
        previous: list[pulumi.Resource] = list(args.depends_on)
        for chart in args.charts:
            release = k8s.helm.v3.Release(
                child(name, chart.name),
                name=chart.name,
                chart=chart.chart,
                version=chart.version,
                namespace=chart.namespace,
                create_namespace=True,
                values=dict(chart.values),
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=previous),
            )
            self.releases[chart.name] = release
            previous = [*previous, release]
        self.register_outputs({})

    def waits_for(self, api_version: str) -> list[pulumi.Resource]:
        """The releases an object of `api_version` (`group/version`) needs installed first."""
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        return [self.releases[c.name] for c in self._charts if group in c.serves]
