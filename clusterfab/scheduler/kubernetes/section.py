"""The spec's part of a Kubernetes cluster: the blueprint's `scheduler` (kind kubernetes), resolved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from clusterfab.core.findings import FieldPath

KIND = "kubernetes"


@dataclass(frozen=True)
class Kubernetes:
    """The managed control plane (GKE, EKS) and the system node pool beside the node groups' pools."""

    service: str
    """The cloud's managed Kubernetes: GKE or EKS."""
    version: str
    """The control plane's minor version (the node pools follow it)."""
    release_channel: str | None
    """GKE's release channel (REGULAR); None where the service has none (EKS)."""
    system_machine: str
    system_count: int
    api_access_cidrs: tuple[str, ...] = ()
    """The ranges allowed to reach the API server from outside the cluster's network; none: private."""
    kind: Literal["kubernetes"] = "kubernetes"

    @property
    def path(self) -> FieldPath:
        return ("scheduler",)
