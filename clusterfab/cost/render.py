"""A cost estimate as JSON for tools, aligned text for a terminal, and Markdown for a PR comment.

The JSON shape is a contract (architecture §5, docs/json/cost.md): the common envelope
(clusterfab.contract), money computed here as JSON numbers rounded to the cent and figures taken from
the catalog or the blueprint (unit prices, budget limits) as written, dates as ISO strings, and null
for what is unknown (a missing price, a run length not asked for, a limit not set). Text and Markdown
are for people: money in cents, unit prices to at most 4 decimals, and always the catalog version and
the assumptions next to the numbers, in the spirit of Infracost's PR comments.
"""

from __future__ import annotations

import datetime as dt
import textwrap
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from clusterfab.contract import cents, envelope, exact
from clusterfab.core import dates
from clusterfab.core import markdown as md
from clusterfab.core.dates import utc_stamp
from clusterfab.core.findings import Finding
from clusterfab.cost.estimate import HOURS_PER_MONTH, CostEstimate, CostItem

_UNIT_SUFFIX = {"hour": "/h", "chip_hour": "/chip-h", "gib_month": "/GiB-mo"}
_QUANTITY_WORD = {
    "node_group": ("node", "nodes"),
    "tpu_slice": ("chip", "chips"),
    "storage": ("GiB", "GiB"),
    "monitoring": ("node", "nodes"),
    "controller": ("node", "nodes"),
    "login": ("node", "nodes"),
}
_NOT_PRICED = (
    "block storage (boot, Slurm state and monitoring disks; the state disk's snapshots), networking, data"
    " transfer and VPC flow logs (per GB ingested)"
)
"""What the estimate leaves out on purpose; said in every human-readable output."""


def cost_json(
    estimate: CostEstimate,
    *,
    blueprint: str | None = None,
    env: str | None = None,
    findings: Sequence[Finding] = (),
) -> dict[str, Any]:
    """The `clusterfab cost --format json` document (architecture §5, docs/json/cost.md)."""
    return {
        **envelope(blueprint=blueprint, env=env, cloud=estimate.cloud, region=estimate.region),
        "ok": estimate.budget.ok,
        "currency": "USD",
        "hourly_usd": cents(estimate.hourly_usd),
        "monthly_usd": cents(estimate.monthly_usd),
        "min_hourly_usd": cents(estimate.min_hourly_usd),
        "min_monthly_usd": cents(estimate.min_monthly_usd),
        "utilisation_percent": exact(estimate.utilisation_percent),
        "expected_hourly_usd": cents(estimate.expected_hourly_usd),
        "expected_monthly_usd": cents(estimate.expected_monthly_usd),
        "run_usd": cents(estimate.run_usd),
        "hours": exact(estimate.hours),
        "items": [_item_json(item, estimate.utilisation) for item in estimate.items],
        "catalog": {"version": estimate.catalog_version, "as_of": estimate.catalog_as_of.isoformat()},
        "warnings": [w.message for w in estimate.warnings],
        "budget": {
            "max_hourly_usd": exact(estimate.budget.max_hourly_usd),
            "max_monthly_usd": exact(estimate.budget.max_monthly_usd),
            "ok": estimate.budget.ok,
        },
        "teams": [
            {
                "name": team.name,
                "max_gpus": team.max_gpus,
                "gpu_hours_per_month": team.gpu_hours_per_month,
                "reachable_gpu_hours": team.reachable_gpu_hours,
                "usd_per_gpu_hour": cents(team.usd_per_gpu_hour),
                "max_hourly_usd": cents(team.max_hourly_usd),
                "monthly_usd": cents(team.monthly_usd),
            }
            for team in estimate.teams
        ],
        "findings": [f.to_json() for f in findings],
    }


