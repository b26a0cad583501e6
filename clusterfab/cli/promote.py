"""`clusterfab promote`: one stack's tested blueprint revision to another stack, through gates."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clusterfab.cli import live
from clusterfab.cli.options import Format, YesOption, stack_name
from clusterfab.cli.output import show_validation, width
from clusterfab.core import dates
from clusterfab.core.errors import RefusedError

if TYPE_CHECKING:
    from rich.console import Console

    from clusterfab.deploy.promote import PromotionCheck

HEALTH_MAX_AGE_HOURS = 72.0
"""promote's default --health-max-age: clusterfab.health.DEFAULT_MAX_AGE in hours (a test keeps the two
equal). Written out rather than imported so that every other command does not load clusterfab.health."""


def promote(
    source: Annotated[
        str,
        typer.Option("--from", help="Stack that runs the tested revision (e.g. dev).", callback=stack_name),
    ],
    target: Annotated[
        str, typer.Option("--to", help="Stack to promote it to (e.g. prod).", callback=stack_name)
    ],
    yes: YesOption = False,
    allow_replace: Annotated[
        bool,
        typer.Option(
            "--allow-replace", help="Accept deleting or replacing protected / stateful resources (data loss)."
        ),
    ] = False,
    health_max_age: Annotated[
        float,
        typer.Option(
            "--health-max-age",
            min=0.1,
            help="Refuse a source health record older than this many hours.",
        ),
    ] = HEALTH_MAX_AGE_HOURS,
) -> None:
    """Promote the blueprint revision that runs in one stack to another, through gates.

    Gates: the source stack was updated from this exact blueprint file (sha256) and its health record
    (in its cluster bucket, written by `configure`) passed on the whole fleet for this blueprint,
    playbook bundle, catalog and commit, after its last update and within --health-max-age; the
    target's preview deletes or replaces no protected or stateful resource (unless --allow-replace);
    the target's cost is within its budget. Shows the target preview, the offline plan diff and the
    cost diff between the two environments, asks (unless --yes), then updates the target. Exits 1
    when a gate refuses or the update fails.
    """
    import tempfile

    from clusterfab.deploy.promote import check_promotion

    live.require_confirmation_possible(yes, "promote")
    deploy = live.deploy_project()
    console = live.console()
    with tempfile.TemporaryDirectory(prefix="clusterfab-plan-") as tmp:
        check = check_promotion(
            deploy,
            source,
            target,
            allow_replace=allow_replace,
            today=dates.today(),
            console=console,
            plan=Path(tmp) / "plan.json",
            max_health_age=dt.timedelta(hours=health_max_age),
        )
        _promote_checked(check, source, target, yes=yes, console=console)


def _promote_checked(check: PromotionCheck, source: str, target: str, *, yes: bool, console: Console) -> None:
    """Show a promotion's checks; when every gate passed and it is approved, update the target with
    exactly the plan the gates saw."""
    from clusterfab.deploy.approval import require_unchanged
    from clusterfab.deploy.gates import short

    _show_checks(check, source, target)
    refused = check.refusal
    if refused is not None:
        raise RefusedError(refused)
    live.confirm(f"Promote {source} to {target} (update stack {target})?", yes)
    require_unchanged(check.approval, check.target_stack.config())
    plan = check.approval.plan
    live.run_live(console, "up", target, lambda handle: check.target_stack.up(handle, plan=plan))
    typer.echo(
        f"promoted {check.source.blueprint or check.target.blueprint} (digest {short(check.digest)}) "
        f"from {source} to {target}"
    )


def _show_checks(check: PromotionCheck, source: str, target: str) -> None:
    """The preview's summary, the blueprint's findings when it is invalid, the diff and every gate."""
    from clusterfab.plan.report import report_text

    check.progress.print_summary()
    if check.invalid is not None:
        from clusterfab.rules.render import summary_line

        verdict = f"invalid ({summary_line(check.invalid.findings)})"
        show_validation(check.invalid, Format.text, None, command="promote", verdict=verdict)
    if check.report is not None:
        typer.echo("")
        typer.echo(report_text(check.report, width=width()))
    typer.echo("")
    typer.echo(f"Gates ({source} -> {target}):")
    for gate in check.gates:
        typer.echo(f"  {'ok' if gate.passed else 'REFUSED':<7} {gate.gate}: {gate.reason}")
        for note in gate.notes:
            typer.echo(f"          note: {note}")
