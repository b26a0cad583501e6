"""`clusterfab render monitoring|<scheduler kind>`: the configuration files clusterfab generates for a
cluster. Each scheduler kind known to `clusterfab.core.plugins` has a subcommand of its own, rendered by its
plugin: one registered after this module was imported gets its command when the group is first used."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from typer import _click as click  # typer vendors click (0.29+): TyperGroup extends this click's Group
from typer.core import TyperGroup

from clusterfab.cli.loading import load_or_exit
from clusterfab.cli.options import BlueprintArg, Format
from clusterfab.core import dates, plugins
from clusterfab.core.errors import UsageError

OutOption = Annotated[Path, typer.Option("--out", "-o", help="Directory to write the files into.")]
RenderEnvOption = Annotated[
    str | None, typer.Option("--env", "-e", help="Environment overlay to render (e.g. dev, prod).")
]


def render_monitoring(
    blueprint: BlueprintArg,
    out: OutOption,
    env: RenderEnvOption = None,
    stack: Annotated[
        str | None,
        typer.Option(
            "--stack", "-s", help="The stack whose nodes Prometheus discovers; default: the environment."
        ),
    ] = None,
    project: Annotated[
        str | None,
        typer.Option(
            "--project",
            help="The nodes' project for their discovery: GCP, the project when the blueprint names none; "
            "Azure, the subscription id (the stack's azure-native:subscriptionId).",
        ),
    ] = None,
) -> None:
    """Write the monitoring host's files: prometheus.yml, rules/*.yml, alertmanager.yml, dashboards/*.json.

    Also Grafana's provisioning (grafana/) and the dcgm-exporter counters file the GPU nodes run.
    Exits 1 when the blueprint is invalid or has no monitoring.
    """
    from clusterfab.catalog import load_catalog
    from clusterfab.clouds import profile
    from clusterfab.monitoring import render_monitoring as render
    from clusterfab.monitoring import write_files

    _, resolved = load_or_exit(blueprint, env, Format.text, "render monitoring", "nothing rendered")
    spec = resolved.spec
    if spec.monitoring is None:
        typer.echo(f"{blueprint}: no monitoring (monitoring.kind is none); nothing to render", err=True)
        raise typer.Exit(1)
    target_stack = stack or env or spec.name
    nodes_project = spec.project or project
    cloud = profile(spec.cloud)
    if cloud.discovery_needs_project and nodes_project is None:
        raise UsageError(
            f"the nodes' discovery on {cloud.title} needs the project they live in: pass --project (GCP: "
            "the project, when the blueprint names none; Azure: the subscription id, which a stack sets "
            "as azure-native:subscriptionId)"
        )
    files = render(spec, load_catalog(), stack=target_stack, project=nodes_project, today=dates.today())
    for path in write_files(files, out):
        typer.echo(str(path))


def render_scheduler(kind: str, blueprint: Path, out: Path, env: str | None) -> None:
    """Write the files of scheduler `kind` (its plugin's `render`); exit 1 when the blueprint has another
    scheduler or none, or asks for what the scheduler cannot do."""
    from clusterfab.catalog import load_catalog
    from clusterfab.monitoring import write_files
    from clusterfab.scheduler import RenderError, plugin

    scheduler = plugin(kind)
    _, resolved = load_or_exit(blueprint, env, Format.text, f"render {kind}", "nothing rendered")
    spec = resolved.spec
    has = spec.scheduler.kind if spec.scheduler is not None else plugins.NO_SCHEDULER
    if has != kind:
        typer.echo(
            f"{blueprint}: no {scheduler.title} scheduler (scheduler.kind is {has}); nothing to render",
            err=True,
        )
        raise typer.Exit(1)
    try:
        files = scheduler.render(spec, load_catalog())
    except RenderError as error:
        typer.echo(f"{blueprint}: {error}", err=True)
        raise typer.Exit(1) from None
    for path in write_files(files, out):
        typer.echo(str(path))


def _scheduler_command(kind: str) -> Callable[..., None]:
    def command(blueprint: BlueprintArg, out: OutOption, env: RenderEnvOption = None) -> None:
        render_scheduler(kind, blueprint, out, env)

    return command


def _command(kind: str) -> click.Command:
    """The click command `render <kind>`, its help the plugin's (loaded only when the command is asked for
    or listed)."""
    from clusterfab.scheduler import plugin

    single = typer.Typer(add_completion=False, rich_markup_mode=None)  # as the app: plain help
    single.command(kind, help=plugin(kind).render_help)(_scheduler_command(kind))
    return typer.main.get_command(single)


class _RenderGroup(TyperGroup):
    """`render`'s commands: monitoring, then one per scheduler kind known when the group is used."""

    def _add_schedulers(self) -> None:
        for kind in plugins.schedulers():
            if kind not in self.commands:
                self.add_command(_command(kind), kind)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._add_schedulers()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._add_schedulers()
        return super().get_command(ctx, cmd_name)


render_app = typer.Typer(
    cls=_RenderGroup,
    help="Write the configuration files clusterfab generates for a cluster.",
    no_args_is_help=True,
)
render_app.command("monitoring")(render_monitoring)