def _item_json(item: CostItem, expected: Decimal | None) -> dict[str, Any]:
    return {
        "name": item.name,
        "kind": item.kind,
        "sku": item.sku,
        "region": item.region,
        "pricing_model": item.pricing_model,
        "quantity": item.quantity,
        "min_quantity": item.min_quantity,
        "unit": item.unit,
        "unit_price_usd": exact(item.unit_price_usd),
        "hourly_usd": cents(item.hourly_usd),
        "monthly_usd": cents(item.monthly_usd),
        "min_hourly_usd": cents(item.min_hourly_usd),
        "min_monthly_usd": cents(item.min_monthly_usd),
        "expected_hourly_usd": None if expected is None else cents(item.hourly_at(expected)),
        "expected_monthly_usd": None if expected is None else cents(item.monthly_at(expected)),
        "source": item.source,
        "as_of": item.as_of.isoformat() if item.as_of else None,
        "confidence": item.confidence,
        "ends_at": utc_iso(item.ends_at),
        "term_hours": exact(item.term_hours),
        "term_usd": cents(item.term_usd),
    }


def utc_iso(when: dt.datetime | None) -> str | None:
    """`2026-12-15T11:30:00Z`: a UTC time as the blueprint writes it."""
    return None if when is None else dates.utc_iso(when)


# --- formatting for people -------------------------------------------------------------------


def usd(value: Decimal) -> str:
    """$1,234.57: money rounded to cents, half up."""
    return f"${value.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):,}"


def unit_price(value: Decimal) -> str:
    """A unit price to at most 4 decimals and at least 2: $55.04, $0.145, $93.4007."""
    text = f"{value.quantize(Decimal('0.0001'), rounding=ROUND_HALF_UP):,}"
    whole, _, cents = text.partition(".")
    return f"${whole}.{cents.rstrip('0').ljust(2, '0')}"


def _hours(value: Decimal) -> str:
    return f"{value.normalize():f}"


def _count(item: CostItem, quantity: Decimal | int) -> str:
    """`16 nodes`, `1 node`, `4.4 nodes`: a quantity in the item's unit."""
    one, many = _QUANTITY_WORD[item.kind]
    number = f"{quantity:,}" if isinstance(quantity, int) else f"{quantity.normalize():,f}"
    return f"{number} {one if quantity == 1 else many}"


def _quantity(item: CostItem) -> str:
    text = _count(item, item.quantity)
    return f"{text} (max)" if item.scales else text


def percent(value: Decimal) -> str:
    """25%, 12.5%: a utilisation as given."""
    return f"{value.normalize():f}%"


def _levels(estimate: CostEstimate) -> list[tuple[str, Decimal]]:
    """The points below full size the estimate shows: its autoscaled groups at min and, with
    --utilisation, in between (label, fraction of the nodes above the min that are up)."""
    if not estimate.scales:
        return []
    levels = [("at min", Decimal(0))]
    if estimate.utilisation_percent is not None and estimate.utilisation is not None:
        levels.append((f"at {percent(estimate.utilisation_percent)} utilisation", estimate.utilisation))
    return levels


def _at_max(estimate: CostEstimate) -> str:
    """What a full-size figure (run, budget) says about the autoscaled groups, when there are any."""
    return " (autoscaled groups at their max)" if estimate.scales else ""


def _run_note(estimate: CostEstimate) -> str:
    """What the run's figure says about the items that end before the run does."""
    hours = estimate.hours
    short = [i for i in estimate.ending if hours is not None and i.run_hours(hours) < hours]
    parts = [f"{i.name} only its {_count_hours(i.run_hours(hours))} left" for i in short if hours is not None]
    return f" ({'; '.join(parts)})" if parts else ""


def _money(value: Decimal | None) -> str:
    return usd(value) if value is not None else "-"


def _pricing(item: CostItem) -> str:
    if item.capacity is not None and item.priced and item.capacity != item.pricing_model:
        return f"{item.capacity} (at {item.pricing_model})"
    return item.capacity or item.pricing_model


def _row(item: CostItem) -> list[str]:
    price = (
        f"{unit_price(item.unit_price_usd)}{_UNIT_SUFFIX[item.unit]}"
        if item.unit_price_usd is not None
        else "no price"
    )
    hourly, monthly = _money(item.hourly_usd), _money(item.monthly_usd)
    return [item.name, item.kind, item.sku, _pricing(item), _quantity(item), price, hourly, monthly]


