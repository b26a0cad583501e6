"""`clusterfab validate`: every finding of a blueprint, for each environment or one stack."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clusterfab.cli.options import BlueprintArg, Format, FormatOption, stack_name
from clusterfab.cli.output import show_validation
from clusterfab.core import dates

if TYPE_CHECKING:
    from clusterfab.rules.context import StackView

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


def validate(
    blueprint: BlueprintArg,
    env: EnvOption = None,
    stack: Annotated[
        str | None,
        typer.Option(
            "--stack",
            "-s",
            help=(
                "Check it as `pulumi up` of this stack would: the stack's environment (unless --env) and its "
                "settings in stacks/Pulumi.<stack>.yaml (the budget's billing account, cost allocation tags)."
            ),
            callback=stack_name,
        ),
    ] = None,
    output: FormatOption = Format.text,
) -> None:
    """Check a blueprint offline: schema, semantics, catalog facts and budget."""
    from clusterfab.load import load
    from clusterfab.rules.context import StackView
    from clusterfab.rules.render import summary_line

    # Without a stack the rules about a deployment say what a stack needs (a GCP budget's billing account).
    view, strict, base_only = StackView(), True, False
    if stack is not None:
        view, deployed = _stack_view(blueprint, stack)
        if env is None:
            # As the program resolves it: a blueprint without environments serves the stack as it is.
            env, strict, base_only = deployed, False, deployed is None
    result = load(
        blueprint,
        display=str(blueprint),
        environment=env,
        today=dates.today(),
        stack=view,
        strict_environment=strict,
        base_only=base_only,
    )
    scope = ", ".join(e or "base" for e in result.checked if env is None or e == env) or "nothing"
    state = "valid" if result.ok else "invalid"
    verdict = f"{state} ({summary_line(result.findings)}; checked: {scope})"
    show_validation(result, output, env, command="validate", verdict=verdict)
    raise typer.Exit(0 if result.ok else 1)


def _stack_view(blueprint: Path, stack: str) -> tuple[StackView, str | None]:
    """A stack's settings as its file keeps them (stacks/Pulumi.<stack>.yaml of the blueprint's project),
    and the environment it deploys (its clusterfab:environment, else its name)."""
    from clusterfab.plan.project import find_project
    from clusterfab.stackinput import (
        CONFIG_NAMESPACE,
        ENVIRONMENT_KEY,
        read_stack_settings,
        resolve_environment,
        stack_config,
        stack_view,
    )

    root = find_project(Path.cwd(), blueprint.resolve().parent).root
    configured = stack_config(stack, root).get(f"{CONFIG_NAMESPACE}:{ENVIRONMENT_KEY}")
    environment = resolve_environment(None if configured is None else str(configured), stack)
    return stack_view(stack, read_stack_settings(stack, root)), environment
