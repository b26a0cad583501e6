"""Schema validation: pydantic's errors turned into positioned findings with hints.

pydantic reports a location tuple and an error type; users need the blueprint field, the line that
sets it, what is wrong in their words and how to fix it. Raw pydantic text never reaches the user.
"""

from __future__ import annotations

import copy
import math
import re
import types
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from clusterfab.blueprint.models import NAMED_LISTS, AutoscalingSpec, Blueprint
from clusterfab.blueprint.scheduler import SLURM_TIME_PATTERN
from clusterfab.blueprint.sourcemap import SourceMap
from clusterfab.core.findings import FieldPath, Finding
from clusterfab.core.hints import closest, did_you_mean, listing

_TYPE_NAMES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "literal_error": "one of the listed values",
    "none_required": "nothing (null)",
}


@dataclass(frozen=True)
class SchemaCheck:
    """A blueprint checked against the models, and what can still be checked when it fails.

    On failure the invalid parts are left out (an unknown key, an invalid optional field, a list item
    with an invalid required field): `salvaged` is the rest, validated, for the rules to run on, with
    a source map that renumbers list items back to where they are written. Findings of those rules
    about a left-out part, or one it feeds (`quiet`), would be cascades; the engine drops them.
    """

    blueprint: Blueprint | None
    findings: list[Finding]
    salvaged: Blueprint | None = None
    source_map: SourceMap | None = None
    dropped: tuple[FieldPath, ...] = ()
    quiet: tuple[FieldPath, ...] = ()

    def is_cascade(self, finding: Finding) -> bool:
        """Whether a rule's finding on the salvaged blueprint is about a left-out part."""
        path = finding.path
        return any(path[: len(q)] == q or (path and q[: len(path)] == path) for q in self.quiet)

    @property
    def prices_changed(self) -> bool:
        """Whether a priced item (or the budget) was left out or changed: a budget check would lie."""
        return any(p and p[0] in (*NAMED_LISTS, "budget") for p in self.dropped)


def validate_blueprint(data: Any, source_map: SourceMap) -> tuple[Blueprint | None, list[Finding]]:
    """Validate blueprint data against the models; on failure return the findings."""
    checked = check_schema(data, source_map, salvage=False)
    return checked.blueprint, checked.findings


def check_schema(data: Any, source_map: SourceMap, *, salvage: bool = True) -> SchemaCheck:
    """Validate blueprint data; on failure report every schema error and salvage what is valid."""
    try:
        return SchemaCheck(Blueprint.model_validate(data), [])
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    reported = source_map.document.reported
    near_misses = _near_misses(errors, data)
    findings = []
    for error in errors:
        path, _ = _clean_location(tuple(error["loc"]), data)
        written = source_map.source_path(path)  # an overlay's value is reported where the overlay writes it
        if any(p[: len(r)] == r for r in reported for p in (path, written)):
            continue  # the loader already said what is wrong with this value
        if error["type"] == "missing" and path in near_misses.values():
            continue  # reported as the misspelt key that stands for it
        findings.append(_finding(error, data, source_map, near_misses))
    if not salvage:
        return SchemaCheck(None, findings)
    plan = _salvage_plan(errors, data, near_misses)
    if plan is None:
        return SchemaCheck(None, findings)
    salvaged_data, kept = _apply(data, plan.targets)
    try:
        salvaged = Blueprint.model_validate(salvaged_data)
    except ValidationError:
        return SchemaCheck(None, findings)
    return SchemaCheck(
        None,
        findings,
        salvaged=salvaged,
        source_map=source_map.renumbered(kept),
        dropped=tuple(plan.targets),
        quiet=tuple(plan.quiet),
    )


