"""What changes between two plans: resources created, updated (which properties), deleted.

Resources are matched by URN, so both plans must be of the same stack (the diff commands plan both
sides with one stack name). An update of a stateful resource (file system, bucket) that changes a
property the provider can only apply by replacing it, or the deletion of one, destroys data: those
are flagged, and promotion refuses them unless told otherwise. Which properties replace what is
catalog data (`stateful.yaml`), not code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterfab.catalog import Catalog
from clusterfab.plan.engine import PlannedResource
from clusterfab.plan.project import Plan


@dataclass(frozen=True)
class Update:
    """A resource present in both plans whose inputs differ."""

    before: PlannedResource
    after: PlannedResource
    changed: tuple[str, ...]
    """Property paths that differ, in Pulumi's detailed-diff form (`networkInterfaces[3].deviceIndex`)."""
    replaces: tuple[str, ...]
    """The changed paths that make the provider replace a stateful resource."""

    @property
    def urn(self) -> str:
        return self.after.urn

    @property
    def replace(self) -> bool:
        return bool(self.replaces)


@dataclass(frozen=True)
class PlanDiff:
    create: tuple[PlannedResource, ...]
    update: tuple[Update, ...]
    delete: tuple[PlannedResource, ...]
    stateful_types: frozenset[str]

    @property
    def empty(self) -> bool:
        return not (self.create or self.update or self.delete)

    def destructive(self) -> list[tuple[PlannedResource, str]]:
        """Stateful resources the change would delete or replace, with why."""
        found: list[tuple[PlannedResource, str]] = []
        for resource in self.delete:
            if resource.type in self.stateful_types or resource.protect:
                found.append((resource, "deleted"))
        for update in self.update:
            if update.replace:
                found.append((update.after, f"replaced (changes {', '.join(update.replaces)})"))
        return found

    def to_json(self) -> dict[str, Any]:
        """The `resources` part of the `clusterfab diff` JSON contract (architecture §5)."""
        return {
            "create": [r.urn for r in self.create],
            "update": [
                {
                    "urn": u.urn,
                    "changed": list(u.changed),
                    "replace": u.replace,
                    "stateful": u.after.type in self.stateful_types,
                }
                for u in self.update
            ],
            "delete": [r.urn for r in self.delete],
        }


def changed_paths(before: Any, after: Any, prefix: str = "") -> list[str]:
    """Paths at which two input values differ: mappings key by key, equal-length lists item by item."""
    if isinstance(before, dict) and isinstance(after, dict):
        paths: list[str] = []
        for key in sorted(set(before) | set(after)):
            sub = f"{prefix}.{key}" if prefix else key
            if key not in before or key not in after:
                paths.append(sub)
            else:
                paths += changed_paths(before[key], after[key], sub)
        return paths
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        paths = []
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            paths += changed_paths(old, new, f"{prefix}[{index}]")
        return paths
    return [] if before == after else [prefix]


def _replacing(
    resource: PlannedResource, before: dict[str, Any], paths: list[str], catalog: Catalog
) -> tuple[str, ...]:
    stateful = catalog.stateful_types.get(resource.type)
    if stateful is None:
        return ()
    found: list[str] = []
    for path in paths:
        root = path.split("[")[0]
        top = root.split(".")[0]
        if root in stateful.replace_on or top in stateful.replace_on:
            found.append(path)
        elif top in stateful.replace_on_decrease:
            old, new = before.get(top), resource.inputs.get(top)
            if isinstance(old, int | float) and isinstance(new, int | float) and new < old:
                found.append(f"{path} ({old} -> {new})")
    return tuple(found)


def diff_plans(before: Plan, after: Plan, catalog: Catalog) -> PlanDiff:
    """The changes that turn `before` into `after` (both plans of the same stack)."""
    old, new = before.by_urn(), after.by_urn()
    create = tuple(new[urn] for urn in sorted(new.keys() - old.keys()))
    delete = tuple(old[urn] for urn in sorted(old.keys() - new.keys()))
    updates: list[Update] = []
    for urn in sorted(old.keys() & new.keys()):
        paths = changed_paths(old[urn].inputs, new[urn].inputs)
        if paths:
            updates.append(
                Update(
                    before=old[urn],
                    after=new[urn],
                    changed=tuple(paths),
                    replaces=_replacing(new[urn], old[urn].inputs, paths, catalog),
                )
            )
    return PlanDiff(
        create=create, update=tuple(updates), delete=delete, stateful_types=frozenset(catalog.stateful_types)
    )
