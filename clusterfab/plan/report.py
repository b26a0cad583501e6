"""The diff a pull request shows: resource changes, the cost delta, and what would destroy data.

One report, three forms: JSON (architecture §5), text for a terminal, and Markdown for a PR comment
in the style people know from Infracost (summary line, table of changed items with before -> after,
monthly delta and percentage, catalog version and date), with a Mermaid sketch of the cluster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from clusterfab.clouds import profiles
from clusterfab.contract import cents, envelope, exact
from clusterfab.core import markdown as md
from clusterfab.core.findings import Finding
from clusterfab.cost.diff import CostDiff, ItemDelta
from clusterfab.cost.estimate import HOURS_PER_MONTH
from clusterfab.cost.render import budget_verdict, ending_lines, ending_title, usd, utc_iso
from clusterfab.plan.capacity import CapacityLoss
from clusterfab.plan.diff import PlanDiff, Update
from clusterfab.plan.text import fit, short_type, type_column, wrap
from clusterfab.rules.render import findings_markdown, render_text, summary_line
from clusterfab.spec import ClusterSpec, NodeGroup, TpuSlice


@dataclass(frozen=True)
class DiffReport:
    base: str
    """What the diff starts from, e.g. `blueprints/x.yaml@origin/main`."""
    target: str
    env: str | None
    resources: PlanDiff
    cost: CostDiff
    spec: ClusterSpec
    """The new blueprint, resolved (for the cluster sketch)."""
    base_cloud: str | None = None
    """The base side's cloud (None: nothing on the base side)."""
    findings: tuple[Finding, ...] = ()
    """The new blueprint's findings (warnings, notes and its price caveats)."""
    capacity: tuple[CapacityLoss, ...] = ()
    """The GPUs and TPU chips the change gives up while their resources are replaced."""

    @property
    def cross_cloud(self) -> bool:
        return self.base_cloud is not None and self.base_cloud != self.spec.cloud

    def refused(self, allow_replace: bool) -> bool:
        """Whether the diff exits 1 for data loss (architecture §10.3)."""
        return bool(self.resources.destructive()) and not allow_replace


def _signed(value: Decimal) -> str:
    return ("+" if value >= 0 else "-") + usd(abs(value))


def _percent(cost: CostDiff) -> str:
    percent = cost.percent_monthly
    return "" if percent is None else f" ({'+' if percent >= 0 else ''}{percent.quantize(Decimal('0.1'))}%)"


def _moved(report: DiffReport) -> list[str]:
    if not report.cross_cloud:
        return []
    return [
        f"cross-cloud diff: the base is on {report.base_cloud} and the new blueprint on {report.spec.cloud}; "
        f"nothing carries over: every {report.base_cloud} resource is deleted and every "
        f"{report.spec.cloud} resource created"
    ]


def _data_loss(report: DiffReport) -> list[str]:
    return [
        f"stateful resource {r.name} ({r.type}) would be {why}" for r, why in report.resources.destructive()
    ]


def _nodes_recreated(report: DiffReport) -> list[str]:
    """Replaced instance groups: no data is lost, but every node of the group goes (and its jobs)."""
    node_group_types = {t for cloud in profiles() for t in cloud.node_group_types}
    return [
        f"node group {u.after.name} ({u.after.type}) would be replaced: every node of it is recreated and "
        "the jobs running on it end; under Slurm, the nodes Slurm created for the group are deleted first"
        for u in report.resources.replaced
        if u.after.type in node_group_types
    ]


def _restarts(report: DiffReport) -> list[str]:
    """In-place updates the provider makes by stopping and starting an instance: it stays, and is down
    meanwhile (a Slurm controller: no scheduling, running jobs go on)."""
    return [
        f"instance {u.after.name} ({short_type(u.after.type)}) is stopped and started to change "
        f"{_compact(u.restarts)}: it is down meanwhile"
        for u in report.resources.update
        if u.restarts
    ]


