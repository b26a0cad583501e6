"""Patterns that validate input match the whole value: `re.match` with `$` lets a value that ends in a
newline through (`$` also matches before a final newline), so every validator uses `fullmatch`.

Each case is a value its validator accepts, with a newline appended: it must be refused."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import typer

from clusterfab.catalog import load_catalog
from clusterfab.catalog.refresh.nccl_builds import builds_from_pypi
from clusterfab.cli.options import stack_name
from clusterfab.clouds import profile
from clusterfab.health import HealthRecordError, parse_record
from clusterfab.load import load_bytes
from clusterfab.scheduler.slurm.hostlist import expand
from tests.conftest import REPO
from tests.factories import TODAY

CATALOG = load_catalog()
AWS_KEY = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
GCP_KEY = "projects/p/locations/us-central1/keyRings/ring/cryptoKeys/key"


def test_gcp_labels_end_where_the_value_ends() -> None:
    gcp = profile("gcp")
    assert list(gcp.label_problems("team", "research")) == []
    (value,) = gcp.label_problems("team", "research\n")
    assert value.message == "label value 'research\n' is not a valid GCP label value"
    (key,) = gcp.label_problems("team\n", "research")
    assert (key.message, key.at_key) == ("label key 'team\n' is not a valid GCP label key", True)


def test_a_gcp_label_value_with_a_newline_is_a_located_finding() -> None:
    # The value is quoted YAML, so the newline is in the value; the loader refuses it in any string (BP010),
    # where it is written, before the label rules (checked on the profile above) see it.
    text = (
        "version: 1\nname: labels\ncloud: gcp\nregion: us-central1\nzone: us-central1-a\n"
        'labels:\n  team: "research\\n"\n'
        "tpu_slices:\n  - {name: tpu, generation: v5p, topology: 2x2x1}\n"
    )
    result = load_bytes(text.encode(), "labels.yaml", today=TODAY)
    assert [(f.code, f.field, f.line, f.column) for f in result.findings if f.severity.value == "error"] == [
        ("BP010", "labels.team", 7, 9)
    ]


@pytest.mark.parametrize(
    ("cloud", "reservation"),
    [
        ("aws", "cr-0123456789abcdef0"),
        ("gcp", "projects/my-project/reservations/res-1"),
    ],
)
def test_reservations_end_where_the_value_ends(cloud: str, reservation: str) -> None:
    assert profile(cloud).reservation_valid(reservation)
    assert not profile(cloud).reservation_valid(reservation + "\n")


@pytest.mark.parametrize(
    ("cloud", "key", "region", "message"),
    [
        ("aws", AWS_KEY, "us-east-1", f"'{AWS_KEY}\n' is not a KMS key ARN"),
        ("gcp", GCP_KEY, "us-central1", f"'{GCP_KEY}\n' is not a Cloud KMS key"),
    ],
)
def test_customer_keys_end_where_the_value_ends(cloud: str, key: str, region: str, message: str) -> None:
    assert list(profile(cloud).kms_key_problems(key, region=region, disk=False)) == []
    (problem,) = profile(cloud).kms_key_problems(key + "\n", region=region, disk=False)
    assert problem.message.startswith(message)


@pytest.mark.parametrize(("zone", "region"), [("use1-az6", "us-east-1"), ("us-east-1a", "us-east-1")])
def test_aws_zones_end_where_the_value_ends(zone: str, region: str) -> None:
    aws = profile("aws")
    assert aws.region_of_zone(CATALOG, zone) == region
    assert aws.region_of_zone(CATALOG, zone + "\n") is None


def test_stack_names_end_where_the_value_ends() -> None:
    assert stack_name("acme/prod") == "acme/prod"
    with pytest.raises(typer.BadParameter):
        stack_name("prod\n")


def test_node_names_end_where_the_value_ends() -> None:
    assert expand("h100-[0-1],login-0") == ["h100-0", "h100-1", "login-0"]
    for hostile in ("login-0\n", "h100-[0-1]\n"):
        with pytest.raises(ValueError, match="is not a node name"):
            expand(hostile)


def test_health_records_name_their_commit_and_digests_whole() -> None:
    record = {
        "status": "passed",
        "stack": "dev",
        "blueprint_digest": "0" * 64,
        "bundle_sha256": "1" * 64,
        "catalog_version": "2026.11.22",
        "commit": "2" * 40,
        "checked_at": "2026-11-22T10:00:00+00:00",
        "hosts": {},
        "required": {},
    }
    parse_record(json.dumps(record))
    for key in ("blueprint_digest", "commit"):
        with pytest.raises(HealthRecordError, match=f"{key} .* is not valid"):
            parse_record(json.dumps({**record, key: record[key] + "\n"}))


def test_a_nccl_release_with_a_newline_is_no_build() -> None:
    pypi = REPO / "tests/fixtures/pypi/nvidia-nccl-cu13.json"
    answer: dict[str, Any] = copy.deepcopy(json.loads(pypi.read_text()))
    answer["releases"]["2.99.1\n"] = answer["releases"]["2.28.9"]
    assert "2.99.1\n" not in [b.nccl for b in builds_from_pypi(13, answer)]


@pytest.mark.parametrize(
    ("field", "value"),
    [("name", "hostile\\n"), ("region", "us-east-1\\n"), ("zone", "use1-az6\\n")],
)
def test_the_schemas_patterns_end_where_the_value_ends(field: str, value: str) -> None:
    """The models' patterns are pydantic's (a Rust regex, whose `$` is the end of the text): kept so. The
    loader refuses a line feed in any string first (BP010); the models are checked on their own here."""
    from pydantic import ValidationError

    from clusterfab.blueprint.models import Blueprint

    data: dict[str, Any] = {
        "version": 1,
        "name": "hostile",
        "cloud": "aws",
        "region": "us-east-1",
        "zone": "use1-az6",
        "node_groups": [{"name": "g", "machine_type": "p5.48xlarge", "count": 2}],
        field: value.replace("\\n", "\n"),
    }
    with pytest.raises(ValidationError) as refused:
        Blueprint.model_validate(data)
    assert [(e["loc"], e["type"]) for e in refused.value.errors()] == [((field,), "string_pattern_mismatch")]
