"""`clusterfab render monitoring|slurm`: the configuration files clusterfab generates for a cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterfab.cli.branches import has_no_slurm, needs_nodes_project
from clusterfab.cli.loading import load_or_exit
from clusterfab.cli.options import BlueprintArg, Format
from clusterfab.core import dates
from clusterfab.core.errors import UsageError

render_app = typer.Typer(
    help="Write the configuration files clusterfab generates for a cluster.", no_args_is_help=True
)

OutOption = Annotated[Path, typer.Option("--out", "-o", help="Directory to write the files into.")]
RenderEnvOption = Annotated[
    str | None, typer.Option("--env", "-e", help="Environment overlay to render (e.g. dev, prod).")
]


@render_app.command("monitoring")
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
        str | None, typer.Option("--project", help="GCP: the nodes' project when the blueprint names none.")
    ] = None,
) -> None:
    """Write the monitoring host's files: prometheus.yml, rules/*.yml, alertmanager.yml, dashboards/*.json.

    Also Grafana's provisioning (grafana/) and the dcgm-exporter counters file the GPU nodes run.
    Exits 1 when the blueprint is invalid or has no monitoring.
    """
    from clusterfab.catalog import load_catalog
    from clusterfab.monitoring import render_monitoring as render
    from clusterfab.monitoring import write_files

    _, resolved = load_or_exit(blueprint, env, Format.text, "render monitoring", "nothing rendered")
    spec = resolved.spec
    if spec.monitoring is None:
        typer.echo(f"{blueprint}: no monitoring (monitoring.kind is none); nothing to render", err=True)
        raise typer.Exit(1)
    target_stack = stack or env or spec.name
    gcp_project = spec.project or project
    if needs_nodes_project(spec, gcp_project):
        raise UsageError("a GCP blueprint without `project:` needs --project for the nodes' discovery")
    files = render(spec, load_catalog(), stack=target_stack, project=gcp_project, today=dates.today())
    for path in write_files(files, out):
        typer.echo(str(path))


@render_app.command("slurm")
def render_slurm(blueprint: BlueprintArg, out: OutOption, env: RenderEnvOption = None) -> None:
    """Write the controller's Slurm configuration: slurm.conf, gres.conf, cgroup.conf, topology.conf,
    slurmdbd.conf (secrets as placeholders), plugstack.conf (pyxis), accounts.cfg and qos.cfg.

    Exits 1 when the blueprint is invalid or has no Slurm scheduler.
    """
    from clusterfab.catalog import load_catalog
    from clusterfab.monitoring import write_files
    from clusterfab.scheduler.slurm import SlurmRenderError
    from clusterfab.scheduler.slurm import render_slurm as render

    _, resolved = load_or_exit(blueprint, env, Format.text, "render slurm", "nothing rendered")
    spec = resolved.spec
    if has_no_slurm(spec):
        typer.echo(f"{blueprint}: no Slurm scheduler (scheduler.kind is none); nothing to render", err=True)
        raise typer.Exit(1)
    try:
        files = render(spec, load_catalog().slurm)
    except SlurmRenderError as error:
        typer.echo(f"{blueprint}: {error}", err=True)
        raise typer.Exit(1) from None
    for path in write_files(files, out):
        typer.echo(str(path))
