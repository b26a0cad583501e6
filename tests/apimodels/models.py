"""The clouds' own API models, read from the packages that ship them, resolved to one field's constraints.

- AWS: botocore's service models (`ec2`, `fsx`, `secretsmanager`, ...): a path starts at a shape and walks
  its members, `Shape.Member.Member`.
- Google: the discovery documents google-api-python-client ships (`compute.v1`, `tpu.v2`, ...): a path
  starts at a schema and walks its properties.
- Google Managed Lustre has no discovery document in that package; its API model is the protobuf of
  google-cloud-lustre (`lustre.v1`): a path starts at a message and walks its fields.

In every path `[]` steps into a list's items, `{}` into a map's values and `{key}` to a map's keys.
"""

from __future__ import annotations

import functools
import html
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Kind = Literal["string", "integer", "number", "boolean", "list", "map", "structure", "any"]

AWS_SERVICES = frozenset(
    {
        "ec2",
        "autoscaling",
        "fsx",
        "iam",
        "s3",
        "budgets",
        "ce",
        "secretsmanager",
        "logs",
        "dlm",
        "rds",
        "eks",
        "kms",
    }
)
GOOGLE_DOCUMENTS = frozenset(
    {
        "compute.v1",
        "tpu.v2",
        "file.v1",
        "storage.v1",
        "iam.v1",
        "cloudresourcemanager.v1",
        "servicenetworking.v1",
        "billingbudgets.v1",
        "monitoring.v3",
        "secretmanager.v1",
        "sqladmin.v1",
        "container.v1",
    }
)
PROTO_APIS = frozenset({"lustre.v1"})


class UnknownFieldError(LookupError):
    """A mapping names a shape, schema or field the API model does not have."""


@dataclass(frozen=True)
class Field:
    """What an API model says about one field: its kind and the constraints it states as data."""

    api: str
    path: str
    kind: Kind
    enum: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    documentation: str = ""
    """The field's own documentation, markup stripped and whitespace collapsed."""


