"""Capacity with an end (`capacity.ends_at` on a capacity block): the recorded facts it rests on, the
rules, the block's term in `cost`, the Slurm drain before the end, and the count of a block in `diff`.

Expected figures are written out here, from the recorded AWS statements (tests/fixtures/capacity) and the
catalog's prices as written in clusterfab/catalog/data/prices.yaml, never computed by the code under test.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from clusterfab.catalog import load_catalog
from clusterfab.core.vocab import BLUEPRINT_TAG, NODE_GROUP_TAG, STACK_TAG
from clusterfab.load import load_bytes
from clusterfab.scheduler.slurm import render_slurm
from clusterfab.scheduler.slurm.hostvars import SYNC_CONFIG, controller_files
from clusterfab.scheduler.slurm.nodes import __main__ as nodes_main
from clusterfab.scheduler.slurm.nodes import nodesync
from clusterfab.scheduler.slurm.nodes.aws import Ec2Fleet, ends_from_config
from clusterfab.scheduler.slurm.nodes.scontrol import Scontrol
from clusterfab.spec import ClusterSpec
from tests.conftest import REPO
from tests.unit.test_cli_output import run
from tests.unit.test_slurm_nodesync import RecordingScontrol

CAPACITY_FIXTURES = REPO / "tests" / "fixtures" / "capacity"
TODAY = dt.date(2026, 12, 1)
FACTS = load_catalog().slurm

BLOCK = """version: 1
name: b200
cloud: aws
region: us-east-1
zone: use1-az6
node_groups:
  - name: gpus
    machine_type: p6-b200.48xlarge
    count: 8
    capacity:
      kind: capacity_block
      reservation: cr-0a1b2c3d4e5f60718
      ends_at: {ends_at}
{scheduler}"""


def _findings(
    ends_at: str, *, scheduler: str = "", today: dt.date = TODAY
) -> list[tuple[str, str, int, str]]:
    text = BLOCK.format(ends_at=ends_at, scheduler=scheduler)
    result = load_bytes(text.encode(), "bp.yaml", today=today)
    return [(f.code, f.field, f.line, f.message) for f in result.findings]


# --- the facts ------------------------------------------------------------------------------------------


def _statements() -> list[str]:
    document = json.loads((CAPACITY_FIXTURES / "aws-capacity-blocks.json").read_text())
    return [s["quote"] for s in document["statements"]]


def _said(pattern: str) -> re.Match[str]:
    [match] = [m for s in _statements() if (m := re.search(pattern, s))]
    return match


def test_the_catalog_says_what_the_ec2_user_guide_says_about_a_blocks_end() -> None:
    times = load_catalog().capacity_block_times
    words = {"Thirty": 30, "Forty": 40}
    end = _said(r"All Capacity Blocks end at (\d+):(\d+)AM UTC")
    assert times.end_time_utc == dt.time(int(end[1]), int(end[2]))
    lead = _said(r"^(\w+) minutes before the reservation expires, we begin to terminate any instances")
    assert dt.timedelta(minutes=times.termination_lead_minutes) == dt.timedelta(minutes=words[lead[1]])
    window = _said(r"up to a minimum of 1 hour or a maximum of (\d+) days before it expires")
    assert times.extension_window_days == int(window[1])
    # The warning EC2 sends is 40 minutes ahead, when termination begins 10 minutes later: the same 30.
    warning = _said(
        r"^(\w+) minutes before your Capacity Block reservation ends.* terminate in (\d+) minutes"
    )
    assert words[warning[1]] - int(warning[2]) == times.termination_lead_minutes
    assert "S-AWS-CB-UG" in times.source
    assert times.confidence == "official"


# --- the rules ------------------------------------------------------------------------------------------


SLURM = "scheduler:\n  kind: slurm\n"


def test_a_block_ending_in_two_weeks_says_its_end_the_terminations_and_the_drain() -> None:
    assert _findings("2026-12-15T11:30:00Z", scheduler=SLURM) == [
        (
            "BP161",
            "node_groups[0].capacity.ends_at",
            13,
            # 8 x $113.666/h (p6-b200.48xlarge capacity block, prices.yaml) x 347.5 h = $315,991.48
            "capacity block cr-0a1b2c3d4e5f60718 ends 2026-12-15 11:30 UTC, in 14 days (347.5 hours left: "
            "$315,991.48): EC2 terminates its instances from 11:00 UTC; Slurm starts no job on its nodes "
            "that would still run at 10:50 UTC (the node sync reserves them from then)",
        )
    ]
    # Without Slurm there is nothing to drain; a day later it is not yet near its end.
    assert [m for *_, m in _findings("2026-12-15T11:30:00Z")] == [
        "capacity block cr-0a1b2c3d4e5f60718 ends 2026-12-15 11:30 UTC, in 14 days (347.5 hours left: "
        "$315,991.48): EC2 terminates its instances from 11:00 UTC"
    ]
    assert _findings("2026-12-16T11:30:00Z") == []


@pytest.mark.parametrize(
    ("ends_at", "code", "said"),
    [
        # 8 x $113.666/h x 11.5 h = $10,457.27; x 35.5 h = $32,281.14
        ("2026-12-01T11:30:00Z", "BP161", "ends 2026-12-01 11:30 UTC, today (11.5 hours left: $10,457.27)"),
        (
            "2026-12-02T11:30:00Z",
            "BP161",
            "ends 2026-12-02 11:30 UTC, tomorrow (35.5 hours left: $32,281.14)",
        ),
        # The clock is a date (CLUSTERFAB_TODAY): the day starts at midnight UTC, when this block ended.
        ("2026-12-01T00:00:00Z", "BP160", "ended 2026-12-01 00:00 UTC"),
        ("2026-11-30T11:30:00Z", "BP160", "ended 2026-11-30 11:30 UTC"),
        # An offset is read as written: 06:30 at UTC-05:00 is 11:30 UTC.
        ("2026-11-30T06:30:00-05:00", "BP160", "ended 2026-11-30 11:30 UTC"),
    ],
)
def test_a_blocks_end_is_judged_against_the_start_of_today_in_utc(ends_at: str, code: str, said: str) -> None:
    [(found, field, line, message)] = [f for f in _findings(ends_at) if f[0] != "BP224"]
    assert (found, field, line) == (code, "node_groups[0].capacity.ends_at", 13)
    assert said in message


def test_an_ended_block_is_an_error_that_says_what_to_do() -> None:
    result = load_bytes(
        BLOCK.format(ends_at="2026-11-30T11:30:00Z", scheduler="").encode(), "bp.yaml", today=TODAY
    )
    [finding] = result.findings
    assert not result.ok
    assert (finding.line, finding.column, finding.message, finding.hint) == (
        13,
        16,
        "capacity block cr-0a1b2c3d4e5f60718 ended 2026-11-30 11:30 UTC: EC2 has terminated its instances "
        "and launches no more into it",
        "buy a new block and set its `reservation` and `ends_at`, or move the group to other capacity "
        "(kind: on_demand, spot or reservation)",
    )


# --- the drain before the end (Slurm) ----------------------------------------------------------------------

TWO_WEEKS = BLOCK.format(ends_at="2026-12-15T11:30:00Z", scheduler=SLURM)


def _spec(text: str = TWO_WEEKS) -> ClusterSpec:
    result = load_bytes(text.encode(), "bp.yaml", today=TODAY)
    assert result.ok, result.findings
    return result.blueprints[None].spec


def test_slurm_conf_says_when_the_block_ends_and_from_when_its_nodes_take_no_job() -> None:
    conf = render_slurm(_spec(), FACTS)["slurm.conf"].splitlines()
    at = conf.index("NodeName=gpus-[0-7] CPUs=192 RealMemory=1992294 Gres=gpu:b200:8 State=UNKNOWN")
    assert conf[at + 1 : at + 3] == [
        "# gpus: capacity block cr-0a1b2c3d4e5f60718 ends 2026-12-15T11:30:00Z; EC2 terminates its instances "
        "from 11:00 UTC.",
        "# From 2026-12-15T10:50:00Z the node sync reserves its nodes (clusterfab-end-<node>): no job starts "
        "there that would still run then.",
    ]
    # Without an end there is nothing to say.
    endless = TWO_WEEKS.replace("      ends_at: 2026-12-15T11:30:00Z\n", "")
    result = load_bytes(endless.encode(), "bp.yaml", today=TODAY)
    assert [f.code for f in result.findings] == ["BP162"]
    assert "capacity block" not in render_slurm(result.blueprints[None].spec, FACTS)["slurm.conf"]


def test_the_node_sync_is_told_when_ec2_takes_the_blocks_instances() -> None:
    files = controller_files(_spec(), FACTS, stack="prod")
    assert json.loads(files[SYNC_CONFIG])["ends"] == {"gpus": "2026-12-15T11:00:00Z"}
    endless = TWO_WEEKS.replace("      ends_at: 2026-12-15T11:30:00Z\n", "")
    spec = load_bytes(endless.encode(), "bp.yaml", today=TODAY).blueprints[None].spec
    assert "ends" not in json.loads(controller_files(spec, FACTS, stack="prod")[SYNC_CONFIG])


class _Scontrol(RecordingScontrol):
    """scontrol with no reservation yet."""

    def __call__(self, command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if command[:3] == ["scontrol", "show", "reservation"]:
            return subprocess.CompletedProcess(command, 0, json.dumps({"reservations": []}), "")
        return super().__call__(command, **kwargs)


@mock_aws
def test_the_node_sync_reserves_a_blocks_nodes_from_ten_minutes_before_ec2_takes_them() -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    tags = {BLUEPRINT_TAG: "b200", STACK_TAG: "prod", NODE_GROUP_TAG: "gpus"}
    spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    ec2.run_instances(ImageId=image, MinCount=2, MaxCount=2, TagSpecifications=spec)
    ends = ends_from_config({"gpus": "2026-12-15T11:00:00Z"})  # the config's, as rendered above
    fleet = Ec2Fleet(ec2, blueprint="b200", stack="prod", ends=ends)
    assert {i.ends for i in fleet.instances()} == {dt.datetime(2026, 12, 15, 11, 0, tzinfo=dt.UTC)}
    nodes = [{"name": f"gpus-{i}", "address": f"gpus-{i}", "state": ["IDLE"]} for i in range(2)]
    names = {"gpus": ["gpus-0", "gpus-1"]}
    now = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    nodesync.sync(names, fleet, Scontrol(run=_Scontrol(nodes)), ending=True, now=now)  # names them
    scontrol = _Scontrol(nodes)
    nodesync.sync(names, fleet, Scontrol(run=scontrol), ending=True, now=now)
    # 2026-12-01 00:00 -> 2026-12-15 10:50 UTC: 14 days and 10 h 50 min = 1,248,600 s
    assert [c for c in scontrol.updates if c[:3] == ["scontrol", "create", "reservation"]] == [
        ["scontrol", "create", "reservation", f"ReservationName=clusterfab-end-gpus-{i}",
         "StartTime=now+1248600seconds", "Duration=15", f"Nodes=gpus-{i}", "Users=root",
         "Flags=MAINT,IGNORE_JOBS"]
        for i in range(2)
    ]  # fmt: skip


def test_the_node_sync_program_keeps_reservations_for_a_config_with_ends(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "nodesync.json"
    settings = {
        "cloud": "aws",
        "groups": {"gpus": 8},
        "blueprint": "b200",
        "stack": "prod",
        "region": "us-east-1",
    }
    fleet = tmp_path / "fleet.json"
    fleet.write_text(
        json.dumps({"gpus": {"template": "lt-0123", "profile": "arn:aws:iam::1:instance-profile/p"}})
    )
    seen: dict[str, Any] = {}

    def sync(names: Any, fleet: Ec2Fleet, slurm: Any, **kwargs: Any) -> list[Any]:
        seen.update(kwargs, ends=fleet._ends)
        return []

    monkeypatch.setattr(nodes_main, "sync", sync)
    for ends, ending in (({"gpus": "2026-12-15T11:00:00Z"}, True), ({}, False)):
        config.write_text(json.dumps({**settings, "ends": ends}))
        with mock_aws():
            assert nodes_main.main(["sync", "--config", str(config), "--fleet", str(fleet)]) == 0
        assert (seen["ending"], seen["ends"]) == (ending, ends_from_config(ends))


# --- cost, diff and plan on the user's path: a block ending in two weeks -----------------------------------

USER_PATH = (
    TWO_WEEKS
    + """storage:
  - {name: scratch, kind: lustre, deployment: scratch, capacity_gib: 4800, mount_point: /scratch}
