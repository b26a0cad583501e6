"""`clusterfab configure`: a deployed stack's nodes configured now (push mode), then health-checked."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clusterfab.cli import live
from clusterfab.cli.options import StackOption
from clusterfab.core.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from clusterfab.deploy.automation import DeployStack
    from clusterfab.provision.push import HealthTarget, PushResult
    from clusterfab.stackinput import StackInput


def configure(
    stack: StackOption,
    node_group: Annotated[
        list[str] | None,
        typer.Option(
            "--node-group",
            help=("Only these node groups (repeatable); a partial run records only a failed health check."),
        ),
    ] = None,
    limit: Annotated[
        str | None,
        typer.Option(
            "--limit",
            help=(
                "Only the hosts matching this Ansible pattern (e.g. an instance id or 'i-0ab*'), within"
                " each node group; a partial run records only a failed health check."
            ),
        ),
    ] = None,
    tags: Annotated[
        list[str] | None,
        typer.Option(
            "--tags", help=("Only the tasks with these tags, e.g. nccl to upgrade NCCL alone (repeatable).")
        ),
    ] = None,
    skip_health: Annotated[bool, typer.Option("--skip-health", help="Do not run the health check.")] = False,
) -> None:
    """Configure a deployed stack's nodes now (push mode) and run the health check.

    Runs playbooks/gpu_node.yml on every node group through ansible-runner, then healthcheck.yml;
    the outcome is recorded in the stack's cluster bucket (health/<stack>.json), bound to the
    blueprint, playbook bundle, catalog and git commit; `promote` requires a recent pass there.
    Needs the Pulumi CLI, cloud credentials and the amazon.aws / google.cloud Ansible collection.
    Exits 1 when a playbook or the health check fails.
    """
    from rich.console import Console

    from clusterfab.provision.push import configure as push
    from clusterfab.provision.push import require_collection
    from clusterfab.provision.runner import RunProgress, run_playbook

    project = live.deploy_project()
    target = project.stack(stack)
    root = project.project.root
    stack_input = _stack_input(target, stack, root)
    require_collection(stack_input.blueprint.cloud)
    health = None if skip_health else _health_target(target, stack, root)
    console = Console()
    with RunProgress(console) as progress:
        result = push(
            target,
            stack_input,
            runner=run_playbook,
            playbooks=root / "playbooks",
            only=node_group,
            limit=limit,
            tags=tags,
            health=health,
            on_event=progress.handle,
        )
    _report(console, result, stack, health)
    raise typer.Exit(0 if result.succeeded else 1)


def _stack_input(target: DeployStack, stack: str, root: Path) -> StackInput:
    """The validated blueprint a deployed stack was configured with (its stack config)."""
    from clusterfab.stackinput import (
        BLUEPRINT_KEY,
        CONFIG_NAMESPACE,
        ENVIRONMENT_KEY,
        load_stack_input,
        resolve_environment,
    )

    config = target.config()
    blueprint = config.get(f"{CONFIG_NAMESPACE}:{BLUEPRINT_KEY}")
    if not blueprint:
        raise UsageError(f"stack {stack} has no {CONFIG_NAMESPACE}:{BLUEPRINT_KEY} config")
    environment = resolve_environment(config.get(f"{CONFIG_NAMESPACE}:{ENVIRONMENT_KEY}"), stack)
    return load_stack_input(blueprint, environment, root)


def _health_target(target: DeployStack, stack: str, root: Path) -> HealthTarget:
    """Where and how the health check's outcome is recorded: the stack's cluster bucket, signed."""
    from clusterfab.clouds import profile
    from clusterfab.deploy.checkout import checkout_commit
    from clusterfab.outputs import read_outputs
    from clusterfab.provision.bundle import bundle_digest
    from clusterfab.provision.push import HealthTarget

    outputs = read_outputs(target.outputs())
    if outputs.health_signing_key is None:
        raise UsageError(
            f"{stack} has no health signing key (it was last updated by an older clusterfab): "
            f"update it (`clusterfab up --stack {stack}`), then configure it"
        )
    return HealthTarget(
        store=profile(outputs.blueprint.cloud).health_store(outputs),
        stack=stack,
        commit=checkout_commit(root),
        bundle_sha256=bundle_digest(root / "playbooks"),
        signing_key=outputs.health_signing_key,
    )


def _report(console: Console, result: PushResult, stack: str, health: HealthTarget | None) -> None:
    """Each playbook run's outcome (a failed one's summary table), then the health record's."""
    from clusterfab.provision.runner import summary_table

    for group, playbook, run in result.runs:
        console.print(f"{group}: {playbook} {'ok' if run.succeeded else 'FAILED'}")
        if not run.succeeded:
            console.print(summary_table(run))
    if result.health is not None:
        reason = f": {result.health.reason}" if result.health.reason else ""
        console.print(f"health of {stack}: {result.health.status}{reason} (recorded in {result.location})")
    elif health is not None and all(run.succeeded for _, _, run in result.runs):
        console.print(f"health of {stack}: not recorded (a pass on part of the fleet proves nothing)")
