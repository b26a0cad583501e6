"""`python3 -m clusterfab_queue_agent --config /etc/clusterfab/agent.json [--port 9410]`: the agent's
Deployment runs this in a plain python image with the package mounted from a ConfigMap."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from .config import ConfigError, load
from .kube import ApiError, InCluster
from .rounds import Agent
from .server import Service


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="clusterfab_queue_agent",
        description="Team GPU-hour budgets for Kueue's ClusterQueues: charges each team's GPU-hours this "
        "month, warns at a share of the budget, holds the team's queue at all of it until the month "
        "ends, and serves the numbers (and Kueue's own metrics) on /metrics.",
    )
    parser.add_argument("--config", required=True, help="the settings (JSON) the cluster's program renders")
    parser.add_argument("--port", type=int, default=9410, help="port of /metrics and /healthz (9410)")
    parser.add_argument("--address", default="0.0.0.0", help="address to listen on (all of the pod's)")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        config = load(args.config)
        api = InCluster()
    except (ConfigError, ApiError) as error:
        parser.error(str(error))
    service = Service(Agent(config, api), args.address, args.port, config.interval_seconds)
    service.start()
    service.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
