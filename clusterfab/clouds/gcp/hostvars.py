"""Where a GCP cluster's hosts find what they call: the project's services, and its zone's VMs."""

from __future__ import annotations

CONTROLLER_STATE_DEVICE = "/dev/disk/by-id/google-slurm-state"
"""The by-id link GCE's guest environment makes for the state disk's device name (components/gcp/slurm.py
attaches it as `slurm-state`)."""


def service_location(region: str, project: str | None) -> dict[str, str]:
    """Secret Manager and Cloud SQL are the project's (the blueprint's or the stack's)."""
    del region
    return {"project": project or ""}


def instance_location(region: str, zone: str, project: str | None) -> dict[str, str]:
    """Compute Engine VMs are listed per project and zone."""
    del region
    return {"project": project or "", "zone": zone}