_OTHER_NAMES = {
    "instance_type": "machine_type",
    "vm_type": "machine_type",
    "vm_size": "machine_type",
    "nodes": "count",
    "node_count": "count",
    "instances": "count",
    "instance_count": "count",
    "replicas": "count",
    "size": "count",
    "scaling": "autoscaling",
    "storage": "attach",
    "mounts": "attach",
    "volumes": "attach",
    "filesystems": "attach",
    "shared_storage": "storage",
    "filesystem": "storage",
    "provider": "cloud",
    "az": "zone",
    "availability_zone": "zone",
    "vpc": "network",
    "tags": "labels",
    "spot": "capacity",
    "purchase_option": "capacity",
    "provisioning_model": "capacity",
    "accelerator_type": "generation",
    "queues": "partitions",
    "size_gib": "capacity_gib",
    "storage_capacity": "capacity_gib",
    "mount_dir": "mount_point",
    "mount_path": "mount_point",
}
"""Names other tools (ParallelCluster, Cluster Toolkit, Terraform providers, Kubernetes) give what a
blueprint names otherwise: an unknown field that is one of them is pointed at ours where ours is
allowed, which spelling similarity alone would not find."""


def _near_misses(errors: list[ErrorDetails], data: Any) -> dict[FieldPath, FieldPath]:
    """Unknown keys that are misspellings of a field the same mapping lacks, or another tool's name for it:
    key path -> field path (`machinetype` or `instance_type` for a missing `machine_type`, `nodegroups`
    for `node_groups`)."""
    found: dict[FieldPath, FieldPath] = {}
    for error in errors:
        if error["type"] != "extra_forbidden":
            continue
        path, _ = _clean_location(tuple(error["loc"]), data)
        parent = path[:-1]
        present = _value_at(data, parent)
        allowed = [f for f in _fields_of(parent, data) if not (isinstance(present, dict) and f in present)]
        near = closest(str(path[-1]), allowed) if path else None
        if near is None and path:
            ours = _OTHER_NAMES.get(str(path[-1]).lower().replace("-", "_"))
            near = ours if ours in allowed else None
        if near is not None:
            found[path] = (*parent, near)
    return found


@dataclass
class _Plan:
    targets: list[FieldPath] = field(default_factory=list)
    quiet: list[FieldPath] = field(default_factory=list)


def _salvage_plan(
    errors: list[ErrorDetails], data: Any, near_misses: dict[FieldPath, FieldPath]
) -> _Plan | None:
    """What to leave out so that the rest validates; None when a required top-level field is broken
    (without a cloud, region or zone no rule can say anything true)."""
    plan = _Plan()
    for error in errors:
        path, at_key = _clean_location(tuple(error["loc"]), data)
        if error["type"] == "extra_forbidden" or at_key:
            target: FieldPath | None = path
            if path in near_misses:
                plan.quiet.append(near_misses[path])
        else:
            target = _removable(path, data)
            if target is None:
                return None
            # A field left out takes its default: what the rules say about its siblings is suspect.
            parent = target[:-1]
            plan.quiet.append(parent if isinstance(target[-1], str) and parent else target)
        if target:
            plan.targets.append(target)
            plan.quiet.append(target)
    # Storage left out: the node groups and slices that attach it would report it unknown.
    for target in list(plan.targets):
        if len(target) == 2 and target[0] == "storage" and isinstance(target[1], int):
            name = _value_at(data, (*target, "name"))
            for key in ("node_groups", "tpu_slices"):
                items = _value_at(data, (key,))
                for i, item in enumerate(items if isinstance(items, list) else []):
                    attach = item.get("attach") if isinstance(item, dict) else None
                    for j, entry in enumerate(attach if isinstance(attach, list) else []):
                        if entry == name:
                            plan.targets.append((key, i, "attach", j))
    return plan


def _removable(path: FieldPath, data: Any) -> FieldPath | None:
    """The smallest part around an invalid value that can be left out: an optional field (it takes
    its default), a list item, or an entry of a free-form mapping (labels)."""
    for cut in range(len(path), 0, -1):
        prefix, last = path[:cut], path[cut - 1]
        if isinstance(last, int):
            return prefix
        owner = _annotation_at(prefix[:-1], data)
        if isinstance(owner, type) and issubclass(owner, BaseModel):
            info = owner.model_fields.get(last)
            if info is None or not info.is_required():
                return prefix
        elif get_origin(owner) is dict:
            return prefix
    return None


