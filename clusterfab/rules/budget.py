"""Budget rules: the cost estimate against the blueprint's budget, and how far to trust it.

Only a blueprint with a `budget` is checked: the price caveats (missing BP403, stale or unconfirmed
BP404) qualify the budget verdict, and without a budget `clusterfab cost` reports them next to the
estimate. A blueprint naming something the catalog does not know (machine type, TPU topology, storage
tier or throughput) gets no budget findings: its estimate would be meaningless, and the catalog rules
already point at the cause. Prices are judged stale against `RuleContext.today`, never the clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from clusterfab.core.findings import FieldPath, Finding, render_path
from clusterfab.cost import monthly_budget_limit
from clusterfab.cost.estimate import CostEstimate, CostItem, CostWarning, estimate_cost
from clusterfab.cost.render import usd
from clusterfab.rules.context import (
    RuleContext,
)

_PRICE_FIELD = {
    "node_group": "machine_type",
    "tpu_slice": "generation",
    "storage": "capacity_gib",
    "monitoring": "machine_type",
    "controller": "machine_type",
    "login": "machine_type",
}
"""The field a missing price points at: what chose the sku, or (storage) what is multiplied."""


def check_budget(ctx: RuleContext) -> Iterator[Finding]:
    bp = ctx.blueprint
    # A blueprint naming something the catalog lacks gets no estimate: it would be meaningless.
    if bp.budget is None or not ctx.spec.complete:
        return
    estimate = estimate_cost(ctx.spec, ctx.catalog, today=ctx.today)
    yield from price_caveats(ctx, estimate)
    budget = estimate.budget
    unpriced = _unpriced_note(estimate)
    if budget.hourly_exceeded and budget.max_hourly_usd is not None:
        yield ctx.finding(
            "BP401",
            ("budget", "max_hourly_usd"),
            f"the estimate of {usd(estimate.hourly_usd)}/h{unpriced} is over the budget of "
            f"{usd(budget.max_hourly_usd)}/h",
            hint=_drivers(estimate, monthly=False),
        )
    if budget.monthly_exceeded and budget.max_monthly_usd is not None:
        yield ctx.finding(
            "BP402",
            ("budget", "max_monthly_usd"),
            f"the estimate of {usd(estimate.monthly_usd)}/month (730 h){unpriced} is over the budget of "
            f"{usd(budget.max_monthly_usd)}/month",
            hint=_drivers(estimate, monthly=True),
        )


PRICE_CAVEATS = frozenset({"BP403", "BP404"})
"""The codes of the price caveats: what `cost` shows among the estimate's own warnings."""


def price_caveats(ctx: RuleContext, estimate: CostEstimate) -> Iterator[Finding]:
    """One BP403 per unpriced item, and BP404 for prices that are stale, unconfirmed or a stand-in: one
    per item, but one for all the items whose only caveat is the same one of the same source (the same
    age, or unconfirmed), naming each item's field, so a blueprint of several such machines gets one line.

    BP404 points at what chose the price: the capacity kind when the blueprint writes one (spot, a
    reservation priced at on-demand), so an environment that changes the kind gets its own note; else
    the machine type or TPU generation; for storage its kind (resizing it does not change the price).
    """
    notes: list[tuple[FieldPath, list[CostWarning], CostItem]] = []
    for item in estimate.items:
        path = (*item.path, _PRICE_FIELD[item.kind])
        warnings = [w for w in estimate.warnings if w.path == item.path]
        missing = [w.detail for w in warnings if w.reason == "missing"]
        if missing:
            yield ctx.finding(
                "BP403",
                path,
                "; ".join(missing) + "; left out of the budget check",
                hint="the budget check covers only priced items; `clusterfab catalog` lists the prices "
                "the catalog has",
            )
            continue
        if item.kind == "storage":
            path = (*item.path, "kind")
        elif ctx.written((*item.path, "capacity", "kind")):
            path = (*item.path, "capacity", "kind")
        if warnings:
            notes.append((path, warnings, item))
    groups: dict[str, list[tuple[FieldPath, CostItem]]] = {}
    for path, warnings, item in notes:
        if len(warnings) == 1 and warnings[0].group:
            groups.setdefault(warnings[0].group, []).append((path, item))
    told: set[str] = set()
    for path, warnings, item in notes:
        key = warnings[0].group if len(warnings) == 1 else ""
        if key and len(groups[key]) > 1:
            if key in told:
                continue
            told.add(key)
            named = ", ".join(f"{i.sku} ({render_path(p)})" for p, i in groups[key])
            message = f"the {item.pricing_model} prices of {named} in {item.region} are {warnings[0].shared}"
        else:
            message = "; ".join(w.detail for w in warnings)
        yield ctx.finding(
            "BP404",
            path,
            message,
            hint="check the current price before relying on the budget check "
            "(`clusterfab cost` shows the estimate and each price's source)",
        )


def _unpriced_note(estimate: CostEstimate) -> str:
    count = len(estimate.unpriced)
    if not count:
        return ""
    return f" (without {count} unpriced item{'' if count == 1 else 's'})"


def _drivers(estimate: CostEstimate, *, monthly: bool) -> str:
    """What drives the cost: the largest items with their share, and what would lower it."""

    def amount(item: CostItem) -> Decimal:
        value = item.monthly_usd if monthly else item.hourly_usd
        return value if value is not None else Decimal(0)

    total = estimate.monthly_usd if monthly else estimate.hourly_usd
    unit = "month" if monthly else "h"
    ranked = sorted((i for i in estimate.items if i.priced), key=amount, reverse=True)[:3]
    parts = []
    for item in ranked:
        share = f" ({amount(item) / total:.0%})" if total else ""
        what = f"{item.name} ({item.quantity:,} x {item.sku}, {item.pricing_model})"
        parts.append(f"{what} {usd(amount(item))}/{unit}{share}")
    limit = "max_monthly_usd" if monthly else "max_hourly_usd"
    return (
        f"largest costs: {'; '.join(parts)}; lower them (fewer nodes or chips, cheaper capacity such as "
        f"spot) or raise budget.{limit}"
    )


def check_cloud_budget(ctx: RuleContext) -> Iterator[Finding]:
    """What the cloud budget a deployment creates will count, and whether it is created at all (the
    cloud's `budget_problems`: GCP needs the stack's billing account, BP410; AWS counts by cost
    allocation tags from their activation on, BP411).

    Only for a command that deploys or plans a deployment (`ctx.stack`).
    """
    stack = ctx.stack
    # A blueprint naming something the catalog lacks is not deployed: nothing to say about its budget.
    if stack is None or not ctx.spec.complete or monthly_budget_limit(ctx.spec.budget) is None:
        return
    for problem in ctx.cloud.budget_problems(
        cluster=ctx.blueprint.name,
        stack=stack.name,
        billing_account=stack.billing_account,
        activate_cost_tags=stack.activate_cost_tags,
    ):
        yield ctx.finding(
            problem.code,
            problem.path,
            problem.message,
            hint=problem.hint,
            at_key=problem.at_key,
            severity=problem.severity,
        )
