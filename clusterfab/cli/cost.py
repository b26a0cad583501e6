"""`clusterfab cost`: the blueprint priced from the catalog, per hour, month and run."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated

import typer

from clusterfab.cli.loading import load_or_exit
from clusterfab.cli.options import BlueprintArg, Format, FormatOption
from clusterfab.cli.output import color, echo_json, width
from clusterfab.core import dates
from clusterfab.core.errors import UsageError

if TYPE_CHECKING:
    from clusterfab.cost import CostEstimate
    from clusterfab.load import Loaded


def cost(
    blueprint: BlueprintArg,
    env: Annotated[
        str | None,
        typer.Option("--env", "-e", help="Environment overlay to cost (e.g. dev, prod); default: the base."),
    ] = None,
    hours: Annotated[
        float | None,
        typer.Option("--hours", help="Also price a run of this many hours (e.g. 336 for two weeks)."),
    ] = None,
    utilisation: Annotated[
        float | None,
        typer.Option(
            "--utilisation",
            "--utilization",
            help=(
                "Also price the autoscaled groups at this utilisation, 0 to 100: their min nodes all the "
                "time and the nodes above the min this percentage of it."
            ),
        ),
    ] = None,
    output: FormatOption = Format.text,
) -> None:
    """Estimate the cost per hour, per month (730 h) and per run from the catalog's prices.

    Autoscaled groups are priced at their max (the totals and the budget) and at their min, and with
    --utilisation in between. Exits 1 when the blueprint is invalid or the estimate is over the
    blueprint's budget.
    """
    from clusterfab.catalog import load_catalog
    from clusterfab.cost import MAX_RUN_HOURS, estimate_cost
    from clusterfab.cost.render import cost_json
    from clusterfab.load import rule_context
    from clusterfab.rules.budget import price_caveats
    from clusterfab.rules.registry import CHECKS_BUT_BUDGET

    if hours is not None and not (math.isfinite(hours) and 0 < hours <= MAX_RUN_HOURS):
        raise UsageError(f"--hours must be a positive number of hours up to {MAX_RUN_HOURS:,}, not {hours:g}")
    if utilisation is not None and not (math.isfinite(utilisation) and 0 <= utilisation <= 100):
        raise UsageError(f"--utilisation must be a percentage from 0 to 100, not {utilisation:g}")
    today = dates.today()
    # The budget verdict is part of the estimate (exit 1 after showing it), not a finding that stops it.
    result, resolved = load_or_exit(
        blueprint, env, output, "cost", "not costed", checks=CHECKS_BUT_BUDGET, today=today
    )
    catalog = load_catalog()
    estimate = estimate_cost(
        resolved.spec, catalog, hours=hours, utilisation_percent=utilisation, today=today
    )
    if output is Format.json:
        context = rule_context(resolved, catalog, today)
        findings = sorted([*result.findings, *price_caveats(context, estimate)], key=lambda f: f.sort_key)
        echo_json(cost_json(estimate, blueprint=str(blueprint), env=env, findings=findings))
    else:
        _show(estimate, result, env, output)
    raise typer.Exit(0 if estimate.budget.ok else 1)


def _show(estimate: CostEstimate, result: Loaded, env: str | None, output: Format) -> None:
    """The estimate as text or Markdown; the blueprint's findings follow it (its price caveats are
    already in the estimate's warnings)."""
    from clusterfab.cost.render import render_markdown
    from clusterfab.cost.render import render_text as cost_text
    from clusterfab.rules.budget import PRICE_CAVEATS
    from clusterfab.rules.render import findings_markdown, render_text, summary_line

    others = [f for f in result.findings if f.code not in PRICE_CAVEATS]
    if output is Format.markdown:
        section = ["", f"**Findings** ({summary_line(others)})", "", *findings_markdown(others, result.lines)]
        typer.echo("\n".join([render_markdown(estimate, environment=env), *(section if others else [])]))
        return
    typer.echo(cost_text(estimate, environment=env, width=width()))
    if others:
        typer.echo("")
        typer.echo(render_text(others, result.lines, color=color(), width=width()))
