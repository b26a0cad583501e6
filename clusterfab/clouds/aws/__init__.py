"""AWS as a clusterfab cloud: its profile (`PROFILE`, see clusterfab.clouds.base.CloudProfile)."""

from __future__ import annotations

from clusterfab.clouds.aws.profile import AwsProfile
from clusterfab.clouds.base import CloudProfile

PROFILE: CloudProfile = AwsProfile()
"""Typed as the Protocol, so that mypy checks the class implements all of it."""

__all__ = ["PROFILE"]
