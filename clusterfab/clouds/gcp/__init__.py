"""GCP as a clusterfab cloud: its profile (`PROFILE`, see clusterfab.clouds.base.CloudProfile)."""

from __future__ import annotations

from clusterfab.clouds.gcp.profile import GcpProfile

PROFILE = GcpProfile()

__all__ = ["PROFILE"]
