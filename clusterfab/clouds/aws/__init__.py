"""AWS as a clusterfab cloud: its profile (`PROFILE`, see clusterfab.clouds.base.CloudProfile)."""

from __future__ import annotations

from clusterfab.clouds.aws.profile import AwsProfile

PROFILE = AwsProfile()

__all__ = ["PROFILE"]
