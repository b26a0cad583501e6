"""The local_scratch role installed through gpu_node.yml, then its boot script run for real inside the
root file system against loop devices standing in for the NVMe disks (linked under a test by-id
directory, as udev links the real ones): formatting, mounting, idempotence and a remount that keeps
the data. Two or more disks need the kernel's md driver (RAID 0); that case runs where it exists.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import chroot_standins as standins
import chroot_variants as variants
import pytest
from chroot_runs import TIMINGS, run_in_chroot

from clusterfab.provision.runner import PlaybookResult
from tests.labs import MD_DRIVER, require

pytestmark = pytest.mark.ansible

SCRIPT = "/usr/local/sbin/clusterfab-local-scratch"
UNIT = "clusterfab-local-scratch.service"
DISKS_DIR = "/srv/scratch-disks"
MOUNT_POINT = "/mnt/localssd"
# The node is a p5 (efa_p5): its disks are linked as the catalog records AWS's instance store names.
[AWS_DISK_PATTERN] = variants.CATALOG.local_disks["aws"].patterns
MANAGED = "#\n# Managed by clusterfab (Ansible). Local changes are overwritten on the next run.\n#\n"


@dataclass
class ScratchNode:
    rootfs: Path
    first: PlaybookResult
    second: PlaybookResult

    def path(self, inside: str) -> Path:
        return self.rootfs / inside.lstrip("/")

    def run_script(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["chroot", str(self.rootfs), SCRIPT], capture_output=True, text=True, check=False
        )


@pytest.fixture(scope="module")
def scratch_node(fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins) -> ScratchNode:
    rootfs = fresh_rootfs("scratch")
    extravars = {**variants.efa_p5(built_standins), "local_scratch_device_dir": DISKS_DIR}
    first = run_in_chroot("gpu_node.yml", rootfs, extravars, tags=["local_scratch"])
    assert first.succeeded, first.failed_tasks
    second = run_in_chroot("gpu_node.yml", rootfs, extravars, tags=["local_scratch"])
    TIMINGS["local_scratch_first_run_s"] = round(first.duration_s, 1)
    TIMINGS["local_scratch_second_run_s"] = round(second.duration_s, 1)
    return ScratchNode(rootfs, first, second)


def _run(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def kernel_view(scratch_node: ScratchNode) -> Iterator[None]:
    """/proc inside the root file system, as a booted node has it (mount and mdadm read it)."""
    proc = scratch_node.path("/proc")
    _run("mount", "-t", "proc", "proc", str(proc))
    try:
        yield
    finally:
        mounted = scratch_node.path(MOUNT_POINT)
        if os.path.ismount(mounted):
            _run("umount", str(mounted))
        _run("umount", str(proc))


Disks = Callable[[int], list[str]]


@pytest.fixture
def disks(scratch_node: ScratchNode, kernel_view: None, tmp_path: Path) -> Iterator[Disks]:
    """Factory of loop-device disks linked as AWS instance-store disks (the catalog's udev name);
    detached and unlinked afterwards (after the scratch is unmounted)."""
    attached: list[str] = []
    links = scratch_node.path(DISKS_DIR)
    links.mkdir(parents=True, exist_ok=True)

    def attach(count: int) -> list[str]:
        for index in range(count):
            backing = tmp_path / f"disk{index}.img"
            with backing.open("wb") as handle:
                handle.truncate(64 * 1024 * 1024)
            device = _run("losetup", "--find", "--show", str(backing))
            attached.append(device)
            node = scratch_node.path(device)
            if not node.exists():
                rdev = os.stat(device).st_rdev
                os.mknod(node, stat.S_IFBLK | 0o660, rdev)
            (links / AWS_DISK_PATTERN.replace("*", f"AWS{index:017d}")).symlink_to(device)
        return list(attached)

    yield attach
    for link in links.iterdir():
        link.unlink()
    for device in attached:
        subprocess.run(["losetup", "--detach", device], check=False)
        scratch_node.path(device).unlink(missing_ok=True)


def test_second_run_changes_nothing(scratch_node: ScratchNode) -> None:
    assert scratch_node.first.hosts["node"].changed > 0
    assert scratch_node.second.hosts["node"].changed == 0


def test_the_unit_runs_the_script_at_every_boot_before_docker(scratch_node: ScratchNode) -> None:
    assert scratch_node.path(f"/etc/systemd/system/{UNIT}").read_text() == MANAGED + (
        "[Unit]\n"
        f"Description=Assemble the local NVMe disks and mount them at {MOUNT_POINT}\n"
        "After=local-fs.target\n"
        "Before=docker.service containerd.service slurmd.service\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        "RemainAfterExit=true\n"
        f"ExecStart={SCRIPT}\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )
    link = scratch_node.path(f"/etc/systemd/system/multi-user.target.wants/{UNIT}")
    assert str(link.readlink()) == f"/etc/systemd/system/{UNIT}"
    assert os.access(scratch_node.path(SCRIPT), os.X_OK)
    installed = _run("chroot", str(scratch_node.rootfs), "dpkg-query", "-W", "-f", "${Status}", "mdadm")
    assert installed == "install ok installed"


@pytest.mark.usefixtures("kernel_view")
def test_no_matching_disk_leaves_the_node_alone(scratch_node: ScratchNode) -> None:
    scratch_node.path(DISKS_DIR).mkdir(parents=True, exist_ok=True)
    completed = scratch_node.run_script()
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == f"local scratch: no local NVMe disk matches in {DISKS_DIR}; nothing to do\n"
    assert not os.path.ismount(scratch_node.path(MOUNT_POINT))


def test_one_disk_is_formatted_mounted_and_kept_across_remounts(
    scratch_node: ScratchNode, disks: Disks
) -> None:
    [device] = disks(1)
    completed = scratch_node.run_script()
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.endswith(f"local scratch: 1 disk(s) on {device} mounted at {MOUNT_POINT}\n")
    mounted = scratch_node.path(MOUNT_POINT)
    assert os.path.ismount(mounted)
    assert _run("blkid", "-o", "value", "-s", "TYPE", device) == "ext4"
    assert stat.S_IMODE(mounted.stat().st_mode) == 0o1777
    (mounted / "checkpoint").write_text("step 1000\n")

    # Running again (another boot-time run of the unit) leaves the mounted scratch alone.
    again = scratch_node.run_script()
    assert again.stdout == f"local scratch: {MOUNT_POINT} is already mounted\n"

    # A reboot keeps the disks' contents: the file system is reused, never recreated.
    _run("umount", str(mounted))
    remounted = scratch_node.run_script()
    assert remounted.returncode == 0, remounted.stderr
    assert (mounted / "checkpoint").read_text() == "step 1000\n"


def test_several_disks_become_one_raid0_array(scratch_node: ScratchNode, disks: Disks) -> None:
    require(
        Path("/proc/mdstat").exists(),
        "the kernel has no md driver: RAID 0 cannot be assembled here",
        ci_exempt=MD_DRIVER,
    )
    devices = disks(2)
    completed = scratch_node.run_script()
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.endswith(
        f"local scratch: 2 disk(s) on /dev/md/localscratch mounted at {MOUNT_POINT}\n"
    )
    detail = _run("mdadm", "--detail", "/dev/md/localscratch")
    assert "Raid Level : raid0" in detail
    assert all(device in detail for device in devices)
    _run("umount", str(scratch_node.path(MOUNT_POINT)))
    _run("mdadm", "--stop", "/dev/md/localscratch")


def test_disabling_removes_the_unit_and_keeps_the_disks(
    scratch_node: ScratchNode, built_standins: standins.Standins, tmp_path: Path
) -> None:
    copy = tmp_path / "rootfs"
    subprocess.run(["cp", "-a", str(scratch_node.rootfs), str(copy)], check=True)
    extravars = {**variants.efa_p5(built_standins), "local_scratch_enabled": False}
    result = run_in_chroot("gpu_node.yml", copy, extravars, tags=["local_scratch"])
    assert result.succeeded, result.failed_tasks
    assert not (copy / "etc/systemd/system" / UNIT).exists()
    assert not (copy / "etc/systemd/system/multi-user.target.wants" / UNIT).exists()
    assert not (copy / SCRIPT.lstrip("/")).exists()
