"""Azure request bodies checked against Azure's REST API specifications, in Microsoft's generated form.

The fixtures (tests/fixtures/azure_specs/, extracted by scripts/azure_specs.py from Azure/bicep-types-az at
a pinned commit) hold, per resource provider and API version, the request-body types of the resource
types clusterfab plans: objects with their properties and flags, enums as unions of string literals,
string and integer limits, arrays. Two things are done with them here:

- `request_body`: Pulumi's inputs mapped back to the ARM request body. pulumi-azure-native flattens each
  `properties` object into its parent (its SDK follows the specifications' `x-ms-client-flatten`), so a
  key that is not one of an object type's own properties but one of its `properties` child's goes back
  under `properties`, at every level the specification has such a child (the subnets of a virtual
  network, the security rules of a security group, the NICs and IP configurations of a scale set).
- `body_problems`: what the specification rejects in a body: a property it does not have, a value of
  the wrong type, an enum value outside its union, a required property missing, a read-only property
  set. Each problem names the body path (`properties.virtualMachineProfile.priority`) and the reason.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterfab.plan.engine import SECRET, UNKNOWN

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "azure_specs"

# Property flags of the generated types (bicep-types: ObjectTypePropertyFlags; the generated types.md
# writes them out as words: `id` has flags 10 "(ReadOnly, DeployTimeConstant)", `name` 9 "(Required,
# DeployTimeConstant)").
REQUIRED = 1
READ_ONLY = 2

OPAQUE = (UNKNOWN, SECRET)
"""Values the offline plan cannot know (another resource's output, a secret): not checkable here."""


@dataclass(frozen=True)
class Spec:
    """One fixture: the types of one resource provider at one API version."""

    file: str
    types: tuple[dict[str, Any], ...]
    resources: Mapping[str, int]
    samples: Mapping[str, list[dict[str, Any]]]
    source: Mapping[str, Any]

    def body(self, resource_type: str) -> dict[str, Any]:
        """The request-body type of `Microsoft.X/things@version`."""
        return self.types[self.resources[resource_type]]

    def at(self, ref: Mapping[str, str]) -> dict[str, Any]:
        return self.types[int(ref["$ref"].removeprefix("#/"))]


@functools.cache
def spec(file: str) -> Spec:
    data = json.loads((FIXTURES / file).read_text())
    return Spec(
        file=file,
        types=tuple(data["types"]),
        resources=data["resources"],
        samples=data["samples"],
        source=data["source"],
    )


# --- Pulumi's flattened inputs back to the request body -------------------------------------------------


def _object_members(s: Spec, type_: dict[str, Any], value: Any) -> dict[str, Any] | None:
    """The object type a value is checked against: the type itself, the matching member of a
    discriminated object (merged with its base properties), or the only object member of a union."""
    kind = type_["$type"]
    if kind == "ObjectType":
        return type_
    if kind == "DiscriminatedObjectType":
        element = (
            type_["elements"].get(value.get(type_["discriminator"])) if isinstance(value, dict) else None
        )
        extra = s.at(element)["properties"] if element else {}
        return {
            "$type": "ObjectType",
            "name": type_["name"],
            "properties": {**type_["baseProperties"], **extra},
        }
    if kind == "UnionType":
        objects = [
            s.at(e)
            for e in type_["elements"]
            if s.at(e)["$type"] in ("ObjectType", "DiscriminatedObjectType")
        ]
        if len(objects) == 1:
            return _object_members(s, objects[0], value)
    return None


def unflatten(s: Spec, type_: dict[str, Any], value: Any) -> Any:
    """`value` with every flattened `properties` object put back, following `type_`."""
    if type_["$type"] == "ArrayType" and isinstance(value, list):
        return [unflatten(s, s.at(type_["itemType"]), item) for item in value]
    obj = _object_members(s, type_, value)
    if obj is None or not isinstance(value, dict):
        return value
    own = obj.get("properties", {})
    inner_ref = own.get("properties", {}).get("type")
    inner = _object_members(s, s.at(inner_ref), {}) if inner_ref else None
    inner_names = inner.get("properties", {}) if inner else {}
    body: dict[str, Any] = {}
    moved: dict[str, Any] = {}
    for key, item in value.items():
        # An input named as a read-only property of the resource (a VM extension's `type`, which Azure sets
        # to the resource type) is the writable one inside `properties` that pulumi-azure-native flattened
        # (the extension's handler type): the provider takes no input for a read-only property.
        if key in inner_names and (key not in own or own[key].get("flags", 0) & READ_ONLY):
            moved[key] = item
        elif key in own:
            body[key] = unflatten(s, s.at(own[key]["type"]), item)
        elif "additionalProperties" in obj:
            body[key] = unflatten(s, s.at(obj["additionalProperties"]), item)
        else:
            body[key] = item  # unknown: the check names it
    if moved:
        assert inner_ref is not None
        given: dict[str, Any] = body["properties"] if isinstance(body.get("properties"), dict) else {}
        body["properties"] = unflatten(s, s.at(inner_ref), {**given, **moved})
    return body


def request_body_of(s: Spec, resource_type: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The request body of `resource_type` that Pulumi's (flattened) inputs stand for."""
    body = unflatten(s, s.body(resource_type), dict(inputs))
    assert isinstance(body, dict)
    return body


# --- the check --------------------------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(value), type(value).__name__)


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def body_problems(
    s: Spec, type_: dict[str, Any], value: Any, path: str = "", provided: frozenset[str] = frozenset()
) -> list[str]:
    """`<path>: <reason>` for each thing the specification rejects in `value`. `provided`: required
    top-level properties the request gets from elsewhere (the path, the provider)."""
    if value in OPAQUE:
        return []
    kind = type_["$type"]
    if kind in ("ObjectType", "DiscriminatedObjectType"):
        obj = _object_members(s, type_, value)
        assert obj is not None
        return _object_problems(s, obj, value, path, provided)
    if kind == "ArrayType":
        return _array_problems(s, type_, value, path)
    if kind == "UnionType":
        return _union_problems(s, type_, value, path)
    reason = _scalar_problem(type_, value)
    return [f"{path}: {reason}"] if reason else []


FROZEN_ENUMS = frozenset({("HardwareProfile", "vmSize")})
"""Extensible enums whose listed values the specification itself says are no longer kept up to date, so a
value outside them is no typo: VirtualMachineSizeTypes ("The enum data type is currently deprecated and will
be removed by December 23rd 2023. The recommended way to get the list of available sizes is using these
APIs", azure-rest-api-specs compute ComputeRP.json / virtualMachine.json, HardwareProfile.vmSize) lists no
size newer than 2021 (no Dsv5, no ND H100 v5). The catalog's sizes are checked against their own sources."""


def _object_problems(
    s: Spec, obj: dict[str, Any], value: Any, path: str, provided: frozenset[str]
) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object, got {_type_name(value)} {value!r:.60}"]
    own = obj.get("properties", {})
    problems = []
    for key, item in value.items():
        where = _join(path, key)
        if key in own:
            if own[key]["flags"] & READ_ONLY:
                problems.append(f"{where}: read-only (the API sets it; a request must not)")
            elif (obj["name"], key) in FROZEN_ENUMS:
                problems += (
                    [] if isinstance(item, str) else [f"{where}: expected a string, got {_type_name(item)}"]
                )
            else:
                problems += body_problems(s, s.at(own[key]["type"]), item, where)
        elif "additionalProperties" in obj:
            problems += body_problems(s, s.at(obj["additionalProperties"]), item, where)
        else:
            problems.append(f"{where}: not a property of {obj['name']}")
    for key, prop in own.items():
        required = prop["flags"] & REQUIRED and not prop["flags"] & READ_ONLY
        if required and key not in value and key not in provided:
            problems.append(f"{_join(path, key)}: required by {obj['name']}, missing")
    return problems


def _array_problems(s: Spec, type_: dict[str, Any], value: Any, path: str) -> list[str]:
    if not isinstance(value, list):
        return [f"{path}: expected an array, got {_type_name(value)} {value!r:.60}"]
    problems = []
    if len(value) < type_.get("minLength", 0):
        problems.append(f"{path}: {len(value)} items, fewer than the minimum {type_['minLength']}")
    if "maxLength" in type_ and len(value) > type_["maxLength"]:
        problems.append(f"{path}: {len(value)} items, more than the maximum {type_['maxLength']}")
    item_type = s.at(type_["itemType"])
    for i, item in enumerate(value):
        problems += body_problems(s, item_type, item, _join(path, i))
    return problems


def _union_problems(s: Spec, type_: dict[str, Any], value: Any, path: str) -> list[str]:
    members = [s.at(e) for e in type_["elements"]]
    literals = [m["value"] for m in members if m["$type"] == "StringLiteralType"]
    if literals and all(m["$type"] in ("StringLiteralType", "StringType") for m in members):
        # An enum. The specification marks most Azure enums extensible (`modelAsString`: the union
        # then also holds `string`); a value outside the listed ones is a typo or a value this API
        # version does not document, so both kinds are held to their listed values.
        if value in literals:
            return []
        if not isinstance(value, str):
            return [f"{path}: expected a string, got {_type_name(value)} {value!r:.60}"]
        return [f"{path}: {value!r} is not one of {', '.join(literals)}"]
    candidates = [body_problems(s, m, value, path) for m in members]
    if any(not c for c in candidates):
        return []
    return min(candidates, key=len)


def _scalar_problem(type_: dict[str, Any], value: Any) -> str | None:
    kind = type_["$type"]
    if kind == "AnyType":
        return None
    if kind == "StringLiteralType":
        return None if value == type_["value"] else f"{value!r} is not {type_['value']!r}"
    if kind == "BooleanType":
        return (
            None if isinstance(value, bool) else f"expected a boolean, got {_type_name(value)} {value!r:.60}"
        )
    if kind == "IntegerType":
        return _integer_problem(type_, value)
    if kind == "StringType":
        return _string_problem(type_, value)
    return f"no check for a {kind}"


def _integer_problem(type_: dict[str, Any], value: Any) -> str | None:
    # The engine's protobuf numbers are doubles: an integral float is an integer.
    integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not integral:
        return f"expected an integer, got {_type_name(value)} {value!r:.60}"
    if "minValue" in type_ and value < type_["minValue"]:
        return f"{value!r} is below the minimum {type_['minValue']}"
    if "maxValue" in type_ and value > type_["maxValue"]:
        return f"{value!r} is above the maximum {type_['maxValue']}"
    return None


def _string_problem(type_: dict[str, Any], value: Any) -> str | None:
    if not isinstance(value, str):
        return f"expected a string, got {_type_name(value)} {value!r:.60}"
    if len(value) < type_.get("minLength", 0):
        return f"{value!r} is shorter than the minimum length {type_['minLength']}"
    if "maxLength" in type_ and len(value) > type_["maxLength"]:
        return f"{value!r} is longer than the maximum length {type_['maxLength']}"
    if "pattern" in type_ and re.search(type_["pattern"], value) is None:
        return f"{value!r} does not match the pattern {type_['pattern']}"
    return None
