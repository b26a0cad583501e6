"""What the commands on real stacks share (they need the Pulumi CLI, logged in to a backend, and cloud
credentials): the project, confirmation, and engine operations under a live progress view.

Commands call these through the module (`live.confirm(...)`), so that one replacement changes what
every command does (tests answer the questions this way)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from clusterfab.core.errors import RefusedError, UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from clusterfab.deploy.automation import DeployProject, EventHandler, OperationResult
    from clusterfab.deploy.progress import Operation


def stdin_is_tty() -> bool:
    return sys.stdin.isatty()


def require_confirmation_possible(yes: bool, action: str) -> None:
    """Refuse before doing anything when a confirmation would be needed but nobody can answer it."""
    if not yes and not stdin_is_tty():
        raise UsageError(
            f"{action} asks for confirmation, but stdin is not a terminal: pass --yes to go ahead"
        )


def confirm(question: str, yes: bool) -> None:
    if yes:
        return
    if not typer.confirm(question, default=False):
        raise RefusedError("cancelled; nothing was changed")


def deploy_project() -> DeployProject:
    """The workspace of the clusterfab project around the current directory (exit 2 without the CLI)."""
    from clusterfab.deploy.automation import open_project

    return open_project(Path.cwd())


def console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


_OPERATION_NOUN: dict[str, str] = {
    "preview": "preview",
    "up": "update",
    "preview-destroy": "destroy preview",
    "destroy": "destroy",
}


def run_live(
    console: Console,
    operation: Operation,
    stack: str,
    run: Callable[[EventHandler | None], OperationResult],
) -> None:
    """Run one engine operation under a live progress view; its summary follows, failure exits 1."""
    from clusterfab.deploy.automation import DeployError
    from clusterfab.deploy.progress import DeployProgress

    progress = DeployProgress(console, operation=operation, stack=stack)
    with progress:
        result = run(progress.handle)
    progress.print_summary()
    if not result.ok:
        raise DeployError(f"the {_OPERATION_NOUN[operation]} of {stack} failed: {result.error}")


STACK_ONLY = {"allow_extra_args": True}
"""A command that deploys a stack collects stray arguments (`ctx.args`) to explain them: the blueprint
file that plan and cost take is the stack config's here."""


def no_blueprint_file(ctx: typer.Context) -> None:
    """The stack's config names the blueprint it deploys: a file on the command line is a mistake to
    explain, not an unexpected argument."""
    if ctx.args:
        command = ctx.info_name
        raise UsageError(
            f"{command} takes no blueprint file ({' '.join(ctx.args)}): the stack's config names the "
            "blueprint it deploys (clusterfab:blueprint in stacks/Pulumi.<stack>.yaml); run "
            f"`clusterfab {command} --stack STACK`"
        )
