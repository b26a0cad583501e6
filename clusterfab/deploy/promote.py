"""Gather everything `clusterfab promote` decides on, from the two stacks and the local checkout.

Reads both stacks' config and the source's outputs through the CLI, diffs and costs the blueprint
between the two environments offline, previews the target with progress, then evaluates every gate
(`clusterfab.deploy.gates`). Nothing is changed here; the CLI asks and runs `up` afterwards.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from clusterfab.catalog import load_catalog
from clusterfab.clouds import profile
from clusterfab.core.errors import UsageError
from clusterfab.deploy.approval import Approval, approve, file_digest
from clusterfab.deploy.automation import DeployProject, DeployStack, OperationResult
from clusterfab.deploy.checkout import checkout_commit
from clusterfab.deploy.gates import (
    BLUEPRINT_CONFIG_KEY,
    GateResult,
    blueprint_gate,
    budget_gate,
    health_gate,
    refusal,
    replacement_gate,
)
from clusterfab.deploy.progress import DeployProgress
from clusterfab.health import DEFAULT_MAX_AGE, Provenance, health_key
from clusterfab.load import Loaded
from clusterfab.outputs import read_outputs
from clusterfab.plan.compare import InvalidSideError, compare_environments
from clusterfab.plan.report import DiffReport
from clusterfab.provision.bundle import bundle_digest
from clusterfab.stackinput import CONFIG_NAMESPACE, ENVIRONMENT_KEY, resolve_environment

ENVIRONMENT_CONFIG_KEY = f"{CONFIG_NAMESPACE}:{ENVIRONMENT_KEY}"


@dataclass(frozen=True, slots=True)
class StackInfo:
    name: str
    blueprint: str | None
    """The `clusterfab:blueprint` config: the blueprint path relative to the project root."""
    environment: str | None
    """The environment overlay the stack's program applies (None: the base blueprint)."""


def stack_info(name: str, config: Mapping[str, str]) -> StackInfo:
    """What the Pulumi program of stack `name` will read from `config` (see stacks/__main__.py)."""
    short_name = name.rsplit("/", 1)[-1]  # org/project/stack: the program sees only the stack
    return StackInfo(
        name=name,
        blueprint=config.get(BLUEPRINT_CONFIG_KEY),
        environment=resolve_environment(config.get(ENVIRONMENT_CONFIG_KEY), short_name),
    )


@dataclass
class PromotionCheck:
    source: StackInfo
    target: StackInfo
    blueprint: Path
    digest: str
    report: DiffReport | None
    """The offline plan and cost diff, source environment -> target environment."""
    invalid: Loaded | None
    """The failed validation when the blueprint does not validate for one of the environments."""
    preview: OperationResult
    progress: DeployProgress
    gates: list[GateResult]
    target_stack: DeployStack
    approval: Approval
    """What the gates saw of the target: its update plan, config and blueprint digest."""

    @property
    def refusal(self) -> str | None:
        return refusal(self.source.name, self.target.name, self.gates)


def check_promotion(
    deploy: DeployProject,
    source: str,
    target: str,
    *,
    allow_replace: bool,
    today: dt.date,
    console: Console,
    plan: Path,
    max_health_age: dt.timedelta = DEFAULT_MAX_AGE,
) -> PromotionCheck:
    """Read both stacks, diff and cost offline, preview the target (saving its update plan to `plan`),
    and evaluate every gate."""
    if source == target:
        raise UsageError(f"--from and --to are the same stack ({source})")
    source_stack, target_stack = deploy.stack(source), deploy.stack(target)
    target_config = target_stack.config()
    src, dst = stack_info(source, source_stack.config()), stack_info(target, target_config)
    relative, path = _blueprint(deploy, src, dst)
    approval = approve(target, plan, target_config, path)
    digest = file_digest(path)

    report: DiffReport | None = None
    invalid: Loaded | None = None
    try:
        report = compare_environments(
            path, base_env=src.environment, env=dst.environment, today=today, display=relative
        )
    except InvalidSideError as exc:
        invalid = exc.result
    progress = DeployProgress(console, operation="preview", stack=target)
    with progress:
        preview = target_stack.preview(progress.handle, save_plan=plan)

    seen = _Seen(src, dst, relative, digest, report, invalid, preview, progress)
    return PromotionCheck(
        source=src,
        target=dst,
        blueprint=path,
        digest=digest,
        report=report,
        invalid=invalid,
        preview=preview,
        progress=progress,
        gates=_gates(deploy, source_stack, seen, allow_replace=allow_replace, max_health_age=max_health_age),
        target_stack=target_stack,
        approval=approval,
    )


