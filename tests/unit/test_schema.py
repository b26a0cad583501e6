"""The exported JSON Schema, and the mapping of pydantic errors to findings with hints."""

from __future__ import annotations

import json

from clusterfab.blueprint.schema import blueprint_json_schema
from clusterfab.catalog import load_catalog, schema_choices
from clusterfab.rules.engine import validate_bytes
from tests.conftest import REPO

SCHEMA_FILE = REPO / "blueprints" / "schema" / "blueprint.v1.json"


def test_schema_file_is_not_stale() -> None:
    generated = json.dumps(blueprint_json_schema(schema_choices(load_catalog())), indent=2) + "\n"
    assert SCHEMA_FILE.read_text() == generated, (
        "blueprints/schema/blueprint.v1.json is stale; regenerate it with "
        "`uv run clusterfab schema > blueprints/schema/blueprint.v1.json`"
    )


def test_every_field_has_a_description() -> None:
    schema = blueprint_json_schema()
    models = {name: d for name, d in schema["$defs"].items() if not name.endswith("Overlay")}
    models["Blueprint"] = schema
    for name, model in models.items():
        for field, spec in model.get("properties", {}).items():
            assert spec.get("description"), f"{name}.{field} has no description"


def test_overlay_schema_needs_only_names() -> None:
    schema = blueprint_json_schema()
    overlay = schema["properties"]["environments"]["additionalProperties"]
    assert "cloud" not in overlay["properties"]
    assert "version" not in overlay["properties"]
    assert schema["$defs"]["NodeGroupSpecOverlay"]["required"] == ["name"]
    assert "required" not in schema["$defs"]["CapacitySpecOverlay"]


def _findings(body: str) -> list[tuple[str, str, str, str]]:
    """The schema findings (BP0xx) of a blueprint with `body` under a valid head."""
    head = "version: 1\nname: tt\ncloud: aws\nregion: us-east-1\nzone: use1-az6\n"
    result = validate_bytes((head + body).encode(), "t.yaml")
    return [(f.code, f.field, f.message, f.hint) for f in result.findings if f.code < "BP100"]


def test_unquoted_version_gets_a_quoting_hint() -> None:
    assert _findings("software: {cuda: 12.10}\n") == [
        (
            "BP008",
            "software.cuda",
            "expected a string, got 12.1 (a number)",
            'quote it: "12.1" (YAML reads unquoted 12.1 as a number)',
        ),
    ]


def test_unknown_storage_kind_lists_the_kinds() -> None:
    assert _findings("storage: [{name: s, kind: nfs, capacity_gib: 1}]\n") == [
        ("BP007", "storage[0].kind", "'nfs' is not a storage kind", "use one of: lustre, filestore"),
    ]


def test_field_of_a_discriminated_storage_kind_is_found_for_did_you_mean() -> None:
    assert _findings("storage: [{name: s, kind: filestore, capacity_gib: 1024, tierr: ZONAL}]\n") == [
        ("BP005", "storage[0].tierr", "unknown field 'tierr'", "did you mean 'tier'?"),
    ]


def test_list_where_a_mapping_belongs() -> None:
    assert _findings("budget: [1, 2]\n") == [
        (
            "BP008",
            "budget",
            "expected a mapping, got a list",
            "write `key: value` lines here, not `- item` lines",
        ),
    ]


def test_missing_required_field_names_it_with_its_description() -> None:
    ((code, field, message, hint),) = _findings("tpu_slices: [{name: t, topology: 2x2x1}]\n")
    assert (code, field, message) == (
        "BP006",
        "tpu_slices[0].generation",
        "missing required field 'generation'",
    )
    assert (
        hint
        == "add `generation:` (TPU generation, e.g. v5p or v6e (Trillium); `clusterfab catalog` lists them.)"
    )