budget:
  max_monthly_usd: 400000
"""
)
"""Eight p6-b200.48xlarge on a capacity block at $113.666/h each ($909.328/h; prices.yaml, S-CB-OCT26) ending
2026-12-15 11:30 UTC; FSx SCRATCH_2 4,800 GiB x $0.140 = $672/month; the Slurm controller c7i.4xlarge $0.714/h
($521.22/month) and login c7i.2xlarge $0.357/h ($260.61/month). On 2026-12-01 347.5 hours are left of the
block (14 days and 11.5 hours from 00:00 UTC): 909.328 x 347.5 = $315,991.48, which is also its monthly
figure (fewer than 730 hours left; 730 would be $663,809.44). Total monthly: 315,991.48 + 672 + 521.22 +
260.61 = $317,445.31."""
TERM_LINE = "gpus: capacity block ends 2026-12-15 11:30 UTC; 347.5 hours left = $315,991.48"
DRAIN = (
    "Slurm starts no job on its nodes that would still run at 10:50 UTC "
    "(the node sync reserves them from then)"
)


@pytest.fixture
def blueprints(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """The blueprint, and the same with the block's count doubled (a diff's new side)."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("CLUSTERFAB_TODAY", "2026-12-01")
    base, new = tmp_path / "b200.yaml", tmp_path / "b200-16.yaml"
    base.write_text(USER_PATH)
    new.write_text(USER_PATH.replace("    count: 8\n", "    count: 16\n"))
    return str(base), str(new)


