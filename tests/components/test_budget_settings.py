"""A budget that cannot be created is a located finding, never silence; what an AWS budget counts is said.

The user's path: `clusterfab validate` (with and without `--stack`) and `clusterfab plan` on a project of
their own, whose stack files (stacks/Pulumi.<stack>.yaml, where `pulumi config set` writes) hold the
settings, and `pulumi up` (the program logs the stack's findings).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest

from clusterfab.stackinput import StackSettings, load_stack_input
from tests.components.harness import all_of, plan_configured
from tests.conftest import REPO

GCP = """version: 1
name: billed
cloud: gcp
region: us-central1
zone: us-central1-b
project: my-project
node_groups:
  - name: trainers
    machine_type: a3-highgpu-8g
    count: 1
budget:
  max_monthly_usd: 80000
  alert_emails: [ml-infra@example.com]
environments:
  dev: {budget: null}
  prod: {}
"""
AWS = """version: 1
name: tagged
cloud: aws
region: us-east-1
zone: use1-az6
node_groups:
  - name: trainers
    machine_type: p5.48xlarge
    count: 1
budget:
  max_hourly_usd: 100
"""
GCP_BUDGET = "gcp:billing/budget:Budget"
PROGRAM = ("__main__.py", "compose.py", "cluster.py", "slurm_common.py", "aws", "gcp")


def _project(tmp_path: Path, blueprint: str, stacks: dict[str, str]) -> Path:
    """A Pulumi project of the user's: the clusterfab program, a blueprint and stack files."""
    (tmp_path / "Pulumi.yaml").write_text("name: clusterfab\nmain: stacks/\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    # Copies: the program finds its project from its own file's place.
    for name in PROGRAM:
        if (REPO / "stacks" / name).is_dir():
            shutil.copytree(REPO / "stacks" / name, tmp_path / "stacks" / name)
        else:
            shutil.copy(REPO / "stacks" / name, tmp_path / "stacks" / name)
    (tmp_path / "playbooks").symlink_to(REPO / "playbooks")
    for stack, config in stacks.items():
        (tmp_path / "stacks" / f"Pulumi.{stack}.yaml").write_text(
            f"config:\n  clusterfab:blueprint: bp.yaml\n{config}"
        )
    (tmp_path / "bp.yaml").write_text(blueprint)
    return tmp_path


def _cli(cwd: Path, *args: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "clusterfab", *args, "--format", "json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "CLUSTERFAB_TODAY": "2026-11-22"},
    )
    return proc.returncode, json.loads(proc.stdout)


def _budget_findings(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {k: f[k] for k in ("code", "severity", "field", "line", "column", "environment", "message", "hint")}
        for f in payload["findings"]
        if f["code"] in {"BP410", "BP411"}
    ]


NO_BILLING_PROD = {
    "code": "BP410",
    "severity": "warning",
    "field": "budget",
    "line": 11,
    "column": 1,
    "environment": None,
    "message": "stack prod names no billing account (clusterfab:billingAccount): `pulumi up` creates no GCP "
    "budget, and nothing alerts when the spend passes it",
    "hint": "`pulumi config set clusterfab:billingAccount XXXXXX-XXXXXX-XXXXXX --stack prod` with the id of "
    "the billing account that pays for the project",
}


def test_validate_for_a_stack_without_a_billing_account_says_no_budget_is_created(tmp_path: Path) -> None:
    # The attack (issue 36): with `budget:` set, `pulumi up` created no GCP budget and only a program log
    # line said so; validate and plan were silent.
    project = _project(tmp_path, GCP, {"prod": "  clusterfab:environment: prod\n"})
    code, payload = _cli(project, "validate", "bp.yaml", "--stack", "prod")
    assert code == 0
    assert _budget_findings(payload) == [NO_BILLING_PROD]


def test_validate_for_a_stack_with_a_billing_account_is_quiet(tmp_path: Path) -> None:
    project = _project(tmp_path, GCP, {"prod": "  clusterfab:billingAccount: 012345-6789AB-CDEF01\n"})
    code, payload = _cli(project, "validate", "bp.yaml", "--stack", "prod")
    assert code == 0
    assert _budget_findings(payload) == []


def test_validate_for_a_stack_whose_environment_drops_the_budget_is_quiet(tmp_path: Path) -> None:
    # Stack dev deploys the dev overlay (its name), which has no budget: nothing to create, nothing to say.
    project = _project(tmp_path, GCP, {"dev": ""})
    code, payload = _cli(project, "validate", "bp.yaml", "--stack", "dev")
    assert code == 0
    assert payload["env"] == "dev"
    assert _budget_findings(payload) == []


def test_validate_without_a_stack_notes_the_setting_a_gcp_budget_needs(tmp_path: Path) -> None:
    project = _project(tmp_path, GCP, {})
    code, payload = _cli(project, "validate", "bp.yaml")
    assert code == 0
    assert _budget_findings(payload) == [
        {
            "code": "BP410",
            "severity": "info",
            "field": "budget",
            "line": 11,
            "column": 1,
            "environment": None,
            "message": "a GCP budget is created under the billing account the stack names "
            "(clusterfab:billingAccount); a stack without it gets no budget and no budget alerts",
            "hint": "`pulumi config set clusterfab:billingAccount XXXXXX-XXXXXX-XXXXXX --stack STACK`; "
            "`clusterfab validate --stack STACK` checks a stack's settings",
        }
    ]


def test_plan_says_so_and_plans_the_budget_once_the_stack_names_the_account(tmp_path: Path) -> None:
    project = _project(tmp_path, GCP, {"prod": ""})
    code, payload = _cli(project, "plan", "bp.yaml", "--env", "prod")
    assert code == 0
    assert _budget_findings(payload) == [NO_BILLING_PROD]
    assert [r for r in payload["resources"] if r["type"] == GCP_BUDGET] == []

    (project / "stacks" / "Pulumi.prod.yaml").write_text(
        "config:\n  clusterfab:blueprint: bp.yaml\n  clusterfab:billingAccount: 012345-6789AB-CDEF01\n"
    )
    code, payload = _cli(project, "plan", "bp.yaml", "--env", "prod")
    assert code == 0
    assert _budget_findings(payload) == []
    budgets = [r["inputs"] for r in payload["resources"] if r["type"] == GCP_BUDGET]
    assert [(b["billingAccount"], b["amount"]["specifiedAmount"]["units"]) for b in budgets] == [
        ("012345-6789AB-CDEF01", "80000")
    ]


def _tags_note(stack: str, *, activated: bool) -> dict[str, Any]:
    counted = (
        "the AWS budget counts resources tagged clusterfab-blueprint=tagged and "
        f"clusterfab-stack={stack} only once both keys are active cost allocation tags, and only from their "
        "activation on (earlier spend is not counted)"
    )
    if activated:
        return {
            "message": f"{counted}; stack {stack} activates them (clusterfab:activateCostTags)",
            "hint": "the activation fails until AWS lists the keys (up to 24 h after a resource first "
            "carries them) and outside an organization's management account or a standalone account; "
            f"until then `pulumi config set clusterfab:activateCostTags false --stack {stack}`",
        }
    return {
        "message": counted,
        "hint": "AWS lists a new tag key for activation up to 24 h after a resource first carries it; then "
        "activate both in the Billing console or with `pulumi config set clusterfab:activateCostTags true "
        f"--stack {stack}` (from an organization's management account or a standalone account)",
    }


@pytest.mark.parametrize("activated", [False, True])
def test_plan_of_an_aws_budget_says_what_it_counts_and_from_when(tmp_path: Path, activated: bool) -> None:
    setting = "  clusterfab:activateCostTags: true\n" if activated else ""
    project = _project(tmp_path, AWS, {"team-a": setting})
    code, payload = _cli(project, "plan", "bp.yaml", "--stack", "team-a")
    assert code == 0
    location = {"code": "BP411", "severity": "info", "field": "budget", "line": 10, "column": 1}
    assert _budget_findings(payload) == [
        {**location, "environment": None, **_tags_note("team-a", activated=activated)}
    ]
    activations = [
        r["inputs"]["tagKey"] for r in payload["resources"] if r["type"].startswith("aws:costexplorer/")
    ]
    assert activations == (["clusterfab-blueprint", "clusterfab-stack"] if activated else [])


def test_the_program_logs_the_missing_billing_account_at_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # `pulumi up` shows the stack's findings as warnings: the same finding, file:line:col and code.
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warned.append(message))
    plan = plan_configured(GCP, (), env="prod")
    assert all_of(plan, GCP_BUDGET) == []
    ours = [m for m in warned if " BP410 " in m]
    assert len(ours) == 1
    assert ours[0].endswith(
        ":11:1: BP410 stack prod names no billing account (clusterfab:billingAccount): `pulumi up` creates "
        "no GCP budget, and nothing alerts when the spend passes it"
    )


