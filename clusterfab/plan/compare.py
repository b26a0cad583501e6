"""Compare two versions of a blueprint: plan and cost both, then diff (what `clusterfab diff` runs).

The base is another file, or the same file at a git ref (what a pull request changes), or the same
file in another environment (what a promotion changes). Both sides are planned under the same stack
name so that their resources match by URN. A blueprint that did not exist at the ref diffs against
nothing: everything is created.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from clusterfab.catalog import Catalog, load_catalog
from clusterfab.core.errors import UsageError
from clusterfab.core.findings import Finding
from clusterfab.cost.diff import diff_costs
from clusterfab.cost.estimate import BudgetStatus, CostEstimate, estimate_cost
from clusterfab.load import Loaded, load, rule_context
from clusterfab.plan import baseref
from clusterfab.plan.capacity import CapacityLoss, capacity_losses, held_machine_changes, loss_findings
from clusterfab.plan.diff import PlanDiff, diff_plans
from clusterfab.plan.project import Plan, plan_blueprint
from clusterfab.plan.report import DiffReport
from clusterfab.rules.budget import check_budget, price_caveats
from clusterfab.rules.capacity import block_resizes
from clusterfab.rules.context import Check, RuleContext
from clusterfab.rules.registry import CHECKS
from clusterfab.spec import ClusterSpec

DIFF_STACK = "diff"


class InvalidSideError(Exception):
    """One side of the diff does not validate; carries the validation result to report."""

    def __init__(self, side: str, result: Loaded) -> None:
        super().__init__(f"the {side} blueprint {result.file} is invalid")
        self.side = side
        self.result = result


@dataclass(frozen=True)
class Side:
    display: str
    spec: ClusterSpec | None
    """None when the blueprint does not exist on this side (a new file)."""
    plan: Plan
    estimate: CostEstimate
    findings: tuple[Finding, ...] = ()
    """The blueprint's findings (none are errors) and the price caveats of its estimate."""
    context: RuleContext | None = None
    """What the rules saw of this side, for findings about the change (None: no blueprint on this side)."""


def _checks() -> Sequence[Check]:
    # The budget is judged on the estimate (and shown) rather than stopping the diff.
    return [check for check in CHECKS if check is not check_budget]


@dataclass(frozen=True)
class _Costed:
    spec: ClusterSpec
    estimate: CostEstimate
    findings: tuple[Finding, ...]
    context: RuleContext


def _costed(path: Path, display: str, env: str | None, today: dt.date, side: str) -> _Costed:
    """Validate one side (InvalidSideError names it) and price it with this checkout's catalog."""
    result = load(
        path, display=display, environment=env, checks=_checks(), today=today, base_only=env is None
    )
    validated = result.blueprints.get(env)
    if not result.ok or validated is None:
        raise InvalidSideError(side, result)
    catalog = load_catalog()
    estimate = estimate_cost(validated.spec, catalog, today=today)
    context = rule_context(validated, catalog, today)
    caveats = price_caveats(context, estimate)
    findings = tuple(sorted([*result.findings, *caveats], key=lambda f: f.sort_key))
    return _Costed(spec=validated.spec, estimate=estimate, findings=findings, context=context)


def _side(path: Path, display: str, env: str | None, today: dt.date, side: str) -> Side:
    costed = _costed(path, display, env, today, side)
    plan = plan_blueprint(path, env=env, stack=DIFF_STACK, display=display, enforce_budget=False)
    return Side(
        display=display,
        spec=costed.spec,
        plan=plan,
        estimate=costed.estimate,
        findings=costed.findings,
        context=costed.context,
    )


def _side_at_ref(target: Path, ref: str, *, shown: str, env: str | None, today: dt.date, like: Side) -> Side:
    """The base side of `--base-ref`: the blueprint at `ref`, planned with the code at `ref` when the ref
    holds a clusterfab project (see plan/baseref.py). Costs use this checkout's catalog on both sides, so
    the cost delta is what the blueprint change costs at today's prices."""
    location = baseref.locate(target)
    commit = baseref.verify_ref(location, ref)
    tree = baseref.inspect_ref(location, commit)
    display = f"{shown}@{ref}"
    if tree.blueprint is None:
        return _nothing(display, env, like.estimate, load_catalog())
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / target.name
        copy.write_bytes(tree.blueprint)
        if not tree.has_project:
            # Blueprints only: the code is the installed package on both sides.
            note = f"{display} (planned with this checkout's code: {ref} holds no clusterfab project)"
            return _side(copy, note, env, today, "base")
        costed = _costed(copy, display, env, today, "base")
    plan = baseref.plan_at_ref(location, commit, env=env, stack=DIFF_STACK, display=display)
    return Side(
        display=display, spec=costed.spec, plan=plan, estimate=costed.estimate, findings=costed.findings
    )


