"""A lab torn down by an exception mid-job leaves nothing behind. In its own module, so that the
shared cluster of test_slurm_lab.py is not running beside it (both would use the same node names)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.slurm.lab import SlurmLab
from tests.slurm.rendered import rendered_files
from tests.slurm.rootfs import GoldenRootfs

pytestmark = pytest.mark.slurm
SLEEP = "#!/bin/sh\nsleep 300\n"


def test_lab_leaves_nothing_behind(golden: GoldenRootfs, tmp_path: Path) -> None:
    """No process, mount or cgroup of the lab survives an exception raised while a job runs."""
    lab = SlurmLab(rendered_files(), golden, tmp_path / "lab")

    made: list[Path] = []
    pidns = ""

    def crash_mid_job() -> None:
        with lab:
            lab.wait_job(lab.sbatch(SLEEP, "-N1", "-A", "research", user="alice"), {"RUNNING"})
            assert len(lab.leftover_processes()) > 5
            made.extend(lab.cgroups)
            nonlocal pidns
            pidns = lab.pid_namespace
            assert any((c / "slurm_trainers-0").is_dir() for c in made)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        crash_mid_job()
    assert lab.leftover_processes() == []
    assert str(tmp_path) not in Path("/proc/self/mountinfo").read_text()
    # The lab's cgroups, with slurmd's slurm_<node>/uid_*/job_* trees inside them, are removed.
    assert made
    assert [c for c in made if c.exists()] == []
    assert lab.cgroups == []
    daemons = subprocess.run(
        ["pgrep", "-a", "-f", str(tmp_path)], capture_output=True, text=True, check=False
    ).stdout
    assert daemons == ""
    # No daemon of that name survives in the lab's PID namespace (others on the host are not ours).
    for name in ("slurmctld", "slurmd", "slurmstepd", "slurmdbd", "munged", "mariadbd"):
        pids = subprocess.run(
            ["pgrep", "-x", name], capture_output=True, text=True, check=False
        ).stdout.split()
        assert [p for p in pids if _pid_namespace(p) == pidns] == [], name


def _pid_namespace(pid: str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return ""
