"""Clouds are packages found by name: `profile(name)` loads the module the name table gives for the cloud,
once, and returns its PROFILE; a name nobody registered is a usage error that lists the known ones."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import clusterfab.clouds.aws
from clusterfab.clouds import profile, profiles
from clusterfab.core import plugins
from clusterfab.core.errors import UsageError


def test_each_builtin_cloud_is_its_packages_profile() -> None:
    assert profile("aws") is clusterfab.clouds.aws.PROFILE
    assert [p.name for p in profiles()] == ["aws", "gcp", "azure"]


def test_an_unknown_cloud_is_a_usage_error_naming_the_known_ones() -> None:
    with pytest.raises(UsageError, match="no cloud named 'oracle': clusterfab knows aws, gcp, azure"):
        profile("oracle")


@pytest.fixture
def registered() -> Iterator[str]:
    # Any module that exports PROFILE will do: the registry only follows the name to it.
    plugins.register_cloud("aws-again", "clusterfab.clouds.aws", "stacks.aws")
    yield "aws-again"
    plugins.unregister("aws-again")


def test_a_registered_cloud_is_found_by_its_name_and_listed_after_the_builtin_ones(registered: str) -> None:
    assert profile(registered) is clusterfab.clouds.aws.PROFILE
    assert len(list(profiles())) == 4
