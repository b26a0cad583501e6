"""The Automation API layer, driven through the real `pulumi.automation` against a fake CLI.

Tests using the `real_cli` fixture need the actual Pulumi CLI and skip without it, in CI too: no package
registry CI reaches ships it (tests/labs.py, docs/testing.md).
"""

from __future__ import annotations

import shutil

import pytest

from clusterfab.core.errors import UsageError
from clusterfab.deploy.automation import (
    INSTALL_HINT,
    DeployError,
    DeployProject,
    error_summary,
    guarded,
    pulumi_command,
)
from clusterfab.deploy.events import DeployEvent, ResourceStep, Summary
from clusterfab.plan.project import find_project
from tests.conftest import REPO
from tests.deploy.conftest import FakePulumi
from tests.labs import PULUMI_CLI, require

FS = "aws:fsx/lustreFileSystem:LustreFileSystem"


@pytest.fixture
def real_cli() -> None:
    require(shutil.which("pulumi") is not None, "the Pulumi CLI is not installed", ci_exempt=PULUMI_CLI)


def project() -> DeployProject:
    return DeployProject(find_project(REPO))


def test_missing_cli_is_a_usage_error_saying_what_to_install(no_pulumi: None) -> None:
    with pytest.raises(UsageError) as raised:
        pulumi_command()
    assert str(raised.value) == INSTALL_HINT
    assert "install the Pulumi CLI" in INSTALL_HINT
    assert "`pulumi login`" in INSTALL_HINT
    assert raised.value.exit_code == 2


def test_unknown_stack_is_a_usage_error(fake_pulumi: FakePulumi) -> None:
    with pytest.raises(UsageError, match=r"stack staging does not exist: create it with `pulumi stack init"):
        project().stack("staging")


def test_config_and_outputs_through_the_cli(fake_pulumi: FakePulumi) -> None:
    fake_pulumi.add_stack(
        "dev", config={"clusterfab:blueprint": "x.yaml"}, outputs={"blueprint": {"digest": "d"}}
    )
    stack = project().stack("dev")
    assert stack.config() == {"clusterfab:blueprint": "x.yaml"}
    assert stack.outputs() == {"blueprint": {"digest": "d"}}
    stack.set_config("clusterfab:health", '{"status": "passed"}')
    assert fake_pulumi.stack("dev")["config"]["clusterfab:health"] == '{"status": "passed"}'
    set_call = next(c for c in fake_pulumi.calls() if "set" in c)
    assert set_call[-2:] == ["--", '{"status": "passed"}']
    assert "--plaintext" in set_call


def test_protected_resources_from_the_state(fake_pulumi: FakePulumi) -> None:
    fs = f"urn:pulumi:prod::clusterfab::{FS}::fs"
    fake_pulumi.add_stack(
        "prod",
        resources=[
            {"urn": fs, "type": FS, "protect": True},
            {"urn": "urn:x::vpc", "type": "aws:ec2/vpc:Vpc"},
        ],
    )
    assert project().stack("prod").protected_resources() == [(fs, FS)]


def test_preview_events_arrive_as_records(fake_pulumi: FakePulumi) -> None:
    fake_pulumi.add_stack(
        "prod",
        events={
            "preview": [
                {"op": "create", "type": "aws:ec2/vpc:Vpc", "name": "vpc"},
                {"op": "replace", "type": FS, "name": "fs", "protect": True, "keys": ["deploymentType"]},
            ]
        },
    )
    received: list[DeployEvent | None] = []
    result = project().stack("prod").preview(received.append)
    assert result.ok
    assert result.changes == {"create": 1, "replace": 1}
    steps = [e for e in received if isinstance(e, ResourceStep) and e.phase == "start"]
    assert [(s.op, s.name, s.protect, s.planning) for s in steps] == [
        ("create", "vpc", False, True),
        ("replace", "fs", True, True),
    ]
    assert steps[1].replace_keys == ("deploymentType",)
    assert any(isinstance(e, Summary) for e in received)
    assert fake_pulumi.operations() == [("preview", "prod")]


def test_a_failing_update_is_a_result_with_the_cli_error(fake_pulumi: FakePulumi) -> None:
    fake_pulumi.add_stack(
        "prod",
        events={"up": [{"op": "create", "type": "aws:ec2/vpc:Vpc", "name": "vpc", "fail": "quota exceeded"}]},
    )
    received: list[DeployEvent | None] = []
    result = project().stack("prod").up(received.append)
    assert not result.ok
    assert result.error == "update failed"
    failed = [e for e in received if isinstance(e, ResourceStep) and e.phase == "failed"]
    assert [s.name for s in failed] == ["vpc"]


def test_an_event_handler_that_raises_does_not_stop_the_operation(fake_pulumi: FakePulumi) -> None:
    fake_pulumi.add_stack("prod", events={"up": [{"op": "create", "type": "aws:ec2/vpc:Vpc", "name": "vpc"}]})
    seen: list[DeployEvent | None] = []

    def explode(event: DeployEvent | None) -> None:
        seen.append(event)
        raise ValueError("bad handler")

    result = project().stack("prod").up(explode)
    assert result.ok
    assert result.changes == {"create": 1}
    # prelude, pre, outputs, summary, cancel: the watcher thread survived every exception
    assert [type(e).__name__ for e in seen] == [
        "Prelude",
        "ResourceStep",
        "ResourceStep",
        "Summary",
        "Cancelled",
    ]


def test_guarded_callback_never_raises() -> None:
    def explode(_: DeployEvent | None) -> None:
        raise RuntimeError("no")

    callback = guarded(explode)
    assert callback is not None
    callback(object())
    assert guarded(None) is None


def test_a_failing_read_is_a_deploy_error(fake_pulumi: FakePulumi) -> None:
    fake_pulumi.add_stack("dev")
    stack = project().stack("dev")
    state = fake_pulumi.state()
    del state["stacks"]["dev"]
    fake_pulumi.write(state)
    with pytest.raises(DeployError, match="pulumi failed on stack dev: no stack named 'dev' found"):
        stack.outputs()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\n code: 255\n stdout: x\n stderr: error: one\nerror: two\nerror: one\n", "one; two"),
        ("\n code: 1\n stdout: \n stderr: warning: a\nsomething broke\n", "something broke"),
        ("\n code: 1\n stdout: last words\n stderr: \n", "last words"),
        ("", "the pulumi CLI failed without saying why"),
    ],
)
def test_error_summary(text: str, expected: str) -> None:
    assert error_summary(text) == expected


@pytest.mark.usefixtures("real_cli")
def test_the_real_cli_is_found_and_runs() -> None:
    command = pulumi_command()
    assert command.version is not None
    assert command.version.major == 3


@pytest.mark.usefixtures("real_cli")
def test_the_real_cli_reports_a_missing_stack_as_a_usage_error() -> None:
    with pytest.raises(UsageError, match="stack clusterfab-test-missing-stack"):
        project().stack("clusterfab-test-missing-stack")