def _shrinks(report: DiffReport) -> list[str]:
    """Fixed-size node groups made smaller: the instance group terminates running nodes it picks itself,
    with whatever jobs run on them (no scheduler is asked first)."""
    found = []
    for item in report.cost.items:
        before, after = item.before, item.after
        if item.kind != "node_group" or before is None or after is None:
            continue
        if before.min_quantity is None and after.min_quantity is None and after.quantity < before.quantity:
            gone = before.quantity - after.quantity
            found.append(
                f"node group {item.name} shrinks from {before.quantity:,} to {after.quantity:,} nodes: its "
                f"instance group terminates {gone:,} running node{'' if gone == 1 else 's'} of its own "
                "choice and the jobs on them end; under Slurm, drain the group's nodes first (`scontrol "
                "update NodeName=... State=DRAIN Reason=shrink`) and apply once they are idle"
            )
    return found


def _capacity(report: DiffReport) -> list[str]:
    """Accelerators given up while their instance group, node pool or TPU request is replaced."""
    return [loss.message() for loss in report.capacity]


def _warnings(report: DiffReport) -> list[str]:
    return (
        _moved(report)
        + _data_loss(report)
        + _capacity(report)
        + _nodes_recreated(report)
        + _shrinks(report)
        + _restarts(report)
    )


def _compact(paths: tuple[str, ...]) -> str:
    """Changed paths for people: paths that differ only in list indexes are shown once, with `[*]`."""
    shown: dict[str, None] = {}
    patterns = [re.sub(r"\[\d+\]", "[*]", p) for p in paths]
    for path, pattern in zip(paths, patterns, strict=True):
        shown[pattern if patterns.count(pattern) > 1 else path] = None
    return ", ".join(shown)


def _change(update: Update) -> tuple[str, str]:
    """(mark, what changes) of an update: `+-` and why for a replacement, `~` and the paths otherwise."""
    if update.replace:
        flag = "stateful, " if update.stateful else ""
        return "+-", f"{flag}replaced: {', '.join(update.replaces)}"
    return "~", _compact(update.changed)


def _ending_json(item: ItemDelta) -> dict[str, Any]:
    """The new side's monthly figure, and its end with the hours left and their cost (null without)."""
    after = item.after
    return {
        "before_monthly_usd": cents(item.before_monthly),
        "after_monthly_usd": cents(item.after_monthly),
        "ends_at": None if after is None else utc_iso(after.ends_at),
        "term_hours": None if after is None else exact(after.term_hours),
        "term_usd": None if after is None else cents(after.term_usd),
    }


def report_json(report: DiffReport, *, allow_replace: bool = False) -> dict[str, Any]:
    """The `clusterfab diff --format json` document (architecture §5, docs/json/diff.md). `ok` is the
    command's verdict (its exit code): within budget and, unless `allow_replace`, destroying no data."""
    cost = report.cost

    def totals(
        hourly: Decimal, monthly: Decimal, min_hourly: Decimal, min_monthly: Decimal
    ) -> dict[str, Any]:
        return {
            "hourly_usd": cents(hourly),
            "monthly_usd": cents(monthly),
            "min_hourly_usd": cents(min_hourly),
            "min_monthly_usd": cents(min_monthly),
        }

    before, after = cost.before, cost.after

    return {
        **envelope(
            blueprint=report.target, env=report.env, cloud=report.spec.cloud, region=report.spec.region
        ),
        "base": report.base,
        "ok": cost.after.budget.ok and not report.refused(allow_replace),
        "resources": report.resources.to_json(),
        "cost": {
            "before": totals(
                before.hourly_usd, before.monthly_usd, before.min_hourly_usd, before.min_monthly_usd
            ),
            "after": totals(after.hourly_usd, after.monthly_usd, after.min_hourly_usd, after.min_monthly_usd),
            # Unknown (null) while a changed item has a side without a price.
            "delta": {
                "hourly_usd": None if cost.unpriced else cents(cost.delta_hourly),
                "monthly_usd": None if cost.unpriced else cents(cost.delta_monthly),
                "min_hourly_usd": None if cost.unpriced_at_min else cents(cost.delta_min_hourly),
                "min_monthly_usd": None if cost.unpriced_at_min else cents(cost.delta_min_monthly),
            },
            "unpriced": [item.name for item in cost.unpriced],
            "items": [
                {
                    "name": item.name,
                    "before_hourly_usd": cents(item.before_hourly),
                    "after_hourly_usd": cents(item.after_hourly),
                    "delta_hourly_usd": cents(item.delta_hourly),
                    "before_min_hourly_usd": cents(item.before_min_hourly),
                    "after_min_hourly_usd": cents(item.after_min_hourly),
                    "delta_min_hourly_usd": cents(item.delta_min_hourly),
                    **_ending_json(item),
                }
                for item in cost.items
            ],
        },
        "warnings": _warnings(report) + list(_cost_warnings(report)),
        "capacity": [loss.to_json() for loss in report.capacity],
        "budget": {
            "max_hourly_usd": exact(cost.after.budget.max_hourly_usd),
            "max_monthly_usd": exact(cost.after.budget.max_monthly_usd),
            "ok": cost.after.budget.ok,
        },
        "findings": [f.to_json() for f in report.findings],
    }


