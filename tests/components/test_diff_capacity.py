"""`clusterfab diff` on the accelerators a change gives up (issue 36, item 6): a replaced TPU request,
node pool or instance group says which node group or TPU slice it is, how many GPUs or chips go while it
is recreated and whether they come back, in text, Markdown and JSON, located at the field that causes it;
a template updated in place gives up nothing and says nothing of the kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clusterfab.plan.compare import compare
from clusterfab.plan.report import DiffReport, report_json, report_markdown, report_text
from tests.conftest import REPO
from tests.factories import TODAY

EXAMPLES = REPO / "blueprints" / "examples"


def _variant(tmp_path: Path, example: str, name: str, *edits: tuple[str, str]) -> Path:
    text = (EXAMPLES / example).read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path = tmp_path / name
    path.write_text(text)
    return path


def _codes(report: DiffReport, *codes: str) -> list[tuple[str, str, int, int, str]]:
    return [(f.code, f.field, f.line, f.column, f.message) for f in report.findings if f.code in codes]


TPU_LOSS = (
    "TPU slice pretrain loses 128 TPU v5p chips (2 slices of 4x4x4) while v5p-pretrain-pretrain-slices is "
    "replaced: the queued resource is asked for again and waits in the queue, with no guarantee of when it "
    "is granted"
)


def test_a_new_tpu_topology_gives_up_the_multislice_and_queues_it_again(tmp_path: Path) -> None:
    # v5p 4x4x4 is 64 chips a slice; the example runs 2 slices as one queued resource, which any change
    # replaces (components/gcp/_queued_resource.py).
    base = _variant(tmp_path, "gcp-tpu-v5p-multislice.yaml", "base.yaml")
    new = _variant(
        tmp_path, "gcp-tpu-v5p-multislice.yaml", "new.yaml", ("topology: 4x4x4", "topology: 4x4x8")
    )
    report = compare(base, new, env="prod", today=TODAY)
    text = report_text(report).splitlines()
    assert f"  !! {TPU_LOSS}" in text
    assert (
        f"{new}:17:15: warning[BP166] tpu_slices[0].topology: {TPU_LOSS}"
        in text[text.index(next(line for line in text if line.startswith("Findings ("))) :]
    )
    assert _codes(report, "BP166", "BP167") == [("BP166", "tpu_slices[0].topology", 17, 15, TPU_LOSS)]
    markdown = report_markdown(report).splitlines()
    assert f"> The {TPU_LOSS}." in markdown
    assert (
        f"| warning | BP166 | `{new}:17:15` | `tpu_slices[0].topology` | {TPU_LOSS} | apply this when the "
        "work on the slices can stop; to keep the capacity, leave \\`tpu_slices\\[0\\].topology\\` as it "
        "was |"
    ) in markdown
    payload = report_json(report)
    assert payload["capacity"] == [
        {
            "urn": "urn:pulumi:diff::clusterfab::clusterfab:compute:GcpTpuSlices$"
            "pulumi-python:dynamic/gcp-tpu:QueuedResource::v5p-pretrain-pretrain-slices",
            "kind": "tpu_slice",
            "name": "pretrain",
            "unit": "tpu_chip",
            "count": 128,
            "at_most": False,
            "capacity": "on_demand",
            "held": False,
            "queued": True,
            "field": "tpu_slices[0].topology",
            "message": TPU_LOSS,
        }
    ]
    assert TPU_LOSS in payload["warnings"]
    (finding,) = [f for f in payload["findings"] if f["code"] == "BP166"]
    assert (finding["severity"], finding["field"], finding["line"], finding["column"]) == (
        "warning",
        "tpu_slices[0].topology",
        17,
        15,
    )


CB_MACHINE = (
    "machine type changes from p6-b200.48xlarge to p5en.48xlarge on capacity block cr-0a1b2c3d4e5f60718, "
    "which holds p6-b200.48xlarge capacity: the p5en.48xlarge nodes the group launches from now on cannot "
    "use it"
)


def test_another_instance_type_on_a_capacity_block_is_a_located_warning_and_replaces_no_node(
    tmp_path: Path,
) -> None:
    # The launch template takes a new version in place and the group has no instance refresh: the 8
    # running p6-b200 nodes stay (no GPUs given up), but the block holds p6-b200 capacity only.
    example = "aws-p6-b200-capacity-block.yaml"
    base = _variant(tmp_path, example, "base.yaml")
    new = _variant(
        tmp_path, example, "new.yaml", ("machine_type: p6-b200.48xlarge", "machine_type: p5en.48xlarge")
    )
    report = compare(base, new, env="prod", today=TODAY)
    assert [u.after.name for u in report.resources.replaced] == []
    assert _codes(report, "BP166", "BP167") == [("BP167", "node_groups[0].machine_type", 19, 19, CB_MACHINE)]
    text = report_text(report).splitlines()
    assert f"{new}:19:19: warning[BP167] node_groups[0].machine_type: {CB_MACHINE}" in text
    assert (
        "   hint: keep `machine_type: p6-b200.48xlarge`, or name a capacity block of p5en.48xlarge capacity "
        "in `capacity.reservation`" in text
    )
    assert not [line for line in text if line.startswith("  !! ")]
    assert (
        f"| warning | BP167 | `{new}:19:19` | `node_groups[0].machine_type` | {CB_MACHINE} | keep "
        "\\`machine_type: p6-b200.48xlarge\\`, or name a capacity block of p5en.48xlarge capacity in "
        "\\`capacity.reservation\\` |"
    ) in report_markdown(report).splitlines()
    payload = report_json(report)
    assert (payload["capacity"], payload["warnings"]) == ([], [])


GKE_LOSS = (
    "node group h100 loses up to 64 GPUs (8 a3-megagpu-8g at its max) while gke-mega-h100-pool is replaced: "
    "flex-start capacity is asked for again and waits in the queue, with no guarantee of when it is granted"
)
FLEX = (
    "capacity: {kind: reservation, reservation: a3mega-us-central1-a}",
    "capacity: {kind: flex_start, max_run_duration_hours: 24}",
)


def test_a_new_machine_type_on_a_gke_flex_start_pool_replaces_it_and_queues_its_gpus_again(
    tmp_path: Path,
) -> None:
    # A node pool's machine type is immutable (replacements.yaml: nodeConfig); a flex-start pool runs
    # its 8 a3-megagpu-8g (8 H100 each) only while jobs hold them, so up to 64 GPUs go.
    example = "gcp-gke-a3mega.yaml"
    base = _variant(tmp_path, example, "base.yaml", FLEX)
    new = _variant(
        tmp_path, example, "new.yaml", FLEX, ("machine_type: a3-megagpu-8g", "machine_type: a3-highgpu-8g")
    )
    report = compare(base, new, env="prod", today=TODAY)
    text = report_text(report).splitlines()
    assert f"  !! {GKE_LOSS}" in text
    assert f"{new}:23:19: warning[BP166] node_groups[0].machine_type: {GKE_LOSS}" in text
    assert f"> The {GKE_LOSS}." in report_markdown(report).splitlines()
    payload = report_json(report)
    assert payload["capacity"] == [
        {
            "urn": "urn:pulumi:diff::clusterfab::clusterfab:compute:GkeNodePool$"
            "gcp:container/nodePool:NodePool::gke-mega-h100-pool",
            "kind": "node_group",
            "name": "h100",
            "unit": "gpu",
            "count": 64,
            "at_most": True,
            "capacity": "flex_start",
            "held": False,
            "queued": True,
            "field": "node_groups[0].machine_type",
            "message": GKE_LOSS,
        }
    ]


def test_a_gke_reservation_pool_keeps_its_capacity_when_replaced(tmp_path: Path) -> None:
    # A bigger boot disk replaces the pool (nodeConfig); the specific reservation holds the 64 GPUs.
    example = "gcp-gke-a3mega.yaml"
    new = _variant(tmp_path, example, "new.yaml", ("    boot_disk_gib: 400", "    boot_disk_gib: 500"))
    report = compare(EXAMPLES / example, new, env="prod", today=TODAY)
    loss = (
        "node group h100 loses 64 GPUs (8 a3-megagpu-8g) while gke-mega-h100-pool is replaced: reservation "
        "a3mega-us-central1-a keeps its capacity for the new nodes"
    )
    assert _codes(report, "BP166") == [("BP166", "node_groups[0].boot_disk_gib", 25, 20, loss)]
    (entry,) = report_json(report)["capacity"]
    assert (entry["held"], entry["queued"], entry["capacity"]) == (True, False, "reservation")


def test_in_place_changes_give_up_no_capacity(tmp_path: Path) -> None:
    # A bigger boot disk on Compute Engine replaces the instance template; the instance group takes the
    # new one in place and applies it only as nodes are recreated (update policy OPPORTUNISTIC).
    example = "gcp-a3mega-tcpxo-filestore.yaml"
    new = _variant(tmp_path, example, "disk.yaml", ("boot_disk_gib: 400", "boot_disk_gib: 500"))
    report = compare(EXAMPLES / example, new, env="prod", today=TODAY)
    assert [u.after.name for u in report.resources.replaced] == ["mega-train-trainers-template"]
    assert [u.after.name for u in report.resources.updated] == ["mega-train-trainers-mig"]
    _assert_silent(report)
    # On AWS a new instance type on on-demand capacity is a new launch template version: nothing goes.
    aws = _variant(
        tmp_path,
        "aws-p5-efa-fsx.yaml",
        "p5en.yaml",
        ("machine_type: p5.48xlarge", "machine_type: p5en.48xlarge"),
    )
    _assert_silent(compare(EXAMPLES / "aws-p5-efa-fsx.yaml", aws, env="prod", today=TODAY))


def _assert_silent(report: DiffReport) -> None:
    payload: dict[str, Any] = report_json(report)
    assert payload["capacity"] == []
    assert not [w for w in payload["warnings"] if " loses " in w]
    assert _codes(report, "BP166", "BP167") == []
    assert " loses " not in report_text(report)
    assert " loses " not in report_markdown(report)
    json.dumps(payload)
