"""Fixtures for the Slurm lab: the cached golden root file system and one running cluster per module.

A machine without root or debootstrap skips these tests with the reason, except under ``CI=true``,
where it fails them (tests/labs.py), so CI cannot go green without having run Slurm.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.labs import require
from tests.slurm import rootfs
from tests.slurm.lab import SlurmLab
from tests.slurm.rendered import rendered_files
from tests.timings import section

TIMINGS = section("slurm lab timings")


@pytest.fixture(scope="session")
def slurm_ready() -> None:
    reason = rootfs.missing_prerequisites()
    require(reason is None, f"the Slurm lab cannot run here: {reason}")


@pytest.fixture(scope="session")
def golden(slurm_ready: None) -> rootfs.GoldenRootfs:
    built = rootfs.golden_rootfs()
    TIMINGS["golden_rootfs_s"] = (
        round(built.build_seconds, 1) if built.build_seconds is not None else "cached"
    )
    TIMINGS["slurm_version"] = built.slurm_version
    return built


@pytest.fixture(scope="module")
def running_lab(golden: rootfs.GoldenRootfs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    with SlurmLab(rendered_files(), golden, tmp_path_factory.mktemp("slurmlab")) as lab:
        TIMINGS["lab_start"] = dict(lab.timings.steps)
        yield lab
    TIMINGS["lab_close_s"] = lab.timings.steps.get("close")
    assert lab.leftover_processes() == []


@pytest.fixture
def lab(running_lab: SlurmLab) -> SlurmLab:
    """The module's cluster, quiet: no jobs, no faults, every node IDLE (tests run in any order)."""
    running_lab.reset()
    return running_lab
