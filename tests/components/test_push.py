"""Push mode: the configure flow over a stack's outputs, with the stack and ansible-runner faked."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from clusterfab.bootstrap import Mount
from clusterfab.core.errors import UsageError
from clusterfab.outputs import read_outputs
from clusterfab.provision import push
from clusterfab.provision.extravars import gpu_node_vars, healthcheck_vars
from clusterfab.provision.runner import PlaybookResult
from clusterfab.stackinput import load_stack_input
from tests.components.harness import plan_file
from tests.conftest import REPO

EXAMPLE = "blueprints/examples/aws-p5-efa-fsx.yaml"
PLAYBOOKS = REPO / "playbooks"


class FakeStack:
    def __init__(self, outputs: dict[str, Any]) -> None:
        self._outputs = outputs
        self.values: dict[str, str] = {}

    def outputs(self) -> dict[str, Any]:
        return self._outputs

    def config(self) -> Mapping[str, str]:
        return self.values

    def set_config(self, key: str, value: str) -> None:
        self.values[key] = value


class FakeRunner:
    def __init__(self, failing: set[str] | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.failing = failing or set()
        self.inventories: list[str] = []

    def __call__(self, playbook: Path, **kwargs: Any) -> PlaybookResult:
        self.calls.append({"playbook": playbook.name, **kwargs})
        self.inventories.append(Path(kwargs["inventory"]).read_text())
        failed = playbook.name in self.failing
        return PlaybookResult(
            playbook=playbook,
            rc=2 if failed else 0,
            status="failed" if failed else "successful",
            hosts={},
            failed_tasks=(),
            duration_s=1.0,
        )


def _stack() -> tuple[FakeStack, Any]:
    outputs = plan_file(REPO / EXAMPLE, "dev").outputs
    return FakeStack(outputs), load_stack_input(EXAMPLE, "dev", REPO)


def test_configure_runs_each_node_group_then_the_health_check_and_records_it() -> None:
    stack, stack_input = _stack()
    runner = FakeRunner()
    result = push.configure(stack, stack_input, runner=runner, playbooks=PLAYBOOKS)
    assert [(c["playbook"], c["limit"]) for c in runner.calls] == [
        ("gpu_node.yml", "node_group_trainers"),
        ("healthcheck.yml", "node_group_trainers"),
    ]
    group = stack_input.spec.node_groups[0]
    mounts = [
        Mount(
            "datasets",
            "lustre",
            "llm-pretrain-datasets-fs.fsx.mock@tcp:/mockmnt",
            "/lustre",
            "relatime,flock",
        )
    ]
    assert runner.calls[0]["extravars"] == gpu_node_vars(stack_input.spec, group, stack_input.catalog, mounts)
    assert runner.calls[1]["extravars"] == healthcheck_vars(stack_input.spec, group, stack_input.catalog)
    inventory = YAML(typ="safe").load(runner.inventories[0])
    assert inventory["plugin"] == "amazon.aws.aws_ec2"
    assert str(runner.calls[0]["inventory"]).endswith("clusterfab.aws_ec2.yml")
    record = json.loads(stack.values["clusterfab:health"])
    assert (record["status"], record["digest"]) == ("passed", stack.outputs()["blueprint"]["digest"])
    assert (result.succeeded, result.health) == (True, "passed")


def test_a_failed_health_check_is_recorded_as_failed() -> None:
    stack, stack_input = _stack()
    result = push.configure(stack, stack_input, runner=FakeRunner({"healthcheck.yml"}), playbooks=PLAYBOOKS)
    assert json.loads(stack.values["clusterfab:health"])["status"] == "failed"
    assert (result.succeeded, result.health) == (False, "failed")


def test_a_failed_configuration_skips_the_health_check_and_records_nothing() -> None:
    stack, stack_input = _stack()
    runner = FakeRunner({"gpu_node.yml"})
    result = push.configure(stack, stack_input, runner=runner, playbooks=PLAYBOOKS)
    assert [c["playbook"] for c in runner.calls] == ["gpu_node.yml"]
    assert "clusterfab:health" not in stack.values
    assert (result.succeeded, result.health) == (False, None)


def test_a_partial_run_records_only_a_failure() -> None:
    stack, stack_input = _stack()
    passing = push.configure(
        stack, stack_input, runner=FakeRunner(), playbooks=PLAYBOOKS, only=["trainers"], tags=["nccl"]
    )
    assert passing.health is None
    assert "clusterfab:health" not in stack.values
    failing = push.configure(
        stack, stack_input, runner=FakeRunner({"healthcheck.yml"}), playbooks=PLAYBOOKS, only=["trainers"]
    )
    assert failing.health == "failed"


def test_a_host_limit_narrows_each_group_and_records_only_a_failure() -> None:
    stack, stack_input = _stack()
    runner = FakeRunner()
    result = push.configure(stack, stack_input, runner=runner, playbooks=PLAYBOOKS, limit="i-0abc*")
    assert [(c["playbook"], c["limit"]) for c in runner.calls] == [
        ("gpu_node.yml", "node_group_trainers:&i-0abc*"),
        ("healthcheck.yml", "node_group_trainers:&i-0abc*"),
    ]
    assert (result.health, "clusterfab:health" in stack.values) == (None, False)
    failing = push.configure(
        stack, stack_input, runner=FakeRunner({"healthcheck.yml"}), playbooks=PLAYBOOKS, limit="i-0abc*"
    )
    assert failing.health == "failed"


def test_tags_reach_the_node_playbook() -> None:
    stack, stack_input = _stack()
    runner = FakeRunner()
    push.configure(stack, stack_input, runner=runner, playbooks=PLAYBOOKS, tags=["nccl"], health=False)
    assert [(c["playbook"], c["tags"]) for c in runner.calls] == [("gpu_node.yml", ["nccl"])]


def test_unknown_node_groups_and_missing_outputs_are_usage_errors() -> None:
    stack, stack_input = _stack()
    with pytest.raises(
        UsageError,
        match=r"no node group eval in blueprints/examples/aws-p5-efa-fsx.yaml \(node groups: trainers\)",
    ):
        push.push_targets(stack_input, read_outputs(stack.outputs()), ["eval"])
    with pytest.raises(UsageError, match="the stack has no output for storage datasets"):
        push.push_targets(stack_input, read_outputs({**stack.outputs(), "storage": {}}))


def test_missing_ansible_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # validate, plan and cost do not need Ansible: it is the `configure` extra (README's first command).
    monkeypatch.setattr(push.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UsageError, match=r"install it with clusterfab's `configure` extra"):
        push.require_collection("aws")


def test_missing_collection_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    found = push.importlib.util.find_spec
    monkeypatch.setattr(
        push.importlib.util,
        "find_spec",
        lambda name: None if name.startswith("ansible_collections.") else found(name),
    )
    with pytest.raises(
        UsageError,
        match=r"needs the Ansible collection google.cloud: `ansible-galaxy collection install google.cloud`",
    ):
        push.require_collection("gcp")


def test_the_bundled_collections_are_found() -> None:
    push.require_collection("aws")
    push.require_collection("gcp")
