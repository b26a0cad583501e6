"""Reaching a GCP host from the operator's machine: SSH over Identity-Aware Proxy (`gcloud compute ssh
--tunnel-through-iap`, OS Login), the only way in to VMs with no external address (the firewall allows
SSH from IAP's range alone). IAP's own TCP forwarding (`start-iap-tunnel`) connects to the VM's network
address, where a service that listens on the loopback address only (Grafana) is not, and would need a
firewall rule that opens its port to the whole cluster network: such a port is forwarded by SSH instead."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterfab.core.errors import UsageError

if TYPE_CHECKING:
    from clusterfab.outputs import BlueprintOutput


def _ssh(where: BlueprintOutput, host: str, *, missing_project: str) -> list[str]:
    if where.project is None:
        raise UsageError(missing_project)
    return [
        "gcloud", "compute", "ssh", host,
        f"--zone={where.zone}",
        f"--project={where.project}",
        "--tunnel-through-iap",
    ]  # fmt: skip


def run_command(where: BlueprintOutput, host: str, command: str) -> list[str]:
    """`command` on the VM named `host`."""
    missing = "the stack's outputs name no GCP project; run `clusterfab up` for it first"
    return [*_ssh(where, host, missing_project=missing), f"--command={command}"]


def forward_port(
    where: BlueprintOutput, host: str, port: int, *, loopback: str, local_port: int
) -> list[str]:
    """An SSH port forward to the VM named `host`. After `--`, ssh's own arguments: forward only (-N), and
    fail rather than sit there when the local port is taken (ExitOnForwardFailure)."""
    return [
        *_ssh(where, host, missing_project="the stack's outputs name no GCP project"),
        "--",
        "-N",
        "-L", f"{local_port}:{loopback}:{port}",
        "-o", "ExitOnForwardFailure=yes",
    ]  # fmt: skip
