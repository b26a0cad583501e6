"""Every rule against a bad blueprint fixture: exact code, severity, field, line and column.

Each fixture in tests/fixtures/blueprints/bad states what it must produce in header comments,
`# expect: <severity> <code> <field or -> <line>:<column>`, written by hand from the file itself.
The set of findings must equal the expectations: nothing missing, nothing extra. A fixture about a
deployment names the stack it is validated for, `# stack: <name> [setting=value ...]` (`-`: validated
with no stack named, as `clusterfab validate` of the file alone); without it no stack is deployed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clusterfab.core.codes import CODES
from clusterfab.load import load
from clusterfab.rules.context import StackView
from clusterfab.rules.render import render_text
from tests.conftest import BAD_FIXTURES, EXAMPLES, assert_golden
from tests.factories import TODAY

"""The date prices are judged stale against (BP404), fixed so the expectations hold on any day."""
_EXPECT = re.compile(r"^# expect: (\w+) (BP\d{3}) (\S+) (\d+):(\d+)$", re.M)
_STACK = re.compile(r"^# stack: (\S+)((?: \S+=\S+)*)$", re.M)
FIXTURES = sorted(BAD_FIXTURES.glob("*.yaml"))


def _stack(path: Path) -> StackView | None:
    """The stack a fixture is validated for (its `# stack:` line), with the settings it names."""
    match = _STACK.search(path.read_text(encoding="utf-8", errors="replace"))
    if match is None:
        return None
    settings = dict(pair.split("=", 1) for pair in match[2].split())
    return StackView(
        name=None if match[1] == "-" else match[1],
        billing_account=settings.get("clusterfab:billingAccount"),
        activate_cost_tags=settings.get("clusterfab:activateCostTags") == "true",
        provider_settings={k: v for k, v in settings.items() if k == "azure-native:subscriptionId"},
    )


def _expectations(path: Path) -> set[tuple[str, str, str, int, int]]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return {
        (severity, code, "" if field == "-" else field, int(line), int(column))
        for severity, code, field, line, column in _EXPECT.findall(text)
    }


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_bad_fixture_produces_exactly_its_findings(path: Path) -> None:
    expected = _expectations(path)
    assert expected, f"{path.name} has no `# expect:` lines"
    result = load(path, display=path.name, today=TODAY, stack=_stack(path))
    got = {(f.severity.value, f.code, f.field, f.line, f.column) for f in result.findings}
    assert got == expected
    for finding in result.findings:
        assert (finding.message and finding.hint) or finding.code == "BP001", finding


NOT_FROM_A_FILE = {
    "BP172": "needs a cloud without a managed Kubernetes: tests/plugins registers one (the toy cloud)",
    "BP177": "every catalog machine has a node image: tests/unit/test_kubernetes_pools.py takes one away",
    "BP228": "every built-in cloud has Slurm hosts: tests/plugins registers one without (the toy cloud)",
    "BP232": "every built-in cloud creates elastic Slurm nodes: tests/plugins registers one that does not",
    "BP233": "every built-in cloud has a managed accounting database: tests/plugins registers one without",
    "BP166": "a change between two blueprints (`clusterfab diff`): tests/components/test_diff_capacity.py",
    "BP167": "a change between two blueprints (`clusterfab diff`): tests/components/test_diff_capacity.py",
}
"""Codes no blueprint of the built-in clouds can raise, with the test that raises them instead."""


def test_every_registered_code_has_a_fixture() -> None:
    covered = {code for path in FIXTURES for _, code, *_ in _expectations(path)}
    missing = sorted(c for c in CODES if c not in covered and c not in NOT_FROM_A_FILE)
    assert missing == []
    assert covered <= set(CODES), covered - set(CODES)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples_are_valid_in_every_environment(path: Path) -> None:
    # Price caveats (BP403 warnings, BP404 notes) are allowed: the catalog lacks some prices.
    result = load(path, today=TODAY)
    assert [f for f in result.findings if f.severity.value == "error"] == []
    assert set(result.blueprints) == {None, "dev", "prod"}


@pytest.mark.parametrize(
    "name",
    [
        "BP104-tpu-topology",
        "BP005-unknown-field",
        "BP103-overlay-unknown-item",
        "BP208-capacity-off-grid",
        "BP002-yaml-syntax",
        "BP212-driver-for-cuda",
    ],
)
def test_golden_error_text(name: str) -> None:
    path = BAD_FIXTURES / f"{name}.yaml"
    shown = f"tests/fixtures/blueprints/bad/{name}.yaml"
    result = load(path, display=shown)
    lines = result.document.lines if result.document else path.read_text().splitlines()
    assert_golden(f"errors/{name}.txt", render_text(result.findings, lines) + "\n")


def test_findings_are_sorted_by_position_and_deduplicated() -> None:
    result = load(BAD_FIXTURES / "BP108-count-and-autoscaling.yaml")
    positions = [(f.line, f.column) for f in result.findings]
    assert positions == sorted(positions)
    assert len(result.findings) == len({(f.code, f.field, f.line, f.column) for f in result.findings})


@pytest.mark.parametrize(
    ("value", "minutes"),
    [
        ("UNLIMITED", None),
        ("90", 90),
        ("30:00", 30),  # MM:SS
        ("30:01", 31),  # a started minute counts
        ("23:50:00", 1430),  # HH:MM:SS
        ("1-00", 1440),  # D-HH
        ("1-02:30", 1590),  # D-HH:MM
        ("2-00:00:01", 2881),  # D-HH:MM:SS
    ],
)
def test_slurm_times_in_minutes_as_slurm_reads_them(value: str, minutes: int | None) -> None:
    """slurm.conf(5)/sbatch(1) time formats: `MM:SS` for two fields without a day, `HH:MM` after a day."""
    from clusterfab.scheduler.slurm.rules import slurm_minutes

    assert slurm_minutes(value) == minutes
