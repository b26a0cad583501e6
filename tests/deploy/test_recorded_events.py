"""The deploy layer on event logs the Pulumi CLI wrote, not on ones written here.

tests/fixtures/pulumi-events holds logs Pulumi recorded from real runs (see its SOURCES.md). Each line
goes through what a real run goes through: the Automation API's own parser (`EngineEvent.from_json`, as
its log watcher calls it), our records, the progress view, its summary and the replacement gate. The
stand-in CLI of tests/deploy/fake_pulumi.py is held to the same format: every event field it writes is
one the real logs have.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pulumi import automation as auto
from rich.console import Console

from clusterfab.deploy.events import Summary, to_record
from clusterfab.deploy.gates import GateResult, replacement_gate
from clusterfab.deploy.progress import DeployProgress, Operation
from tests.conftest import REPO
from tests.deploy.conftest import FakePulumi

LOGS = REPO / "tests" / "fixtures" / "pulumi-events"
INSTANCE = "aws:ec2/instance:Instance"


def events(name: str) -> Iterator[auto.EngineEvent]:
    for line in (LOGS / f"{name}.jsonl").read_text().splitlines():
        if line.strip():
            yield auto.EngineEvent.from_json(json.loads(line))


def replay(name: str, operation: Operation) -> DeployProgress:
    progress = DeployProgress(
        Console(file=io.StringIO(), width=200), operation=operation, stack="dev", live=False
    )
    for event in events(name):
        progress.handle(to_record(event))
    assert progress.callback_errors == []
    return progress


def test_a_recorded_update_counts_what_the_engine_says_it_did() -> None:
    progress = replay("up-3", "up")
    assert progress.summary == Summary(changes={"create": 6}, duration_seconds=502)
    assert [(s.op, s.type, s.name) for s in progress.finished] == [
        ("create", "aws:iam/role:Role", "eks-role"),
        ("create", "aws:iam/rolePolicyAttachment:RolePolicyAttachment", "eks-rpa-service-policy"),
        ("create", "aws:iam/rolePolicyAttachment:RolePolicyAttachment", "eks-rpa-cluster-policy"),
        ("create", "aws:ec2/securityGroup:SecurityGroup", "eks-sg"),
        ("create", "aws:eks/cluster:Cluster", "eks-cluster"),
    ]
    assert progress.failed == []
    # The stack itself is a create step too: the engine's summary counts it, the view does not show it.
    assert progress.summary_text() == "Update of dev: 6 created"


def test_a_recorded_preview_that_replaces_an_instance_is_refused_when_the_type_holds_data() -> None:
    progress = replay("webserver-userdata", "preview")
    assert progress.summary == Summary(changes={"replace": 1, "same": 2}, duration_seconds=12)
    assert [(s.op, s.name, s.replace_keys, s.planning) for s in progress.steps if s.type == INSTANCE] == [
        ("create-replacement", "web-server-www", ("userData",), True),
        ("replace", "web-server-www", ("userData",), True),
        ("delete-replaced", "web-server-www", (), True),
    ]
    assert progress.summary_text() == "Preview of dev: 1 to replace, 2 unchanged"
    refused = replacement_gate(
        target="prod", steps=progress.steps, stateful_types={INSTANCE}, allow_replace=False
    )
    assert refused == GateResult(
        "replacements",
        False,
        f"the preview of prod would destroy data: replace web-server-www ({INSTANCE}, stateful, because of "
        "userData); change the blueprint so these are kept, or pass --allow-replace to accept the loss",
    )
    assert replacement_gate(
        target="prod", steps=progress.steps, stateful_types=set(), allow_replace=False
    ) == GateResult("replacements", True, "the preview of prod deletes or replaces no stateful resource")


def test_a_recorded_failed_update_names_the_failed_resource() -> None:
    progress = replay("failed-stacks-dont-rewrite-operations", "up")
    assert [(s.phase, s.op, s.type, s.name) for s in progress.failed] == [
        ("failed", "update", "pulumi-python:dynamic:Resource", "test-x")
    ]
    assert progress.summary == Summary(changes={"same": 1}, duration_seconds=8)
    assert progress.summary_text() == (
        "Update of dev: 1 unchanged\n  failed: pulumi-python:dynamic:Resource test-x"
    )


# Fields whose value is a map with free keys (property paths, config keys, operations, pack names).
_MAPS = {"config", "inputs", "outputs", "detailedDiff", "resourceChanges", "PolicyPacks"}
_TAG = re.compile(r'json:"([^",]+)(,omitempty)?"')


def _tags() -> tuple[set[str], set[str]]:
    """The JSON field names of the CLI's event types, and those every declaration of marks omitempty."""
    tags = _TAG.findall((LOGS / "apitype-events.go.txt").read_text())
    names = {name for name, _ in tags}
    always = {name for name, omit in tags if not omit}
    return names, names - always


def _problems(value: Any, names: set[str], omitted: set[str], path: str = "") -> list[str]:
    if isinstance(value, list):
        return [p for item in value for p in _problems(item, names, omitted, path)]
    if not isinstance(value, dict):
        return []
    problems = []
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if key not in names:
            problems.append(f"{where}: no such field in the CLI's event types")
        elif key in omitted and (item in (None, False, 0, "", []) or (item == {} and key in _MAPS)):
            # (An empty object is a pointer to an empty struct, which Go writes: `"cancelEvent": {}`.)
            problems.append(f"{where}: omitempty, so the CLI never writes it as {json.dumps(item)}")
        if key in _MAPS and isinstance(item, dict):
            # Free keys; only detailedDiff's values are structures of their own (PropertyDiff).
            if key == "detailedDiff":
                problems += [p for v in item.values() for p in _problems(v, names, omitted, where)]
            continue
        problems += _problems(item, names, omitted, where)
    return problems


def test_the_recorded_logs_agree_with_the_event_types() -> None:
    names, omitted = _tags()
    problems = [
        f"{log.name}: {p}"
        for log in sorted(LOGS.glob("*.jsonl"))
        for line in log.read_text().splitlines()
        if line.strip()
        for p in _problems(json.loads(line), names, omitted)
    ]
    assert problems == []


def test_the_stand_in_cli_writes_events_as_the_real_cli_does(fake_pulumi: FakePulumi, tmp_path: Path) -> None:
    names, omitted = _tags()
    assert _problems(_fake_events(fake_pulumi, tmp_path), names, omitted) == []


def _fake_events(fake: FakePulumi, tmp_path: Path) -> list[Any]:
    """Every field the stand-in writes for an update with a replacement, an update and a failure."""
    fake.add_stack(
        "dev",
        events={
            "up": [
                {"op": "create", "type": INSTANCE, "name": "a"},
                {
                    "op": "replace",
                    "type": INSTANCE,
                    "name": "b",
                    "keys": ["userData"],
                    "diffs": ["userData"],
                    "detailedDiff": {"userData": "update-replace"},
                },
                {"op": "update", "type": INSTANCE, "name": "c", "fail": "boom"},
            ]
        },
    )
    log = tmp_path / "events.jsonl"
    subprocess.run(
        [str(fake.bin / "pulumi"), "up", "--stack", "dev", "--event-log", str(log)],
        capture_output=True,
        check=False,
    )
    return [json.loads(line) for line in log.read_text().splitlines()]
