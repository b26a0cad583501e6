"""What changes between two plans: resources created, updated (which properties), replaced, deleted.

Resources are matched by URN, so both plans must be of the same stack (the diff commands plan both
sides with one stack name). Which input changes make a provider replace a resource is catalog data read
from the providers' schemas (`replacements.yaml`). A replacement gives the resource a new id, ARN, self
link and auto-name, so every input elsewhere that carries one of them changes too, and when that input
is one the referencing type replaces on, it is replaced as well, and so on. Replacing or deleting a
stateful (catalog `stateful.yaml`) or protected resource destroys data: those are flagged, and the diff
exits 1 for them (architecture §10.3) unless told otherwise.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import ipaddress
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from clusterfab.catalog import Catalog
from clusterfab.catalog.models import ReplacementRule, ReplaceWhen
from clusterfab.core.vocab import BOOT_DIGEST_TAG
from clusterfab.plan.engine import PlannedResource
from clusterfab.plan.project import Plan

_PROVIDER_PREFIX = "pulumi:providers:"


@dataclass(frozen=True)
class Update:
    """A resource present in both plans whose inputs differ, or that references a replaced one."""

    before: PlannedResource
    after: PlannedResource
    changed: tuple[str, ...]
    """Property paths that differ, in Pulumi's detailed-diff form (`networkInterfaces[3].deviceIndex`),
    including the inputs that carry a replaced resource's id."""
    replaces: tuple[str, ...]
    """The changed paths that make the provider replace the resource, with why where it is not plain."""
    stateful: bool
    """The resource holds data (a catalog stateful type) or is protected."""
    restarts: tuple[str, ...] = ()
    """The changed paths the provider applies by stopping and starting the instance (not replaced)."""

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
    """In-place updates and replacements (`replace` true), by URN."""
    delete: tuple[PlannedResource, ...]
    stateful_types: frozenset[str]

    @property
    def empty(self) -> bool:
        return not (self.create or self.update or self.delete)

    @property
    def updated(self) -> tuple[Update, ...]:
        return tuple(u for u in self.update if not u.replace)

    @property
    def replaced(self) -> tuple[Update, ...]:
        return tuple(u for u in self.update if u.replace)

    def destructive(self) -> list[tuple[PlannedResource, str]]:
        """Stateful or protected resources the change would delete or replace, with why."""
        found: list[tuple[PlannedResource, str]] = []
        for resource in self.delete:
            if resource.type in self.stateful_types or resource.protect:
                found.append((resource, "deleted"))
        for update in self.replaced:
            if update.stateful:
                found.append((update.after, f"replaced (changes {', '.join(update.replaces)})"))
        return found

    def to_json(self) -> dict[str, Any]:
        """The `resources` part of the `clusterfab diff` JSON contract (architecture §5, §10.3)."""
        return {
            "create": [r.urn for r in self.create],
            "update": [
                {"urn": u.urn, "changed": list(u.changed), "replace": u.replace, "stateful": u.stateful}
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


def _restarting(catalog: Catalog, type_: str, changed: Iterable[str]) -> tuple[str, ...]:
    """The changed paths the provider applies to an instance by stopping and starting it."""
    rule = catalog.restarting_updates.get(type_)
    if rule is None:
        return ()
    return tuple(p for p in sorted(changed) if _under(re.sub(r"\[\d+\]", "", p), rule.properties))


def _under(path: str, properties: Iterable[str]) -> bool:
    """Whether `path` is, or lies under, one of `properties` (an `ignore_changes` list, say)."""
    return any(path == prop or path.startswith((f"{prop}.", f"{prop}[")) for prop in properties)


def _dependent_path(resource: PlannedResource, path: str) -> str | None:
    """The input of `resource` that changes when what its `path` refers to is replaced: `path` itself,
    unless the update ignores it. A host that follows the stack ignores its launch script (the bucket's
    copy replaces it) and pins that copy with a digest tag: the tag is what changes, in place."""
    if not _under(path, resource.ignore_changes):
        return path
    tags = resource.inputs.get("tags")
    if isinstance(tags, dict) and BOOT_DIGEST_TAG in tags:
        return f"tags.{BOOT_DIGEST_TAG}"
    return None


# --- references: which inputs carry another resource's made-up outputs -------------------------------

_MIN_TOKEN = 6
"""Shorter made-up values (`mock`) are too common to say which resource an input refers to."""


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, text) of every string in a value; base64 text (user data) is also read decoded."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    elif isinstance(value, str):
        yield path, value
        if len(value) >= 16 and re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", value):
            decoded = None
            with contextlib.suppress(binascii.Error, UnicodeDecodeError):
                decoded = base64.b64decode(value, validate=True).decode()
            if decoded is not None:
                yield path, decoded


def _tokens(resource: PlannedResource, rule: ReplacementRule | None) -> set[str]:
    """The values a replacement of `resource` changes: its id and the outputs the engine made up (its
    auto-name only where the type has a name the provider generates)."""
    made = {resource.id} if resource.id else set()
    for key, value in resource.computed.items():
        if key == "name" and (rule is None or "name" not in rule.replace_on):
            continue
        made |= {text for _, text in _leaves(value)}
    inputs = {text for _, text in _leaves(resource.inputs)}
    return {t for t in made if len(t) >= _MIN_TOKEN and t not in inputs}


def _references(plan: Plan, catalog: Catalog) -> dict[str, list[tuple[str, str]]]:
    """Per URN, the (input path, referenced URN) pairs: the inputs that carry another resource's id."""
    owners: dict[str, set[str]] = {}
    for resource in plan.resources:
        if resource.custom:
            for token in _tokens(resource, catalog.replacements.types.get(resource.type)):
                owners.setdefault(token, set()).add(resource.urn)
    unique = {token: next(iter(urns)) for token, urns in owners.items() if len(urns) == 1}
    if not unique:
        return {}
    pattern = re.compile(
        r"(?<![\w-])(" + "|".join(re.escape(t) for t in sorted(unique, key=len, reverse=True)) + r")(?![\w-])"
    )
    found: dict[str, list[tuple[str, str]]] = {}
    for resource in plan.resources:
        pairs = {
            (path, unique[match])
            for path, text in _leaves(resource.inputs)
            for match in pattern.findall(text)
            if unique[match] != resource.urn
        }
        found[resource.urn] = sorted(pairs)
    return found


# --- replacement rules -------------------------------------------------------------------------------


def _bare(path: str) -> str:
    """`networkInterfaces[0].subnetwork` -> `networkInterfaces.subnetwork` (rules have no indexes)."""
    return re.sub(r"\[\d+\]", "", path)


def _covers(rule_path: str, path: str) -> bool:
    bare = _bare(path)
    return bare == rule_path or bare.startswith(rule_path + ".") or rule_path.startswith(bare + ".")


def _value(inputs: dict[str, Any], dotted: str) -> Any:
    value: Any = inputs
    for part in dotted.split("."):
        while isinstance(value, list) and value:
            value = value[0]
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _ordered(value: Any) -> tuple[int, ...] | float | None:
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)*", value):
        return tuple(int(p) for p in value.split("."))
    return None


