"""Engine events (as the Automation API parses them from the CLI's event log) become typed records."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi import automation as auto

from clusterfab.deploy.events import (
    Cancelled,
    Diagnostic,
    PolicyViolation,
    Prelude,
    ResourceStep,
    StdoutLine,
    Summary,
    destructive_steps,
    name_of,
    to_record,
)

FS_TYPE = "aws:fsx/lustreFileSystem:LustreFileSystem"
FS = f"urn:pulumi:prod::clusterfab::clusterfab:storage:AwsFsxLustre${FS_TYPE}::x-fs"


def state(*, protect: bool = False, custom: bool = True) -> dict[str, Any]:
    return {"type": FS_TYPE, "urn": FS, "custom": custom, "protect": protect, "inputs": {}, "outputs": {}}


def metadata(op: str, **extra: Any) -> dict[str, Any]:
    return {"op": op, "urn": FS, "type": FS_TYPE, "provider": "", **extra}


def engine(payload: dict[str, Any]) -> auto.EngineEvent:
    return auto.EngineEvent.from_json({"sequence": 1, "timestamp": 0, **payload})


def test_replace_step_keeps_protect_from_the_old_state_and_the_detailed_diff() -> None:
    event = engine(
        {
            "resourcePreEvent": {
                "metadata": metadata(
                    "replace",
                    old=state(protect=True),
                    new=state(protect=False),
                    keys=["deploymentType"],
                    diffs=["deploymentType", "storageCapacity"],
                    detailedDiff={
                        "storageCapacity": {"diffKind": "update"},
                        "deploymentType": {"diffKind": "update-replace", "inputDiff": True},
                    },
                ),
                "planning": True,
            }
        }
    )
    record = to_record(event)
    assert record == ResourceStep(
        phase="start",
        op="replace",
        urn=FS,
        type=FS_TYPE,
        name="x-fs",
        protect=True,
        custom=True,
        diffs=("deploymentType", "storageCapacity"),
        replace_keys=("deploymentType",),
        detailed_diff=(("deploymentType", "update-replace"), ("storageCapacity", "update")),
        planning=True,
    )
    assert record.destructive
    assert record.changed == ("deploymentType", "storageCapacity")


def test_delete_step_reads_protect_from_old_when_there_is_no_new_state() -> None:
    record = to_record(engine({"resOutputsEvent": {"metadata": metadata("delete", old=state(protect=True))}}))
    assert isinstance(record, ResourceStep)
    assert (record.phase, record.op, record.protect, record.destructive) == ("done", "delete", True, True)


def test_create_step_without_states_is_an_unprotected_custom_resource() -> None:
    record = to_record(engine({"resourcePreEvent": {"metadata": metadata("create")}}))
    assert isinstance(record, ResourceStep)
    assert (record.op, record.protect, record.custom, record.destructive, record.planning) == (
        "create",
        False,
        True,
        False,
        False,
    )


def test_failed_step() -> None:
    record = to_record(
        engine({"resOpFailedEvent": {"metadata": metadata("update", new=state()), "status": 1, "steps": 1}})
    )
    assert isinstance(record, ResourceStep)
    assert (record.phase, record.op) == ("failed", "update")


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param(
            {"diagnosticEvent": {"message": "boom\n", "color": "never", "severity": "error", "urn": FS}},
            Diagnostic(severity="error", message="boom", urn=FS),
            id="diagnostic",
        ),
        pytest.param(
            {"diagnosticEvent": {"message": "hello", "color": "never", "severity": "info"}},
            Diagnostic(severity="info", message="hello", urn=None),
            id="diagnostic-without-urn",
        ),
        pytest.param(
            {
                "policyEvent": {
                    "message": "no public ip",
                    "color": "never",
                    "policyName": "clusterfab-no-public-ips",
                    "policyPackName": "clusterfab",
                    "policyPackVersion": "0.1.0",
                    "policyPackVersionTag": "0.1.0",
                    "enforcementLevel": "mandatory",
                    "resourceUrn": FS,
                }
            },
            PolicyViolation(
                policy="clusterfab-no-public-ips",
                pack="clusterfab",
                enforcement="mandatory",
                message="no public ip",
                urn=FS,
            ),
            id="policy",
        ),
        pytest.param(
            {"summaryEvent": {"maybeCorrupt": False, "durationSeconds": 3, "resourceChanges": {"create": 2}}},
            Summary(changes={"create": 2}, duration_seconds=3),
            id="summary",
        ),
        pytest.param({"preludeEvent": {"config": {"a:b": "c"}}}, Prelude(config={"a:b": "c"}), id="prelude"),
        pytest.param({"cancelEvent": {}}, Cancelled(), id="cancel"),
        pytest.param({"stdoutEvent": {"message": "hi\n", "color": "never"}}, StdoutLine("hi"), id="stdout"),
        pytest.param({"startDebuggingEvent": {"config": {}}}, None, id="ignored"),
    ],
)
def test_other_events(payload: dict[str, Any], expected: object) -> None:
    assert to_record(engine(payload)) == expected


def test_summary_counts_keyed_by_optype_become_plain_strings() -> None:
    event = engine({"summaryEvent": {"resourceChanges": {}}})
    assert event.summary_event is not None
    event.summary_event.resource_changes = {auto.OpType.CREATE: 1, auto.OpType.SAME: 4}
    assert to_record(event) == Summary(changes={"create": 1, "same": 4}, duration_seconds=0)


def test_a_replacement_is_one_destructive_step() -> None:
    def step(op: str, urn: str = FS) -> ResourceStep:
        return ResourceStep("start", op, urn, FS_TYPE, name_of(urn), False, True)

    steps = [step("create-replacement"), step("replace"), step("delete-replaced"), step("create", "u::other")]
    assert [s.op for s in destructive_steps(steps)] == ["create-replacement"]


def test_name_of() -> None:
    assert name_of(FS) == "x-fs"
    assert name_of("") == ""
