"""The blueprint JSON Schema, generated from the models (editor completion and hover text).

`blueprints/schema/blueprint.v1.json` is this output; a test fails when the file is stale.
Environment overlays get a partial form of the same schema: every field optional except the `name`
that list items merge by, and no `version`, `cloud` or nested `environments`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from clusterfab.blueprint.models import NAMED_LISTS, Blueprint
from clusterfab.blueprint.overlay import FIXED_KEYS

SCHEMA_ID = "https://clusterfab.dev/schema/blueprint.v1.json"


def _retarget(node: Any) -> Any:
    """Point every $ref at the overlay variant of its definition and drop discriminators."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
                out[key] = value + "Overlay"
            elif key == "discriminator":
                continue
            else:
                out[key] = _retarget(value)
        if "oneOf" in out:
            out["anyOf"] = out.pop("oneOf")
        return out
    if isinstance(node, list):
        return [_retarget(item) for item in node]
    return node


Choices = Mapping[tuple[str, str], Sequence[str]]
"""(model, field) -> the values the catalog offers, e.g. ("TpuSliceSpec", "generation") -> [v5e, v5p, v6e]."""


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    """In an overlay `null` removes the base's value: every field accepts it (the schema's text stays
    on the outside, where editors show it)."""
    inner = {k: v for k, v in prop.items() if k not in {"title", "description", "default"}}
    if inner.get("type") == "null" or any(arm.get("type") == "null" for arm in inner.get("anyOf", [])):
        return prop
    outer = {k: v for k, v in prop.items() if k in {"title", "description"}}
    return {**outer, "anyOf": [*inner.get("anyOf", [inner]), {"type": "null"}]}


def blueprint_json_schema(choices: Choices | None = None) -> dict[str, Any]:
    """The JSON Schema; `choices` turn catalog-valued fields into enums (the models keep them open, so
    that a value the catalog lacks is reported by the catalog rules with a did-you-mean).

    Environment overlays are checked as strictly as the CLI checks them: only the fields an overlay
    may set, each of them (but an item's `name`) also `null`; named lists with at least one item;
    environment names that the language allows, and `prod:` with nothing under it.
    """
    schema = Blueprint.model_json_schema()
    defs: dict[str, Any] = schema.setdefault("$defs", {})
    for (model, field), values in (choices or {}).items():
        prop = defs[model]["properties"][field]
        prop["enum"] = list(values)
        prop.pop("pattern", None)
    for name, definition in list(defs.items()):
        partial = _retarget(copy.deepcopy(definition))
        partial.pop("required", None)
        properties = partial.get("properties", {})
        for key, prop in properties.items():
            if key != "name":
                properties[key] = _nullable(prop)
        if "name" in properties:
            partial["required"] = ["name"]
        partial["title"] = f"{definition.get('title', name)} (environment overlay)"
        defs[f"{name}Overlay"] = partial
    fields: dict[str, Any] = {}
    for key, value in schema["properties"].items():
        if key in FIXED_KEYS:
            continue
        prop = _retarget(copy.deepcopy(value))
        if key in NAMED_LISTS:
            prop["minItems"] = 1
        fields[key] = _nullable(prop)
    fields["protected"] = {
        "type": "boolean",
        "description": (
            "Whether the environment protects its stateful resources (file systems, buckets, state "
            "disks) from deletion and replacement; default true for an environment named prod."
        ),
    }
    overlay = {
        "title": "Environment overlay",
        "description": (
            "A partial blueprint deep-merged over the base: list items merge by name, null removes the "
            "base's value."
        ),
        # Keywords for objects ignore null: `prod:` with nothing under it passes, and errors stay specific.
        "type": ["object", "null"],
        "additionalProperties": False,
        "properties": fields,
    }
    environments = schema["properties"]["environments"]
    (pattern,) = environments["patternProperties"]
    environments["patternProperties"] = {pattern: overlay}
    environments["additionalProperties"] = False
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
