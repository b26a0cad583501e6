"""The exported JSON Schema, and the mapping of pydantic errors to findings with hints."""

from __future__ import annotations

import json

import jsonschema
import pytest
from ruamel.yaml import YAML

from clusterfab.blueprint.schema import blueprint_json_schema
from clusterfab.catalog import load_catalog, schema_choices
from clusterfab.load import load_bytes
from tests.conftest import REPO
from tests.factories import TODAY

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
    environments = schema["properties"]["environments"]
    assert environments["additionalProperties"] is False
    (overlay,) = environments["patternProperties"].values()
    assert "cloud" not in overlay["properties"]
    assert "version" not in overlay["properties"]
    assert schema["$defs"]["NodeGroupSpecOverlay"]["required"] == ["name"]
    assert "required" not in schema["$defs"]["CapacitySpecOverlay"]


def _findings(body: str) -> list[tuple[str, str, str, str]]:
    """The schema findings (BP0xx) of a blueprint with `body` under a valid head."""
    head = "version: 1\nname: tt\ncloud: aws\nregion: us-east-1\nzone: use1-az6\n"
    result = load_bytes((head + body).encode(), "t.yaml")
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


OVERLAY_CASES = [
    # (overlay under environments.dev, valid?)
    ("{}", True),
    ("", True),  # `dev:` with nothing under it
    ("{labels: null, budget: null}", True),
    ("{node_groups: [{name: trainers, count: 2, capacity: null}]}", True),
    ("{storage: null, node_groups: [{name: trainers, attach: []}]}", True),
    ("{foo: 1}", False),
    ("{node_groups: [{name: trainers, cont: 2}]}", False),
    ("{node_groups: [{count: 2}]}", False),
    ("{node_groups: [{name: trainers, capacity: {kind: spto}}]}", False),
    ("{storage: [{name: datasets, kind: nfs}]}", False),
    ("{storage: []}", False),
    ("{budget: {max_hourly_usd: lots}}", False),
    ("{cloud: gcp}", False),
]


@pytest.mark.parametrize(("overlay", "valid"), OVERLAY_CASES, ids=[c for c, _ in OVERLAY_CASES])
def test_editor_schema_checks_overlays_as_strictly_as_the_cli(overlay: str, valid: bool) -> None:
    text = (REPO / "blueprints" / "examples" / "aws-p5-efa-fsx.yaml").read_text()
    head = text[: text.index("environments:")]
    blueprint = f"{head}environments:\n  dev: {overlay}\n"
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    schema_errors = [e.message for e in validator.iter_errors(YAML(typ="safe").load(blueprint))]
    cli = load_bytes(blueprint.encode(), "bp.yaml", today=TODAY)
    # What a JSON Schema can express: the schema findings and the overlay's own structure.
    cli_errors = [f for f in cli.findings if f.code < "BP100" or f.code in {"BP116", "BP136"}]
    assert (schema_errors == [], cli_errors == []) == (valid, valid), (schema_errors, cli_errors)


def test_editor_schema_refuses_environment_names_the_cli_refuses() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    data = YAML(typ="safe").load((REPO / "blueprints" / "examples" / "aws-p5-efa-fsx.yaml").read_text())
    data["environments"] = {"Dev": {}}
    assert [e.message for e in validator.iter_errors(data)] == [
        "'Dev' does not match any of the regexes: '^[a-z][a-z0-9-]{0,30}$'"
    ]


