"""Environment overlays: partial blueprints deep-merged over the base.

Mappings merge key by key; scalars and ordinary lists are replaced; `null` removes the base's value
(the field takes its default); the named lists (node_groups, tpu_slices, storage, teams) merge item by item
on `name`. An overlay item whose name the base lacks is reported, not appended: in practice it is a
typo that would otherwise create a second node group. An empty named list would merge nothing, so it
is reported too (`storage: null` is how an environment drops all storage).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clusterfab.blueprint.loader import Document
from clusterfab.blueprint.models import NAMED_LISTS
from clusterfab.blueprint.sourcemap import SourceMap
from clusterfab.core.findings import FieldPath, Finding
from clusterfab.core.hints import closest, listing

FIXED_KEYS = ("version", "cloud", "environments")
"""Top-level keys an overlay may not set: they define what the blueprint is."""
ENVIRONMENT_KEYS = ("protected",)
"""Keys of an overlay that describe the environment itself rather than change the blueprint."""
PROTECTED_BY_DEFAULT = frozenset({"prod"})
"""Environments whose stateful resources are protected unless `environments.<name>.protected` says
otherwise."""


def environment_protected(environments: dict[str, Any], environment: str | None) -> bool:
    """Whether an environment protects its stateful resources: its `protected:`, else the default.

    The one place that decides it: the program, the CrossGuard pack and the promotion gates ask here.
    """
    overlay = environments.get(environment) if environment is not None else None
    flag = overlay.get("protected") if isinstance(overlay, dict) else None
    return flag if isinstance(flag, bool) else environment in PROTECTED_BY_DEFAULT


@dataclass
class MergedBlueprint:
    """The base merged with one environment's overlay, and where each of its parts is written."""

    data: dict[str, Any]
    source_map: SourceMap
    findings: list[Finding] = field(default_factory=list)


class _Merger:
    def __init__(self, base_map: SourceMap) -> None:
        self.replaced: dict[FieldPath, FieldPath] = {}
        self.touched: dict[FieldPath, FieldPath] = {}
        self.findings: list[Finding] = []
        self._base_map = base_map

    def merge_mapping(
        self, base: dict[str, Any], overlay: dict[str, Any], path: FieldPath, source: FieldPath
    ) -> dict[str, Any]:
        self.touched[path] = source
        merged = dict(base)
        for key, value in overlay.items():
            sub_path, sub_source = (*path, key), (*source, key)
            current = base.get(key)
            if value is None:
                merged.pop(key, None)
                self.replaced[sub_path] = sub_source
            elif not path and key in NAMED_LISTS and isinstance(value, list) and not value:
                self.findings.append(
                    self._base_map.finding(
                        "BP136",
                        sub_source,
                        f"an empty {key} list in an overlay changes nothing: overlay items merge by name",
                        hint=f"to remove every {key} item in this environment write `{key}: null`; to "
                        f"change one, list it by name: `{key}: [{{name: ..., ...}}]`",
                    )
                )
            elif not path and key in NAMED_LISTS and isinstance(current, list) and isinstance(value, list):
                merged[key] = self.merge_named(key, current, value, sub_source)
            elif isinstance(current, dict) and isinstance(value, dict):
                merged[key] = self.merge_mapping(current, value, sub_path, sub_source)
            else:
                merged[key] = value
                self.replaced[sub_path] = sub_source
        return merged

    def merge_named(self, key: str, base: list[Any], overlay: list[Any], source: FieldPath) -> list[Any]:
        merged = list(base)
        # Only string names can be merged by (the schema check reports any other).
        index = {
            item["name"]: i
            for i, item in enumerate(base)
            if isinstance(item, dict) and isinstance(item.get("name"), str)
        }
        for j, item in enumerate(overlay):
            item_source = (*source, j)
            if not isinstance(item, dict):
                self.findings.append(
                    self._base_map.finding(
                        "BP008",
                        item_source,
                        f"an overlay item of {key} must be a mapping with a `name`",
                        hint=f"write it as `- {{name: <a {key} name>, ...}}`",
                    )
                )
                continue
            name = item.get("name")
            if not isinstance(name, str):
                self.findings.append(
                    self._base_map.finding(
                        "BP006",
                        (*item_source, "name"),
                        f"overlay items of {key} need a `name` to merge by",
                        hint=f"add `name:` with the name of the {key} item to change",
                        anchor=item_source,
                    )
                )
                continue
            if name not in index:
                if len(index) < sum(isinstance(b, dict) for b in base):
                    continue  # a base item without a valid name: the schema check reports that one
                known = [n for n in index if isinstance(n, str)]
                near = closest(name, known)
                hint = (
                    f"did you mean '{near}'?"
                    if near
                    else f"{key} in the base blueprint: {listing(known) or 'none'}; "
                    "add the item to the base first, then change it per environment"
                )
                self.findings.append(
                    self._base_map.finding(
                        "BP103",
                        (*item_source, "name"),
                        f"no {key} item named '{name}' in the base blueprint",
                        hint=hint,
                    )
                )
                continue
            i = index[name]
            merged[i] = self.merge_mapping(base[i], item, (key, i), item_source)
        return merged


def apply_environment(document: Document, base: dict[str, Any], environment: str) -> MergedBlueprint:
    """Merge the overlay `environments.<environment>` over the base blueprint data.

    The caller has checked that the environment exists. The result keeps the `environments` key
    of the base so that the merged blueprint is still a complete, valid document.
    """
    base_map = SourceMap(document)
    overlay = base["environments"][environment]
    source: FieldPath = ("environments", environment)
    merger = _Merger(base_map)
    if overlay is None:
        overlay = {}  # `prod:` with nothing under it is an empty overlay
    if not isinstance(overlay, dict):
        # The schema check of the base reports the wrong type; there is nothing to merge.
        return MergedBlueprint(data=base, source_map=base_map)
    allowed = {k: v for k, v in overlay.items() if k not in FIXED_KEYS and k not in ENVIRONMENT_KEYS}
    flag = overlay.get("protected")
    if "protected" in overlay and not isinstance(flag, bool):
        merger.findings.append(
            base_map.finding(
                "BP008",
                (*source, "protected"),
                f"`protected` is true or false, not {flag!r}",
                hint=f"write `protected: true` (or false) under environments.{environment}",
            )
        )
    for key in FIXED_KEYS:
        if key in overlay:
            merger.findings.append(
                base_map.finding(
                    "BP116",
                    (*source, key),
                    f"an environment cannot set `{key}`",
                    hint=f"remove `{key}` from environments.{environment}; it is fixed by the base blueprint",
                    at_key=True,
                )
            )
    data = merger.merge_mapping(base, allowed, (), source)
    source_map = SourceMap(document, merger.replaced, merger.touched)
    return MergedBlueprint(data=data, source_map=source_map, findings=merger.findings)
