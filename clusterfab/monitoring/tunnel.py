"""`clusterfab dashboard`: the port-forwarding tunnel to the monitoring host's Grafana.

The monitoring host has no public address and no open port, and Grafana listens on its loopback address
only (its viewers are anonymous: whoever reaches it is someone the cloud let onto the host). The tunnel is
the cloud's port forwarding to that loopback address (`CloudProfile.forward_port`: SSM Session Manager on
AWS, an SSH port forward over IAP on GCP). What to run is pure and tested here; running it needs the
cloud's CLI and credentials.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterfab.clouds import profile
from clusterfab.core.errors import UsageError
from clusterfab.outputs import StackOutputs

GRAFANA_PORT = 3000
"""Grafana's own port on the monitoring host (its default)."""
GRAFANA_ADDRESS = "127.0.0.1"
"""Where Grafana listens on the monitoring host (playbooks/roles/grafana; a test holds them equal)."""
LOCAL_PORT = 3000


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
    argv = profile(blueprint.cloud).forward_port(
        blueprint, monitoring.host, monitoring.grafana_port, loopback=GRAFANA_ADDRESS, local_port=local_port
    )
    return Tunnel(argv, f"http://localhost:{local_port}/")
