"""Day-2 changes on a configured node: a copy of the EFA variant's node after its two runs, changed
by tagged runs the way an operator upgrades one component at a time.

1. The EFA installer is upgraded the way clusterfab renders it (no checksum, so the tarball's GPG
   signature is verified); a key with another fingerprint and a tampered tarball are refused first.
2. Each of NCCL, the CUDA toolkit and DCGM is bumped to a release the CUDA repository gained after
   the node fetched its apt lists (the apt source itself does not change), one run per component,
   so each role has to notice its stale lists itself. nccl-tests is bumped and one FSx mount dropped
   in the NCCL run.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chroot_standins as standins
import chroot_testbed
import chroot_variants as variants
import pytest
from chroot_runs import TIMINGS, NodeRun, run_in_chroot

from clusterfab.provision.runner import PlaybookEvent, PlaybookResult

pytestmark = pytest.mark.ansible

WRONG_FINGERPRINT = "0123 4567 89AB CDEF 0123  4567 89AB CDEF 0123 4567"
UNITS = "/etc/systemd/system"
WANTS = f"{UNITS}/remote-fs.target.wants"
# Written by hand (or by another tool): no clusterfab marker, so the role must leave it alone.
FOREIGN_UNIT = "srv-scratch.mount"
FOREIGN_UNIT_TEXT = (
    "[Unit]\nDescription=clusterfab scratch, mounted by hand\n\n"
    "[Mount]\nWhat=10.20.0.9:/scratch\nWhere=/srv/scratch\nType=nfs\n\n"
    "[Install]\nWantedBy=remote-fs.target\n"
)
EFA_TRACES = (
    "/var/log/clusterfab-standin-efa-installer.log",
    "/opt/amazon/efa_installed_packages",
    "/tampered",
    f"/var/cache/clusterfab/efa/{standins.EFA_INSTALLER_NEWER}",
)
NCCL_TESTS_CUDA = "CUDA_HOME=/usr/local/cuda-13.0 NCCL_HOME=/usr"
NCCL_TESTS_MPI_HOME = "MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi"
# The synthetic releases the stand-in CUDA repository gains after the node fetched its lists.
NCCL_LATER_DEB = standins.later(standins.NCCL_DEB)
CUDA_LATER_DEB = standins.later(standins.CUDA_DEB)
DCGM_LATER_DEB = standins.later(standins.DCGM_DEB)


def upstream(version: str) -> str:
    """The upstream part of a Debian version: "1:4.4.3-1" -> "4.4.3"."""
    return version.rsplit(":", maxsplit=1)[-1].split("-", maxsplit=1)[0]


@dataclass
class Run:
    result: PlaybookResult
    events: list[PlaybookEvent]

    def outcomes(self, tasks: set[str]) -> dict[str, str]:
        """The final event kind (ok, skipped, failed ...) of each named task."""
        return {
            event.task: event.kind
            for event in self.events
            if event.task in tasks and event.kind in ("runner_on_ok", "runner_on_skipped", "runner_on_failed")
        }

    def cache_updated(self, task: str) -> bool | None:
        [result] = [
            event.raw["event_data"]["res"]
            for event in self.events
            if event.kind == "runner_on_ok" and event.task == task
        ]
        updated: bool | None = result.get("cache_updated")
        return updated


@dataclass
class Day2Node:
    rootfs: Path
    runs: dict[str, Run]
    # What the refused EFA runs left behind, read before the good run.
    efa_traces_after_refusals: dict[str, str]

    def path(self, inside: str) -> Path:
        return self.rootfs / inside.lstrip("/")

    def output(self, *argv: str) -> str:
        return subprocess.run(
            ["chroot", str(self.rootfs), *argv], capture_output=True, text=True, check=True
        ).stdout


def _traces(rootfs: Path) -> dict[str, str]:
    found = {}
    for trace in EFA_TRACES:
        path = rootfs / trace.lstrip("/")
        if path.is_file():
            found[trace] = path.read_text()
        elif path.exists():
            found[trace] = "<directory>"
    return found


@pytest.fixture(scope="module")
def day2_node(
    efa_node: NodeRun, built_standins: standins.Standins, tmp_path_factory: pytest.TempPathFactory
) -> Day2Node:
    rootfs = chroot_testbed.copy_rootfs(efa_node.rootfs, tmp_path_factory.mktemp("day2") / "rootfs")
    (rootfs / UNITS.lstrip("/") / FOREIGN_UNIT).write_text(FOREIGN_UNIT_TEXT)
    (rootfs / WANTS.lstrip("/") / FOREIGN_UNIT).symlink_to(f"{UNITS}/{FOREIGN_UNIT}")
    extravars: dict[str, Any] = {**efa_node.extravars, **variants.efa_signature_upgrade(built_standins)}
    runs: dict[str, Run] = {}

    def run(name: str, tags: list[str], **changes: Any) -> None:
        events: list[PlaybookEvent] = []
        result = run_in_chroot(
            "gpu_node.yml", rootfs, {**extravars, **changes}, tags=tags, on_event=events.append
        )
        TIMINGS[f"day2_{name}_s"] = round(result.duration_s, 1)
        runs[name] = Run(result, events)

    run("efa_wrong_fingerprint", ["efa"], efa_installer_key_fingerprint=WRONG_FINGERPRINT)
    run("efa_tampered", ["efa"], efa_installer_url=f"file://{standins.MOUNT}/{standins.EFA_TAMPERED_TARBALL}")
    traces = _traces(rootfs)

    standins.publish_later_release(rootfs, "nccl")
    extravars.update(
        nccl_version=upstream(NCCL_LATER_DEB),
        nccl_tests_version=standins.NCCL_TESTS_NEWER,
        nccl_tests_url=variants.nccl_tests_url(standins.NCCL_TESTS_NEWER),
        nccl_tests_checksum=f"sha256:{built_standins.nccl_tests_sha256[standins.NCCL_TESTS_NEWER]}",
        storage_mounts_list=efa_node.extravars["storage_mounts_list"][:1],
    )
    run("efa_nccl_mounts", ["efa", "nccl", "nccl_tests", "storage_mounts"])
    # The same version with other make settings is made again (as a node built before MPI=1 is).
    run("nccl_tests_without_mpi", ["nccl_tests"], nccl_tests_mpi=False)
    standins.publish_later_release(rootfs, "cuda_toolkit")
    extravars["cuda_toolkit_version"] = upstream(CUDA_LATER_DEB)
    run("cuda_toolkit", ["cuda_toolkit"])
    standins.publish_later_release(rootfs, "dcgm")
    extravars["dcgm_version"] = upstream(DCGM_LATER_DEB)
    run("dcgm", ["dcgm"])
    return Day2Node(rootfs, runs, traces)


def test_efa_key_with_another_fingerprint_is_refused(
    day2_node: Day2Node, built_standins: standins.Standins
) -> None:
    result = day2_node.runs["efa_wrong_fingerprint"].result
    [failure] = result.failed_tasks
    assert failure.task == "Assert the EFA installer signing key has the pinned fingerprint"
    assert failure.message == (
        f"EFA installer key check failed: {variants.KEY_URL} holds the key(s) "
        f"{built_standins.key_fingerprint}, not the pinned efa_installer_key_fingerprint "
        "0123456789ABCDEF0123456789ABCDEF01234567. The installer was not run; check the key URL or the "
        "pinned fingerprint."
    )


def test_efa_tampered_installer_is_refused(day2_node: Day2Node) -> None:
    result = day2_node.runs["efa_tampered"].result
    [failure] = result.failed_tasks
    assert failure.task == "Assert the EFA installer signature is good"
    tarball = f"aws-efa-installer-{standins.EFA_INSTALLER_NEWER}.tar.gz"
    assert failure.message.startswith(
        f"EFA installer signature check failed: {tarball} does not verify against "
        f"file://{standins.MOUNT}/efa-tampered/{tarball}.sig with the key from {variants.KEY_URL} "
        "(gpg exit 1: BADSIG "
    )
    assert failure.message.endswith(" The installer was not run and the download was deleted.")


def test_refused_efa_installers_never_ran(day2_node: Day2Node) -> None:
    # Only the checksum-mode install of the first version, and no download left behind.
    traces = day2_node.efa_traces_after_refusals
    assert traces.keys() == {
        "/var/log/clusterfab-standin-efa-installer.log",
        "/opt/amazon/efa_installed_packages",
    }
    assert traces["/var/log/clusterfab-standin-efa-installer.log"] == "-y\n"
    assert traces["/opt/amazon/efa_installed_packages"].startswith(
        f"# EFA installer version: {standins.EFA_INSTALLER}\n"
    )


def test_efa_upgrade_verifies_the_signature_with_a_throwaway_keyring(day2_node: Day2Node) -> None:
    run = day2_node.runs["efa_nccl_mounts"]
    assert run.result.succeeded, run.result.failed_tasks
    checks = {
        "Read the fingerprint of the EFA installer signing key",
        "Assert the EFA installer signing key has the pinned fingerprint",
        "Check the EFA installer signature",
        "Assert the EFA installer signature is good",
        "Install the EFA stack",
    }
    assert run.outcomes(checks) == dict.fromkeys(checks, "runner_on_ok")
    record = day2_node.path("/opt/amazon/efa_installed_packages").read_text()
    assert record.startswith(f"# EFA installer version: {standins.EFA_INSTALLER_NEWER}\n")
    assert day2_node.path("/var/log/clusterfab-standin-efa-installer.log").read_text() == "-y\n-y\n"
    # gpg came from the distribution; the key lived in the work directory's GnuPG home only.
    assert day2_node.output("dpkg-query", "-W", "-f", "${Status}", "gpg") == "install ok installed"
    assert not day2_node.path("/root/.gnupg").exists()
    assert _traces(day2_node.rootfs).keys() == {
        "/var/log/clusterfab-standin-efa-installer.log",
        "/opt/amazon/efa_installed_packages",
    }


@pytest.mark.parametrize(
    ("run", "task", "package", "version"),
    [
        pytest.param(
            "efa_nccl_mounts",
            "Install the pinned NCCL packages",
            "libnccl2",
            NCCL_LATER_DEB,
            id="nccl",
        ),
        pytest.param(
            "cuda_toolkit",
            "Install the pinned CUDA toolkit",
            "cuda-toolkit-13-0",
            CUDA_LATER_DEB,
            id="cuda_toolkit",
        ),
        pytest.param(
            "dcgm",
            "Install the pinned DCGM packages",
            "datacenter-gpu-manager-4-core",
            DCGM_LATER_DEB,
            id="dcgm",
        ),
    ],
)
def test_a_version_bump_refreshes_stale_apt_lists(
    day2_node: Day2Node, run: str, task: str, package: str, version: str
) -> None:
    result = day2_node.runs[run].result
    assert result.succeeded, result.failed_tasks
    # apt did not know the new release until the role refreshed its lists.
    assert day2_node.runs[run].cache_updated(task) is True
    assert day2_node.output("dpkg-query", "-W", "-f", "${Version}", package) == version
    assert package in day2_node.output("apt-mark", "showhold").split()


def test_nccl_tests_are_rebuilt_for_a_new_version_or_new_settings_only(day2_node: Day2Node) -> None:
    # The efa variant built the first version once; the nccl-tests bump built again, and so did the
    # change of make settings; the CUDA and NCCL bumps did not (the build is keyed on the nccl-tests
    # version and the make settings).
    assert day2_node.runs["nccl_tests_without_mpi"].result.succeeded
    assert day2_node.path(standins.NCCL_TESTS_BUILD_LOG).read_text() == (
        f"{standins.NCCL_TESTS} MPI=1 {NCCL_TESTS_CUDA} {NCCL_TESTS_MPI_HOME}\n"
        f"{standins.NCCL_TESTS_NEWER} MPI=1 {NCCL_TESTS_CUDA} {NCCL_TESTS_MPI_HOME}\n"
        f"{standins.NCCL_TESTS_NEWER} MPI=0 {NCCL_TESTS_CUDA}\n"
    )
    link = day2_node.path("/opt/nccl-tests/build")
    assert str(link.readlink()) == f"nccl-tests-{standins.NCCL_TESTS_NEWER}/build"
    assert sorted(path.name for path in day2_node.path("/opt/nccl-tests").iterdir()) == [
        "build",
        f"nccl-tests-{standins.NCCL_TESTS_NEWER}",
    ]
    assert sorted(path.name for path in link.glob("*_perf")) == sorted(
        f"{name}_perf" for name in standins.NCCL_TESTS_BINARIES
    )


def test_a_dropped_mount_loses_its_unit_and_a_foreign_unit_survives(day2_node: Day2Node) -> None:
    units = {path.name for path in day2_node.path(UNITS).glob("*.mount")}
    links = {path.name for path in day2_node.path(WANTS).glob("*.mount")}
    assert (units, links) == ({"fsx.mount", FOREIGN_UNIT}, {"fsx.mount", FOREIGN_UNIT})
    assert day2_node.path(f"{UNITS}/{FOREIGN_UNIT}").read_text() == FOREIGN_UNIT_TEXT
    removal = {
        "Unmount the file systems removed from the list",
        "Disable the mount units removed from the list",
        "Delete the mount units removed from the list",
    }
    # Nothing is mounted in a chroot, so only the unmount step is skipped.
    assert day2_node.runs["efa_nccl_mounts"].outcomes(removal) == {
        "Unmount the file systems removed from the list": "runner_on_skipped",
        "Disable the mount units removed from the list": "runner_on_ok",
        "Delete the mount units removed from the list": "runner_on_ok",
    }