def _blueprint(deploy: DeployProject, src: StackInfo, dst: StackInfo) -> tuple[str, Path]:
    """The blueprint the target will deploy (else the source's): as configured, and its file."""
    relative = dst.blueprint or src.blueprint
    if relative is None:
        raise UsageError(
            f"neither {src.name} nor {dst.name} sets {BLUEPRINT_CONFIG_KEY}: "
            "set it in stacks/Pulumi.<stack>.yaml"
        )
    path = Path(relative) if Path(relative).is_absolute() else deploy.project.root / relative
    if not path.is_file():
        raise UsageError(
            f"the blueprint {relative} of stack {dst.name} does not exist in {deploy.project.root}"
        )
    return relative, path


@dataclass(frozen=True)
class _Seen:
    """What the offline diff and the target's preview found, for the gates."""

    source: StackInfo
    target: StackInfo
    relative: str
    digest: str
    report: DiffReport | None
    invalid: Loaded | None
    preview: OperationResult
    progress: DeployProgress


def _gates(
    deploy: DeployProject,
    source_stack: DeployStack,
    seen: _Seen,
    *,
    allow_replace: bool,
    max_health_age: dt.timedelta,
) -> list[GateResult]:
    """Every gate, in the order they are shown."""
    catalog = load_catalog()
    source, target = seen.source.name, seen.target.name
    source_outputs = source_stack.outputs()
    root = deploy.project.root
    expected = Provenance(
        blueprint_digest=seen.digest,
        bundle_sha256=bundle_digest(root / "playbooks"),
        catalog_version=catalog.version,
        commit=checkout_commit(root),
    )
    return [
        blueprint_gate(
            source=source,
            target=target,
            source_blueprint=seen.source.blueprint,
            target_blueprint=seen.target.blueprint,
            local_digest=seen.digest,
            source_outputs=source_outputs,
            catalog_version=catalog.version,
        ),
        _health(source_stack, source_outputs, expected, max_health_age),
        replacement_gate(
            target=target,
            steps=seen.progress.steps,
            stateful_types=catalog.stateful_types.keys(),
            allow_replace=allow_replace,
            preview_error=None if seen.preview.ok else (seen.preview.error or "unknown error"),
        ),
        budget_gate(
            target=target,
            environment=seen.target.environment,
            estimate=seen.report.cost.after if seen.report is not None else None,
            invalid_reason=None
            if seen.invalid is None
            else f"{seen.relative} has errors for this environment",
        ),
    ]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _health(
    stack: DeployStack, outputs: Mapping[str, Any], expected: Provenance, max_age: dt.timedelta
) -> GateResult:
    """The health gate, reading the record from the source stack's own cluster bucket."""
    try:
        parsed = read_outputs(outputs)
    except UsageError as exc:
        return GateResult("health", False, f"cannot find {stack.name}'s cluster bucket: {exc}")
    store = profile(parsed.blueprint.cloud).health_store(parsed)
    key = health_key(stack.name)
    return health_gate(
        source=stack.name,
        stored=store.get(key),
        location=store.location(key),
        signing_key=parsed.health_signing_key,
        expected=expected,
        last_update=stack.last_update(),
        now=_now(),
        max_age=max_age,
    )