def _conditional(when: ReplaceWhen, before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """Why a change of `when.property` replaces the resource, or None when it does not."""
    old, new = _value(before, when.property), _value(after, when.property)
    if when.when == "always":
        return when.property
    if when.when == "kind_changes":
        return when.property if (old is None) != (new is None) else None
    if when.when == "flag":
        return f"{when.property} ({when.flag} is true)" if when.flag and _value(after, when.flag) else None
    if when.when == "decrease":
        low, high = _ordered(new), _ordered(old)
        if type(low) is type(high) and low is not None and high is not None and low < high:  # type: ignore[operator]
            return f"{when.property} ({old} -> {new})"
        return None
    try:
        grows = ipaddress.ip_network(str(old)).subnet_of(ipaddress.ip_network(str(new)))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        grows = False
    return None if grows else f"{when.property} ({old} -> {new})"


def _replacing(
    rule: ReplacementRule | None, before: dict[str, Any], after: dict[str, Any], paths: dict[str, str]
) -> list[str]:
    """The changed paths that replace the resource; `paths` maps each changed path to how it is shown."""
    if rule is None or rule.replace_on_any:
        # No rule for the type: a missing rule must not mean "never replaced" (a test checks coverage).
        return list(paths.values())
    found = [shown for path, shown in paths.items() if any(_covers(p, path) for p in rule.replace_on)]
    for when in rule.replace_when:
        if any(_covers(when.property, path) for path in paths):
            why = _conditional(when, before, after)
            if why is not None and why not in found:
                found.append(why)
    return found


# --- the diff ----------------------------------------------------------------------------------------


def _inherited(
    resource: PlannedResource,
    old: dict[str, PlannedResource],
    new: dict[str, PlannedResource],
    catalog: Catalog,
) -> dict[str, str]:
    """The properties `resource` leaves unset and takes from its provider resource, where the provider's
    value changed (a region moved on the provider moves every resource that does not name its own)."""
    rules = catalog.replacements.types
    rule = rules.get(resource.type)
    provider_urn = (resource.provider or "").rsplit("::", 1)[0]
    if rule is None or provider_urn not in old or provider_urn not in new:
        return {}
    provider_rule = rules.get(new[provider_urn].type)
    handed = provider_rule.inherited if provider_rule else {}
    before, after = old[provider_urn].inputs, new[provider_urn].inputs
    return {
        prop: f"{prop} (from provider {new[provider_urn].name})"
        for source, prop in handed.items()
        if prop in rule.inherits and prop not in resource.inputs and before.get(source) != after.get(source)
    }


def diff_plans(before: Plan, after: Plan, catalog: Catalog) -> PlanDiff:
    """The changes that turn `before` into `after` (both plans of the same stack)."""
    old, new = before.by_urn(), after.by_urn()
    create = tuple(new[urn] for urn in sorted(new.keys() - old.keys()))
    delete = tuple(old[urn] for urn in sorted(old.keys() - new.keys()))
    common = sorted(old.keys() & new.keys())
    rules = catalog.replacements.types
    direct: dict[str, dict[str, str]] = {}
    for urn in common:
        ignored = new[urn].ignore_changes
        direct[urn] = {
            p: p for p in changed_paths(old[urn].inputs, new[urn].inputs) if not _under(p, ignored)
        }
        direct[urn].update(_inherited(new[urn], old, new, catalog))
    references = _references(after, catalog)
    replaced: dict[str, list[str]] = {}
    dependent: dict[str, dict[str, str]] = {urn: {} for urn in common}
    progress = True
    while progress:  # a replacement may replace what references it: run until nothing more is replaced
        progress = False
        for urn in common:
            for path, target in references.get(urn, []):
                shown_path = _dependent_path(new[urn], path) if target in replaced else None
                if shown_path is not None:
                    dependent[urn].setdefault(shown_path, f"{shown_path} ({new[target].name} is replaced)")
            shown = {**dependent[urn], **direct[urn]}
            if urn in replaced or not new[urn].custom or not shown:
                continue
            why = _replacing(rules.get(new[urn].type), old[urn].inputs, new[urn].inputs, shown)
            if why:
                replaced[urn] = why
                progress = True
    for urn in replaced:  # with every reference known now, say all of why
        shown = {**dependent[urn], **direct[urn]}
        replaced[urn] = _replacing(rules.get(new[urn].type), old[urn].inputs, new[urn].inputs, shown)
    updates = [
        Update(
            before=old[urn],
            after=new[urn],
            changed=tuple(sorted({**dependent[urn], **direct[urn]})),
            replaces=tuple(replaced.get(urn, ())),
            stateful=new[urn].type in catalog.stateful_types or new[urn].protect or old[urn].protect,
            # A replaced resource's new id changes the input as surely as an edit does.
            restarts=()
            if urn in replaced
            else _restarting(catalog, new[urn].type, {**dependent[urn], **direct[urn]}),
        )
        for urn in common
        if direct[urn] or dependent[urn]
    ]
    return PlanDiff(
        create=create, update=tuple(updates), delete=delete, stateful_types=frozenset(catalog.stateful_types)
    )
