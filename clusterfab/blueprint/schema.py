"""The blueprint JSON Schema, generated from the models (editor completion and hover text).

`blueprints/schema/blueprint.v1.json` is this output; a test fails when the file is stale.
Environment overlays get a partial form of the same schema: every field optional except the `name`
that list items merge by, and no `version`, `cloud` or nested `environments`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from clusterfab.blueprint.models import Blueprint
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


def blueprint_json_schema(choices: Choices | None = None) -> dict[str, Any]:
    """The JSON Schema; `choices` turn catalog-valued fields into enums (the models keep them open, so
    that a value the catalog lacks is reported by the catalog rules with a did-you-mean)."""
    schema = Blueprint.model_json_schema()
    defs: dict[str, Any] = schema.setdefault("$defs", {})
    for (model, field), values in (choices or {}).items():
        prop = defs[model]["properties"][field]
        prop["enum"] = list(values)
        prop.pop("pattern", None)
    for name, definition in list(defs.items()):
        partial = _retarget(copy.deepcopy(definition))
        partial.pop("required", None)
        if "name" in partial.get("properties", {}):
            partial["required"] = ["name"]
        partial["title"] = f"{definition.get('title', name)} (environment overlay)"
        defs[f"{name}Overlay"] = partial
    properties: dict[str, Any] = {
        key: _retarget(copy.deepcopy(value))
        for key, value in schema["properties"].items()
        if key not in FIXED_KEYS
    }
    properties["protected"] = {
        "type": "boolean",
        "description": (
            "Whether the environment protects its stateful resources (file systems, buckets, state "
            "disks) from deletion and replacement; default true for an environment named prod."
        ),
    }
    overlay = {
        "type": "object",
        "title": "Environment overlay",
        "description": "A partial blueprint deep-merged over the base; list items merge by name.",
        "additionalProperties": False,
        "properties": properties,
    }
    schema["properties"]["environments"]["additionalProperties"] = overlay
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
