"""The progress view takes every kind of event without failing, and sums up what happened."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from clusterfab.deploy.events import (
    STACK_TYPE,
    Cancelled,
    DeployEvent,
    Diagnostic,
    PolicyViolation,
    Prelude,
    ResourceStep,
    StdoutLine,
    Summary,
)
from clusterfab.deploy.progress import DeployProgress, Operation

VPC, FS = "aws:ec2/vpc:Vpc", "aws:fsx/lustreFileSystem:LustreFileSystem"


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:prod::clusterfab::{type_}::{name}"


def step(phase: str, op: str, type_: str, name: str, **extra: object) -> ResourceStep:
    return ResourceStep(phase, op, urn(type_, name), type_, name, False, True, **extra)  # type: ignore[arg-type]


def every_event(*, planning: bool) -> list[DeployEvent | None]:
    return [
        Prelude(config={"clusterfab:blueprint": "x.yaml"}),
        step("start", "create", STACK_TYPE, "prod", planning=planning),
        step("start", "create", VPC, "vpc", planning=planning),
        step("done", "create", VPC, "vpc", planning=planning),
        step("start", "update", "aws:ec2/launchTemplate:LaunchTemplate", "lt", diffs=("userData",)),
        step("done", "update", "aws:ec2/launchTemplate:LaunchTemplate", "lt", diffs=("userData",)),
        step("start", "create-replacement", FS, "fs", replace_keys=("deploymentType",)),
        step("start", "replace", FS, "fs", replace_keys=("deploymentType",)),
        step("start", "delete-replaced", FS, "fs"),
        step("start", "same", "aws:iam/role:Role", "role"),
        step("done", "same", "aws:iam/role:Role", "role"),
        step("start", "delete", "aws:ec2/eip:Eip", "ip"),
        Diagnostic(severity="error", message="eip: access denied", urn=urn("aws:ec2/eip:Eip", "ip")),
        step("failed", "delete", "aws:ec2/eip:Eip", "ip"),
        Diagnostic(severity="warning", message="careful"),
        Diagnostic(severity="error", message="update failed"),
        PolicyViolation("clusterfab-no-public-ips", "clusterfab", "mandatory", "public!", urn(VPC, "vpc")),
        StdoutLine("Updating (prod)"),
        Summary(changes={"create": 1, "update": 1, "replace": 1, "create-replacement": 1, "same": 1}),
        Cancelled(),
        None,
    ]


@pytest.mark.parametrize("operation", ["preview", "up", "destroy", "preview-destroy"])
@pytest.mark.parametrize("live", [False, True])
def test_every_event_type_is_taken_and_rendered(operation: Operation, live: bool) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=live, width=160)
    with DeployProgress(console, operation=operation, stack="prod", live=live) as progress:
        for event in every_event(planning=operation.startswith("preview")):
            progress.handle(event)
            console.print(progress.render())
    assert progress.callback_errors == []
    assert [s.name for s in progress.failed] == ["ip"]
    assert len(progress.policy_violations) == 1
    summary = progress.summary_text()
    assert "failed: aws:ec2/eip:Eip ip\n    eip: access denied" in summary
    assert "  error: update failed" in summary
    assert "policy clusterfab/clusterfab-no-public-ips (mandatory) on vpc: public!" in summary


def test_summary_uses_the_engine_counts_and_folds_replacements() -> None:
    progress = DeployProgress(Console(file=io.StringIO()), operation="up", stack="prod", live=False)
    for event in every_event(planning=False):
        progress.handle(event)
    assert progress.counts() == {"create": 1, "update": 1, "replace": 1, "same": 1}
    assert progress.summary_text().splitlines()[0] == (
        "Update of prod: 1 created, 1 updated, 1 replaced, 1 unchanged"
    )


def test_counts_come_from_steps_until_the_summary_arrives() -> None:
    progress = DeployProgress(Console(file=io.StringIO()), operation="preview", stack="prod", live=False)
    for event in every_event(planning=True)[:12]:
        progress.handle(event)
    assert progress.counts() == {"create": 1, "update": 1, "replace": 1, "same": 1, "delete": 1}
    assert progress.summary_text().splitlines()[0] == (
        "Preview of prod: 1 to create, 1 to update, 1 to replace, 1 to delete, 1 unchanged"
    )


def test_without_a_terminal_one_line_per_resource() -> None:
    out = io.StringIO()
    progress = DeployProgress(Console(file=out, width=200), operation="up", stack="prod")
    with progress:
        for event in every_event(planning=False):
            progress.handle(event)
    lines = out.getvalue().splitlines()
    assert " + created    aws:ec2/vpc:Vpc  vpc" in lines
    assert " ~ updated    aws:ec2/launchTemplate:LaunchTemplate  lt  (userData)" in lines
    assert "  failed  aws:ec2/eip:Eip  ip" in lines
    assert "error: eip: access denied" in lines
    assert not any("role" in line for line in lines)  # unchanged resources stay quiet


def test_preview_lines_say_what_would_happen() -> None:
    out = io.StringIO()
    progress = DeployProgress(Console(file=out, width=200), operation="preview", stack="prod")
    for event in every_event(planning=True)[:9]:
        progress.handle(event)
    assert out.getvalue().splitlines() == [
        " + to create  aws:ec2/vpc:Vpc  vpc",
        " ~ to update  aws:ec2/launchTemplate:LaunchTemplate  lt  (userData)",
        "+- to replace aws:fsx/lustreFileSystem:LustreFileSystem  fs  (deploymentType)",
    ]
    assert [s.op for s in progress.steps] == [
        "create",
        "update",
        "create-replacement",
        "replace",
        "delete-replaced",
    ]


def test_no_changes() -> None:
    progress = DeployProgress(Console(file=io.StringIO()), operation="preview", stack="dev", live=False)
    progress.handle(Summary(changes={}))
    assert progress.summary_text() == "Preview of dev: no changes"


def test_a_failing_display_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    console = Console(file=io.StringIO())

    def broken(*_: object, **__: object) -> None:
        raise OSError("terminal went away")

    monkeypatch.setattr(console, "print", broken)
    progress = DeployProgress(console, operation="up", stack="prod", live=False)
    progress.handle(step("done", "create", VPC, "vpc"))
    progress.handle(step("done", "create", VPC, "vpc2"))
    assert progress.callback_errors == ["OSError: terminal went away"] * 2
    assert len(progress.finished) == 2
    assert "(progress display error: OSError: terminal went away)" in progress.summary_text()


def test_elapsed_time_of_running_resources() -> None:
    now = [100.0]
    out = io.StringIO()
    console = Console(file=out, width=160)
    progress = DeployProgress(console, operation="up", stack="prod", live=False, clock=lambda: now[0])
    progress.handle(step("start", "create", FS, "fs"))
    now[0] = 142.0
    console.print(progress.render())
    assert "fs" in out.getvalue()
    assert "42" in out.getvalue()
    assert "1 in progress, 0 done, 0 failed" in out.getvalue()