def test_cost_shows_the_end_and_prices_the_block_for_its_term(blueprints: tuple[str, str]) -> None:
    path, _ = blueprints
    code, text, _ = run("cost", path)
    assert code == 0
    lines = text.splitlines()
    assert [line.split()[-1] for line in lines if line.startswith(("gpus ", "TOTAL"))] == [
        "$315,991.48",
        "$317,445.31",
    ]
    at = lines.index("capacity blocks, priced until their end (hours left from 2026-12-01 00:00 UTC):")
    assert lines[at + 1] == f"  {TERM_LINE}"
    assert "budget: within budget (monthly $317,445.31 of $400,000.00 limit)" in lines
    [finding] = [line for line in lines if "warning[BP161]" in line]
    assert finding.startswith(f"{path}:13:16: warning[BP161] node_groups[0].capacity.ends_at: ")
    assert "(347.5 hours left: $315,991.48)" in finding
    assert DRAIN in finding

    _, markdown, _ = run("cost", path, "--format", "markdown")
    rows = markdown.splitlines()
    at = rows.index("**Capacity blocks, priced until their end (hours left from 2026-12-01 00:00 UTC):**")
    assert rows[at + 2] == f"- {TERM_LINE}"
    assert "| **Total** | | | | | | **$911.32** | **$317,445.31** |" in rows
    assert DRAIN in markdown

    _, document, _ = run("cost", path, "--format", "json")
    payload = json.loads(document)
    gpus = payload["items"][0]
    assert {k: gpus[k] for k in ("hourly_usd", "monthly_usd", "ends_at", "term_hours", "term_usd")} == {
        "hourly_usd": 909.33,
        "monthly_usd": 315991.48,
        "ends_at": "2026-12-15T11:30:00Z",
        "term_hours": 347.5,
        "term_usd": 315991.48,
    }
    assert payload["monthly_usd"] == 317445.31
    assert (payload["findings"][0]["code"], payload["findings"][0]["line"]) == ("BP161", 13)


