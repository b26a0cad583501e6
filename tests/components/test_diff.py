"""Plan and cost diffs between blueprint versions, and the plan / diff commands."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.plan.compare import compare
from clusterfab.plan.diff import changed_paths, diff_plans
from clusterfab.plan.engine import PlannedResource
from clusterfab.plan.project import Plan
from clusterfab.plan.report import DiffReport, report_json, report_markdown, report_text
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
    # nothing autoscales: the figures at min are those at full size
    assert payload["cost"]["items"] == [
        {
            "name": "trainers",
            "before_hourly_usd": 880.64,
            "after_hourly_usd": 1320.96,
            "delta_hourly_usd": 440.32,
            "before_min_hourly_usd": 880.64,
            "after_min_hourly_usd": 1320.96,
            "delta_min_hourly_usd": 440.32,
            "before_monthly_usd": 642867.2,  # 16 x 55.04 x 730
            "after_monthly_usd": 964300.8,  # 24 x 55.04 x 730
            "ends_at": None,
            "term_hours": None,
            "term_usd": None,
        },
        {
            "name": "datasets",
            "before_hourly_usd": 7.15,  # 5220 / 730 = 7.1507
            "after_hourly_usd": 14.30,  # 10440 / 730 = 14.3014
            "delta_hourly_usd": 7.15,
            "before_min_hourly_usd": 7.15,
            "after_min_hourly_usd": 14.30,
            "delta_min_hourly_usd": 7.15,
            "before_monthly_usd": 5220.0,
            "after_monthly_usd": 10440.0,
            "ends_at": None,
            "term_hours": None,
            "term_usd": None,
        },
    ]
    assert payload["cost"]["delta"]["min_monthly_usd"] == 326653.6
    assert payload["warnings"] == []
    assert payload["budget"]["ok"] is False


def test_autoscaled_group_diff_compares_max_with_max_and_min_with_min(tmp_path: Path) -> None:
    elastic = variant(tmp_path, "elastic.yaml", ("    count: 16", "    autoscaling: {min: 2, max: 16}"))
    busier = variant(tmp_path, "busier.yaml", ("    count: 16", "    autoscaling: {min: 4, max: 16}"))
    report = compare(elastic, busier, env="prod", today=TODAY)
    (trainers,) = report.cost.changed_items()
    assert trainers.description() == "p5.48xlarge x 2-16 -> 4-16"
    # at max 16 x $55.04 on both sides; at min 2 -> 4 nodes: 2 x 55.04 = +110.08/h (+80,358.40/mo)
    assert (trainers.delta_hourly, trainers.delta_min_hourly) == (Decimal(0), Decimal("110.08"))
    assert (report.cost.delta_monthly, report.cost.delta_min_monthly) == (Decimal(0), Decimal("80358.40"))
    text = report_text(report).splitlines()
    assert "      at min: +$80,358.40/month ($80,358.40 -> $160,716.80)" in text
    assert (
        "At min (autoscaled groups at their min): +$80,358.40/month, $85,578.40 -> $165,936.80 per month, "
        "$117.23 -> $227.31 per hour"  # 2 or 4 x 55.04 + 5220 / 730 per hour; 5,220/mo of FSx
    ) in text
    assert text[text.index("Cost (USD; monthly = 730 hours):") + 2] == (
        "      +$0.00/month ($642,867.20 -> $642,867.20)"
    )
    assert "(autoscaled groups at their max)" in report_markdown(report).splitlines()[2]
    # a fixed group made elastic: the same max, so the same full-size cost, and 14 nodes fewer at min
    fixed = compare(EXAMPLE, elastic, env="prod", today=TODAY)
    (made_elastic,) = fixed.cost.changed_items()
    assert made_elastic.description() == "p5.48xlarge x 16 -> 2-16"
    assert fixed.cost.delta_min_hourly == -14 * Decimal("55.04")


def test_spot_to_on_demand_changes_market_options(tmp_path: Path) -> None:
    base = variant(tmp_path, "spot.yaml", ("capacity: {kind: on_demand}", "capacity: {kind: spot}"))
    report = compare(base, EXAMPLE, env="prod", today=TODAY)
    updates = {u.after.name: u.changed for u in report.resources.update}
    assert updates == {
        "llm-pretrain-trainers-lt": ("instanceMarketOptions",),
        "llm-pretrain-trainers-asg": ("capacityRebalance",),
    }
    # spot $25.7522/h -> on-demand $55.04/h for 16 nodes
    (trainers,) = [i for i in report.cost.changed_items() if i.name == "trainers"]
    assert float(trainers.delta_hourly or 0) == pytest.approx(16 * (55.04 - 25.7522))


def test_shrinking_or_removing_storage_is_flagged_as_destructive(tmp_path: Path) -> None:
    shrink = variant(tmp_path, "shrink.yaml", ("capacity_gib: 36000", "capacity_gib: 24000"))
    report = compare(EXAMPLE, shrink, env="prod", today=TODAY)
    # the data repository association names the file system's id, which the replacement changes
    assert [(r.name, why) for r, why in report.resources.destructive()] == [
        (
            "llm-pretrain-datasets-s3",
            "replaced (changes fileSystemId (llm-pretrain-datasets-fs is replaced))",
        ),
        ("llm-pretrain-datasets-fs", "replaced (changes storageCapacity (36000 -> 24000))"),
    ]
    assert report_json(report)["warnings"][1] == (
        "stateful resource llm-pretrain-datasets-fs (aws:fsx/lustreFileSystem:LustreFileSystem) would be "
        "replaced (changes storageCapacity (36000 -> 24000))"
    )
    scratch = variant(
        tmp_path,
        "scratch.yaml",
        ("deployment: persistent", "deployment: scratch"),
        ("    throughput_mbps_per_tib: 125\n", ""),
        ("    import_path: s3://llm-pretrain-datasets/tokenized/\n", ""),
    )
    replaced = compare(EXAMPLE, scratch, env="prod", today=TODAY)
    (update,) = [u for u in replaced.resources.update if u.after.name == "llm-pretrain-datasets-fs"]
    # metadataConfiguration goes too, but changing it does not replace the file system; nor does the
    # throughput (terraform-provider-aws v6.58.0 updates per_unit_storage_throughput in place)
    assert update.replaces == ("deploymentType",)
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
    assert len(payload["resources"]["create"]) == 51
    assert payload["resources"]["update"] == []
    assert payload["cost"]["before"] == {
        "hourly_usd": 0.0,
        "monthly_usd": 0.0,
        "min_hourly_usd": 0.0,
        "min_monthly_usd": 0.0,
    }
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
    assert payload["summary"]["total"] == len(payload["resources"]) == 49
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


# --- replacements that follow from dependencies (issue 11 item 1) ------------------------------------

NETWORK_REPLACED = {
    "llm-pretrain-net-vpc": "cidrBlock",
    "llm-pretrain-net-nodes": "cidrBlock",
    "llm-pretrain-net-public": "cidrBlock",
    "llm-pretrain-net-nat": "subnetId (llm-pretrain-net-public is replaced)",
    "llm-pretrain-net-private-rt": "vpcId (llm-pretrain-net-vpc is replaced)",
    "llm-pretrain-net-public-rt": "vpcId (llm-pretrain-net-vpc is replaced)",
    "llm-pretrain-net-s3": "vpcId (llm-pretrain-net-vpc is replaced)",
    "llm-pretrain-net-nodes-sg": "vpcId (llm-pretrain-net-vpc is replaced)",
    "llm-pretrain-datasets-sg": "vpcId (llm-pretrain-net-vpc is replaced)",
}


def _replaced(report: DiffReport) -> dict[str, tuple[str, ...]]:
    return {u.after.name: u.replaces for u in report.resources.replaced}


def test_a_new_network_range_replaces_the_vpc_and_everything_in_it(tmp_path: Path) -> None:
    new = variant(tmp_path, "cidr.yaml", ("cidr: 10.20.0.0/16", "cidr: 10.30.0.0/16"))
    report = compare(EXAMPLE, new, env="prod", today=TODAY)
    replaced = _replaced(report)
    for name, why in NETWORK_REPLACED.items():
        assert why in replaced.pop(name), name
    # a route table association moves to another table in place; a new subnet replaces it
    assert replaced.pop("llm-pretrain-net-nodes-rta") == ("subnetId (llm-pretrain-net-nodes is replaced)",)
    assert replaced.pop("llm-pretrain-net-public-rta") == ("subnetId (llm-pretrain-net-public is replaced)",)
    assert replaced.pop("llm-pretrain-datasets-fs") == (
        "securityGroupIds[0] (llm-pretrain-datasets-sg is replaced)",
        "subnetIds (llm-pretrain-net-nodes is replaced)",
    )
    assert replaced.pop("llm-pretrain-datasets-s3") == (
        "fileSystemId (llm-pretrain-datasets-fs is replaced)",
    )
    # the VPC's flow log follows the VPC (its log group, and the records in it, stay)
    assert replaced.pop("llm-pretrain-net-flow-log") == ("vpcId (llm-pretrain-net-vpc is replaced)",)
    # the security group rules go with their groups; nothing else is replaced
    assert sorted(replaced) == sorted(
        [f"llm-pretrain-net-{n}" for n in ("nodes-egress", "nodes-to-self", "nodes-from-self")]
        + [
            f"llm-pretrain-datasets-lustre-{ports}-{way}"
            for ports in ("988", "1018-1023")
            for way in ("to-nodes", "to-self", "from-nodes", "from-self")
        ]
    )
    assert all(why[0].startswith("securityGroupId (") for why in replaced.values())
    # updated in place: the internet gateway moves to the new VPC, the ASG and launch template follow
    assert {u.after.name: u.changed for u in report.resources.updated} == {
        "llm-pretrain-net-igw": ("vpcId",),
        "llm-pretrain-trainers-asg": ("vpcZoneIdentifiers[0]",),
        "llm-pretrain-trainers-lt": (
            *sorted(f"networkInterfaces[{i}].securityGroups[0]" for i in range(33)),
            "userData",
        ),
    }
    assert [r.name for r, _ in report.resources.destructive()] == [
        "llm-pretrain-datasets-s3",
        "llm-pretrain-datasets-fs",
    ]
    assert report.refused(allow_replace=False)
    assert not report.refused(allow_replace=True)
    (fsx,) = [
        u
        for u in report_json(report)["resources"]["update"]
        if u["urn"].endswith("::llm-pretrain-datasets-fs")
    ]
    assert (fsx["replace"], fsx["stateful"], fsx["changed"]) == (
        True,
        True,
        ["securityGroupIds[0]", "subnetIds"],
    )
    assert_golden("diff/aws-p5-cidr.txt", _shown(report_text(report), new) + "\n")


def test_another_zone_replaces_the_subnets_and_the_file_system(tmp_path: Path) -> None:
    new = variant(tmp_path, "zone.yaml", ("zone: use1-az6", "zone: use1-az4"))
    report = compare(EXAMPLE, new, env="prod", today=TODAY)
    assert _replaced(report) == {
        "llm-pretrain-net-nodes": ("availabilityZoneId",),
        "llm-pretrain-net-public": ("availabilityZoneId",),
        "llm-pretrain-net-nat": ("subnetId (llm-pretrain-net-public is replaced)",),
        "llm-pretrain-net-nodes-rta": ("subnetId (llm-pretrain-net-nodes is replaced)",),
        "llm-pretrain-net-public-rta": ("subnetId (llm-pretrain-net-public is replaced)",),
        "llm-pretrain-datasets-fs": ("subnetIds (llm-pretrain-net-nodes is replaced)",),
        "llm-pretrain-datasets-s3": ("fileSystemId (llm-pretrain-datasets-fs is replaced)",),
    }
    # the new NAT gateway's id reaches the route; the new file system's DNS name the boot script
    assert {u.after.name: u.changed for u in report.resources.updated} == {
        "llm-pretrain-net-private-rt": ("routes[0].natGatewayId",),
        "llm-pretrain-trainers-asg": ("vpcZoneIdentifiers[0]",),
        "llm-pretrain-trainers-lt": ("userData",),
    }
    assert report.refused(allow_replace=False)
    assert_golden("diff/aws-p5-zone.txt", _shown(report_text(report), new) + "\n")


def test_another_zone_replaces_the_filestore_instance_and_the_template_that_mounts_it(tmp_path: Path) -> None:
    example = REPO / "blueprints" / "examples" / "gcp-a3mega-tcpxo-filestore.yaml"
    new = tmp_path / "zone.yaml"
    new.write_text(example.read_text().replace("zone: us-central1-a", "zone: us-central1-b", 1))
    report = compare(example, new, env="prod", today=TODAY)
    assert _replaced(report) == {
        "mega-train-shared-share": ("location",),
        # the startup script mounts the share by its address, which a new instance changes
        "mega-train-trainers-template": ("metadata.startup-script (mega-train-shared-share is replaced)",),
        "mega-train-trainers-mig": ("zone",),
    }
    assert report.resources.updated == ()
    assert [r.name for r, _ in report.resources.destructive()] == ["mega-train-shared-share"]
    # Not data, but every node of the group and its jobs: said, without failing the diff for it.
    assert report_json(report)["warnings"][-1] == (
        "node group mega-train-trainers-mig (gcp:compute/instanceGroupManager:InstanceGroupManager) would "
        "be replaced: every node of it is recreated and the jobs running on it end; under Slurm, the nodes "
        "Slurm created for the group are deleted first"
    )
    text = report_text(report).replace(str(example), "blueprints/examples/gcp-a3mega-tcpxo-filestore.yaml")
    assert_golden("diff/gcp-a3mega-zone.txt", _shown(text, new) + "\n")


def test_a_cross_cloud_diff_says_so_and_deletes_the_stateful_resources(tmp_path: Path) -> None:
    gcp = REPO / "blueprints" / "examples" / "gcp-a3mega-tcpxo-filestore.yaml"
    report = compare(EXAMPLE, gcp, env="prod", today=TODAY)
    assert report.resources.update == ()
    warnings = report_json(report)["warnings"]
    assert warnings[0] == (
        "cross-cloud diff: the base is on aws and the new blueprint on gcp; nothing carries over: every aws "
        "resource is deleted and every gcp resource created"
    )
    assert [r.name for r, why in report.resources.destructive()] == [
        "llm-pretrain-net-flow-logs",
        "llm-pretrain-artifacts-bucket",
        "llm-pretrain-datasets-s3",
        "llm-pretrain-datasets-fs",
    ]
    assert report.refused(allow_replace=False)


def test_diff_exits_1_on_a_stateful_replacement_unless_allowed(tmp_path: Path) -> None:
    new = variant(tmp_path, "cidr.yaml", ("cidr: 10.20.0.0/16", "cidr: 10.30.0.0/16"))
    refused = _cli("diff", str(EXAMPLE), str(new), "--env", "prod", "-f", "json", cwd=REPO)
    assert refused.returncode == 1, refused.stderr
    assert "stateful resource llm-pretrain-datasets-fs" in " ".join(json.loads(refused.stdout)["warnings"])
    assert refused.stderr.strip() == (
        "error: this change destroys data: llm-pretrain-datasets-s3 (replaced), llm-pretrain-datasets-fs "
        "(replaced); if that is intended, rerun with --allow-replace"
    )
    allowed = _cli("diff", str(EXAMPLE), str(new), "--env", "prod", "--allow-replace", cwd=REPO)
    assert allowed.returncode == 0, allowed.stderr
    rows = [line.split()[:3] for line in allowed.stdout.splitlines() if line.startswith("  +- ")]
    assert ["+-", "aws:fsx:LustreFileSystem", "llm-pretrain-datasets-fs"] in rows


def _shown(text: str, new: Path) -> str:
    """Report text with machine-specific paths replaced."""
    return text.replace(str(EXAMPLE), "blueprints/examples/aws-p5-efa-fsx.yaml").replace(
        str(new), f"<tmp>/{new.name}"
    )


def _resource(type_: str, name: str, inputs: dict[str, Any], provider: str | None = None) -> PlannedResource:
    return PlannedResource(
        urn=f"urn:pulumi:diff::clusterfab::{type_}::{name}",
        type=type_,
        name=name,
        parent=None,
        custom=True,
        protect=False,
        inputs=inputs,
        provider=provider,
        id=f"{name}-id",
    )


def _plan(*resources: PlannedResource) -> Plan:
    return Plan(blueprint="bp.yaml", env=None, stack="diff", resources=list(resources))


PROVIDER = "urn:pulumi:diff::clusterfab::pulumi:providers:aws::aws"


def test_a_region_moved_on_the_provider_replaces_what_inherits_it() -> None:
    def plan(region: str) -> Plan:
        return _plan(
            _resource("pulumi:providers:aws", "aws", {"region": region}),
            _resource("aws:ec2/vpc:Vpc", "vpc", {"cidrBlock": "10.0.0.0/16"}, f"{PROVIDER}::aws-id"),
            # an IAM role is global: it has no region to inherit
            _resource("aws:iam/role:Role", "role", {"path": "/"}, f"{PROVIDER}::aws-id"),
        )

    diff = diff_plans(plan("us-east-1"), plan("us-west-2"), load_catalog())
    assert [(u.after.name, u.changed, u.replaces) for u in diff.update] == [
        ("vpc", ("region",), ("region (from provider aws)",)),
        ("aws", ("region",), ()),
    ]


@pytest.mark.parametrize(
    ("new", "replaces"),
    [
        ("10.0.0.0/19", ()),  # an expansion is in place
        ("10.0.0.0/21", ("ipCidrRange (10.0.0.0/20 -> 10.0.0.0/21)",)),
        ("10.1.0.0/20", ("ipCidrRange (10.0.0.0/20 -> 10.1.0.0/20)",)),
    ],
)
def test_a_gcp_subnetwork_range_may_only_grow_in_place(new: str, replaces: tuple[str, ...]) -> None:
    def plan(cidr: str) -> Plan:
        return _plan(_resource("gcp:compute/subnetwork:Subnetwork", "subnet", {"ipCidrRange": cidr}))

    (update,) = diff_plans(plan("10.0.0.0/20"), plan(new), load_catalog()).update
    assert update.replaces == replaces


PROJECT_PARTS = ("Pulumi.yaml", "clusterfab", "components", "stacks", "playbooks", "blueprints")


def _project_repo(tmp_path: Path) -> Path:
    """A git repository holding a copy of this clusterfab project, the way a platform team's fork does."""
    repo = tmp_path / "fork"
    repo.mkdir()
    for part in PROJECT_PARTS:
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, repo / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(source, repo / part)
    _git(repo, "init", "-q", "-b", "main")
    return repo


