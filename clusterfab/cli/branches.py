"""The questions the CLI still asks of one particular cloud or scheduler by name.

Kept here, word for word, so that there is one place to switch to what the cloud's and the scheduler's
plugins answer (`clusterfab.core.plugins`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusterfab.spec import ClusterSpec


def needs_nodes_project(spec: ClusterSpec, gcp_project: str | None) -> bool:
    """Whether Prometheus's discovery of the nodes lacks the project they run in (GCP only)."""
    return spec.cloud == "gcp" and gcp_project is None


def has_no_slurm(spec: ClusterSpec) -> bool:
    """Whether the blueprint has no Slurm scheduler to render the configuration of."""
    return spec.scheduler is None