def test_the_stack_input_carries_the_finding_for_its_stack_alone(tmp_path: Path) -> None:
    (tmp_path / "bp.yaml").write_text(GCP)
    unbilled = load_stack_input("bp.yaml", "prod", tmp_path, stack="prod")
    billed = load_stack_input(
        "bp.yaml",
        "prod",
        tmp_path,
        stack="prod",
        settings=StackSettings(billing_account="012345-6789AB-CDEF01"),
    )
    assert [(f.code, f.line, f.column) for f in unbilled.warnings if f.code == "BP410"] == [("BP410", 11, 1)]
    assert [f for f in billed.warnings if f.code == "BP410"] == []


def test_plan_takes_no_settings_from_a_stack_of_another_blueprint(tmp_path: Path) -> None:
    # `plan --env prod` plans stack prod; when stacks/Pulumi.prod.yaml deploys another blueprint, its
    # billing account says nothing of this one's budget. Named with --stack, the stack is the user's word.
    project = _project(tmp_path, GCP, {})
    (project / "stacks" / "Pulumi.prod.yaml").write_text(
        "config:\n  clusterfab:blueprint: other.yaml\n  clusterfab:billingAccount: 012345-6789AB-CDEF01\n"
    )
    code, payload = _cli(project, "plan", "bp.yaml", "--env", "prod")
    assert code == 0
    assert _budget_findings(payload) == [NO_BILLING_PROD]
    assert [r for r in payload["resources"] if r["type"] == GCP_BUDGET] == []
    code, payload = _cli(project, "plan", "bp.yaml", "--env", "prod", "--stack", "prod")
    assert code == 0
    assert _budget_findings(payload) == []
    assert [r["inputs"]["billingAccount"] for r in payload["resources"] if r["type"] == GCP_BUDGET] == [
        "012345-6789AB-CDEF01"
    ]
