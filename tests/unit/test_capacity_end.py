"""Capacity with an end (`capacity.ends_at` on a capacity block): the recorded facts it rests on, the
rules, the block's term in `cost`, the Slurm drain before the end, and the count of a block in `diff`.

Expected figures are written out here, from the recorded AWS statements (tests/fixtures/capacity) and the
catalog's prices as written in clusterfab/catalog/data/prices.yaml, never computed by the code under test.
"""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.rules.engine import validate_bytes
from tests.conftest import REPO

CAPACITY_FIXTURES = REPO / "tests" / "fixtures" / "capacity"
TODAY = dt.date(2026, 12, 1)

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
    result = validate_bytes(text.encode(), "bp.yaml", today=today)
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
            "capacity block cr-0a1b2c3d4e5f60718 ends 2026-12-15 11:30 UTC, in 14 days: EC2 terminates its "
            "instances from 11:00 UTC; Slurm starts no job on its nodes that would still run at 10:50 UTC "
            "(the node sync reserves them from then)",
        )
    ]
    # Without Slurm there is nothing to drain; a day later it is not yet near its end.
    assert [m for *_, m in _findings("2026-12-15T11:30:00Z")] == [
        "capacity block cr-0a1b2c3d4e5f60718 ends 2026-12-15 11:30 UTC, in 14 days: EC2 terminates its "
        "instances from 11:00 UTC"
    ]
    assert _findings("2026-12-16T11:30:00Z") == []


@pytest.mark.parametrize(
    ("ends_at", "code", "said"),
    [
        ("2026-12-01T11:30:00Z", "BP161", "ends 2026-12-01 11:30 UTC, today"),
        ("2026-12-02T11:30:00Z", "BP161", "ends 2026-12-02 11:30 UTC, tomorrow"),
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
    result = validate_bytes(
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