def _cost_warnings(report: DiffReport) -> list[str]:
    return [w.message for w in report.cost.after.warnings if w.reason == "missing"]


def _counts(diff: PlanDiff) -> str:
    return (
        f"{len(diff.create)} to create, {len(diff.updated)} to update, {len(diff.replaced)} to replace, "
        f"{len(diff.delete)} to delete"
    )


def _unknown(items: tuple[ItemDelta, ...]) -> str:
    names = ", ".join(item.name for item in items)
    return f"{names} {'has' if len(items) == 1 else 'have'} no price on one side"


def _summary(cost: CostDiff) -> str:
    delta = cost.delta_monthly
    at_max = " (autoscaled groups at their max)" if cost.scales else ""
    if cost.unpriced:
        # Never a decrease or "no change": the unpriced side may be any amount.
        return (
            f"Monthly cost change is unknown: {_unknown(cost.unpriced)}; the priced items go from "
            f"{usd(cost.before.monthly_usd)} to {usd(cost.after.monthly_usd)} per month{at_max}"
        )
    if delta == 0:
        direction = "Monthly cost will not change"
    else:
        direction = f"Monthly cost will {'increase' if delta > 0 else 'decrease'} by {usd(abs(delta))}"
    return (
        f"{direction}{_percent(cost)}: {usd(cost.before.monthly_usd)} -> {usd(cost.after.monthly_usd)} "
        f"per month, {usd(cost.before.hourly_usd)} -> {usd(cost.after.hourly_usd)} per hour{at_max}"
    )


def _summary_at_min(cost: CostDiff) -> list[str]:
    """With autoscaled groups on either side, the same comparison with them at their min."""
    if not cost.scales:
        return []
    before, after = cost.before, cost.after
    if cost.unpriced_at_min:
        return [f"At min (autoscaled groups at their min): unknown, {_unknown(cost.unpriced_at_min)}"]
    return [
        f"At min (autoscaled groups at their min): {_signed(cost.delta_min_monthly)}/month, "
        f"{usd(before.min_monthly_usd)} -> {usd(after.min_monthly_usd)} per month, "
        f"{usd(before.min_hourly_usd)} -> {usd(after.min_hourly_usd)} per hour"
    ]


def _where(report: DiffReport) -> str:
    env = f"environment {report.env}" if report.env else "base blueprint"
    return f"{report.base} -> {report.target} ({env})"


def _cost_lines(cost: CostDiff, width: int) -> list[str]:
    """The cost section's changed items, each with its monthly change, and the capacity that ends."""
    out = [f"Cost (USD; monthly = {HOURS_PER_MONTH} hours):"]
    changed = cost.changed_items()
    for item in changed:
        mark = "+" if item.before is None else "-" if item.after is None else "~"
        out += wrap(
            f"{mark} {item.name} ({item.kind}): {item.description()}", width, first="  ", rest="      "
        )
        if item.delta_monthly is None:
            out.append("      unpriced: the catalog has no price for one side")
        else:
            before, after = item.before_monthly or Decimal(0), item.after_monthly or Decimal(0)
            change = f"{usd(before)} -> {usd(after)}"
            out.append(f"      {_signed(item.delta_monthly)}/month ({change})")
        if item.scales and item.delta_min_hourly is not None:
            before, after = item.before_min_hourly or Decimal(0), item.after_min_hourly or Decimal(0)
            change = f"{usd(before * HOURS_PER_MONTH)} -> {usd(after * HOURS_PER_MONTH)}"
            out.append(f"      at min: {_signed(item.delta_min_hourly * HOURS_PER_MONTH)}/month ({change})")
    if not changed:
        out.append("  no priced item changes")
    if cost.after.ending:
        out += wrap(ending_title(cost.after), width, first="  ", rest="    ")
        for line in ending_lines(cost.after):
            out += wrap(line, width, first="    ", rest="      ")
    return out