def test_one_schema_error_does_not_hide_the_rest() -> None:
    # An unknown key, and three rule errors in the valid rest: all four in one pass, no cascade.
    findings = load_bytes(
        b"""version: 1
name: all-at-once
cloud: aws
region: us-east-1
zone: use1-az6
node_groups:
  - name: trainers
    machine_type: p5.48xlarge
    count: 2
    capcity: {kind: spot}
    attach: [scrach]
  - name: eval
    machinetype: p5.48xlarge
    count: 1
  - name: trainers
    machine_type: p5.48xlarge
    count: 1
    capacity: {kind: capacity_block}
storage:
  - {name: scratch, kind: lustre, deployment: scratch, capacity_gib: 1200}
""",
        "bp.yaml",
        today=TODAY,
    ).findings
    assert [(f.code, f.field, f.line, f.column, f.hint) for f in findings if f.severity.value == "error"] == [
        ("BP005", "node_groups[0].capcity", 10, 5, "did you mean 'capacity'?"),
        ("BP102", "node_groups[0].attach[0]", 11, 14, "did you mean 'scratch'?"),
        ("BP005", "node_groups[1].machinetype", 13, 5, "did you mean 'machine_type'? (a required field)"),
        ("BP101", "node_groups[2].name", 15, 11, "names identify resources; give each item its own"),
        (
            "BP105",
            "node_groups[2].capacity.reservation",
            18,
            22,
            "add `reservation: cr-0123456789abcdef0` under capacity",
        ),
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "cloud: AWS\n",
            ("BP007", "cloud", "'AWS' (a string) is not one of: aws, gcp, azure", "did you mean 'aws'?"),
        ),
        (
            "node_groups: [{name: g, machine_type: p5.48xlarge, count: 2, capacity: spot}]\n",
            (
                "BP008",
                "node_groups[0].capacity",
                "expected a mapping, got 'spot' (a string)",
                "write `capacity: {kind: spot}`",
            ),
        ),
        (
            "node_groups: [{name: g, machine_type: p5.48xlarge, autoscaling: 8}]\n",
            (
                "BP008",
                "node_groups[0].autoscaling",
                "expected a mapping, got 8 (an integer)",
                "write `autoscaling: {min: 0, max: 8}`, or `count: 8` for a fixed size",
            ),
        ),
        (
            "node_groups: [{name: g, machine_type: p5.48xlarge, count: 2, fabric: EFA}]\n",
            (
                "BP007",
                "node_groups[0].fabric",
                "'EFA' (a string) is not one of: auto, none, efa, gpudirect-tcpx, gpudirect-tcpxo, rdma, "
                "infiniband",
                "did you mean 'efa'?",
            ),
        ),
        (
            "storage: [{name: s, kind: filestore, tier: zonal, capacity_gib: 1024}]\n",
            ("BP009", "storage[0].tier", "'zonal' (a string) is not a valid value", "did you mean 'ZONAL'?"),
        ),
        (
            "node_groups: [{name: g, machine_type: p5.48xlarge, count: 1e29}]\n",
            (
                "BP008",
                "node_groups[0].count",
                "expected an integer, got 1e+29 (a number)",
                "write a whole number such as 16 (no decimal point or exponent)",
            ),
        ),
        (
            "node_groups: [{name: g, machine_type: p5.48xlarge, count: 100000000000000000000}]\n",
            (
                "BP009",
                "node_groups[0].count",
                "100000000000000000000 (an integer) must be at most 10,000",
                "use a number from 1 to 10,000",
            ),
        ),
        (
            "budget: {max_hourly_usd: .inf}\n",
            (
                "BP009",
                "budget.max_hourly_usd",
                ".inf (infinity) is not a finite number",
                "use a number above 0 and at most 100,000,000",
            ),
        ),
        (
            "budget: {max_monthly_usd: .nan}\n",
            (
                "BP009",
                "budget.max_monthly_usd",
                ".nan (not a number) is not a finite number",
                "use a number above 0 and at most 73,000,000,000",
            ),
        ),
        (
            'budget: {max_hourly_usd: "$1,000"}\n',
            (
                "BP008",
                "budget.max_hourly_usd",
                "expected a number, got '$1,000' (a string)",
                "write 1000: a plain number, without a dollar sign, separators or quotes",
            ),
        ),
        (
            'budget: {max_hourly_usd: "€100"}\n',
            (
                "BP008",
                "budget.max_hourly_usd",
                "expected a number, got '€100' (a string)",
                "Most the cluster may cost per hour at full size.",  # not dollars: no number to offer
            ),
        ),
    ],
    ids=[
        "cloud-case",
        "capacity-scalar",
        "autoscaling-scalar",
        "enum-case",
        "tier-case",
        "1e29",
        "huge-int",
        "inf-budget",
        "nan-budget",
        "dollars",
        "euros",
    ],
)
def test_hints_say_how_to_fix(body: str, expected: tuple[str, str, str, str]) -> None:
    head = "version: 1\nname: tt\nregion: us-east-1\nzone: use1-az6\n"
    head += "" if body.startswith("cloud") else "cloud: aws\n"
    result = load_bytes((head + body).encode(), "t.yaml", today=TODAY)
    assert [(f.code, f.field, f.message, f.hint) for f in result.findings if f.code < "BP100"] == [expected]


@pytest.mark.parametrize(
    ("name", "region", "group", "field", "hint"),
    [
        ("My_Cluster", "us-east-1", "g", "name", "did you mean 'my-cluster'?"),
        ("'my cluster'", "us-east-1", "g", "name", "did you mean 'my-cluster'?"),
        ("-llm", "us-east-1", "g", "name", "did you mean 'llm'?"),
        (
            "a" * 40,
            "us-east-1",
            "g",
            "name",
            f"did you mean '{'a' * 31}' (cut to the 31 characters that fit)?",
        ),
        ("llm", "US East 1", "g", "region", "did you mean 'us-east-1'?"),
        ("llm", "us-east-1", "Trainers_A", "node_groups[0].name", "did you mean 'trainers-a'?"),
        # Nothing written as a name matches: the field's own words say what would.
        (
            "x",
            "us-east-1",
            "g",
            "name",
            "Cluster name: lowercase letters, digits and hyphens, 2-31 characters; prefix of every resource "
            "name.",
        ),
    ],
)
def test_a_name_that_does_not_match_is_suggested_written_as_one(
    name: str, region: str, group: str, field: str, hint: str
) -> None:
    body = (
        f"version: 1\nname: {name}\ncloud: aws\nregion: {region}\nzone: use1-az6\n"
        f"node_groups: [{{name: {group}, machine_type: p5.48xlarge, count: 2}}]\n"
    )
    result = load_bytes(body.encode(), "t.yaml", today=TODAY)
    assert [(f.code, f.field, f.hint) for f in result.findings if f.code < "BP100"] == [
        ("BP009", field, hint)
    ]


