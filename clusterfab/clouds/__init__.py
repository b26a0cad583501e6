"""Cloud profiles: one per cloud, behind `CloudProfile`, found with `profile(cloud)`."""

from __future__ import annotations

import shutil
from typing import assert_never

from clusterfab.clouds.aws import AwsProfile
from clusterfab.clouds.base import CloudProfile, FieldProblem
from clusterfab.clouds.gcp import GcpProfile
from clusterfab.core.vocab import CLOUDS, Cloud

_AWS = AwsProfile()
_GCP = GcpProfile()


def profile(cloud: Cloud) -> CloudProfile:
    """The profile of `cloud` (every `Cloud` has one: mypy checks the match is exhaustive)."""
    match cloud:
        case "aws":
            return _AWS
        case "gcp":
            return _GCP
        case _:
            assert_never(cloud)


def profiles() -> tuple[CloudProfile, ...]:
    return tuple(profile(c) for c in CLOUDS)


def missing_host_tools(cloud: Cloud) -> list[str]:
    """The cloud's host access tools (`CloudProfile.host_access_tools`) that are not on PATH."""
    return [tool for tool in profile(cloud).host_access_tools if shutil.which(tool) is None]


__all__ = ["CloudProfile", "FieldProblem", "missing_host_tools", "profile", "profiles"]
