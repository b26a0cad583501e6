"""Schema validation: pydantic's errors turned into positioned findings with hints.

pydantic reports a location tuple and an error type; users need the blueprint field, the line that
sets it, what is wrong in their words and how to fix it. Raw pydantic text never reaches the user.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from clusterfab.blueprint.models import Blueprint
from clusterfab.blueprint.sourcemap import SourceMap
from clusterfab.core.findings import FieldPath, Finding
from clusterfab.core.hints import did_you_mean

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


def validate_blueprint(data: Any, source_map: SourceMap) -> tuple[Blueprint | None, list[Finding]]:
    """Validate blueprint data against the models; on failure return the findings."""
    try:
        return Blueprint.model_validate(data), []
    except ValidationError as exc:
        reported = source_map.document.reported
        findings = []
        for error in exc.errors(include_url=False):
            path, _ = _clean_location(tuple(error["loc"]), data)
            if any(path[: len(r)] == r for r in reported):
                continue  # the loader already said what is wrong with this value
            findings.append(_finding(error, data, source_map))
        return None, findings


def describe(value: Any) -> str:
    """A value as a user would recognise it in their YAML, with its kind."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, int):
        return f"{value} (an integer)"
    if isinstance(value, float):
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


def _field_info(path: FieldPath, data: Any) -> FieldInfo | None:
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


def _finding(error: ErrorDetails, data: Any, source_map: SourceMap) -> Finding:
    path, at_key = _clean_location(tuple(error["loc"]), data)
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx", {})
    info = _field_info(path, data)
    about = info.description if info is not None and info.description else ""
    name = path[-1] if path else ""

    if kind == "extra_forbidden":
        allowed = _fields_of(path[:-1], data)
        hint = did_you_mean(str(name), allowed, what="fields allowed here") or "remove it"
        return source_map.finding("BP005", path, f"unknown field '{name}'", hint=hint, at_key=True)

    if kind == "missing":
        hint = f"add `{name}:`" + (f" ({about})" if about else "")
        return source_map.finding(
            "BP006", path, f"missing required field '{name}'", hint=hint, anchor=path[:-1]
        )

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
        hint = did_you_mean(str(value), choices)
        return source_map.finding("BP007", path, f"{describe(value)} is not allowed here", hint=hint)

    if kind in _TYPE_NAMES:
        expected = _TYPE_NAMES[kind]
        hint = _type_hint(kind, value, about)
        where = f"the environment '{name}'" if at_key else ""
        message = (
            f"{where} must be named with a string" if where else f"expected {expected}, got {describe(value)}"
        )
        return source_map.finding("BP008", path, message, hint=hint, at_key=at_key)

    if kind in {"string_pattern_mismatch", "string_too_long", "string_too_short"}:
        subject = "environment name" if at_key else "value"
        hint = about or f"match the pattern {ctx.get('pattern', '')}"
        return source_map.finding(
            "BP009", path, f"{describe(value)} is not a valid {subject}", hint=hint, at_key=at_key
        )

    if kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
        bound = next(iter(ctx.values()), "")
        words = {
            "greater_than": "must be more than",
            "greater_than_equal": "must be at least",
            "less_than": "must be less than",
            "less_than_equal": "must be at most",
        }[kind]
        return source_map.finding("BP009", path, f"{describe(value)} {words} {bound}", hint=about)

    if kind in {"too_short", "too_long"}:
        return source_map.finding("BP009", path, error["msg"].lower(), hint=about)

    # Custom checks (CIDR, mount point) carry their own message.
    return source_map.finding("BP009", path, error["msg"], hint=about)


def _type_hint(kind: str, value: Any, about: str) -> str:
    if kind == "string_type" and isinstance(value, int | float) and not isinstance(value, bool):
        return f'quote it: "{value}" (YAML reads unquoted {value} as a number)'
    if kind in {"int_type", "float_type"} and isinstance(value, str):
        stripped = value.strip()
        if stripped.replace(".", "", 1).isdigit():
            return "remove the quotes: YAML reads a quoted number as a string"
    if kind == "int_type" and isinstance(value, float) and value.is_integer():
        return f"write {int(value)} without a decimal point"
    if kind in {"dict_type", "model_type", "model_attributes_type"} and isinstance(value, list):
        return "write `key: value` lines here, not `- item` lines"
    if kind == "list_type" and isinstance(value, dict):
        return "write `- item` lines here, one per entry"
    if kind == "list_type" and isinstance(value, str):
        return f"write it as a list: [{value}]"
    return about