def test_a_run_longer_than_the_block_counts_the_block_only_until_its_end(blueprints: tuple[str, str]) -> None:
    path, _ = blueprints
    _, text, _ = run("cost", path, "--hours", "500")
    # 909.328 x 347.5 + (0.92054794... + 0.714 + 0.357) x 500 = 315,991.48 + 995.77 = $316,987.25
    assert "run of 500 hours: $316,987.25 (gpus only its 347.5 hours left)" in text.splitlines()


def test_diff_shows_the_end_the_terms_cost_and_a_resized_block(blueprints: tuple[str, str]) -> None:
    base, new = blueprints
    code, text, _ = run("diff", base, new)
    assert code == 1  # over the budget
    lines = text.splitlines()
    at = lines.index("  ~ gpus (node_group): p6-b200.48xlarge x 8 -> 16")
    assert lines[at + 1 : at + 4] == [
        "      +$315,991.48/month ($315,991.48 -> $631,982.96)",
        "  capacity blocks, priced until their end (hours left from 2026-12-01 00:00 UTC):",
        "    gpus: capacity block ends 2026-12-15 11:30 UTC; 347.5 hours left = $631,982.96",
    ]
    assert (
        f"{new}:9:12: warning[BP164] node_groups[0].count: count changes from 8 to 16 on capacity block "
        "cr-0a1b2c3d4e5f60718, which was bought for 8 instances"
    ) in lines
    [finding] = [line for line in lines if "warning[BP161]" in line]
    assert "(347.5 hours left: $631,982.96)" in finding
    assert DRAIN in finding

    _, markdown, _ = run("diff", base, new, "--format", "markdown")
    assert "- gpus: capacity block ends 2026-12-15 11:30 UTC; 347.5 hours left = $631,982.96" in markdown
    assert "| gpus | p6-b200.48xlarge x 8 -> 16 | $909.33 | $1,818.66 | +$315,991.48 |" in markdown
    assert "| warning | BP164 |" in markdown
    assert DRAIN in markdown

    _, document, _ = run("diff", base, new, "--format", "json")
    payload = json.loads(document)
    [gpus] = [item for item in payload["cost"]["items"] if item["name"] == "gpus"]
    assert {
        k: gpus[k] for k in ("before_monthly_usd", "after_monthly_usd", "ends_at", "term_hours", "term_usd")
    } == {
        "before_monthly_usd": 315991.48,
        "after_monthly_usd": 631982.96,
        "ends_at": "2026-12-15T11:30:00Z",
        "term_hours": 347.5,
        "term_usd": 631982.96,
    }
    assert [(f["code"], f["field"], f["line"]) for f in payload["findings"]][:2] == [
        ("BP164", "node_groups[0].count", 9),
        ("BP161", "node_groups[0].capacity.ends_at", 13),
    ]