def _apply(data: Any, targets: list[FieldPath]) -> tuple[Any, dict[FieldPath, list[int]]]:
    """`data` without the target paths, and for each list that lost items, the indexes it kept."""
    out = copy.deepcopy(data)
    unique = sorted(set(targets), key=lambda p: (-len(p), p[:-1] and str(p[:-1]), _neg(p[-1])))
    unique = [t for t in unique if not any(t[: len(o)] == o for o in unique if len(o) < len(t))]
    kept: dict[FieldPath, list[int]] = {}
    for target in unique:
        parent = _value_at(out, target[:-1])
        last = target[-1]
        if isinstance(parent, dict) and isinstance(last, str):
            parent.pop(last, None)
        elif isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
            indexes = kept.setdefault(target[:-1], list(range(len(parent))))
            del parent[last]
            indexes.pop(last)
    return out, kept


def _neg(segment: str | int) -> int:
    """Sort list items from the last: removing one does not move the ones before it."""
    return -segment if isinstance(segment, int) else 0


def describe(value: Any) -> str:
    """A value as a user would recognise it in their YAML, with its kind."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, int):
        return f"{value} (an integer)"
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan (not a number)"
        if value in (float("inf"), float("-inf")):
            return f"{'-' if value < 0 else ''}.inf (infinity)"
        return f"{value!r} (a number)"
    if isinstance(value, str):
        return f"'{value}' (a string)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _clean_location(loc: tuple[str | int, ...], data: Any) -> tuple[FieldPath, bool]:
    """Drop pydantic's union-tag segments; report whether the error is about a mapping key."""
    path: list[str | int] = []
    node = data
    at_key = False
    for segment in loc:
        if segment == "[key]":
            at_key = True
            continue
        if (
            isinstance(node, dict)
            and isinstance(segment, str)
            and segment not in node
            and node.get("kind") == segment
        ):
            continue  # discriminated union tag (storage kind)
        path.append(segment)
        if isinstance(node, dict):
            node = node.get(segment) if isinstance(segment, str) else None
        elif isinstance(node, list) and isinstance(segment, int) and 0 <= segment < len(node):
            node = node[segment]
        else:
            node = None
    return tuple(path), at_key


def _value_at(data: Any, path: FieldPath) -> Any:
    node = data
    for segment in path:
        if isinstance(node, dict) and isinstance(segment, str):
            node = node.get(segment)
        elif isinstance(node, list) and isinstance(segment, int) and 0 <= segment < len(node):
            node = node[segment]
        else:
            return None
    return node


def _unwrap(annotation: Any, value: Any) -> Any:
    """Strip Optional and pick the arm of a discriminated union that matches `value`'s kind."""
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        arms = [a for a in get_args(annotation) if a is not type(None)]
        if len(arms) == 1:
            return _unwrap(arms[0], value)
        kind = value.get("kind") if isinstance(value, dict) else None
        for arm in arms:
            inner = _unwrap(arm, value)
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                tag = inner.model_fields.get("kind")
                if tag is not None and kind in get_args(tag.annotation):
                    return inner
        return None
    if origin is Annotated:
        return _unwrap(get_args(annotation)[0], value)
    return annotation


