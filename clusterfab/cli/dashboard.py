"""`clusterfab dashboard`: a tunnel to the stack's Grafana."""

from __future__ import annotations

from typing import Annotated

import typer

from clusterfab.cli import live
from clusterfab.cli.options import StackOption
from clusterfab.core.errors import UsageError


def dashboard(
    stack: StackOption,
    port: Annotated[int, typer.Option("--port", help="Local port to forward Grafana to.")] = 3000,
) -> None:
    """Open the tunnel to the stack's Grafana (SSM port forwarding / SSH over IAP / SSH through the
    stack's Azure Bastion) and print its URL.

    Needs the Pulumi CLI, cloud credentials and the AWS CLI with the session-manager-plugin (AWS), gcloud
    (GCP) or the Azure CLI with its ssh extension and a sign-in role on the controller, the deployer's or
    the one the stack setting clusterfab:operators gives (Azure). Runs until interrupted.
    """
    import subprocess

    from clusterfab.clouds import missing_host_tools
    from clusterfab.monitoring.tunnel import tunnel
    from clusterfab.outputs import read_outputs

    outputs = read_outputs(live.deploy_project().stack(stack).outputs())
    forward = tunnel(outputs, local_port=port)
    missing = missing_host_tools(outputs.blueprint.cloud)
    if missing:
        raise UsageError(f"the tunnel needs {', '.join(missing)} on PATH")
    typer.echo(f"Grafana of {stack}: {forward.url} (Ctrl-C closes the tunnel)")
    completed = subprocess.run(forward.argv, check=False)
    raise typer.Exit(0 if completed.returncode in (0, 130) else 1)