def test_a_diff_that_extends_the_block_says_so_and_prices_the_longer_term(
    blueprints: tuple[str, str],
) -> None:
    base, new = blueprints
    # Extended by two weeks: 683.5 hours left, still under a month: 909.328 x 683.5 = $621,525.69.
    text = USER_PATH.replace("2026-12-15T11:30:00Z", "2026-12-29T11:30:00Z")
    Path(new).write_text(text)
    _, out, _ = run("diff", base, new)
    lines = out.splitlines()
    at = lines.index("  ~ gpus (node_group): ends 2026-12-15 11:30 UTC -> 2026-12-29 11:30 UTC")
    assert lines[at + 1] == "      +$305,534.21/month ($315,991.48 -> $621,525.69)"
    assert "    gpus: capacity block ends 2026-12-29 11:30 UTC; 683.5 hours left = $621,525.69" in lines
    assert not any("BP161" in line for line in lines)  # 28 days left: not near its end


def test_plan_shows_the_end_the_terms_cost_and_the_drain(blueprints: tuple[str, str]) -> None:
    path, _ = blueprints
    code, text, _ = run("plan", path)
    assert code == 0
    [finding] = [line for line in text.splitlines() if "warning[BP161]" in line]
    assert finding == (
        f"{path}:13:16: warning[BP161] node_groups[0].capacity.ends_at: capacity block cr-0a1b2c3d4e5f60718 "
        "ends 2026-12-15 11:30 UTC, in 14 days (347.5 hours left: $315,991.48): EC2 terminates its instances "
        f"from 11:00 UTC; {DRAIN}"
    )
    _, document, _ = run("plan", path, "--format", "json")
    [found] = [f for f in json.loads(document)["findings"] if f["code"] == "BP161"]
    assert found["message"] == finding.split(": warning[BP161] node_groups[0].capacity.ends_at: ")[1]


def test_the_examples_blocks_have_not_ended_by_the_system_date() -> None:
    """Commands run on the examples with the system date (no CLUSTERFAB_TODAY) in several tests: a block of
    an example that ends within two weeks is moved here first, instead of failing those tests one by one."""
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(days=15)
    ends = [
        (path.name, line)
        for path in sorted((REPO / "blueprints" / "examples").glob("*.yaml"))
        for line in path.read_text().splitlines()
        if "ends_at:" in line
    ]
    assert ends, "no example names a capacity block's end"
    for name, line in ends:
        written = re.search(r"ends_at: \"?([0-9T:Z-]+)", line)
        assert written is not None, line
        assert dt.datetime.fromisoformat(written[1]) > soon, (
            f"{name}: {line.strip()} ends within two weeks: move it (blocks end at 11:30 UTC; a block lasts "
            "at most 182 days and is bought at most 8 weeks ahead)"
        )
