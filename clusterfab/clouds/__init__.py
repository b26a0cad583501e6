"""Cloud profiles: one per cloud, behind `CloudProfile`, found by name with `profile(cloud)`."""

from __future__ import annotations

import importlib
import shutil
from typing import cast

from clusterfab.clouds.base import CloudProfile, FieldProblem
from clusterfab.core import plugins
from clusterfab.core.vocab import Cloud


def profile(cloud: Cloud) -> CloudProfile:
    """The profile of `cloud`: the `PROFILE` of the module the registry names for it."""
    module = plugins.clouds().get(cloud)
    if module is None:
        raise LookupError(f"no cloud {cloud!r}: known clouds are {', '.join(plugins.clouds())}")
    return cast("CloudProfile", importlib.import_module(module).PROFILE)


def profiles() -> tuple[CloudProfile, ...]:
    """Every known cloud's profile, built-in ones first."""
    return tuple(profile(c) for c in plugins.clouds())


def missing_host_tools(cloud: Cloud) -> list[str]:
    """The cloud's host access tools (`CloudProfile.host_access_tools`) that are not on PATH."""
    return [tool for tool in profile(cloud).host_access_tools if shutil.which(tool) is None]


__all__ = ["CloudProfile", "FieldProblem", "missing_host_tools", "profile", "profiles"]