def test_base_ref_plans_the_base_with_the_base_code(tmp_path: Path) -> None:
    # The base commit lets the cluster bucket be read without its versions; the PR (the working tree)
    # grants s3:GetObjectVersion again. The blueprint is the same on both sides: only planning the base
    # with the base's own code shows what the PR changes in IAM.
    repo = _project_repo(tmp_path)
    iam = repo / "components" / "aws" / "_iam.py"
    head_code = iam.read_text()
    granted = '"Action": ["s3:GetObject", "s3:GetObjectVersion"],'
    assert granted in head_code
    iam.write_text(head_code.replace(granted, '"Action": ["s3:GetObject"],'))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    iam.write_text(head_code)
    blueprint = "blueprints/examples/aws-p5-efa-fsx.yaml"
    proc = _cli("diff", blueprint, "--base-ref", "main", "--env", "prod", "-f", "json", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    text = _cli("diff", blueprint, "--base-ref", "main", "--env", "prod", cwd=repo)
    assert f"{blueprint}@main" in text.stdout
    payload = json.loads(proc.stdout)
    changed = [(u["urn"].split("::")[-1], u["changed"]) for u in payload["resources"]["update"]]
    assert changed == [("llm-pretrain-trainers-node-policy", ["policy"])]
    assert payload["resources"]["create"] == payload["resources"]["delete"] == []


def test_base_ref_that_cannot_be_planned_says_why(tmp_path: Path) -> None:
    repo = _project_repo(tmp_path)
    (repo / "stacks" / "__main__.py").write_text("raise SystemExit('the base program is broken')\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "broken base")
    shutil.copy(REPO / "stacks" / "__main__.py", repo / "stacks" / "__main__.py")
    proc = _cli("diff", "blueprints/examples/aws-p5-efa-fsx.yaml", "--base-ref", "main", cwd=repo)
    assert proc.returncode == 1
    assert "could not be planned with its own code" in proc.stderr, proc.stderr


def test_what_an_update_ignores_is_not_a_change() -> None:
    """`ignore_changes` inputs (an autoscaled group's desired size, a following host's user data) are
    left as they are by an update, so the diff does not count them; the rest still counts."""

    def plan(desired: int, size: int, tag: str = "b") -> Plan:
        group = _resource(
            "aws:autoscaling/group:Group",
            "asg",
            {"desiredCapacity": desired, "maxSize": size, "tags": [{"key": "a", "value": tag}]},
        )
        return _plan(dataclasses.replace(group, ignore_changes=("desiredCapacity", "tags")))

    assert diff_plans(plan(2, 8), plan(4, 8, "c"), load_catalog()).update == ()
    (update,) = diff_plans(plan(2, 8), plan(4, 16), load_catalog()).update
    assert update.changed == ("maxSize",)


def test_an_update_that_stops_and_starts_an_instance_is_a_warning() -> None:
    """EC2 changes user data, and Compute Engine a VM's machine type, only while it is stopped: the
    provider stops and starts the instance (restarts.yaml), which a Slurm controller's users notice."""

    def plan(script: str, machine: str, tag: str) -> Plan:
        return _plan(
            _resource("aws:ec2/instance:Instance", "monitor", {"userDataBase64": script, "tags": {"a": tag}}),
            _resource(
                "gcp:compute/instance:Instance", "controller", {"machineType": machine, "labels": {"a": tag}}
            ),
        )

    catalog = load_catalog()
    diff = diff_plans(plan("IyEx", "e2-standard-8", "1"), plan("IyEy", "e2-standard-16", "2"), catalog)
    assert [(u.after.name, u.restarts, u.replace) for u in diff.update] == [
        ("monitor", ("userDataBase64",), False),
        ("controller", ("machineType",), False),
    ]
    tags_only = diff_plans(plan("IyEx", "e2-standard-8", "1"), plan("IyEx", "e2-standard-8", "2"), catalog)
    assert [u.restarts for u in tags_only.update] == [(), ()]

    report = dataclasses.replace(compare(EXAMPLE, EXAMPLE, env="prod", today=TODAY), resources=diff)
    warning = (
        "instance controller (gcp:compute:Instance) is stopped and started to change machineType: "
        "it is down meanwhile"
    )
    assert f"  !! {warning}" in report_text(report).splitlines()
    assert warning in report_json(report)["warnings"]
    assert f"> The {warning}." in report_markdown(report)


def test_a_change_to_an_unpriced_tier_makes_the_cost_change_unknown(tmp_path: Path) -> None:
    # PERSISTENT_2 at 250 MB/s/TiB has no price in the catalog: the priced total drops by the old tier's
    # $5,220/month, but the change itself is unknown and is never shown as a decrease.
    new = variant(tmp_path, "new.yaml", ("throughput_mbps_per_tib: 125", "throughput_mbps_per_tib: 250"))
    report = compare(EXAMPLE, new, env="prod", today=TODAY)
    summary = (
        "Monthly cost change is unknown: datasets has no price on one side; the priced items go from "
        "$648,087.20 to $642,867.20 per month"
    )
    text = report_text(report)
    assert summary in text.splitlines()
    assert "decrease" not in text
    assert "will not change" not in text
    assert f"**{summary}**" in report_markdown(report).splitlines()
    cost = report_json(report)["cost"]
    assert cost["delta"] == {
        "hourly_usd": None,
        "monthly_usd": None,
        "min_hourly_usd": None,
        "min_monthly_usd": None,
    }
    assert cost["unpriced"] == ["datasets"]
    assert [item for item in cost["items"] if item["name"] == "datasets"] == [
        {
            "name": "datasets",
            "before_hourly_usd": 7.15,
            "after_hourly_usd": None,
            "delta_hourly_usd": None,
            "before_min_hourly_usd": 7.15,
            "after_min_hourly_usd": None,
            "delta_min_hourly_usd": None,
            "before_monthly_usd": 5220.0,
            "after_monthly_usd": None,
            "ends_at": None,
            "term_hours": None,
            "term_usd": None,
        }
    ]


SLURM = REPO / "blueprints" / "examples" / "aws-p5-slurm.yaml"
BP151 = (
    "warning[BP151] monitoring.smtp: alerts for ml-infra@example.com are not e-mailed: monitoring.smtp names "
    "no mail relay"
)


def test_the_diff_carries_the_blueprints_findings_in_text_and_markdown(tmp_path: Path) -> None:
    new = tmp_path / "new.yaml"
    new.write_text(SLURM.read_text().replace("    count: 8\n", "    count: 9\n", 1))
    report = compare(SLURM, new, env=None, today=TODAY)
    lines = report_text(report).splitlines()
    at = lines.index("Findings (0 errors, 1 warning, 1 note):")
    assert f"{new}:50:9: {BP151}" in lines[at:]
    located = [line for line in lines[at + 1 :] if line.startswith(str(new))]
    assert located == [
        # One note for both machines: their prices have the same age and source.
        f"{new}:27:3: info[BP404] scheduler.controller.machine_type: the on_demand prices of c7i.4xlarge "
        "(scheduler.controller.machine_type), c7i.2xlarge (scheduler.login.machine_type) in us-east-1 are "
        "from 2025-11-01, 386 days old (stale after 180 days; source S-SKY-AWS-V8)",
        f"{new}:50:9: {BP151}",
    ]
    markdown = report_markdown(report).splitlines()
    assert "**Findings:** 0 errors, 1 warning, 1 note" in markdown
    assert (
        f"| warning | BP151 | `{new}:50:9` | `monitoring.smtp` | alerts for ml-infra@example.com are not "
        "e-mailed: monitoring.smtp names no mail relay | add monitoring.smtp: {smarthost: HOST:587, sender: "
        "alerts@example.com, username: ..., password_secret: SECRET}; until then alerts show in Grafana and "
        "Alertmanager only |"
    ) in markdown


def test_shrinking_a_fixed_size_group_warns_that_running_nodes_and_their_jobs_go(tmp_path: Path) -> None:
    new = variant(tmp_path, "new.yaml", ("    count: 16", "    count: 10"))
    report = compare(EXAMPLE, new, env="prod", today=TODAY)
    warning = (
        "node group trainers shrinks from 16 to 10 nodes: its instance group terminates 6 running nodes of "
        "its own choice and the jobs on them end; under Slurm, drain the group's nodes first (`scontrol "
        "update NodeName=... State=DRAIN Reason=shrink`) and apply once they are idle"
    )
    assert warning in report_json(report)["warnings"]
    assert f"> The {warning}." in report_markdown(report).replace("\\", "").splitlines()
    assert "  !! node group trainers shrinks from 16 to 10 nodes" in report_text(report)
    # Growing it says nothing of the kind.
    grown = compare(
        EXAMPLE, variant(tmp_path, "grown.yaml", ("    count: 16", "    count: 24")), env="prod", today=TODAY
    )
    assert not [w for w in report_json(grown)["warnings"] if "shrinks" in w]


def test_a_new_file_system_under_a_multislice_rewrites_its_boot_object_and_keeps_the_slices(
    tmp_path: Path,
) -> None:
    # Audit item: a Managed Lustre tier change replaced the v5p queued resource (128 chips asked for again)
    # because its startup script named the file system. The startup script now only fetches the boot
    # script from the bucket: the file system's replacement rewrites that object, and the slices stay.
    example = REPO / "blueprints" / "examples" / "gcp-tpu-v5p-multislice.yaml"
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    lustre = (
        "  - name: scratch\n    kind: lustre\n    capacity_gib: 72000\n    throughput_mbps_per_tib: {tier}\n"
        "    mount_point: /scratch\n"
    )
    base = example.read_text().replace("    slices: 2\n", "    slices: 2\n    attach: [scratch]\n", 1)
    base = base.replace("storage:\n  - name: checkpoints", "storage:\n" + lustre + "  - name: checkpoints", 1)
    old.write_text(base.replace("{tier}", "125"))
    new.write_text(base.replace("{tier}", "500"))
    report = compare(old, new, env="prod", today=TODAY)
    assert _replaced(report) == {
        "v5p-pretrain-scratch-fs": ("perUnitStorageThroughput",),
        "v5p-pretrain-pretrain-boot": ("source (v5p-pretrain-scratch-fs is replaced)",),
    }


def test_opening_a_gke_api_to_listed_ranges_updates_the_cluster_and_keeps_what_runs_in_it(
    tmp_path: Path,
) -> None:
    # The kubeconfig moves from the DNS endpoint to the IP endpoint: without the provider's cluster
    # identifier that would replace the provider and recreate every namespace and DaemonSet in the cluster.
    example = REPO / "blueprints" / "examples" / "gcp-gke-a3mega.yaml"
    new = tmp_path / "cidrs.yaml"
    new.write_text(
        example.read_text().replace(
            "  kind: kubernetes\n", "  kind: kubernetes\n  api_access_cidrs: [203.0.113.0/24]\n"
        )
    )
    report = compare(example, new, env="prod", today=TODAY)
    assert _replaced(report) == {}
    assert [(u.after.name, u.changed) for u in report.resources.updated] == [
        (
            "gke-mega-gke-cluster",
            (
                "controlPlaneEndpointsConfig.dnsEndpointConfig.allowExternalTraffic",
                "masterAuthorizedNetworksConfig.cidrBlocks",
                "privateClusterConfig.enablePrivateEndpoint",
            ),
        ),
        ("gke-mega-objects-provider", ("kubeconfig",)),
    ]