def plain(text: str) -> str:
    """Documentation text without HTML tags and with runs of whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


_STEP = re.compile(r"^(?P<name>[^\[{]*)(?P<suffix>(\[\]|\{\}|\{key\})*)$")


def _steps(path: str) -> list[str]:
    """`A.b[].c{}` -> ['A', 'b', '[]', 'c', '{}']."""
    steps: list[str] = []
    for part in path.split("."):
        match = _STEP.match(part)
        if match is None:
            raise UnknownFieldError(f"malformed path segment {part!r} in {path!r}")
        if match["name"]:
            steps.append(match["name"])
        steps.extend(re.findall(r"\[\]|\{\}|\{key\}", match["suffix"]))
    return steps


def field(api: str, path: str) -> Field:
    """The field at `path` of `api` (a botocore service, a discovery document or a proto API)."""
    return _field(api, path)


@functools.cache
def _field(api: str, path: str) -> Field:
    if api in AWS_SERVICES:
        return _botocore_field(api, path)
    if api in GOOGLE_DOCUMENTS:
        return _discovery_field(api, path)
    if api in PROTO_APIS:
        return _proto_field(api, path)
    raise UnknownFieldError(
        f"no API model {api!r} (known: {sorted(AWS_SERVICES | GOOGLE_DOCUMENTS | PROTO_APIS)})"
    )


# --- botocore ---------------------------------------------------------------------------------------


@functools.cache
def _botocore_model(service: str) -> Any:
    import botocore.session  # type: ignore[import-untyped]

    return botocore.session.get_session().get_service_model(service)


_BOTOCORE_KINDS: dict[str, Kind] = {
    "string": "string",
    "integer": "integer",
    "long": "integer",
    "double": "number",
    "float": "number",
    "boolean": "boolean",
    "list": "list",
    "map": "map",
    "structure": "structure",
    "timestamp": "string",
    "blob": "string",
}


def _botocore_field(service: str, path: str) -> Field:
    from botocore.model import NoShapeFoundError  # type: ignore[import-untyped]

    first, *rest = _steps(path)
    try:
        shape = _botocore_model(service).shape_for(first)
    except NoShapeFoundError as exc:
        raise UnknownFieldError(f"{service}: no shape {first!r}") from exc
    documentation = shape.documentation
    for step in rest:
        if step == "[]" and shape.type_name == "list":
            shape = shape.member
        elif step == "{}" and shape.type_name == "map":
            shape = shape.value
        elif step == "{key}" and shape.type_name == "map":
            shape = shape.key
        elif shape.type_name == "structure" and step in shape.members:
            shape = shape.members[step]
            documentation = shape.documentation
            continue
        else:
            raise UnknownFieldError(f"{service}: {path}: {shape.name} ({shape.type_name}) has no {step!r}")
        documentation = shape.documentation or documentation
    meta = shape.metadata
    kind = _BOTOCORE_KINDS[shape.type_name]
    sized = kind in ("string", "list", "map")
    return Field(
        api=service,
        path=path,
        kind=kind,
        enum=tuple(meta["enum"]) if meta.get("enum") else None,
        minimum=None if sized else meta.get("min"),
        maximum=None if sized else meta.get("max"),
        min_length=meta.get("min") if sized else None,
        max_length=meta.get("max") if sized else None,
        pattern=meta.get("pattern"),
        documentation=plain(documentation or ""),
    )


# --- Google discovery documents ---------------------------------------------------------------------


@functools.cache
def _discovery(name: str) -> dict[str, Any]:
    import googleapiclient  # type: ignore[import-untyped]

    folder = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents"
    document: dict[str, Any] = json.loads((folder / f"{name}.json").read_text())
    return document


def discovery_revision(name: str) -> str:
    return str(_discovery(name)["revision"])


_DISCOVERY_KINDS: dict[str, Kind] = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "array": "list",
    "any": "any",
}


def _schema(document: str, node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = node["$ref"]
        schemas = _discovery(document)["schemas"]
        if ref not in schemas:
            raise UnknownFieldError(f"{document}: no schema {ref!r}")
        node = {**schemas[ref], "description": node.get("description") or schemas[ref].get("description")}
    return node


def _discovery_kind(node: dict[str, Any]) -> Kind:
    if node.get("type") == "object" or "properties" in node:
        return "map" if "additionalProperties" in node and "properties" not in node else "structure"
    if node.get("type") == "string" and node.get("format") in ("int64", "uint64"):
        return "integer"  # JSON carries 64-bit integers as strings
    return _DISCOVERY_KINDS[node["type"]]


def _discovery_field(document: str, path: str) -> Field:
    first, *rest = _steps(path)
    schemas = _discovery(document)["schemas"]
    if first not in schemas:
        raise UnknownFieldError(f"{document}: no schema {first!r}")
    node = _schema(document, schemas[first])
    for step in rest:
        if step == "[]" and node.get("type") == "array":
            inner = node["items"]
        elif step == "{}" and "additionalProperties" in node:
            inner = node["additionalProperties"]
        elif step == "{key}" and "additionalProperties" in node:
            inner = {"type": "string"}
        elif step in node.get("properties", {}):
            inner = node["properties"][step]
        else:
            raise UnknownFieldError(
                f"{document}: {path}: no {step!r} in {sorted(node.get('properties', {}))}"
            )
        node = _schema(document, inner) if "$ref" in inner else {**inner}
        if "description" not in node and step in ("[]", "{}"):
            node["description"] = ""
    return Field(
        api=document,
        path=path,
        kind=_discovery_kind(node),
        enum=tuple(node["enum"]) if "enum" in node else None,
        minimum=float(node["minimum"]) if "minimum" in node else None,
        maximum=float(node["maximum"]) if "maximum" in node else None,
        pattern=node.get("pattern"),
        documentation=plain(node.get("description", "")),
    )


# --- protobuf (google-cloud-lustre) -----------------------------------------------------------------

_PROTO_KINDS: dict[int, Kind] = {
    1: "number",  # double
    2: "number",  # float
    3: "integer",  # int64
    4: "integer",  # uint64
    5: "integer",  # int32
    8: "boolean",
    9: "string",
    11: "structure",  # message
    13: "integer",  # uint32
    14: "string",  # enum, by name
}


@functools.cache
def _proto_types(api: str) -> Any:
    if api == "lustre.v1":
        from google.cloud.lustre_v1 import types

        return types
    raise UnknownFieldError(api)


def _attribute_docs(doc: str) -> dict[str, str]:
    """The `Attributes:` section of a generated proto-plus class docstring, per field."""
    docs: dict[str, str] = {}
    current = None
    for line in doc.splitlines():
        header = re.match(r"^        (\w+) \(.*\):\s*$", line)
        if header:
            current = header[1]
            docs[current] = ""
        elif current and line.startswith("            "):
            docs[current] += " " + line.strip()
    return {name: plain(text.replace("``", "")) for name, text in docs.items()}


def _proto_field(api: str, path: str) -> Field:
    first, *rest = _steps(path)
    message = getattr(_proto_types(api), first, None)
    if message is None:
        raise UnknownFieldError(f"{api}: no message {first!r}")
    descriptor, documentation, field_descriptor = message.pb().DESCRIPTOR, "", None
    repeated = False
    for step in rest:
        if step in ("{}", "{key}") and descriptor is not None and descriptor.GetOptions().map_entry:
            field_descriptor = descriptor.fields_by_name["value" if step == "{}" else "key"]
        elif step == "[]" and repeated:
            pass
        else:
            snake = re.sub(r"(?<!^)(?=[A-Z])", "_", step).lower()
            if descriptor is None or snake not in descriptor.fields_by_name:
                raise UnknownFieldError(f"{api}: {path}: no field {step!r}")
            field_descriptor = descriptor.fields_by_name[snake]
            documentation = _attribute_docs(message.__doc__ or "").get(snake, "")
            nested = field_descriptor.message_type
            message = getattr(message, nested.name, None) if nested is not None else None
        assert field_descriptor is not None
        descriptor = field_descriptor.message_type
        repeated = step not in ("[]", "{}", "{key}") and field_descriptor.label == 3
    if field_descriptor is None:
        return Field(api=api, path=path, kind="structure")
    enum = field_descriptor.enum_type
    if descriptor is not None and descriptor.GetOptions().map_entry:
        kind: Kind = "map"
    elif repeated:
        kind = "list"
    else:
        kind = _PROTO_KINDS[field_descriptor.type]
    return Field(
        api=api,
        path=path,
        kind=kind,
        enum=tuple(v.name for v in enum.values) if enum else None,
        documentation=documentation,
    )
