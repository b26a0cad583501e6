"""Compare two versions of a blueprint: plan and cost both, then diff (what `clusterfab diff` runs).

The base is another file, or the same file at a git ref (what a pull request changes), or the same
file in another environment (what a promotion changes). Both sides are planned under the same stack
name so that their resources match by URN. A blueprint that did not exist at the ref diffs against
nothing: everything is created.
"""

from __future__ import annotations

import datetime as dt
import subprocess
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
from clusterfab.plan.diff import diff_plans
from clusterfab.plan.project import Plan, plan_blueprint
from clusterfab.plan.report import DiffReport
from clusterfab.rules.budget import check_budget, price_caveats
from clusterfab.rules.context import Check
from clusterfab.rules.engine import ValidationResult, rule_context, validate_file
from clusterfab.rules.registry import CHECKS
from clusterfab.spec import ClusterSpec

DIFF_STACK = "diff"


class InvalidSideError(Exception):
    """One side of the diff does not validate; carries the validation result to report."""

    def __init__(self, side: str, result: ValidationResult) -> None:
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


def read_at_ref(path: Path, ref: str) -> bytes | None:
    """The file's content at a git ref, or None if the file did not exist there."""
    folder = path.resolve().parent
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise UsageError(f"--base-ref needs {path} to be inside a git repository") from None
    relative = path.resolve().relative_to(Path(top).resolve()).as_posix()
    verify = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        cwd=top,
        capture_output=True,
        text=True,
        check=False,
    )
    if verify.returncode != 0:
        raise UsageError(f"unknown git ref {ref!r}")
    shown = subprocess.run(["git", "show", f"{ref}:{relative}"], cwd=top, capture_output=True, check=False)
    return shown.stdout if shown.returncode == 0 else None


def _checks() -> Sequence[Check]:
    # The budget is judged on the estimate (and shown) rather than stopping the diff.
    return [check for check in CHECKS if check is not check_budget]


def _side(path: Path, display: str, env: str | None, today: dt.date, side: str) -> Side:
    result = validate_file(
        path, display=display, environment=env, checks=_checks(), today=today, base_only=env is None
    )
    validated = result.blueprints.get(env)
    if not result.ok or validated is None:
        raise InvalidSideError(side, result)
    plan = plan_blueprint(path, env=env, stack=DIFF_STACK, display=display, enforce_budget=False)
    catalog = load_catalog()
    estimate = estimate_cost(validated.spec, catalog, today=today)
    caveats = price_caveats(rule_context(validated, catalog, today), estimate)
    findings = tuple(sorted([*result.findings, *caveats], key=lambda f: f.sort_key))
    return Side(display=display, spec=validated.spec, plan=plan, estimate=estimate, findings=findings)


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
        content = read_at_ref(target, base_ref)
        base_display = f"{shown}@{base_ref}"
        if content is None:
            before = _nothing(base_display, env, after.estimate, catalog)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                copy = Path(tmp) / target.name
                copy.write_bytes(content)
                before = _side(copy, base_display, env, today, "base")
    else:
        if base is None:
            raise UsageError("diff needs BASE and NEW blueprints, or one blueprint and --base-ref")
        before = _side(base, str(base), env, today, "base")
    assert after.spec is not None
    return DiffReport(
        base=before.display,
        target=after.display,
        env=env,
        resources=diff_plans(before.plan, after.plan, catalog),
        cost=diff_costs(before.estimate, after.estimate),
        spec=after.spec,
        findings=after.findings,
    )


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
    return DiffReport(
        base=f"{shown} [{base_env or 'base'}]",
        target=f"{shown} [{env or 'base'}]",
        env=env,
        resources=diff_plans(before.plan, after.plan, catalog),
        cost=diff_costs(before.estimate, after.estimate),
        spec=after.spec,
        findings=after.findings,
    )
