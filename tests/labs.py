"""The one rule for tests that need something outside the Python environment (root, debootstrap, the
Prometheus tools, a package from Ubuntu's archive, GitHub, the Pulumi CLI, a deployed stack): the labs.

Outside CI a missing prerequisite skips the test, saying what is missing. Under CI (``CI=true``: CI sets
it, and so does .ci/run) the same test fails instead: .ci/run installs everything the labs need, so a
missing prerequisite there is a broken CI run, and a skip would let it pass without having run the lab.
The only skips CI allows are for the properties of CI machines that docs/testing.md lists ("What CI
machines lack"), each a ``CiGap`` below; such a skip names the gap and what would make the test run.

Every skip in the suite goes through ``require`` or ``unavailable`` (tests/test_labs.py checks that no test
calls pytest's skips itself), and a dependency declared in pyproject.toml is imported, never skipped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NoReturn

import pytest

DOC = "docs/testing.md"


@dataclass(frozen=True)
class CiGap:
    """A property of every CI machine that keeps some tests from running there, listed in docs/testing.md."""

    lacks: str
    """What CI machines lack."""
    to_run: str
    """What would make the test run."""


MD_DRIVER = CiGap(
    lacks="the md (software RAID) driver in the kernel (no /proc/mdstat), and no kernel modules to load it",
    to_run="a kernel with the md driver and raid0 (modprobe raid0), as root",
)
CAP_SYS_RESOURCE = CiGap(
    lacks="CAP_SYS_RESOURCE (their containers drop it), which growing a mounted ext4 file system needs",
    to_run="root with CAP_SYS_RESOURCE (a machine, or a container started with --cap-add SYS_RESOURCE)",
)
GITHUB = CiGap(
    lacks="a route to github.com",
    to_run=(
        "access to github.com, or clones of the repositories at `$CLUSTERFAB_GIT_MIRRORS/<owner>+<name>/repo`"
    ),
)
PULUMI_CLI = CiGap(
    lacks="the Pulumi CLI: no package registry CI reaches (PyPI, Debian, npm) ships it",
    to_run="the Pulumi CLI 3.x on PATH (https://www.pulumi.com/docs/install/)",
)
LIVE_CLOUD = CiGap(
    lacks="cloud credentials and a deployed stack",
    to_run=(
        "CLUSTERFAB_LIVE_STACK naming a deployed stack, the Pulumi CLI, and the cloud's CLI with credentials"
    ),
)


def in_ci() -> bool:
    """Whether this run is CI's (``CI=true``, as CI services and .ci/run set it; ``1`` and ``yes`` too)."""
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def unavailable(reason: str, *, ci_exempt: CiGap | None = None) -> NoReturn:
    """Stop the test: a prerequisite is missing (``reason`` says which, and how to get it)."""
    if ci_exempt is not None:
        pytest.skip(
            f"{reason} (CI machines lack {ci_exempt.lacks}, see {DOC}); to run it: {ci_exempt.to_run}"
        )
    if in_ci():
        pytest.fail(
            f"{reason}: under CI=true a missing prerequisite fails the test "
            f"(.ci/run provides it; {DOC} lists what CI may lack)",
            pytrace=False,
        )
    pytest.skip(reason)


def require(prerequisite_ok: bool, reason: str, *, ci_exempt: CiGap | None = None) -> None:
    """Go on when ``prerequisite_ok``; otherwise skip, or fail under CI (see the module's docstring).

    ``ci_exempt`` names the property of CI machines that explains the gap; only then does CI skip."""
    if not prerequisite_ok:
        unavailable(reason, ci_exempt=ci_exempt)
