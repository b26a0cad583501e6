"""Kueue and JobSet objects checked against the CRD schemas of the pinned releases (tests/fixtures/crds/,
stored by scripts/crd_schemas.py), offline, with the jsonschema package.

A CRD's openAPIV3Schema is OpenAPI 3.0 with Kubernetes' extensions; before validating, each schema is read
as the API server reads it:
- an object schema with `properties` accepts no other field unless it says
  `x-kubernetes-preserve-unknown-fields` (the server would drop an unknown field, or refuse it under strict
  field validation: a field Kueue never sees is a mistake either way);
- `nullable: true` admits null; `x-kubernetes-int-or-string` admits an integer or a string (quantities);
- `x-kubernetes-embedded-resource` admits apiVersion, kind and metadata;
- `x-kubernetes-list-type: set` refuses duplicate items, `map` duplicate `x-kubernetes-list-map-keys`;
- `metadata` needs a string `name` (the server's ObjectMeta checks are otherwise its own);
- a pattern's flags after its `^` (Go's RE2 takes `^(?i)...`, Python's re only at the start) go first.
`x-kubernetes-validations` (CEL rules) are not evaluated: no CEL interpreter here.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator, ValidationError, validators

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "crds"


def crd_problems(manifest: Mapping[str, Any]) -> list[str]:
    """What the stored CRD schema of the manifest's apiVersion and kind refuses in it, one line per problem
    (`<kind> <namespace/name> <field path>: why`), sorted by field path."""
    metadata = manifest.get("metadata") or {}
    name = "/".join(str(p) for p in (metadata.get("namespace"), metadata.get("name")) if p)
    kind, api_version = str(manifest.get("kind")), str(manifest.get("apiVersion"))
    where = f"{kind} {name}"
    schema = crd_schema(api_version, kind)
    if schema is None:
        return [f"{where}: no stored CRD schema for {kind} in {api_version}"]
    errors = _Validator(schema).iter_errors(dict(manifest))
    found = sorted((".".join(str(p) for p in e.absolute_path), e.message) for e in errors)
    return [f"{where} {path}: {message}" for path, message in found]


def stored_kinds() -> list[tuple[str, str]]:
    """(apiVersion, kind) of every stored schema."""
    return sorted(
        (f"{path.parent.parent.name}/{path.parent.name}", path.stem) for path in FIXTURES.glob("*/*/*.json")
    )


@functools.cache
def crd_schema(api_version: str, kind: str) -> dict[str, Any] | None:
    """The stored schema, as the API server reads it (see the module's docstring); None if none is stored."""
    if "/" not in api_version:
        return None
    group, version = api_version.split("/", 1)
    path = FIXTURES / group / version / f"{kind}.json"
    if not path.is_file():
        return None
    schema = _structural(json.loads(path.read_text()))
    properties = schema.setdefault("properties", {})
    properties["metadata"] = _METADATA
    return schema


_METADATA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def _structural(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_structural(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _structural_child(key, value) for key, value in schema.items()}
    if out.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if out.get("x-kubernetes-int-or-string") is True and "type" not in out and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.get("x-kubernetes-embedded-resource") is True:
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    open_ = out.get("x-kubernetes-preserve-unknown-fields") is True
    if "properties" in out and "additionalProperties" not in out and not open_:
        out["additionalProperties"] = False
    return out


def _structural_child(key: str, value: Any) -> Any:
    """`properties` maps names to schemas; other keywords hold a schema, a list of them, or a plain value."""
    if key == "properties" and isinstance(value, dict):
        return {name: _structural(sub) for name, sub in value.items()}
    if key in ("items", "additionalProperties", "not") and isinstance(value, dict):
        return _structural(value)
    if key in ("anyOf", "allOf", "oneOf") and isinstance(value, list):
        return _structural(value)
    if key == "pattern" and isinstance(value, str):
        return re.sub(r"^\^\(\?([a-zA-Z]+)\)", r"(?\1)^", value)
    return copy.deepcopy(value)


def _list_type(
    validator: Any, list_type: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "array"):
        return
    if list_type == "set":
        keys = [json.dumps(item, sort_keys=True) for item in instance]
        what = "value"
    elif list_type == "map":
        names = schema.get("x-kubernetes-list-map-keys", [])
        keys = [json.dumps({n: item.get(n) for n in names}, sort_keys=True) for item in instance]
        what = "key"
    else:
        return
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            yield ValidationError(f"duplicate {what} {key} in a list of type {list_type}")
        seen.add(key)


_Validator = validators.extend(Draft4Validator, {"x-kubernetes-list-type": _list_type})
