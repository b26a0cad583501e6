"""Azure as a clusterfab cloud: its profile (`PROFILE`, see clusterfab.clouds.base.CloudProfile)."""

from __future__ import annotations

from clusterfab.clouds.azure.profile import AzureProfile
from clusterfab.clouds.base import CloudProfile

PROFILE: CloudProfile = AzureProfile()
"""Typed as the Protocol, so that mypy checks the class implements all of it."""

__all__ = ["PROFILE"]
