"""`clusterfab inventory`: the Ansible dynamic inventory of a stack's nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterfab.cli import live
from clusterfab.cli.options import StackOption
from clusterfab.core.errors import UsageError


def inventory(
    stack: StackOption,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help=(
                "Write the inventory here (the name must end in .aws_ec2.yml or .gcp.yml); default: stdout."
            ),
        ),
    ] = None,
) -> None:
    """Print the dynamic inventory of a stack's nodes (aws_ec2 / gcp_compute plugin config).

    Nodes are selected by the cluster's tags or labels and grouped by node group
    (`node_group_<name>`); Ansible reaches them through SSM (AWS) or IAP (GCP).
    """
    from clusterfab.clouds import profile
    from clusterfab.outputs import read_outputs
    from clusterfab.provision.inventory import inventory_config, inventory_yaml

    outputs = read_outputs(live.deploy_project().stack(stack).outputs())
    text = inventory_yaml(inventory_config(outputs))
    if output is None:
        typer.echo(text, nl=False)
        return
    suffix = profile(outputs.blueprint.cloud).inventory_suffix
    if not output.name.endswith(suffix):
        raise UsageError(f"the inventory plugin reads only files named *{suffix}; got {output}")
    output.write_text(text)
    typer.echo(f"wrote {output}")