@pytest.mark.parametrize(
    ("written", "hint"),
    [
        ("2 hours", "did you mean '2:00:00'? (Slurm times: minutes, HH:MM:SS or D-HH:MM:SS)"),
        ("30min", "did you mean '30'? (Slurm times: minutes, HH:MM:SS or D-HH:MM:SS)"),
        ("3 Days", "did you mean '3-00:00:00'? (Slurm times: minutes, HH:MM:SS or D-HH:MM:SS)"),
        ("36 hours", "did you mean '1-12:00:00'? (Slurm times: minutes, HH:MM:SS or D-HH:MM:SS)"),
        # Not a duration in words: the field's own words, never a name-like rewrite ('2' is 2 minutes).
        ("two hours", "Longest run time of a job in it, e.g. 7-00:00:00; default: no limit."),
    ],
)
def test_a_slurm_time_in_words_is_suggested_in_slurms_format(written: str, hint: str) -> None:
    body = f"""version: 1
name: llm
cloud: aws
region: us-east-1
zone: use1-az6
node_groups: [{{name: h100, machine_type: p5.48xlarge, count: 2}}]
scheduler: {{kind: slurm, partitions: [{{name: gpu, node_groups: [h100], max_time: "{written}"}}]}}
"""
    findings = load_bytes(body.encode(), "t.yaml", today=TODAY).findings
    assert [(f.code, f.field, f.hint) for f in findings] == [
        ("BP009", "scheduler.partitions[0].max_time", hint)
    ]


def test_another_tools_name_for_a_field_points_at_ours_without_a_cascade() -> None:
    # ParallelCluster's InstanceType, a Terraform `instance_count`, Kubernetes-style `volumes`: each is
    # pointed at the field it stands for, and the fields they stand for are not also reported missing.
    body = b"""version: 1
name: llm
cloud: aws
provider: aws
region: us-east-1
zone: use1-az6
node_groups:
  - {name: g, instance_type: p5.48xlarge, instance_count: 2, volumes: [s]}
storage: [{name: s, kind: lustre, deployment: scratch, size_gib: 1200}]
"""
    findings = load_bytes(body, "t.yaml", today=TODAY).findings
    assert [(f.code, f.field, f.line, f.hint) for f in findings] == [
        # `cloud` is there already: no pointer at it
        (
            "BP005",
            "provider",
            4,
            "fields allowed here: version, name, cloud, region, zone, project, labels, "
            "bucket_kms_key, … (10 more)",
        ),
        ("BP005", "node_groups[0].instance_type", 8, "did you mean 'machine_type'? (a required field)"),
        ("BP005", "node_groups[0].instance_count", 8, "did you mean 'count'?"),
        ("BP005", "node_groups[0].volumes", 8, "did you mean 'attach'?"),
        ("BP005", "storage[0].size_gib", 9, "did you mean 'capacity_gib'? (a required field)"),
    ]


def test_nested_defaults_equal_what_validation_would_make() -> None:
    # The models' nested defaults are built with model_construct (no validator built at import), which
    # skips validation: each must still equal the model validated from nothing.
    from pydantic import BaseModel

    from clusterfab.blueprint import models

    fields = {
        f"{model.__name__}.{name}": field.default
        for model in vars(models).values()
        if isinstance(model, type) and issubclass(model, BaseModel)
        for name, field in model.model_fields.items()
        if isinstance(field.default, BaseModel)
    }
    assert {name: type(default).__name__ for name, default in fields.items()} == {
        "NodeGroupSpec.capacity": "CapacitySpec",
        "NodeGroupSpec.local_scratch": "LocalScratchSpec",
        "TpuSliceSpec.capacity": "CapacitySpec",
        "SchedulerSpec.controller": "SchedulerMachineSpec",
        "SchedulerSpec.login": "LoginSpec",
        "SchedulerSpec.database": "AccountingDatabaseSpec",
        "SchedulerSpec.elastic": "ElasticSpec",
        "SchedulerSpec.system_nodes": "SystemNodesSpec",
        "Blueprint.network": "NetworkSpec",
        "Blueprint.software": "SoftwareSpec",
    }
    defaults = list(fields.values())
    for default in defaults:
        assert default == type(default).model_validate({})
        assert default.model_fields_set == set()