def report_text(report: DiffReport, *, width: int = 10_000) -> str:
    """The diff for a terminal of `width` columns: one line per resource, its short type (the JSON keeps
    the full token) in a column cut to leave its name whole; the title and warnings wrapped."""
    diff, cost = report.resources, report.cost
    title = wrap(f"clusterfab diff: {_where(report)}", width)
    rows = [("+ ", r.type, r.name, "") for r in diff.create]
    for update in diff.update:
        mark, change = _change(update)
        rows.append((f"{mark:<2}", update.after.type, update.after.name, f"  ({change})"))
    rows += [("- ", r.type, r.name, "") for r in diff.delete]
    types = [short_type(kind) for _, kind, _, _ in rows]
    column = type_column(types, [name for _, _, name, _ in rows], width, margin=7)
    out = [*title, "", f"Resources: {_counts(diff)}"]
    for (mark, _, name, change), kind in zip(rows, types, strict=True):
        line = f"  {mark} {fit(kind, column):<{column}}  {name}"
        if len(line) + len(change) <= width:
            out.append(line + change)
        else:  # what changes goes under the resource, wrapped
            out += [line, *wrap(change.strip(), width, first=" " * 7, rest=" " * 8)]
    for warning in _warnings(report):
        out += wrap(warning, width, first="  !! ", rest="     ")
    out += ["", *_cost_lines(cost, width)]
    tail = [_summary(cost), *_summary_at_min(cost), f"Budget: {budget_verdict(cost.after)}"]
    tail += [f"Warning: {w}" for w in _cost_warnings(report)]
    tail.append(f"catalog {cost.after.catalog_version} ({cost.after.catalog_as_of.isoformat()})")
    out.append("")
    for line in tail:
        out += wrap(line, width)
    if findings := _findings(report):
        out += [
            "",
            f"Findings ({summary_line(findings)}):",
            *render_text(findings, (), width=width).splitlines(),
        ]
    return "\n".join(out)


def _findings(report: DiffReport) -> list[Finding]:
    """The blueprint's findings for the text and Markdown: all but BP403, whose unpriced items are the
    cost section's warnings."""
    return [f for f in report.findings if f.code not in _SHOWN_AS_COST_WARNINGS]


_SHOWN_AS_COST_WARNINGS = frozenset({"BP403"})


def mermaid(spec: ClusterSpec) -> str:
    """A Mermaid sketch of the cluster: node groups (with fabric), TPU slices, storage and mounts. Every value
    is a quoted label's text (clusterfab.core.markdown.mermaid_label) and every id is built from a name."""
    label, node = md.mermaid_label, md.mermaid_id
    lines = ["graph LR"]
    for group in spec.node_groups:
        machine = f"{label(group.machine.name)} x{group.max_size}"
        capacity = f"{label(group.capacity.kind)}, fabric {label(group.fabric or 'none')}"
        lines.append(f'  {node(group.name)}["{label(group.name)}<br/>{machine}<br/>{capacity}"]')
    for tpu in spec.tpu_slices:
        shape = f"TPU {label(tpu.generation.name)} {label(tpu.topology)} x{tpu.slices}"
        lines.append(f'  {node(tpu.name)}["{label(tpu.name)}<br/>{shape}<br/>{label(tpu.capacity.kind)}"]')
    for storage in spec.storage:
        lines.append(
            f'  {node(storage.name)}[("{label(storage.name)}<br/>{label(storage.kind)} '
            f'{storage.capacity_gib:,} GiB")]'
        )
    consumers: list[NodeGroup | TpuSlice] = [*spec.node_groups, *spec.tpu_slices]
    for item in consumers:
        for storage in spec.storage_named(item.storage):
            lines.append(f"  {node(item.name)} -->|{label(storage.mount_point)}| {node(storage.name)}")
    return "\n".join(lines)


