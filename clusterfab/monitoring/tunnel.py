"""`clusterfab dashboard`: the port-forwarding tunnel to the monitoring host's Grafana.

The monitoring host has no public address and no open port, and Grafana listens on its loopback address
only (its viewers are anonymous: whoever reaches it is someone the cloud let onto the host). The tunnel is
SSM Session Manager port forwarding on AWS (`aws ssm start-session` with the session-manager-plugin, which
connects to the instance's loopback), and on GCP an SSH port forward over IAP (`gcloud compute ssh
--tunnel-through-iap`, OS Login): IAP's own TCP forwarding (`start-iap-tunnel`) connects to the VM's
network address, where Grafana does not listen, and would need a firewall rule that opens Grafana's port
to the whole cluster network. What to run is pure and tested here; running it needs the cloud's CLI and
credentials.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from clusterfab.core.errors import UsageError
from clusterfab.outputs import StackOutputs

GRAFANA_PORT = 3000
"""Grafana's own port on the monitoring host (its default)."""
GRAFANA_ADDRESS = "127.0.0.1"
"""Where Grafana listens on the monitoring host (playbooks/roles/grafana; a test holds them equal)."""
LOCAL_PORT = 3000
AWS_PORT_FORWARDING = "AWS-StartPortForwardingSession"
"""The SSM document that forwards one port of the instance to the caller (no inbound rule needed)."""


@dataclass(frozen=True)
class Tunnel:
    argv: list[str]
    url: str


def tunnel(outputs: StackOutputs, local_port: int = LOCAL_PORT) -> Tunnel:
    """The command that forwards Grafana to `localhost:<local_port>`, and the URL to open."""
    monitoring = outputs.monitoring
    if monitoring is None:
        raise UsageError(
            f"stack of {outputs.blueprint.name} has no monitoring: set monitoring.kind: prometheus in the "
            "blueprint and run `clusterfab up`"
        )
    blueprint = outputs.blueprint
    url = f"http://localhost:{local_port}/"
    if blueprint.cloud == "aws":
        parameters = {"portNumber": [str(monitoring.grafana_port)], "localPortNumber": [str(local_port)]}
        argv = [
            "aws", "ssm", "start-session",
            "--region", blueprint.region,
            "--target", monitoring.host,
            "--document-name", AWS_PORT_FORWARDING,
            "--parameters", json.dumps(parameters, separators=(",", ":")),
        ]  # fmt: skip
        return Tunnel(argv, url)
    if blueprint.project is None:
        raise UsageError("the stack's outputs name no GCP project")
    # After `--`, ssh's own arguments: forward only (-N), and fail rather than sit there when the local
    # port is taken (ExitOnForwardFailure).
    argv = [
        "gcloud", "compute", "ssh", monitoring.host,
        f"--zone={blueprint.zone}",
        f"--project={blueprint.project}",
        "--tunnel-through-iap",
        "--",
        "-N",
        "-L", f"{local_port}:{GRAFANA_ADDRESS}:{monitoring.grafana_port}",
        "-o", "ExitOnForwardFailure=yes",
    ]  # fmt: skip
    return Tunnel(argv, url)