def _level_rows(item: CostItem, levels: Sequence[tuple[str, Decimal]]) -> list[list[str]]:
    """An autoscaled group's rows under its own (which is at its max): one per level, labelled."""
    if item.min_quantity is None:
        return []
    rows = []
    for label, utilisation in levels:
        quantity = _count(item, item.quantity_at(utilisation))
        if 0 < utilisation < 1:
            quantity += " (mean)"
        hourly, monthly = _money(item.hourly_at(utilisation)), _money(item.monthly_at(utilisation))
        rows.append([f"  {label}", "", "", "", quantity, "", hourly, monthly])
    return rows


def _total_rows(estimate: CostEstimate, levels: Sequence[tuple[str, Decimal]]) -> list[list[str]]:
    """`TOTAL`, or with autoscaled groups `TOTAL at max` and a total per level below it."""
    if not levels:
        return [["TOTAL", "", "", "", "", "", usd(estimate.hourly_usd), usd(estimate.monthly_usd)]]
    rows = [["TOTAL at max", "", "", "", "", "", usd(estimate.hourly_usd), usd(estimate.monthly_usd)]]
    for label, utilisation in levels:
        hourly, monthly = usd(estimate.hourly_at(utilisation)), usd(estimate.monthly_at(utilisation))
        rows.append([f"TOTAL {label}", "", "", "", "", "", hourly, monthly])
    return rows


_HEADERS = ["ITEM", "KIND", "SKU", "PRICING", "QUANTITY", "UNIT PRICE", "HOURLY", "MONTHLY"]
_RIGHT = {4, 5, 6, 7}
"""Numeric columns, right-aligned."""
_DROP_ORDER = (1, 5, 3, 2)
"""Columns left out, in this order, until the table fits the terminal: KIND (the quantity's unit
says it), UNIT PRICE (hourly / quantity), PRICING, SKU. ITEM, QUANTITY and the totals always stay."""


