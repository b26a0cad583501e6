"""The node groups as slurm.conf has them, and their nodes' names (`<group>-<i>`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Group:
    """A node group as slurm.conf has it: `static` always-up nodes, then elastic ones up to `size`."""

    name: str
    static: int
    size: int

    @property
    def static_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.static)]

    @property
    def elastic_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.static, self.size)]


def node_names(groups: Mapping[str, int]) -> dict[str, list[str]]:
    """The node names slurm.conf gives each group (`<group>-<i>`), from the groups' sizes."""
    return {group: [f"{group}-{i}" for i in range(size)] for group, size in groups.items()}


def groups_from_config(value: Mapping[str, Any]) -> dict[str, Group]:
    """The config's `groups`: name -> {"static": n, "size": m}, or name -> n for a group of n static nodes."""
    groups = {}
    for name, item in value.items():
        if isinstance(item, int):
            groups[name] = Group(name, item, item)
        else:
            groups[name] = Group(name, int(item["static"]), int(item["size"]))
    return groups
