"""Check a JSON document against the schema docs/json/schemas documents for it (the CLI's contracts)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema
from referencing import Registry, Resource

from tests.conftest import REPO

SCHEMAS = REPO / "docs" / "json" / "schemas"


@cache
def _registry() -> Registry:
    resources = []
    for path in SCHEMAS.glob("*.schema.json"):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources)


def check_document(document: Any, name: str) -> None:
    """Assert that `document` satisfies `<name>.schema.json` (and that the schema is itself valid)."""
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema, registry=_registry())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
    assert errors == [], errors[:10]
