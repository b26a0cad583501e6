"""The step every command that acts on a blueprint starts with: load it for one environment, and when
it cannot be acted on, show its findings and exit 1."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

from clusterfab.cli.options import Format
from clusterfab.cli.output import show_validation
from clusterfab.core import dates

if TYPE_CHECKING:
    from clusterfab.load import Loaded, Resolved
    from clusterfab.rules.context import Check, StackView


def load_or_exit(
    blueprint: Path,
    env: str | None,
    output: Format,
    command: str,
    tail: str,
    *,
    checks: Sequence[Check] | None = None,
    today: dt.date | None = None,
    stack: StackView | None = None,
) -> tuple[Loaded, Resolved]:
    """The blueprint loaded for `env` (the base when None), and the spec of that environment; when it
    has errors, its findings in `output`'s format, the text form ending in `invalid (...); <tail>`,
    then exit 1."""
    from clusterfab.load import load

    result = load(
        blueprint,
        display=str(blueprint),
        environment=env,
        checks=checks,
        today=today or dates.today(),
        base_only=env is None,
        stack=stack,
    )
    resolved = result.blueprints.get(env)
    if not result.ok or resolved is None:
        invalid(result, output, env, command, tail)
    return result, resolved


def invalid(result: Loaded, output: Format, env: str | None, command: str, tail: str) -> NoReturn:
    """A blueprint a command cannot act on: its findings, then exit 1."""
    from clusterfab.rules.render import summary_line

    verdict = f"invalid ({summary_line(result.findings)}); {tail}"
    show_validation(result, output, env, command=command, verdict=verdict)
    raise typer.Exit(1)
