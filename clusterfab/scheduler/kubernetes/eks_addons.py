"""The EKS managed add-ons of a cluster and their versions per control plane minor (eks_addons.yaml beside
this module, with its sources)."""

# No `from __future__ import annotations`: pydantic evaluates the fields' annotations.
import functools
import io
from importlib import resources

from pydantic import Field
from ruamel.yaml import YAML

from clusterfab.catalog.models import Record


class EksAddon(Record):
    """One managed add-on: its EKS name and the version pinned for each minor it is confirmed for."""

    name: str
    before_nodes: bool
    """Nodes need it to join and run pods (the CNI, kube-proxy, the Pod Identity agent): created before the
    node groups. The others run as Deployments, which wait for nodes."""
    versions: dict[str, str] = Field(default_factory=dict)
    unpinned: str | None = None
    """Why a minor has no pinned version (EKS then installs its default for the minor)."""

    def version(self, minor: str) -> str | None:
        return self.versions.get(minor)


class EksAddons(Record):
    addons: list[EksAddon]


@functools.cache
def eks_addons() -> tuple[EksAddon, ...]:
    text = resources.files(__package__).joinpath("eks_addons.yaml").read_text("utf-8")
    return tuple(EksAddons.model_validate(YAML(typ="safe").load(io.StringIO(text))).addons)
