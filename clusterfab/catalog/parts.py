"""The catalog's per-cloud parts, found by the cloud's name.

What the catalog holds for one cloud alone (its machine types and their tables, the fields its records
need) is in `clusterfab.catalog.<cloud>`, which reads `data/<cloud>.yaml`. The generic catalog code asks
that module instead of naming the cloud's tables, so a cloud's catalog is a module and a data file.
A cloud registered at run time cannot add a module or a data file here: its registration names a module
of its own (`AddedPart`), whose rows the catalog adds to its shared tables when it is loaded.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from clusterfab.core.plugins import BUILTIN_CLOUDS, catalog_parts

if TYPE_CHECKING:
    from clusterfab.catalog.models import MachineType
    from clusterfab.catalog.query import Catalog


class CloudPart(Protocol):
    """What `clusterfab.catalog.<cloud>` exports."""

    MANAGED_DATABASE_FIELDS: tuple[str, ...]
    """The fields of `ManagedDatabase` the cloud's managed database service needs (optional for others)."""

    def tables(self, data: Any) -> dict[str, Any]:
        """The `Catalog` fields read from the cloud's data file (`data/<cloud>.yaml`), validated."""
        ...

    def machine_types(self, catalog: Catalog) -> Mapping[str, MachineType]:
        """The cloud's GPU machine types, by name."""
        ...


class AddedPart(Protocol):
    """What the catalog part of a cloud registered at run time exports (`register_cloud(..., catalog=)`)."""

    def rows(self) -> Mapping[str, Any]:
        """Its rows of the catalog's shared tables, by `Catalog` field: a tuple table's rows (prices,
        images, storage_tiers) or a table keyed by cloud or name (local_disks, lustre_clients)."""
        ...

    def machine_types(self, catalog: Catalog) -> Mapping[str, MachineType]:
        """The cloud's GPU machine types, by name (its own: the catalog has no table for them)."""
        ...


def added_parts() -> tuple[tuple[str, AddedPart], ...]:
    """Every cloud registered at run time with a catalog part, and that part, in registration order."""
    found = catalog_parts().items()
    return tuple((cloud, cast("AddedPart", importlib.import_module(module))) for cloud, module in found)


def part(cloud: str) -> CloudPart:
    """The catalog part of a cloud clusterfab ships."""
    if cloud not in BUILTIN_CLOUDS:
        raise LookupError(f"the catalog has no part for cloud {cloud!r}")
    return cast("CloudPart", importlib.import_module(f"{__package__}.{cloud}"))


def parts() -> tuple[tuple[str, CloudPart], ...]:
    """Every shipped cloud with its part, in the registry's order."""
    return tuple((cloud, part(cloud)) for cloud in BUILTIN_CLOUDS)


def machine_types(catalog: Catalog) -> list[MachineType]:
    """Every cloud's machine types (the shipped clouds', then those registered with a catalog part), cloud
    by cloud in the registry's order."""
    every: list[tuple[str, CloudPart | AddedPart]] = [*parts(), *added_parts()]
    return [m for _, cloud in every for m in cloud.machine_types(catalog).values()]
