"""The `clusterfab` command line.

One error boundary (`main`) turns expected failures into a one-line message and the exit codes of
architecture §4: 0 success, 1 findings at error level or a refused gate, 2 usage error, 3 internal
error. Commands import their machinery lazily: `validate`, `cost`, `catalog` and `schema` never load
Pulumi, and none of them pays for what another command needs.
"""

from __future__ import annotations

import enum
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from clusterfab.errors import ClusterfabError

app = typer.Typer(
    name="clusterfab",
    help="Typed, multi-cloud AI training clusters from a declarative blueprint.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)


class TextOrJson(enum.StrEnum):
    text = "text"
    json = "json"


class CloudChoice(enum.StrEnum):
    aws = "aws"
    gcp = "gcp"


BlueprintArg = Annotated[Path, typer.Argument(help="Blueprint YAML file.", show_default=False)]
EnvOption = Annotated[
    str | None,
    typer.Option(
        "--env",
        "-e",
        help=(
            "Environment overlay to apply (e.g. dev, prod). validate checks every environment when omitted."
        ),
    ),
]


def _color() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


@app.command()
def validate(
    blueprint: BlueprintArg,
    env: EnvOption = None,
    output: Annotated[TextOrJson, typer.Option("--format", "-f", help="Output format.")] = TextOrJson.text,
) -> None:
    """Check a blueprint offline: schema, semantics, catalog facts and budget."""
    from clusterfab.rules.engine import validate_file
    from clusterfab.rules.render import render_json, render_text, summary_line

    result = validate_file(blueprint, display=str(blueprint), environment=env)
    if output is TextOrJson.json:
        typer.echo(render_json(result.ok, result.findings))
    else:
        lines = result.document.lines if result.document else ()
        if result.findings:
            typer.echo(render_text(result.findings, lines, color=_color()))
            typer.echo("")
        scope = ", ".join(e or "base" for e in result.blueprints) or "nothing"
        verdict = "valid" if result.ok else "invalid"
        typer.echo(f"{blueprint}: {verdict} ({summary_line(result.findings)}; checked: {scope})")
    raise typer.Exit(0 if result.ok else 1)


@app.command()
def catalog(
    cloud: Annotated[CloudChoice | None, typer.Option("--cloud", help="Only this cloud.")] = None,
    output: Annotated[TextOrJson, typer.Option("--format", "-f", help="Output format.")] = TextOrJson.text,
) -> None:
    """Show the catalog: machine types, TPU generations, storage tiers and prices, with sources."""
    from clusterfab.catalog import load_catalog
    from clusterfab.catalog.render import catalog_json, print_catalog

    data = load_catalog()
    selected = cloud.value if cloud is not None else None
    if output is TextOrJson.json:
        import json

        typer.echo(json.dumps(catalog_json(data, selected), indent=2))
    else:
        print_catalog(data, selected)


@app.command()
def schema() -> None:
    """Print the blueprint JSON Schema (for editor completion and CI checks)."""
    import json

    from clusterfab.blueprint.schema import blueprint_json_schema

    typer.echo(json.dumps(blueprint_json_schema(), indent=2))


def main() -> None:
    """Entry point of the `clusterfab` console script: the one error boundary.

    Typer itself handles usage errors (exit 2) and `typer.Exit`; everything else that escapes a
    command ends here as one line on stderr, never as a traceback.
    """
    try:
        app()
    except ClusterfabError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except Exception as exc:
        if os.environ.get("CLUSTERFAB_DEBUG"):
            raise
        typer.echo(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "this is a bug in clusterfab; run again with CLUSTERFAB_DEBUG=1 for the traceback",
            err=True,
        )
        sys.exit(3)
