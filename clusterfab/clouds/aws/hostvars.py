"""Where an AWS cluster's hosts find what they call: everything is in the blueprint's region."""

from __future__ import annotations

CONTROLLER_STATE_DEVICE = "/dev/sdf"
"""The EBS device name the controller's state volume is attached under (components/aws/slurm.py)."""


def service_location(region: str, project: str | None) -> dict[str, str]:
    """Secrets Manager, RDS and SES of the region."""
    del project
    return {"region": region}


def instance_location(region: str, zone: str, project: str | None) -> dict[str, str]:
    """EC2 of the region (a request names the zone where it matters)."""
    del zone, project
    return {"region": region}
