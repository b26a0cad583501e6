"""A blueprint's labels cannot pass for clusterfab's own tags.

The labels land on every resource, the Slurm controller included; with `clusterfab-node-group` and
`clusterfab-slurm-elastic: "true"` among them, the node sync would take the controller for an elastic node
that failed to join and delete it. Validation refuses such keys (BP142) wherever they are written, and the
program drops them and puts clusterfab's identifying tags last, so that they win."""

from __future__ import annotations

import pytest

from clusterfab.clouds import profile
from clusterfab.core.vocab import (
    BLUEPRINT_TAG,
    COMPONENT_TAG,
    NODE_GROUP_TAG,
    SLURM_ELASTIC_TAG,
    STACK_TAG,
    reserved_tag_key,
    standard_tags,
)
from clusterfab.load import load_bytes
from tests.factories import TODAY

SLURM = """version: 1
name: impostor
cloud: {cloud}
region: {region}
zone: {zone}
{project}labels:
  clusterfab-node-group: h100
  clusterfab-slurm-elastic: "true"
node_groups:
  - {{name: h100, machine_type: {machine}, autoscaling: {{min: 0, max: 2}}}}
scheduler: {{kind: slurm}}
environments:
  dev:
    labels:
      CLUSTERFAB-SLURM-ROLE: controller
"""
CLOUDS = {
    "aws": {"region": "us-east-1", "zone": "use1-az6", "project": "", "machine": "p5.48xlarge"},
    "gcp": {
        "region": "us-central1",
        "zone": "us-central1-a",
        "project": "project: impostor-project\n",
        "machine": "a3-highgpu-8g",
    },
}


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
def test_labels_that_copy_clusterfabs_tags_are_refused_where_they_are_written(cloud: str) -> None:
    text = SLURM.format(cloud=cloud, **CLOUDS[cloud])
    result = load_bytes(text.encode(), "impostor.yaml", today=TODAY)
    reserved = [
        (f.code, f.field, f.line, f.column, f.environment) for f in result.findings if f.code == "BP142"
    ]
    line = 7 if cloud == "aws" else 8
    assert reserved == [
        ("BP142", "labels.clusterfab-node-group", line, 3, None),
        ("BP142", "labels.clusterfab-slurm-elastic", line + 1, 3, None),
        ("BP142", "labels.CLUSTERFAB-SLURM-ROLE", line + 8, 7, "dev"),
    ]
    first = next(f for f in result.findings if f.code == "BP142")
    assert first.hint == "rename the label (e.g. team, cost-center); clusterfab sets its own tags itself"
    # GCP refuses the upper-case key as a label too; it is reported once, as reserved.
    assert [f for f in result.findings if f.code == "BP114"] == []


@pytest.mark.parametrize(
    ("key", "reserved"),
    [
        ("clusterfab-node-group", "clusterfab-"),
        ("ClusterFab-Anything", "clusterfab-"),
        ("clusterfab:role", "clusterfab:"),
        ("AwS:createdBy", "aws:"),
        ("Name", "Name"),
        ("name", None),
        ("team", None),
        ("clusterfabulous", None),
    ],
)
def test_what_is_reserved(key: str, reserved: str | None) -> None:
    assert reserved_tag_key(key) == reserved


def test_the_identifying_tags_win_and_reserved_labels_never_reach_a_resource() -> None:
    labels = {
        "team": "research",
        NODE_GROUP_TAG: "h100",
        SLURM_ELASTIC_TAG: "true",
        BLUEPRINT_TAG: "someone-else",
        "Name": "impostor",
    }
    assert standard_tags("ml", "prod", "slurm", labels) == {
        "team": "research",
        BLUEPRINT_TAG: "ml",
        STACK_TAG: "prod",
        COMPONENT_TAG: "slurm",
    }


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        (
            "x\n## Approved",
            "y",
            "tag key 'x\\n## Approved' has characters AWS does not take in a tag: \\n, #",
        ),
        ("team", "a|b<c>", "tag value 'a|b<c>' has characters AWS does not take in a tag: |, <, >"),
        ("k" * 129, "y", "tag key of 129 characters"),
        ("team", "v" * 257, "tag value is longer than 256 characters"),
    ],
)
def test_aws_tags_take_awss_characters_and_lengths(key: str, value: str, problem: str) -> None:
    """AWS's tag rule: letters, digits and spaces of any script and + - = . _ : / @; keys of 1-128
    characters, values of up to 256 (checked on the profile, whatever the loader lets through)."""
    assert list(profile("aws").label_problems("Kostenstelle Forschung", "Grüße 1 + 2 = 3 @ a.b/c:d_e")) == []
    assert [p.message for p in profile("aws").label_problems(key, value)] == [problem]
