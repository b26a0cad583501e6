"""The names of the clouds and schedulers clusterfab knows, and the module that implements each.

A cloud or a scheduler is a package found by name (architecture §11.1): `clusterfab.clouds.<cloud>`
exports `PROFILE` (a `CloudProfile`), `clusterfab.scheduler.<kind>` exports `PLUGIN` (a
`SchedulerPlugin`). The built-in ones are listed here; another package (or a test) adds its own with
`register_cloud` / `register_scheduler` before it loads a blueprint. The names live at the bottom of
the import graph because the blueprint's own validation checks `cloud` and `scheduler.kind` against
them, and the blueprint layer may not import the packages behind them.
"""

from __future__ import annotations

import importlib
from types import MappingProxyType
from typing import Any

_CLOUDS: dict[str, str] = {
    "aws": "clusterfab.clouds.aws",
    "gcp": "clusterfab.clouds.gcp",
    "azure": "clusterfab.clouds.azure",
}
_REALIZERS: dict[str, str] = {"aws": "stacks.aws", "gcp": "stacks.gcp", "azure": "stacks.azure"}
"""The Pulumi program's realizer of each cloud (a package outside the library: it imports components)."""
_SCHEDULERS: dict[str, str] = {
    "slurm": "clusterfab.scheduler.slurm",
    "kubernetes": "clusterfab.scheduler.kubernetes",
}
_CATALOG_PARTS: dict[str, str] = {}
"""The catalog part of a cloud registered at run time (clusterfab.catalog.parts.AddedPart). A built-in
cloud's part ships in the catalog package (`clusterfab.catalog.<cloud>`, with its data file); one
registered at run time cannot add files there, so its registration names the module that holds its rows."""

BUILTIN_CLOUDS: tuple[str, ...] = tuple(_CLOUDS)
BUILTIN_SCHEDULERS: tuple[str, ...] = tuple(_SCHEDULERS)

NO_SCHEDULER = "none"
"""`scheduler.kind: none`: a cluster of nodes with no workload scheduler (no plugin behind it)."""


def register_cloud(name: str, module: str, realizer: str, catalog: str | None = None) -> None:
    """Make `cloud: <name>` valid; `module` (importable, dotted) exports `PROFILE`, `realizer` is the
    module the stack program realizes the cluster with on that cloud, `catalog` (optional) the module of
    its catalog part: its machine types and its rows of the catalog's tables (prices, images, ...)."""
    _register(_CLOUDS, name, module)
    _register(_REALIZERS, name, realizer)
    if catalog is not None:
        _register(_CATALOG_PARTS, name, catalog)


def register_scheduler(kind: str, module: str) -> None:
    """Make `scheduler.kind: <kind>` valid; `module` (importable, dotted) exports `PLUGIN`."""
    if kind == NO_SCHEDULER:
        raise ValueError(f"scheduler kind {kind!r} is reserved for no scheduler")
    _register(_SCHEDULERS, kind, module)


def unregister(name: str) -> None:
    """Forget a cloud or scheduler registered at run time (the built-in ones stay)."""
    if name not in BUILTIN_CLOUDS:
        _CLOUDS.pop(name, None)
        _REALIZERS.pop(name, None)
        _CATALOG_PARTS.pop(name, None)
    if name not in BUILTIN_SCHEDULERS:
        _SCHEDULERS.pop(name, None)


def _register(table: dict[str, str], name: str, module: str) -> None:
    known = table.get(name)
    if known is not None and known != module:
        raise ValueError(f"{name!r} is already implemented by {known}")
    table[name] = module


def clouds() -> MappingProxyType[str, str]:
    """Every known cloud's name and module, built-in ones first."""
    return MappingProxyType(_CLOUDS)


def realizer(cloud: str) -> str:
    """The module that realizes a cluster on `cloud` in the stack program."""
    return _REALIZERS[cloud]


def catalog_parts() -> MappingProxyType[str, str]:
    """The catalog part of each cloud registered at run time with one (the built-in ones' ship in the
    catalog package)."""
    return MappingProxyType(_CATALOG_PARTS)


def schedulers() -> MappingProxyType[str, str]:
    """Every known scheduler kind (not `none`) and its module, built-in ones first."""
    return MappingProxyType(_SCHEDULERS)


_LOADED: dict[tuple[str, str], Any] = {}


def load_scheduler(kind: str) -> Any:
    """The `PLUGIN` of the module that implements `kind` (imported once; LookupError for `none` and for
    a kind nobody registered). clusterfab.scheduler.plugin gives it its type; the packages a plugin builds
    on (spec, cost, monitoring, outputs) reach it through this, typed by narrow Protocols of their own."""
    module = _SCHEDULERS.get(kind)
    if module is None:
        known = ", ".join(_SCHEDULERS)
        raise LookupError(f"no scheduler of kind {kind!r} is registered (known: {known})")
    key = (kind, module)
    if key not in _LOADED:
        _LOADED[key] = importlib.import_module(module).PLUGIN
    return _LOADED[key]
