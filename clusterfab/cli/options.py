"""The arguments and options several commands share, written once so that they read and check alike."""

from __future__ import annotations

import enum
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clusterfab.core.plugins import clouds


class TextOrJson(enum.StrEnum):
    text = "text"
    json = "json"


class Format(enum.StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


if TYPE_CHECKING:
    CloudChoice = str
else:
    # Typer offers an Enum's values as the choices (`--cloud <aws|gcp>`): the clouds known when the CLI
    # is imported, by name.
    CloudChoice = enum.StrEnum("CloudChoice", {name: name for name in clouds()})


BlueprintArg = Annotated[Path, typer.Argument(help="Blueprint YAML file.", show_default=False)]
FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
TextOrJsonOption = Annotated[TextOrJson, typer.Option("--format", "-f", help="Output format.")]

# Pulumi's own rule for stack and project names (pulumi/pulumi pkg/backend, validateStackName:
# ^[A-Za-z0-9_.-]{1,100}$), with an optional org/ or org/project/ in front.
_STACK_PART = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def stack_name(value: str | None) -> str | None:
    """Check a stack name given on the command line (an option callback)."""
    if value is None:
        return None
    parts = value.split("/")
    if len(parts) > 3 or not all(_STACK_PART.fullmatch(part) for part in parts):
        raise typer.BadParameter(
            f"{value!r} is not a Pulumi stack name: up to 100 letters, digits, '-', '_' or '.', "
            "optionally as org/stack or org/project/stack"
        )
    return value


StackOption = Annotated[
    str,
    typer.Option(
        "--stack",
        "-s",
        help="Pulumi stack (e.g. dev, prod, or org/clusterfab/prod).",
        callback=stack_name,
    ),
]
YesOption = Annotated[
    bool,
    typer.Option("--yes", "-y", help="Do not ask for confirmation (required when stdin is not a terminal)."),
]
