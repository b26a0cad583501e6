"""GCP as a clusterfab cloud: its profile (`PROFILE`, see clusterfab.clouds.base.CloudProfile)."""

from __future__ import annotations

from clusterfab.clouds.base import CloudProfile
from clusterfab.clouds.gcp.profile import GcpProfile

PROFILE: CloudProfile = GcpProfile()
"""Typed as the Protocol, so that mypy checks the class implements all of it."""

__all__ = ["PROFILE"]
