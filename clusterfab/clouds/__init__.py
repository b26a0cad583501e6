"""Cloud profiles: one package per cloud, behind `CloudProfile`, found by name with `profile(cloud)`.

The names and their packages are `clusterfab.core.plugins.clouds()`; a package is imported the first time
its cloud is asked for, so a run on one cloud never loads another's code.
"""

from __future__ import annotations

import importlib
import shutil
from collections.abc import Iterator
from functools import cache

from clusterfab.clouds.base import CloudProfile, FieldProblem
from clusterfab.core import plugins
from clusterfab.core.errors import UsageError


def profile(name: str) -> CloudProfile:
    """The profile the package registered for cloud `name` exports (its `PROFILE`)."""
    module = plugins.clouds().get(name)
    if module is None:
        known = ", ".join(plugins.clouds())
        raise UsageError(f"no cloud named {name!r}: clusterfab knows {known}")
    return _load(module)


@cache
def _load(module: str) -> CloudProfile:
    found: CloudProfile = importlib.import_module(module).PROFILE
    return found


def profiles() -> Iterator[CloudProfile]:
    """Every known cloud's profile, built-in ones first."""
    for name in tuple(plugins.clouds()):
        yield profile(name)


def missing_host_tools(cloud: str) -> list[str]:
    """The cloud's host access tools (`CloudProfile.host_access_tools`) that are not on PATH."""
    return [tool for tool in profile(cloud).host_access_tools if shutil.which(tool) is None]


__all__ = ["CloudProfile", "FieldProblem", "missing_host_tools", "profile", "profiles"]
