"""The clouds the node programs run on, by the name in their settings (`cloud`), and the module of this
package that implements each (architecture §11.1: a new cloud is a new module here plus one entry).

Azure's machines claim their nodes themselves (`claims`): its node sync keeps the claims, failed machines
and its scale sets' sizes in step, and its resume program grows a scale set rather than naming machines.

The package ships alone to the controller, so it cannot read clusterfab.core.plugins' names; a test keeps
the two in step. A cloud's module exports `CLOUD`, a `NodeCloud`, and is imported only when its name is
asked for: the AWS program never loads Compute Engine's code, nor the GCP one boto3.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Protocol

from .fleet import Fleet

CLOUDS: dict[str, str] = {"aws": "aws", "gcp": "gcp", "azure": "azure"}
"""Cloud name -> its module in this package."""


class NodeCloud(Protocol):
    """What the node programs need of one cloud, besides the `Fleet` it makes."""

    @property
    def location(self) -> tuple[str, ...]:
        """The settings that say where the cluster is (AWS: region; GCP: project and zone)."""
        ...

    @property
    def accounting_settings(self) -> tuple[str, ...]:
        """The settings managed accounting needs on this cloud (none where it is not built)."""
        ...

    @property
    def claims(self) -> bool:
        """Whether its machines claim their Slurm nodes themselves (Azure's scale-set VMs), so that the node
        sync names none and releases the claims of machines that are gone."""
        ...

    @property
    def creates_nodes(self) -> bool:
        """Whether the resume program can create a machine for a node name (elastic Slurm groups)."""
        ...

    def refusal(self, settings: Mapping[str, Any]) -> str | None:
        """Why the sync and power programs must not run with these settings, if they must not."""
        ...

    def fleet(self, settings: Mapping[str, Any]) -> Fleet:
        """The cluster's instances on this cloud, as the settings find them."""
        ...

    def ending(self, settings: Mapping[str, Any]) -> bool:
        """Whether the cloud takes some group's machines at an end the sync must keep jobs clear of."""
        ...

    def accounting(self, settings: Mapping[str, Any], password_file: str) -> dict[str, Any]:
        """Make the cloud's database ready for slurmdbd; where it listens (`host`, `port`)."""
        ...


def cloud(name: str) -> NodeCloud:
    """The named cloud (one of `CLOUDS`: callers check the name first and say what they lack)."""
    module = importlib.import_module(f".{CLOUDS[name]}", __package__)
    found: NodeCloud = module.CLOUD
    return found
