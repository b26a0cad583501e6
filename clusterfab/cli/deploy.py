"""`clusterfab preview`, `up` and `destroy`: a real stack's cluster, with live progress."""

from __future__ import annotations

from pathlib import Path

import typer

from clusterfab.cli import live
from clusterfab.cli.options import StackOption, YesOption
from clusterfab.core.errors import RefusedError


def preview(ctx: typer.Context, stack: StackOption) -> None:
    """Preview what `up` would change on a real stack, with live progress.

    Needs the Pulumi CLI (logged in to the stack's backend) and cloud credentials. Exits 1 when the
    preview fails.
    """
    live.no_blueprint_file(ctx)
    target = live.deploy_project().stack(stack)
    live.run_live(live.console(), "preview", stack, target.preview)


def up(ctx: typer.Context, stack: StackOption, yes: YesOption = False) -> None:
    """Create or update a real stack's cluster, with live progress.

    Without --yes, shows the preview first, asks, and then changes exactly what was previewed: the
    update runs with the preview's update plan, and is refused when the blueprint file or the stack
    config changed in between. Exits 1 when the update fails or is refused.
    """
    import tempfile

    from clusterfab.deploy.approval import approve, require_unchanged
    from clusterfab.stackinput import BLUEPRINT_KEY, CONFIG_NAMESPACE

    live.no_blueprint_file(ctx)
    live.require_confirmation_possible(yes, "up")
    project = live.deploy_project()
    target = project.stack(stack)
    console = live.console()
    if yes:
        live.run_live(console, "up", stack, target.up)
        return
    with tempfile.TemporaryDirectory(prefix="clusterfab-plan-") as tmp:
        # What is approved is what runs: the update is held to the previewed plan, and refused when the
        # blueprint or the stack config changed while the question was open.
        plan = Path(tmp) / "plan.json"
        config = target.config()
        relative = config.get(f"{CONFIG_NAMESPACE}:{BLUEPRINT_KEY}")
        approval = approve(stack, plan, config, project.project.root / relative if relative else None)
        live.run_live(console, "preview", stack, lambda handle: target.preview(handle, save_plan=plan))
        live.confirm(f"Update stack {stack}?", yes)
        require_unchanged(approval, target.config())
        live.run_live(console, "up", stack, lambda handle: target.up(handle, plan=plan))


def destroy(ctx: typer.Context, stack: StackOption, yes: YesOption = False) -> None:
    """Delete every resource of a real stack, and the instances Slurm created for it.

    Refuses (exit 1) while the stack has protected resources (prod's file systems and buckets):
    unprotect them deliberately first. Without --yes, shows what would be deleted and asks. Runs the
    stack's program (its blueprint must still load): a Slurm cluster's node groups delete the instances
    Slurm launched outside Pulumi before their own resources go.
    """
    from clusterfab.deploy.events import name_of

    live.no_blueprint_file(ctx)
    live.require_confirmation_possible(yes, "destroy")
    target = live.deploy_project().stack(stack)
    protected = target.protected_resources()
    if protected:
        names = ", ".join(f"{name_of(urn)} ({kind})" for urn, kind in protected[:5])
        more = f" and {len(protected) - 5} more" if len(protected) > 5 else ""
        raise RefusedError(
            f"stack {stack} has {len(protected)} protected resource(s): {names}{more}; destroy does not "
            "delete protected resources (they hold data): unprotect them first (`protect: false` on the "
            f"storage in the blueprint, then `clusterfab up --stack {stack}`; or `pulumi state unprotect`)"
        )
    console = live.console()
    if not yes:
        live.run_live(console, "preview-destroy", stack, target.preview_destroy)
        live.confirm(f"Delete every resource of stack {stack}?", yes)
    live.run_live(console, "destroy", stack, target.destroy)
