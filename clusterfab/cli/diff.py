"""`clusterfab diff`: what a change to a blueprint does to the resources and the cost."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterfab.cli.loading import invalid
from clusterfab.cli.options import Format, FormatOption
from clusterfab.cli.output import echo_json, width
from clusterfab.core import dates
from clusterfab.core.errors import UsageError


def diff(  # noqa: PLR0917 - Typer maps each parameter to an argument or option
    base: Annotated[
        Path, typer.Argument(help="Base blueprint (or the blueprint, with --base-ref).", show_default=False)
    ],
    new: Annotated[Path | None, typer.Argument(help="New blueprint.", show_default=False)] = None,
    env: Annotated[str | None, typer.Option("--env", "-e", help="Environment overlay on both sides.")] = None,
    base_ref: Annotated[
        str | None,
        typer.Option(
            "--base-ref", help=("Compare the blueprint with its version at this git ref (e.g. origin/main).")
        ),
    ] = None,
    output: FormatOption = Format.text,
    allow_replace: Annotated[
        bool,
        typer.Option(
            "--allow-replace",
            help="Do not fail when a stateful or protected resource is replaced or deleted.",
        ),
    ] = False,
) -> None:
    """What a change does: resources created / updated / replaced / deleted and the cost delta.

    `clusterfab diff BASE NEW` or `clusterfab diff BLUEPRINT --base-ref REF`. Replacements include those
    that follow from a dependency (a replaced subnet replaces what sits in it). Exits 1 when a blueprint
    is invalid, the new one is over budget, or a stateful or protected resource would be replaced or
    deleted (unless --allow-replace).
    """
    from clusterfab.plan.compare import InvalidSideError, compare
    from clusterfab.plan.report import report_json, report_markdown, report_text

    if (new is None) == (base_ref is None):
        raise UsageError("give BASE and NEW blueprints, or one blueprint with --base-ref")
    target = new if new is not None else base
    try:
        report = compare(
            None if new is None else base, target, env=env, today=dates.today(), base_ref=base_ref
        )
    except InvalidSideError as exc:
        invalid(exc.result, output, env, "diff", f"the {exc.side} side cannot be diffed")
    if output is Format.json:
        echo_json(report_json(report, allow_replace=allow_replace))
    elif output is Format.markdown:
        typer.echo(report_markdown(report))
    else:
        typer.echo(report_text(report, width=width()))
    if report.refused(allow_replace):
        lost = ", ".join(
            f"{resource.name} ({why.split(' ', 1)[0]})" for resource, why in report.resources.destructive()
        )
        typer.echo(
            f"error: this change destroys data: {lost}; if that is intended, rerun with --allow-replace",
            err=True,
        )
    raise typer.Exit(0 if report.cost.after.budget.ok and not report.refused(allow_replace) else 1)
