"""The `clusterfab` command line: the app, built from one module per command or command group.

One error boundary (`main`) turns expected failures into a one-line message and the exit codes of
architecture §4: 0 success, 1 findings at error level or a refused gate, 2 usage error, 3 internal
error. Commands import their machinery lazily: `validate`, `cost`, `catalog` and `schema` never load
Pulumi, and none of them pays for what another command needs.

Where output goes (the same for every command, docs/cli.md): the command's result and the blueprint's
findings on stdout, in the format asked for (text, JSON or Markdown), valid or not, so that CI can
post stdout as it is; on stderr only progress and the one-line error of a command that could not run
(usage error, exit 2; internal error, exit 3), which in JSON mode is instead a JSON error object on
stdout. Text is laid out for the terminal's width (COLUMNS, else 120 columns when not a terminal).
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Sequence
from typing import Annotated, NoReturn

import typer
from typer.models import CommandInfo

from clusterfab.cli import (
    catalog,
    configure,
    cost,
    dashboard,
    deploy,
    diff,
    health,
    inventory,
    kubeconfig,
    plan,
    policy,
    promote,
    render,
    validate,
)
from clusterfab.cli.live import STACK_ONLY
from clusterfab.cli.output import echo_json
from clusterfab.core.errors import ClusterfabError

app = typer.Typer(
    name="clusterfab",
    help="Typed, multi-cloud AI training clusters from a declarative blueprint.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        from clusterfab.catalog import load_catalog

        typer.echo(f"clusterfab {version('clusterfab')} (catalog {load_catalog().version})")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", help="Show the version and exit.", is_eager=True, callback=_version),
    ] = False,
) -> None:
    """Typed, multi-cloud AI training clusters from a declarative blueprint."""


# In the order `clusterfab --help` lists them: the offline commands, then those on real stacks.
app.command()(validate.validate)
app.command()(cost.cost)
app.command()(plan.plan)
app.command()(policy.policy)
app.command()(diff.diff)
app.command()(catalog.catalog)
app.command()(catalog.schema)
app.command(context_settings=STACK_ONLY)(deploy.preview)
app.command(context_settings=STACK_ONLY)(deploy.up)
app.command(context_settings=STACK_ONLY)(deploy.destroy)
app.command()(promote.promote)
app.command()(inventory.inventory)
app.command()(configure.configure)
app.add_typer(render.render_app, name="render")
app.command()(dashboard.dashboard)
app.command()(health.health)
app.command()(kubeconfig.kubeconfig)


def _json_mode(argv: Sequence[str]) -> bool:
    """Whether the command line asks for JSON output (then errors are JSON objects on stdout too)."""
    for i, arg in enumerate(argv):
        if arg in {"--format=json", "-fjson"}:
            return True
        if arg in {"--format", "-f"} and i + 1 < len(argv) and argv[i + 1] == "json":
            return True
    return False


_KINDS = {2: "usage", 3: "internal"}
"""The `kind` of a JSON error object by exit code; anything else (exit 1: a refused gate, a failed
deployment) is "failed"."""


def _fail(kind: str, message: str, exit_code: int, json_mode: bool) -> NoReturn:
    if json_mode:
        from clusterfab.contract import error_document

        echo_json(error_document(kind, message, exit_code))
    else:
        typer.echo(message if kind == "internal" else f"error: {message}", err=True)
    sys.exit(exit_code)


def _app_for(argv: Sequence[str]) -> typer.Typer:
    """The app with only the command that `argv` starts with, when it starts with a command's name.

    Typer inspects the signature of every registered command on each run (about as long as validating
    a blueprint), and a run uses one. The root options (--version) and the command's own parsing, help
    and errors are the same; any other command line (options first, no command, a command group, a
    misspelt name, for which Click suggests the others) gets the whole app.
    """
    if not argv:
        return app
    chosen = [info for info in app.registered_commands if _command_name(info) == argv[0]]
    if len(chosen) != 1:
        return app
    narrowed = copy.copy(app)
    narrowed.registered_commands = chosen
    narrowed.registered_groups = []
    return narrowed


def _command_name(info: CommandInfo) -> str | None:
    """The name Typer gives a registered command (its own, else its function's, dashed)."""
    if info.name:
        return info.name
    callback = info.callback
    return callback.__name__.lower().replace("_", "-") if callback is not None else None


def main() -> None:
    """Entry point of the `clusterfab` console script: the one error boundary.

    Usage errors (bad flags, a missing file, an unknown environment) exit 2 and internal errors exit 3,
    each as one line on stderr, or in JSON mode as a JSON error object on stdout; never a traceback.
    """
    # pydantic looks for plugins in every installed distribution's entry points when it builds the
    # first model (tens of ms); this process has none to offer. Set the variable to opt back in.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    json_mode = _json_mode(sys.argv[1:])
    try:
        code = _app_for(sys.argv[1:])(standalone_mode=False)
    except typer.TyperException as exc:  # the command line itself: bad flags, missing arguments
        show = getattr(exc, "show", None)
        if json_mode or show is None:
            _fail("usage", exc.format_message(), exc.exit_code, json_mode)
        show()
        sys.exit(exc.exit_code)
    except typer.Abort:
        _fail("failed", "aborted", 1, json_mode)
    except ClusterfabError as exc:
        _fail(_KINDS.get(exc.exit_code, "failed"), str(exc), exc.exit_code, json_mode)
    except Exception as exc:
        if os.environ.get("CLUSTERFAB_DEBUG"):
            raise
        _fail(
            "internal",
            f"internal error: {type(exc).__name__}: {exc}\n"
            "this is a bug in clusterfab; run again with CLUSTERFAB_DEBUG=1 for the traceback",
            3,
            json_mode,
        )
    sys.exit(code if isinstance(code, int) else 0)