def _table(rows: Sequence[Sequence[str]], width: int) -> list[str]:
    columns = list(range(len(rows[0])))
    widths = [max(len(row[c]) for row in rows) for c in columns]

    def size() -> int:
        return sum(widths[c] for c in columns) + 2 * (len(columns) - 1)

    for drop in _DROP_ORDER:
        if size() <= width:
            break
        columns.remove(drop)
    lines = []
    for row in rows:
        cells = [row[c].rjust(widths[c]) if c in _RIGHT else row[c].ljust(widths[c]) for c in columns]
        lines.append("  ".join(cells).rstrip())
    return lines


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(
        text,
        width=max(width, 40),
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def _where(estimate: CostEstimate, environment: str | None) -> str:
    scope = f"environment {environment}" if environment else "base blueprint"
    return f"({scope}) on {estimate.cloud} {estimate.region}"


def _left_out(estimate: CostEstimate) -> str | None:
    """Which items the totals leave out, or None when every item has a price."""
    names = [item.name for item in estimate.unpriced]
    if not names:
        return None
    return f"not in the totals (no price): {', '.join(names)}"


def _count_hours(hours: Decimal) -> str:
    """`347.5 hours`, `1 hour`: the hours left of a term."""
    return f"{_hours(hours)} hour{'' if hours == 1 else 's'}"


def ending_lines(estimate: CostEstimate) -> list[str]:
    """One line per item with an end: when it ends, and the hours left until then and their cost."""
    lines = []
    for item in estimate.ending:
        assert item.ends_at is not None
        assert item.term_hours is not None
        if not item.term_hours:
            left = "ended: priced at nothing from now"
        elif item.term_usd is None:
            left = f"{_count_hours(item.term_hours)} left (no price)"
        else:
            left = f"{_count_hours(item.term_hours)} left = {usd(item.term_usd)}"
        lines.append(f"{item.name}: capacity block ends {utc_stamp(item.ends_at)}; {left}")
    return lines


def ending_title(estimate: CostEstimate) -> str:
    since = utc_stamp(estimate.priced_from) if estimate.priced_from is not None else "today"
    return f"capacity blocks, priced until their end (hours left from {since}):"


def budget_verdict(estimate: CostEstimate) -> str:
    """'within budget (...)', 'OVER BUDGET (...)' or 'no budget set'."""
    budget = estimate.budget
    parts = []
    if budget.max_hourly_usd is not None:
        relation = "over the" if budget.hourly_exceeded else "of"
        parts.append(f"hourly {usd(estimate.hourly_usd)} {relation} {usd(budget.max_hourly_usd)} limit")
    if budget.max_monthly_usd is not None:
        relation = "over the" if budget.monthly_exceeded else "of"
        parts.append(f"monthly {usd(estimate.monthly_usd)} {relation} {usd(budget.max_monthly_usd)} limit")
    if not parts:
        return "no budget set (add `budget: {max_hourly_usd: ...}` to check limits)"
    if estimate.unpriced:
        count = len(estimate.unpriced)
        parts.append(f"{count} unpriced item{'' if count == 1 else 's'} not counted")
    verdict = "within budget" if budget.ok else "OVER BUDGET"
    return f"{verdict} ({'; '.join(parts)})"


def team_lines(estimate: CostEstimate) -> list[str]:
    """One line per team: its concurrent GPUs and monthly GPU-hours in dollars."""
    lines = []
    for team in estimate.teams:
        if team.usd_per_gpu_hour is None or team.max_hourly_usd is None:
            lines.append(f"{team.name}: {team.max_gpus} GPUs (no GPU price)")
            continue
        line = f"{team.name}: {team.max_gpus} GPUs at once = {usd(team.max_hourly_usd)}/hour"
        if team.gpu_hours_per_month is not None and team.monthly_usd is not None:
            hours = f"{team.gpu_hours_per_month:,} GPU-hours a month"
            if team.gpu_hours_per_month > team.reachable_gpu_hours:
                # Only what the team can reach is money it can spend.
                hours += f" (it can use {team.reachable_gpu_hours:,})"
            line += f"; {hours} = {usd(team.monthly_usd)}/month"
        lines.append(f"{line} (at {usd(team.usd_per_gpu_hour)} per GPU-hour)")
    return lines


def _assumptions(estimate: CostEstimate) -> list[str]:
    size = "full size (autoscaled groups at their max)"
    if estimate.scales:
        size = (
            "totals, run and budget at full size (autoscaled groups at their max); "
            "at min: autoscaled groups at their min"
        )
        if estimate.utilisation_percent is not None:
            share = percent(estimate.utilisation_percent)
            size += (
                f"; at {share} utilisation: their min nodes all the time, those above the min {share} of it"
            )
    elif estimate.utilisation_percent is not None:
        size += (
            f"; --utilisation {percent(estimate.utilisation_percent)} changes nothing: no group autoscales"
        )
    month = f"monthly = {HOURS_PER_MONTH} hours"
    if estimate.ending:
        month += " (of a capacity block, only those before its end)"
    return [
        f"catalog {estimate.catalog_version} ({estimate.catalog_as_of.isoformat()}): USD list prices before "
        f"taxes and discounts; {month}",
        f"{size}; not priced: {', '.join((*estimate.not_priced, _NOT_PRICED))}",
    ]


def render_text(estimate: CostEstimate, *, environment: str | None = None, width: int = 10_000) -> str:
    """The estimate as an aligned table with totals, run cost, budget verdict, warnings and assumptions,
    laid out for `width` columns (the table drops its least needed columns, prose wraps)."""
    levels = _levels(estimate)
    rows = [_HEADERS]
    for item in estimate.items:
        rows += [_row(item), *_level_rows(item, levels)]
    rows += _total_rows(estimate, levels)
    out = [f"Cost of {estimate.name} {_where(estimate, environment)}", "", *_table(rows, width)]
    left_out = _left_out(estimate)
    if left_out:
        out.extend(_wrap(left_out, width))
    out.append("")
    if estimate.ending:
        out.extend(_wrap(ending_title(estimate), width))
        for line in ending_lines(estimate):
            out.extend(_wrap(line, width, indent="  "))
    if estimate.run_usd is not None and estimate.hours is not None:
        run = f"{usd(estimate.run_usd)}{_at_max(estimate)}{_run_note(estimate)}"
        out.extend(_wrap(f"run of {_hours(estimate.hours)} hours: {run}", width))
    out.extend(_wrap(f"budget: {budget_verdict(estimate)}", width))
    if estimate.teams:
        out.append("team quotas at the cluster's GPU price:")
        for line in team_lines(estimate):
            out.extend(_wrap(line, width, indent="  "))
    if estimate.warnings:
        out.append(f"warnings ({len(estimate.warnings)}):")
        for warning in estimate.warnings:
            out.extend(_wrap(f"- {warning.message}", width, indent="  "))
    for line in _assumptions(estimate):
        out.extend(_wrap(line, width))
    return "\n".join(out)


def render_markdown(estimate: CostEstimate, *, environment: str | None = None) -> str:
    """The estimate as a Markdown PR comment: a table, the totals, the budget verdict and the caveats."""
    header = "| Item | Kind | SKU | Pricing | Quantity | Unit price | Hourly | Monthly |"
    out = [
        f"### Cost of {md.code(estimate.name)} {md.text(_where(estimate, environment))}",
        "",
        header,
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    levels = _levels(estimate)
    for item in estimate.items:
        # The name, kind, pricing and quantity are values; the money is formatted here.
        row = _row(item)
        name, kind, pricing, quantity = (md.text(row[i]) for i in (0, 1, 3, 4))
        sku, (price, hourly, monthly) = md.code(item.sku, in_table=True), row[5:]
        out.append(f"| {name} | {kind} | {sku} | {pricing} | {quantity} | {price} | {hourly} | {monthly} |")
        for level, _, _, _, count, _, hourly, monthly in _level_rows(item, levels):
            label, quantity = md.text(level.strip()), md.text(count)
            out.append(f"| &nbsp;&nbsp;_{label}_ | | | | {quantity} | | {hourly} | {monthly} |")
    for total, _, _, _, _, _, hourly, monthly in _total_rows(estimate, levels):
        label = md.text(total.replace("TOTAL", "Total"))
        out.append(f"| **{label}** | | | | | | **{hourly}** | **{monthly}** |")
    left_out = _left_out(estimate)
    if left_out:
        out += ["", md.text(left_out[0].upper() + left_out[1:])]
    out.append("")
    if estimate.ending:
        title = ending_title(estimate)
        out += [f"**{md.text(title[0].upper() + title[1:])}**", ""]
        out.extend(f"- {md.text(line)}" for line in ending_lines(estimate))
        out.append("")
    if estimate.run_usd is not None and estimate.hours is not None:
        run = md.text(f"{usd(estimate.run_usd)}{_at_max(estimate)}{_run_note(estimate)}")
        out.append(f"**Run of {_hours(estimate.hours)} hours:** {run}")
        out.append("")
    verdict = md.text(budget_verdict(estimate))
    if not estimate.budget.ok:
        verdict = f"**{verdict}**"
    out.append(f"**Budget:** {verdict}")
    if estimate.teams:
        out += ["", "**Team quotas** at the cluster's GPU price:", ""]
        out.extend(f"- {md.text(line)}" for line in team_lines(estimate))
    if estimate.warnings:
        out += ["", f"<details><summary>Warnings ({len(estimate.warnings)})</summary>", ""]
        out.extend(f"- {md.text(w.message)}" for w in estimate.warnings)
        out += ["", "</details>"]
    out += ["", f"<sub>{md.text('; '.join(_assumptions(estimate)))}</sub>"]
    return "\n".join(out)
