"""Fixtures for the Ansible tests: a cached golden root file system, stand-in packages, and
session-wide runs of gpu_node.yml into copies of it (two runs per variant, the second one to prove
idempotence). Run durations are printed at the end of the session (tests/timings.py).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import chroot_standins as standins
import chroot_testbed
import chroot_variants as variants
import pytest
from chroot_runs import TIMINGS, NodeRun, run_in_chroot

from clusterfab.provision.runner import PlaybookEvent
from tests.labs import require


@pytest.fixture(scope="session")
def chroot_ready() -> None:
    reason = chroot_testbed.missing_prerequisites()
    require(reason is None, f"the Ansible chroot runs cannot run here: {reason}")


@pytest.fixture(scope="session")
def golden_rootfs(chroot_ready: None) -> chroot_testbed.GoldenRootfs:
    golden = chroot_testbed.golden_rootfs()
    TIMINGS["debootstrap_s"] = (
        round(golden.build_seconds, 1) if golden.build_seconds is not None else "cached"
    )
    return golden


@pytest.fixture(scope="session")
def built_standins(chroot_ready: None, tmp_path_factory: pytest.TempPathFactory) -> standins.Standins:
    return standins.build_standins(tmp_path_factory.mktemp("standins") / "build", os.uname().release)


@pytest.fixture(scope="session")
def fresh_rootfs(
    golden_rootfs: chroot_testbed.GoldenRootfs,
    built_standins: standins.Standins,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], Path]:
    """Factory: a new copy of the golden root file system with the stand-ins under /srv."""

    def make(name: str) -> Path:
        rootfs = chroot_testbed.clone_rootfs(golden_rootfs.path, tmp_path_factory.mktemp(name) / "rootfs")
        standins.install_into(built_standins, rootfs)
        _ubuntu_archive(rootfs, "ubuntu-universe")
        _ubuntu_archive(rootfs, "ubuntu-updates-universe")
        return rootfs

    return make


def _ubuntu_archive(rootfs: Path, repository: str) -> None:
    """Configure the stand-in of a recorded Ubuntu archive repository, as the node image has it."""
    directory, suite = standins.REPOSITORIES[repository]
    keyrings = rootfs / "etc/apt/keyrings"
    keyrings.mkdir(parents=True, exist_ok=True)
    key = keyrings / "clusterfab-standin-ubuntu.asc"
    if not key.exists():
        shutil.copy(rootfs / standins.MOUNT.lstrip("/") / "keys/standin.asc", key)
    (rootfs / f"etc/apt/sources.list.d/{repository}.sources").write_text(
        "Types: deb\n"
        f"URIs: file:{standins.MOUNT}/{directory}\n"
        f"Suites: {suite}\n"
        "Components: main\n"
        f"Signed-By: /{key.relative_to(rootfs)}\n"
    )


def image_with_driver(rootfs: Path) -> None:
    """Make ``rootfs`` look like GCP's accelerator image: Canonical's driver installed, the Ubuntu
    archive (here the stand-in of the catalog's `ubuntu` repository) configured."""
    standins.preinstall(rootfs, "gcp-driver")
    _ubuntu_archive(rootfs, "ubuntu")


# How each variant's root file system differs from the golden one before the playbook runs: what
# the image the node boots carries.
PREPARE: dict[str, Callable[[Path], None]] = {
    "efa_p5": lambda rootfs: standins.preinstall(rootfs, "kernel"),
    "gib_a3_ultra": image_with_driver,
}


def _apply_variant(variant: str, fresh_rootfs: Callable[[str], Path], built: standins.Standins) -> NodeRun:
    rootfs = fresh_rootfs(variant)
    PREPARE[variant](rootfs)
    extravars = variants.VARIANTS[variant](built)
    events: list[PlaybookEvent] = []
    started = time.monotonic()
    first = run_in_chroot("gpu_node.yml", rootfs, extravars, on_event=events.append)
    TIMINGS[f"{variant}_first_run_s"] = round(first.duration_s, 1)
    assert first.succeeded, f"first {variant} run failed: {first.failed_tasks}"
    second = run_in_chroot("gpu_node.yml", rootfs, extravars)
    TIMINGS[f"{variant}_second_run_s"] = round(second.duration_s, 1)
    TIMINGS[f"{variant}_total_s"] = round(time.monotonic() - started, 1)
    return NodeRun(variant, rootfs, extravars, first, second, events)


@pytest.fixture(scope="session")
def efa_node(fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins) -> NodeRun:
    return _apply_variant("efa_p5", fresh_rootfs, built_standins)


@pytest.fixture(scope="session")
def gib_node(fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins) -> NodeRun:
    return _apply_variant("gib_a3_ultra", fresh_rootfs, built_standins)
