"""Plan and cost diffs between blueprint versions, and the plan / diff commands."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clusterfab.plan.compare import compare
from clusterfab.plan.diff import changed_paths
from clusterfab.plan.report import report_json, report_markdown
from tests.conftest import REPO, assert_golden
from tests.factories import TODAY

EXAMPLE = REPO / "blueprints" / "examples" / "aws-p5-efa-fsx.yaml"


def variant(tmp_path: Path, name: str, *edits: tuple[str, str]) -> Path:
    text = EXAMPLE.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path = tmp_path / name
    path.write_text(text)
    return path


def test_changed_paths() -> None:
    before = {"a": 1, "tags": {"x": "1", "y": "2"}, "nics": [{"i": 0}, {"i": 1}], "l": [1]}
    after = {"a": 1, "tags": {"x": "1", "z": "3"}, "nics": [{"i": 0}, {"i": 2}], "l": [1, 2], "new": True}
    assert changed_paths(before, after) == ["l", "new", "nics[1].i", "tags.y", "tags.z"]


def test_scale_up_and_grow_storage(tmp_path: Path) -> None:
    new = variant(
        tmp_path,
        "new.yaml",
        ("    count: 16", "    count: 24"),
        ("capacity_gib: 36000", "capacity_gib: 72000"),
    )
    report = compare(EXAMPLE, new, env="prod", today=TODAY)
    payload = report_json(report)
    assert payload["resources"]["create"] == []
    assert payload["resources"]["delete"] == []
    assert [
        (u["urn"].split("::")[-1], u["changed"], u["replace"]) for u in payload["resources"]["update"]
    ] == [
        ("llm-pretrain-trainers-asg", ["desiredCapacity", "maxSize", "minSize"], False),
        ("llm-pretrain-datasets-fs", ["storageCapacity"], False),
    ]
    # 8 more p5.48xlarge at $55.04/h; 36,000 GiB more at $0.145/GiB-month; money rounded to the cent
    assert payload["cost"]["delta"]["hourly_usd"] == 447.47  # 440.32 + 5220 / 730 = 447.4707
    assert payload["cost"]["delta"]["monthly_usd"] == 326653.6  # 321433.60 + 5220.00
    assert payload["cost"]["before"]["monthly_usd"] == 648087.2
    assert payload["cost"]["items"] == [
        {
            "name": "trainers",
            "before_hourly_usd": 880.64,
            "after_hourly_usd": 1320.96,
            "delta_hourly_usd": 440.32,
        },
        {
            "name": "datasets",
            "before_hourly_usd": 7.15,  # 5220 / 730 = 7.1507
            "after_hourly_usd": 14.30,  # 10440 / 730 = 14.3014
            "delta_hourly_usd": 7.15,
        },
    ]
    assert payload["warnings"] == []
    assert payload["budget"]["ok"] is False


def test_spot_to_on_demand_changes_market_options(tmp_path: Path) -> None:
    base = variant(tmp_path, "spot.yaml", ("capacity: {kind: on_demand}", "capacity: {kind: spot}"))
    report = compare(base, EXAMPLE, env="prod", today=TODAY)
    updates = {u.after.name: u.changed for u in report.resources.update}
    assert updates == {
        "llm-pretrain-trainers-lt": ("instanceMarketOptions",),
        "llm-pretrain-trainers-asg": ("capacityRebalance",),
    }
    # spot $30.00/h -> on-demand $55.04/h for 16 nodes
    (trainers,) = [i for i in report.cost.changed_items() if i.name == "trainers"]
    assert float(trainers.delta_hourly or 0) == pytest.approx(16 * (55.04 - 30.0))


def test_shrinking_or_removing_storage_is_flagged_as_destructive(tmp_path: Path) -> None:
    shrink = variant(tmp_path, "shrink.yaml", ("capacity_gib: 36000", "capacity_gib: 24000"))
    report = compare(EXAMPLE, shrink, env="prod", today=TODAY)
    assert [(r.name, why) for r, why in report.resources.destructive()] == [
        ("llm-pretrain-datasets-fs", "replaced (changes storageCapacity (36000 -> 24000))")
    ]
    assert report_json(report)["warnings"] == [
        "stateful resource llm-pretrain-datasets-fs (aws:fsx/lustreFileSystem:LustreFileSystem) would be "
        "replaced (changes storageCapacity (36000 -> 24000))"
    ]
    scratch = variant(
        tmp_path,
        "scratch.yaml",
        ("deployment: persistent", "deployment: scratch"),
        ("    throughput_mbps_per_tib: 125\n", ""),
        ("    import_path: s3://llm-pretrain-datasets/tokenized/\n", ""),
    )
    replaced = compare(EXAMPLE, scratch, env="prod", today=TODAY)
    (update,) = [u for u in replaced.resources.update if u.after.name == "llm-pretrain-datasets-fs"]
    # metadataConfiguration goes too, but changing it does not replace the file system
    assert update.replaces == ("deploymentType", "perUnitStorageThroughput")
    assert [r.name for r in replaced.resources.delete] == ["llm-pretrain-datasets-s3"]
    assert ("llm-pretrain-datasets-s3", "deleted") in [
        (r.name, w) for r, w in replaced.resources.destructive()
    ]


def test_markdown_comment_golden(tmp_path: Path) -> None:
    new = variant(
        tmp_path,
        "new.yaml",
        ("    count: 16", "    count: 24"),
        ("capacity: {kind: on_demand}", "capacity: {kind: spot}"),
        ("capacity_gib: 36000", "capacity_gib: 72000"),
    )
    report = compare(
        EXAMPLE, new, env="prod", today=TODAY, target_display="blueprints/examples/aws-p5-efa-fsx.yaml"
    )
    text = report_markdown(report).replace(str(EXAMPLE), "blueprints/examples/aws-p5-efa-fsx.yaml")
    assert_golden("diff/aws-p5-scale-spot-grow.md", text + "\n")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CLUSTERFAB_TODAY": "2026-11-22"}
    return subprocess.run(
        [sys.executable, "-m", "clusterfab", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def test_diff_against_a_git_ref_and_a_new_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(EXAMPLE, repo / "bp.yaml")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "bp.yaml")
    _git(repo, "commit", "-qm", "base")
    (repo / "bp.yaml").write_text(EXAMPLE.read_text().replace("    count: 16", "    count: 17", 1))
    shutil.copy(EXAMPLE, repo / "added.yaml")
    changed = _cli("diff", "bp.yaml", "--base-ref", "main", "--env", "prod", "-f", "json", cwd=repo)
    assert changed.returncode == 0, changed.stderr
    update = json.loads(changed.stdout)["resources"]["update"]
    assert [(u["urn"].split("::")[-1], u["changed"]) for u in update] == [
        ("llm-pretrain-trainers-asg", ["desiredCapacity", "maxSize", "minSize"])
    ]
    added = _cli("diff", "added.yaml", "--base-ref", "main", "--env", "prod", "-f", "json", cwd=repo)
    assert added.returncode == 0, added.stderr
    payload = json.loads(added.stdout)
    assert len(payload["resources"]["create"]) == 43
    assert payload["resources"]["update"] == []
    assert payload["cost"]["before"] == {"hourly_usd": 0.0, "monthly_usd": 0.0}
    unknown = _cli("diff", "bp.yaml", "--base-ref", "no-such-ref", cwd=repo)
    assert (unknown.returncode, unknown.stderr.strip()) == (2, "error: unknown git ref 'no-such-ref'")


def test_diff_needs_two_blueprints_or_a_ref() -> None:
    proc = _cli("diff", str(EXAMPLE), cwd=REPO)
    assert (proc.returncode, proc.stderr.strip()) == (
        2,
        "error: give BASE and NEW blueprints, or one blueprint with --base-ref",
    )


def test_plan_command_json_contract() -> None:
    proc = _cli(
        "plan", "blueprints/examples/aws-p6-b200-capacity-block.yaml", "--env", "dev", "-f", "json", cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert list(payload) == [
        "schema_version",
        "blueprint",
        "env",
        "cloud",
        "region",
        "ok",
        "stack",
        "resources",
        "summary",
        "findings",
        "messages",
    ]
    assert (payload["blueprint"], payload["env"], payload["stack"], payload["cloud"]) == (
        "blueprints/examples/aws-p6-b200-capacity-block.yaml",
        "dev",
        "dev",
        "aws",
    )
    assert set(payload["resources"][0]) == {"urn", "type", "name", "parent", "custom", "protect", "inputs"}
    # dev has one node: no cluster placement group for a single node
    assert payload["summary"]["total"] == len(payload["resources"]) == 41
    assert payload["summary"]["by_type"]["aws:ec2/launchTemplate:LaunchTemplate"] == 1
    assert "aws:ec2/placementGroup:PlacementGroup" not in payload["summary"]["by_type"]


def test_plan_command_text_golden() -> None:
    proc = _cli("plan", "blueprints/examples/aws-p5-efa-fsx.yaml", "--env", "prod", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert_golden("plans/aws-p5-efa-fsx.prod.txt", proc.stdout)


def test_plan_refuses_an_invalid_blueprint(tmp_path: Path) -> None:
    bad = variant(tmp_path, "bad.yaml", ("machine_type: p5.48xlarge", "machine_type: p5.48xlarg"))
    proc = _cli("plan", str(bad), cwd=REPO)
    # Findings go to stdout, like every command's (docs/cli.md).
    assert proc.returncode == 1
    assert "error[BP201] node_groups[0].machine_type" in proc.stdout
    assert proc.stdout.rstrip().endswith("invalid (1 error, 0 warnings, 0 notes); not planned")
    assert proc.stderr == ""
