"""Pulumi engine events as plain typed records.

The Automation API hands `on_event` an `EngineEvent`: a union in which exactly one field is set, with
optional fields all the way down. Everything downstream (progress, gates, summaries) works on the
records here instead, so it can be tested with records built by hand. The conversion reads the event
by attribute and never imports Pulumi.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

STACK_TYPE = "pulumi:pulumi:Stack"

DESTRUCTIVE_OPS = frozenset({"delete", "replace", "create-replacement", "delete-replaced"})
"""Step operations that destroy the resource's current instance (and the data it holds)."""

StepPhase = Literal["start", "done", "failed"]


def name_of(urn: str) -> str:
    """The resource's logical name: the last `::` part of its URN."""
    return urn.rsplit("::", 1)[-1] if urn else ""


@dataclass(frozen=True, slots=True)
class ResourceStep:
    """One step of the engine on one resource: starting (pre), finished (outputs) or failed."""

    phase: StepPhase
    op: str
    """Pulumi's step operation: create, update, delete, replace, same, read, ..."""
    urn: str
    type: str
    name: str
    protect: bool
    """Whether the resource is protected, before or after the step."""
    custom: bool
    diffs: tuple[str, ...] = ()
    """Top-level properties that change."""
    replace_keys: tuple[str, ...] = ()
    """Properties that force a replacement (replace steps only)."""
    detailed_diff: tuple[tuple[str, str], ...] = ()
    """(property path, diff kind) pairs, e.g. ("storageCapacity", "update-replace")."""
    planning: bool = False
    """True in a preview."""

    @property
    def destructive(self) -> bool:
        return self.op in DESTRUCTIVE_OPS

    @property
    def changed(self) -> tuple[str, ...]:
        """What changes, most precise first: the detailed paths, else the top-level keys."""
        return tuple(path for path, _ in self.detailed_diff) or self.diffs


@dataclass(frozen=True, slots=True)
class Diagnostic:
    severity: str
    """error, warning, info, info#err or debug."""
    message: str
    urn: str | None = None


@dataclass(frozen=True, slots=True)
class PolicyViolation:
    policy: str
    pack: str
    enforcement: str
    """advisory, mandatory, remediate or disabled."""
    message: str
    urn: str | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    changes: Mapping[str, int] = field(default_factory=dict)
    """Count per step operation (`same`, `create`, ...)."""
    duration_seconds: int = 0


@dataclass(frozen=True, slots=True)
class Prelude:
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The last event of every operation."""


@dataclass(frozen=True, slots=True)
class StdoutLine:
    message: str


DeployEvent = ResourceStep | Diagnostic | PolicyViolation | Summary | Prelude | Cancelled | StdoutLine


def to_record(event: Any) -> DeployEvent | None:
    """The record for one `pulumi.automation.EngineEvent` (None for kinds nobody here needs)."""
    if getattr(event, "resource_pre_event", None) is not None:
        pre = event.resource_pre_event
        return _step("start", pre.metadata, planning=bool(getattr(pre, "planning", False)))
    if getattr(event, "res_outputs_event", None) is not None:
        done = event.res_outputs_event
        return _step("done", done.metadata, planning=bool(getattr(done, "planning", False)))
    if getattr(event, "res_op_failed_event", None) is not None:
        return _step("failed", event.res_op_failed_event.metadata, planning=False)
    if getattr(event, "diagnostic_event", None) is not None:
        diag = event.diagnostic_event
        return Diagnostic(
            severity=str(diag.severity or ""), message=_clean(diag.message), urn=diag.urn or None
        )
    if getattr(event, "policy_event", None) is not None:
        policy = event.policy_event
        return PolicyViolation(
            policy=str(policy.policy_name),
            pack=str(policy.policy_pack_name),
            enforcement=str(policy.enforcement_level),
            message=_clean(policy.message),
            urn=policy.resource_urn or None,
        )
    if getattr(event, "summary_event", None) is not None:
        summary = event.summary_event
        changes = {_op(k): int(v) for k, v in (summary.resource_changes or {}).items()}
        return Summary(changes=changes, duration_seconds=int(summary.duration_seconds or 0))
    if getattr(event, "prelude_event", None) is not None:
        return Prelude(config=dict(event.prelude_event.config or {}))
    if getattr(event, "cancel_event", None) is not None:
        return Cancelled()
    if getattr(event, "stdout_event", None) is not None:
        return StdoutLine(message=_clean(event.stdout_event.message))
    return None


def _op(value: Any) -> str:
    """An OpType (a str enum) or a plain string as the plain operation name."""
    return str(getattr(value, "value", value))


def _clean(message: Any) -> str:
    return str(message or "").rstrip("\n")


def _step(phase: StepPhase, metadata: Any, *, planning: bool) -> ResourceStep:
    old, new = metadata.old, metadata.new
    protect = bool(old is not None and old.protect) or bool(new is not None and new.protect)
    state = new if new is not None else old
    detailed = metadata.detailed_diff or {}
    return ResourceStep(
        phase=phase,
        op=_op(metadata.op),
        urn=metadata.urn or "",
        type=metadata.type or "",
        name=name_of(metadata.urn or ""),
        protect=protect,
        custom=bool(state.custom) if state is not None and state.custom is not None else True,
        diffs=tuple(metadata.diffs or ()),
        replace_keys=tuple(metadata.keys or ()),
        detailed_diff=tuple(
            (path, _op(getattr(diff, "diff_kind", diff))) for path, diff in sorted(detailed.items())
        ),
        planning=planning,
    )


def destructive_steps(steps: list[ResourceStep]) -> list[ResourceStep]:
    """The destructive steps of an operation, one per resource (a replacement emits several)."""
    seen: dict[str, ResourceStep] = {}
    for step in steps:
        if step.phase == "start" and step.destructive and step.urn not in seen:
            seen[step.urn] = step
    return list(seen.values())
