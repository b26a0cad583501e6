"""A cloud's part of a managed Kubernetes cluster's access: the credential plugin kubectl runs for a token.

A cloud with a managed Kubernetes service has a module `clusterfab.clouds.<cloud>.kubernetes` whose
`CREDENTIALS` returns the command for one cluster (the Kubernetes scheduler's kubeconfig finds it by the
cloud's name) and whose `TOPOLOGY_LEVELS` are the node labels of its network hierarchy.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Protocol

from clusterfab.core.plugins import clouds


@dataclass(frozen=True)
class ExecCredential:
    """The command kubectl runs for a token."""

    command: str
    args: tuple[str, ...]
    install_hint: str
    """What to install when the command is missing (kubectl prints it)."""
    env: tuple[tuple[str, str], ...] = ()


class Credentials(Protocol):
    def __call__(self, *, cluster: str, location: str, project: str | None) -> ExecCredential: ...


def topology_levels(cloud: str) -> tuple[str, ...]:
    """The node labels of the cloud's network hierarchy, coarse to fine (a Kueue Topology's levels)."""
    levels: tuple[str, ...] = _part(cloud).TOPOLOGY_LEVELS
    return levels


def credentials(cloud: str) -> Credentials:
    """The cloud's credential plugin; LookupError when the cloud has no managed Kubernetes here."""
    found: Credentials = _part(cloud).CREDENTIALS
    return found


def _part(cloud: str) -> Any:
    module = clouds().get(cloud)
    if module is None:
        raise LookupError(f"no cloud named {cloud!r}")
    try:
        return importlib.import_module(f"{module}.kubernetes")
    except ModuleNotFoundError:
        raise LookupError(f"{cloud} has no managed Kubernetes in clusterfab") from None