def _annotation_at(path: FieldPath, data: Any) -> Any:
    """The (unwrapped) type the models expect at `path`, or None when the path leaves the models."""
    annotation: Any = Blueprint
    for depth, segment in enumerate(path):
        annotation = _unwrap(annotation, _value_at(data, path[:depth]))
        origin = get_origin(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(segment, str):
            info = annotation.model_fields.get(segment)
            if info is None:
                return None
            annotation = info.annotation
        elif origin is list and isinstance(segment, int):
            annotation = get_args(annotation)[0]
        elif origin is dict and isinstance(segment, str):
            annotation = get_args(annotation)[1]
        else:
            return None
    return _unwrap(annotation, _value_at(data, path))


def field_info(path: FieldPath, data: Any) -> FieldInfo | None:
    """The model field that `path` names, if its last segment is a model field."""
    if not path or not isinstance(path[-1], str):
        return None
    owner = _annotation_at(path[:-1], data)
    if isinstance(owner, type) and issubclass(owner, BaseModel):
        return owner.model_fields.get(path[-1])
    return None


def _fields_of(path: FieldPath, data: Any) -> list[str]:
    """Field names allowed in the mapping at `path`."""
    model = _annotation_at(path, data)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return list(model.model_fields)
    return []


def _unknown_field(
    path: FieldPath, data: Any, source_map: SourceMap, near_misses: dict[FieldPath, FieldPath]
) -> Finding:
    name = path[-1] if path else ""
    near = near_misses.get(path)
    if near is not None:
        required = field_info(near, data)
        needed = " (a required field)" if required is not None and required.is_required() else ""
        hint = f"did you mean '{near[-1]}'?{needed}"
    else:
        allowed = _fields_of(path[:-1], data)
        hint = did_you_mean(str(name), allowed, what="fields allowed here") or "remove it"
    return source_map.finding("BP005", path, f"unknown field '{name}'", hint=hint, at_key=True)


def _missing_field(path: FieldPath, about: str, source_map: SourceMap) -> Finding:
    name = path[-1] if path else ""
    if path in source_map.replaced:  # an environment's `null` removed it
        return source_map.finding(
            "BP006",
            path,
            f"the environment removes the required field '{name}' (null)",
            hint=f"give `{name}` a value instead of null, or leave it out of the overlay",
        )
    hint = f"add `{name}:`" + (f" ({about})" if about else "")
    return source_map.finding("BP006", path, f"missing required field '{name}'", hint=hint, anchor=path[:-1])


def _finding(
    error: ErrorDetails, data: Any, source_map: SourceMap, near_misses: dict[FieldPath, FieldPath]
) -> Finding:
    path, at_key = _clean_location(tuple(error["loc"]), data)
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx", {})
    info = field_info(path, data)
    about = info.description if info is not None and info.description else ""
    name = path[-1] if path else ""

    if kind == "extra_forbidden":
        return _unknown_field(path, data, source_map, near_misses)

    if kind == "missing":
        return _missing_field(path, about, source_map)

    if kind == "union_tag_not_found":
        return source_map.finding(
            "BP006",
            (*path, "kind"),
            "missing required field 'kind'",
            hint=f"add `kind:` ({ctx.get('expected_tags', '')})",
            anchor=path,
        )

    if kind == "union_tag_invalid":
        tag = ctx.get("tag", "")
        expected = str(ctx.get("expected_tags", "")).replace("'", "")
        hint = did_you_mean(str(tag), [t.strip() for t in expected.split(",")])
        return source_map.finding("BP007", (*path, "kind"), f"'{tag}' is not a storage kind", hint=hint)

    if kind == "literal_error":
        expected = str(ctx.get("expected", "")).replace("'", "")
        choices = [c.strip() for c in expected.replace(" or ", ", ").split(",") if c.strip()]
        suggestion = closest(str(value), choices)
        hint = f"did you mean '{suggestion}'?" if suggestion else f"use one of: {listing(choices)}"
        return source_map.finding(
            "BP007", path, f"{describe(value)} is not one of: {listing(choices)}", hint=hint
        )

    if kind in _TYPE_NAMES:
        expected = _TYPE_NAMES[kind]
        hint = _mapping_hint(path, value, data) or _type_hint(kind, value, about)
        where = f"the environment '{name}'" if at_key else ""
        message = (
            f"{where} must be named with a string" if where else f"expected {expected}, got {describe(value)}"
        )
        return source_map.finding("BP008", path, message, hint=hint, at_key=at_key)

    return _constraint_finding(error, path, info, source_map, at_key=at_key)


def _constraint_finding(
    error: ErrorDetails, path: FieldPath, info: FieldInfo | None, source_map: SourceMap, *, at_key: bool
) -> Finding:
    """BP009: a value of the right type that breaks the field's constraint (pattern, length, bounds, or a
    custom check)."""
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx", {})
    about = info.description if info is not None and info.description else ""
    if kind in {"string_pattern_mismatch", "string_too_long", "string_too_short"}:
        subject = "environment name" if at_key else "value"
        hint = _fix_hint(value, ctx.get("pattern")) or about or f"match the pattern {ctx.get('pattern', '')}"
        return source_map.finding(
            "BP009", path, f"{describe(value)} is not a valid {subject}", hint=hint, at_key=at_key
        )

    if kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
        bound = next(iter(ctx.values()), "")
        if isinstance(bound, int | float) and not isinstance(bound, bool) and float(bound).is_integer():
            bound = f"{int(bound):,}"
        words = {
            "greater_than": "must be more than",
            "greater_than_equal": "must be at least",
            "less_than": "must be less than",
            "less_than_equal": "must be at most",
        }[kind]
        return source_map.finding(
            "BP009", path, f"{describe(value)} {words} {bound}", hint=_range_hint(info) or about
        )

    if kind == "finite_number":
        return source_map.finding(
            "BP009", path, f"{describe(value)} is not a finite number", hint=_range_hint(info) or about
        )

    if kind in {"too_short", "too_long"}:
        return source_map.finding("BP009", path, error["msg"].lower(), hint=about)

    # Custom checks (CIDR, mount point) carry their own message.
    return source_map.finding("BP009", path, error["msg"], hint=about)


def _fix_hint(value: Any, pattern: Any) -> str:
    """'did you mean ...?' with the nearest value that matches the pattern: the value in the other case
    (`zonal` -> ZONAL), else written as a name (lowercase, each run of other characters one hyphen or
    underscore, starting with a letter, cut to the longest prefix that fits: `My_Cluster` -> my-cluster,
    `US East 1` -> us-east-1); empty when none matches."""
    if not isinstance(value, str) or not isinstance(pattern, str):
        return ""
    for variant in (value.lower(), value.upper()):
        if variant != value and re.fullmatch(pattern, variant):
            return f"did you mean '{variant}'?"
    if pattern == SLURM_TIME_PATTERN:
        return _slurm_time_hint(value)
    if not pattern.startswith(("^[a-z]", "^[a-z_]")):
        return ""  # not a name: a version or a topology is not fixed by rewriting it as one
    for joiner in ("-", "_"):
        written = re.sub(r"[^a-z0-9]+", joiner, value.lower()).strip(joiner)
        for start in (written, written.lstrip(f"0123456789{joiner}")):
            for end in range(len(start), 0, -1):
                candidate = start[:end].rstrip(joiner)
                if candidate != value and re.fullmatch(pattern, candidate):
                    cut = f" (cut to the {len(candidate)} characters that fit)" if end < len(start) else ""
                    return f"did you mean '{candidate}'{cut}?"
    return ""


_DURATION = re.compile(r"\s*(\d+)\s*(d|days?|h|hrs?|hours?|m|mins?|minutes?)\s*", re.IGNORECASE)


def _slurm_time_hint(value: str) -> str:
    """'did you mean 2:00:00?' for a duration in words (`2 hours`, `30min`, `1 day`): Slurm reads a bare
    number as minutes, so the unit has to become the format."""
    match = _DURATION.fullmatch(value)
    if match is None:
        return ""
    amount, unit = int(match[1]), match[2].lower()[0]
    days, hours = divmod(amount, 24) if unit == "h" else (amount, 0)
    # Slurm's documented forms bound the hours of HH:MM:SS by a day: a longer time is D-HH:MM:SS.
    written = str(amount) if unit == "m" else f"{hours}:00:00" if not days else f"{days}-{hours:02d}:00:00"
    return f"did you mean '{written}'? (Slurm times: minutes, HH:MM:SS or D-HH:MM:SS)"


def _range_hint(info: FieldInfo | None) -> str:
    """'use a number from 1 to 10,000' from the field's bounds."""
    if info is None:
        return ""
    low = high = None
    strict = False
    for item in info.metadata:  # pydantic keeps bounds as annotated-types Ge / Gt / Le objects
        if getattr(item, "ge", None) is not None:
            low = item.ge
        elif getattr(item, "gt", None) is not None:
            low, strict = item.gt, True
        elif getattr(item, "le", None) is not None:
            high = item.le

    def show(bound: Any) -> str:
        number = float(bound)
        return f"{int(number):,}" if number.is_integer() else f"{number:g}"

    if low is None or high is None:
        return ""
    if strict:
        return f"use a number above {show(low)} and at most {show(high)}"
    return f"use a number from {show(low)} to {show(high)}"


def _mapping_hint(path: FieldPath, value: Any, data: Any) -> str:
    """How to write a mapping the user wrote as a single value: `capacity: spot` means
    `capacity: {kind: spot}`, `autoscaling: 8` a range."""
    model = _annotation_at(path, data)
    if not (isinstance(model, type) and issubclass(model, BaseModel)) or isinstance(value, dict | list):
        return ""
    name = path[-1] if path else "it"
    kind = model.model_fields.get("kind")
    if kind is not None:
        choices = [str(c) for c in _literal_values(kind.annotation)]
        shown = value if str(value) in choices else f"<{' | '.join(choices)}>" if choices else "..."
        return f"write `{name}: {{kind: {shown}}}`"
    if model is AutoscalingSpec and isinstance(value, int) and not isinstance(value, bool):
        return f"write `{name}: {{min: 0, max: {value}}}`, or `count: {value}` for a fixed size"
    fields = list(model.model_fields)
    return f"write a mapping: `{name}: {{{', '.join(f'{f}: ...' for f in fields[:3])}}}`"


def _literal_values(annotation: Any) -> list[Any]:
    origin = get_origin(annotation)
    if origin is Literal:
        return list(get_args(annotation))
    if origin is Union or origin is types.UnionType or origin is Annotated:
        return [v for arm in get_args(annotation) for v in _literal_values(arm)]
    return []


def _type_hint(kind: str, value: Any, about: str) -> str:
    if kind == "string_type" and isinstance(value, int | float) and not isinstance(value, bool):
        return f'quote it: "{value}" (YAML reads unquoted {value} as a number)'
    if kind in {"int_type", "float_type"} and isinstance(value, str):
        stripped = value.strip()
        if stripped.replace(".", "", 1).isdigit():
            return "remove the quotes: YAML reads a quoted number as a string"
        # `100$`, `$1,000`, `500 USD`: dollars written as prices are (every money field is in USD), or
        # thousands separators; another currency or a unit is not the same number and gets no rewrite.
        number = re.fullmatch(r"\s*\$?\s*(\d{1,3}(,\d{3})+|\d*\.?\d+)\s*(\$|usd|dollars?)?\s*", value, re.I)
        if number is not None:
            plain = number[1].replace(",", "")
            return f"write {plain}: a plain number, without a dollar sign, separators or quotes"
    if kind == "int_type" and isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"write {int(value)} without a decimal point"
    if kind == "int_type" and isinstance(value, float):
        return "write a whole number such as 16 (no decimal point or exponent)"
    if kind in {"dict_type", "model_type", "model_attributes_type"} and isinstance(value, list):
        return "write `key: value` lines here, not `- item` lines"
    if kind == "list_type" and isinstance(value, dict):
        return "write `- item` lines here, one per entry"
    if kind == "list_type" and isinstance(value, str):
        return f"write it as a list: [{value}]"
    return about
