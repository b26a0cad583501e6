"""`clusterfab health`: the deep GPU health check on a stack's GPU nodes, run by its scheduler's plugin."""

from __future__ import annotations

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
        typer.Option(
            "--nodes",
            help="Nodes to check: a Slurm hostlist, e.g. trainers-[0-3], or on Kubernetes comma-separated "
            "node names (default: the idle GPU nodes).",
        ),
    ] = None,
    output: TextOrJsonOption = TextOrJson.text,
) -> None:
    """Run the deep GPU health check on the stack's idle GPU nodes and report per node (docs/health.md).

    Per node `dcgmi diag -r LEVEL`, then an NCCL all-reduce across node pairs against the catalog's
    bandwidth floor; failing nodes are taken out of scheduling. Slurm: on the controller, in a maintenance
    reservation, failing nodes drained; needs the AWS CLI with the session-manager-plugin (AWS), gcloud
    (GCP) or the Azure CLI (Azure: Run Command). Kubernetes: as Jobs and JobSets in the cluster, failing
    nodes cordoned and tainted; needs the cloud's credential plugin (`aws` or gke-gcloud-auth-plugin) and a
    route to the API server. Both need the Pulumi CLI and cloud credentials. Exit 1 when a node failed, 2
    when the check could not run or complete.
    """
    from clusterfab.outputs import read_outputs
    from clusterfab.scheduler import plugin

    outputs = read_outputs(live.deploy_project().stack(stack).outputs())
    if outputs.scheduler is None:
        raise UsageError(
            f"the stack of {outputs.blueprint.name} has no scheduler to run the check: set scheduler.kind: "
            "slurm or kubernetes in the blueprint and run `clusterfab up`"
        )
    try:
        scheduler = plugin(outputs.scheduler.kind)
    except LookupError:
        raise UsageError(f"this clusterfab knows no scheduler {outputs.scheduler.kind!r}") from None
    report = scheduler.health(outputs, level, nodes, progress)
    if output is TextOrJson.json:
        echo_json(report.document)
    else:
        from rich.console import Console

        from clusterfab.scheduler.healthreport import health_table

        Console(width=width(), highlight=False, no_color=not color()).print(health_table(report, stack))
    raise typer.Exit(report.exit_code)


def progress(line: str) -> None:
    """What the check says it is doing, on stderr (stdout is the report)."""
    typer.echo(line, err=True)