def _cost_table_markdown(cost: CostDiff) -> list[str]:
    """The items whose price changes, one row each; nothing when none does."""
    changed = cost.changed_items()
    if not changed:
        return []
    out = [
        "| Item | Change | Hourly before | Hourly after | Monthly change |",
        "|---|---|---:|---:|---:|",
    ]
    for item in changed:
        delta = "unpriced" if item.delta_monthly is None else _signed(item.delta_monthly)
        before = "-" if item.before_hourly is None else usd(item.before_hourly)
        after = "-" if item.after_hourly is None else usd(item.after_hourly)
        name, change = md.text(item.name), md.text(item.description())
        out.append(f"| {name} | {change} | {before} | {after} | {delta} |")
    return [*out, ""]


def _warnings_markdown(report: DiffReport) -> list[str]:
    """Moves, data loss, capacity given up, recreated nodes, shrinks, restarts and cost notes, as GitHub
    alerts."""
    out: list[str] = []
    for warning in _moved(report):
        out += ["> [!WARNING]", f"> {md.text(warning[0].upper() + warning[1:])}.", ""]
    for warning in _data_loss(report):
        out += [
            "> [!WARNING]",
            f"> The {md.text(warning)}. The diff fails and promotion refuses this unless "
            "`--allow-replace` is given.",
            "",
        ]
    for warning in _capacity(report) + _nodes_recreated(report) + _shrinks(report) + _restarts(report):
        out += ["> [!WARNING]", f"> The {md.text(warning)}.", ""]
    for warning in _cost_warnings(report):
        out += [f"> [!NOTE]\n> {md.text(warning)}", ""]
    return out


def _resource_changes_markdown(diff: PlanDiff) -> list[str]:
    """The resources created, updated and deleted, folded; nothing when the plan changes none."""
    if diff.empty:
        return []
    out = [
        "<details><summary>Resource changes</summary>",
        "",
        "| | Type | Name | Changed |",
        "|---|---|---|---|",
    ]
    out += [f"| + | {md.code(r.type, in_table=True)} | {md.text(r.name)} | |" for r in diff.create]
    for update in diff.update:
        mark, change = _change(update)
        kind, name = md.code(update.after.type, in_table=True), md.text(update.after.name)
        out.append(f"| {mark} | {kind} | {name} | {md.text(change)} |")
    out += [f"| - | {md.code(r.type, in_table=True)} | {md.text(r.name)} | |" for r in diff.delete]
    return [*out, "", "</details>", ""]


def report_markdown(report: DiffReport) -> str:
    """A PR comment: what it costs, what changes, what would destroy data, and the cluster. Every value
    (names, types, paths, file names, warnings) is escaped (clusterfab.core.markdown)."""
    diff, cost = report.resources, report.cost
    env = f"environment {md.code(report.env)}" if report.env else "base blueprint"
    out = [f"### clusterfab diff: {md.code(report.target)} ({env})", "", f"**{md.text(_summary(cost))}**", ""]
    out += [line for at_min in _summary_at_min(cost) for line in (md.text(at_min), "")]
    out += _cost_table_markdown(cost)
    if cost.after.ending:
        title = ending_title(cost.after)
        out += [f"**{md.text(title[0].upper() + title[1:])}**", ""]
        out += [f"- {md.text(line)}" for line in ending_lines(cost.after)]
        out.append("")
    budget = md.text(budget_verdict(cost.after))
    out += [f"**Budget:** {budget}", "", f"**Resources:** {_counts(diff)}", ""]
    out += _warnings_markdown(report)
    if findings := _findings(report):
        out += [f"**Findings:** {summary_line(findings)}", "", *findings_markdown(findings), ""]
    out += _resource_changes_markdown(diff)
    out += [
        "<details><summary>Cluster</summary>",
        "",
        *md.fence(mermaid(report.spec), "mermaid"),
        "",
        "</details>",
        "",
        f"<sub>base: {md.code(report.base)} · catalog {md.text(cost.after.catalog_version)} "
        f"({cost.after.catalog_as_of.isoformat()}) · USD list prices, "
        f"monthly = {HOURS_PER_MONTH} hours</sub>",
    ]
    return "\n".join(out)
