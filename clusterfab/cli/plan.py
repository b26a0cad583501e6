"""`clusterfab plan`: the resources the project's Pulumi program creates, planned offline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterfab.cli.loading import load_or_exit
from clusterfab.cli.options import BlueprintArg, Format, TextOrJson, TextOrJsonOption, stack_name
from clusterfab.cli.output import width


def plan(
    blueprint: BlueprintArg,
    env: Annotated[
        str | None,
        typer.Option("--env", "-e", help="Environment overlay to plan (e.g. dev, prod); default: the base."),
    ] = None,
    stack: Annotated[
        str | None,
        typer.Option("--stack", "-s", help="Stack name for the URNs; default: the env.", callback=stack_name),
    ] = None,
    show_inputs: Annotated[
        bool, typer.Option("--show-inputs", help="Text: list every resource's inputs under it.")
    ] = False,
    output: TextOrJsonOption = TextOrJson.text,
) -> None:
    """Plan the resources offline: the project's Pulumi program under Pulumi's mock engine.

    No cloud account, credentials or Pulumi CLI needed. Exits 1 when the blueprint is invalid
    (including over budget).
    """
    from clusterfab.plan.project import find_project, plan_stack
    from clusterfab.stackinput import StackSettings, read_stack_settings, stack_deploys, stack_view

    # The stack's settings that decide what its budget is, from its file when it has one: the stack named
    # with --stack, or the environment's namesake when that stack deploys this blueprint (stacks/
    # Pulumi.dev.yaml of another blueprint says nothing of this one's budget).
    planned_stack = plan_stack(env, stack)
    root = find_project(Path.cwd(), blueprint.resolve().parent).root
    applies = stack is not None or stack_deploys(planned_stack, root, blueprint)
    settings = read_stack_settings(planned_stack, root) if applies else StackSettings()
    result, resolved = load_or_exit(
        blueprint, env, Format(output.value), "plan", "not planned", stack=stack_view(planned_stack, settings)
    )
    # Pulumi and the providers load only for a blueprint that can be planned.
    from clusterfab.plan.project import plan_blueprint
    from clusterfab.plan.render import render_plan_json, render_plan_text

    made = plan_blueprint(blueprint, env=env, stack=stack, display=str(blueprint), settings=settings)
    if output is TextOrJson.json:
        spec = resolved.spec
        typer.echo(render_plan_json(made, cloud=spec.cloud, region=spec.region, findings=result.findings))
    else:
        typer.echo(
            render_plan_text(
                made, width=width(), show_inputs=show_inputs, findings=result.findings, lines=result.lines
            )
        )
