"""`clusterfab dashboard`: the port-forwarding tunnel to the monitoring host's Grafana.

The monitoring host has no public address and no open port: the tunnel is SSM Session Manager port
forwarding (AWS, `aws ssm start-session` with the session-manager-plugin) or IAP TCP forwarding (GCP,
`gcloud compute start-iap-tunnel`). What to run is pure and tested here; running it needs the cloud's CLI
and credentials.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from clusterfab.core.errors import UsageError
from clusterfab.outputs import StackOutputs

GRAFANA_PORT = 3000
"""Grafana's own port on the monitoring host (its default)."""
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
    argv = [
        "gcloud", "compute", "start-iap-tunnel", monitoring.host, str(monitoring.grafana_port),
        f"--local-host-port=localhost:{local_port}",
        f"--zone={blueprint.zone}",
        f"--project={blueprint.project}",
    ]  # fmt: skip
    return Tunnel(argv, url)
