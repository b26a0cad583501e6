"""`clusterfab kubeconfig`: a kubeconfig for a stack's Kubernetes cluster (GKE, EKS), written from the
stack's outputs; it holds no secret and authenticates through the cloud's own CLI."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from clusterfab.cli import live
from clusterfab.cli.options import StackOption
from clusterfab.core.errors import RefusedError, UsageError

HEADER = "# Written by clusterfab kubeconfig for stack {stack}; the token comes from {command} at each use.\n"


def kubeconfig(
    stack: StackOption,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write the kubeconfig to FILE (mode 0600) instead of stdout."),
    ] = None,
) -> None:
    """Write a kubeconfig for the stack's Kubernetes cluster (docs/kubernetes.md).

    One cluster, user and context named after the cluster, current. kubectl gets its token from the
    cloud's CLI at each use: gke-gcloud-auth-plugin (GKE) or `aws eks get-token` (EKS), with your own
    cloud credentials. Needs the Pulumi CLI. Exit 1 when the stack has no Kubernetes cluster, 2 when the
    stack cannot be read or FILE cannot be written.
    """
    from clusterfab.outputs import read_outputs

    raw = live.deploy_project().stack(stack).outputs()
    outputs = read_outputs(raw)
    text = kubeconfig_text(stack, outputs.blueprint.cloud, outputs.blueprint.project, raw)
    if out is None:
        typer.echo(text, nl=False)
        return
    write_private(out, text)
    typer.echo(f"wrote {out}", err=True)


def kubeconfig_text(stack: str, cloud: str, project: str | None, raw: dict[str, Any]) -> str:
    """The kubeconfig of the stack's Kubernetes cluster as YAML (RefusedError when it has none)."""
    from clusterfab.clouds.kubernetes import credentials
    from clusterfab.scheduler.kubernetes.kubeconfig import kubeconfig as build
    from clusterfab.scheduler.kubernetes.outputs import KubernetesOutput
    from clusterfab.scheduler.kubernetes.render import documents
    from clusterfab.scheduler.kubernetes.section import KIND

    scheduler = raw.get("scheduler")
    kind = scheduler.get("kind") if isinstance(scheduler, dict) else None
    if kind != KIND:
        has = f"a {kind} scheduler" if kind else "no scheduler"
        raise RefusedError(
            f"stack {stack} has {has}, not a Kubernetes cluster: there is no kubeconfig to write"
        )
    cluster = KubernetesOutput.model_validate(scheduler)  # read_outputs has checked it
    credential = credentials(cloud)(cluster=cluster.controller, location=cluster.location, project=project)
    document = build(
        context=cluster.controller,
        endpoint=cluster.controller_address,
        certificate_authority=cluster.certificate_authority,
        credential=credential,
    )
    return documents([document], HEADER.format(stack=stack, command=credential.command))


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` readable by its owner alone (0600, an existing file too)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            os.fchmod(stream.fileno(), 0o600)
            stream.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
