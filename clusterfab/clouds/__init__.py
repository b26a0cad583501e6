"""Cloud profiles: one per cloud, behind `CloudProfile`, found with `profile(cloud)`."""

from __future__ import annotations

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


__all__ = ["CloudProfile", "FieldProblem", "profile", "profiles"]
