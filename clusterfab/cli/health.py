"""`clusterfab health`: the deep GPU health check on a stack's Slurm nodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer

from clusterfab.cli import live
from clusterfab.cli.options import StackOption, TextOrJson, TextOrJsonOption
from clusterfab.cli.output import color, echo_json, width
from clusterfab.core.errors import UsageError


def health(
    stack: StackOption,
    level: Annotated[
        int, typer.Option("--level", min=1, max=3, help="DCGM diagnostic level: 1 quick, 2 medium, 3 long.")
    ] = 3,
    nodes: Annotated[
        str | None,
        typer.Option("--nodes", help="Slurm hostlist to check, e.g. trainers-[0-3] (default: idle nodes)."),
    ] = None,
    output: TextOrJsonOption = TextOrJson.text,
) -> None:
    """Run the deep GPU health check on the stack's Slurm nodes and report per node (docs/health.md).

    On the controller, in a maintenance reservation of the idle nodes: per node `dcgmi diag -r LEVEL`,
    nccl-tests across node pairs against the catalog's bandwidth floor; failing nodes are drained. Needs
    the Pulumi CLI, cloud credentials and the AWS CLI with the session-manager-plugin (AWS) or gcloud
    (GCP). Exit 1 when a node failed, 2 when the check could not run or complete.
    """
    from clusterfab.clouds import missing_host_tools
    from clusterfab.outputs import read_outputs
    from clusterfab.scheduler.slurm.healthrun import expand_hostlist, find_report, health_argv, health_table

    wanted = expand_hostlist(nodes) if nodes is not None else []
    outputs = read_outputs(live.deploy_project().stack(stack).outputs())
    argv = health_argv(outputs, level, wanted)
    missing = missing_host_tools(outputs.blueprint.cloud)
    if missing:
        raise UsageError(f"clusterfab health needs {', '.join(missing)} on PATH")
    report = find_report(remote_lines(argv))
    if output is TextOrJson.json:
        echo_json(report.document)
    else:
        from rich.console import Console

        Console(width=width(), highlight=False, no_color=not color()).print(health_table(report, stack))
    raise typer.Exit(report.exit_code)


def remote_lines(argv: Sequence[str]) -> list[str]:
    """Run a command that reaches a host, passing what it says to stderr as progress; its stdout lines."""
    import subprocess

    lines = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, errors="replace") as proc:
        for line in proc.stdout or ():
            lines.append(line)
            if not line.lstrip().startswith("{"):
                typer.echo(line.rstrip("\r\n"), err=True)
    return lines