def _nothing(display: str, env: str | None, like: CostEstimate, catalog: Catalog) -> Side:
    zero = Decimal(0)
    estimate = CostEstimate(
        name=like.name,
        cloud=like.cloud,
        region=like.region,
        items=(),
        warnings=(),
        hourly_usd=zero,
        monthly_usd=zero,
        hours=None,
        run_usd=None,
        budget=BudgetStatus(None, None, hourly_exceeded=False, monthly_exceeded=False),
        catalog_version=catalog.version,
        catalog_as_of=catalog.index.as_of,
    )
    return Side(
        display=display,
        spec=None,
        plan=Plan(blueprint=display, env=env, stack=DIFF_STACK, resources=[]),
        estimate=estimate,
    )


def compare(
    base: Path | None,
    target: Path,
    *,
    env: str | None,
    today: dt.date,
    base_ref: str | None = None,
    target_display: str | None = None,
) -> DiffReport:
    """Diff `target` against `base` (a file) or against `target` itself at `base_ref`."""
    catalog = load_catalog()
    shown = target_display or str(target)
    after = _side(target, shown, env, today, "new")
    if base_ref is not None:
        before = _side_at_ref(target, base_ref, shown=shown, env=env, today=today, like=after)
    else:
        if base is None:
            raise UsageError("diff needs BASE and NEW blueprints, or one blueprint and --base-ref")
        before = _side(base, str(base), env, today, "base")
    assert after.spec is not None
    resources = diff_plans(before.plan, after.plan, catalog)
    losses = _losses(before, after, resources)
    return DiffReport(
        base=before.display,
        target=after.display,
        env=env,
        resources=resources,
        cost=diff_costs(before.estimate, after.estimate),
        spec=after.spec,
        base_cloud=before.spec.cloud if before.spec is not None else None,
        findings=_with_change_findings(before, after, losses),
        capacity=tuple(losses),
    )


def _losses(before: Side, after: Side, resources: PlanDiff) -> list[CapacityLoss]:
    if before.spec is None or after.spec is None:
        return []
    return capacity_losses(before.spec, after.spec, before.plan, resources)


def _with_change_findings(
    before: Side, after: Side, losses: list[CapacityLoss] | None = None
) -> tuple[Finding, ...]:
    """The new side's findings and those about the change itself (a capacity block resized, BP164;
    accelerators given up by a replacement, BP166; another machine type on held capacity, BP167), each
    once."""
    if before.spec is None or after.context is None:
        return after.findings
    seen = {(f.code, f.field, f.line, f.column) for f in after.findings}
    about_change = [
        *block_resizes(before.spec, after.context),
        *loss_findings(losses or [], after.context),
        *held_machine_changes(before.spec, after.context, losses or []),
    ]
    changed = [f for f in about_change if (f.code, f.field, f.line, f.column) not in seen]
    return tuple(sorted([*after.findings, *changed], key=lambda f: f.sort_key))


def compare_environments(
    blueprint: Path,
    *,
    base_env: str | None,
    env: str | None,
    today: dt.date,
    display: str | None = None,
) -> DiffReport:
    """Diff one blueprint between two environments (what `clusterfab promote` changes): base_env -> env.

    None for an environment means the base blueprint. Both sides are validated (InvalidSideError
    names the side), planned and costed as `compare` does; the report's `env` is the target's.
    """
    catalog = load_catalog()
    shown = display or str(blueprint)
    before = _side(blueprint, shown, base_env, today, "base")
    after = _side(blueprint, shown, env, today, "new")
    assert after.spec is not None
    resources = diff_plans(before.plan, after.plan, catalog)
    return DiffReport(
        base=f"{shown} [{base_env or 'base'}]",
        target=f"{shown} [{env or 'base'}]",
        env=env,
        resources=resources,
        cost=diff_costs(before.estimate, after.estimate),
        spec=after.spec,
        base_cloud=before.spec.cloud if before.spec is not None else None,
        findings=after.findings,
        capacity=tuple(_losses(before, after, resources)),
    )
