"""Slurm's TaskProlog on GPU nodes (playbooks/roles/slurm_node/files/clusterfab_task_env.py): what it
prints for a task, from fabric profiles shaped as the fabric roles write them, run through the real bash.
The lab runs it under the real slurmd (tests/slurm/test_rendered_example.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.factories import load_program

PROGRAM = REPO / "playbooks/roles/slurm_node/files/clusterfab_task_env.py"
task_env = load_program("clusterfab_task_env", PROGRAM)

FABRIC_ROLES = ("efa", "gpudirect_tcpx", "gpudirect_tcpxo", "infiniband", "rdma_gib")

# The gpudirect_tcpxo and rdma_gib profiles source the vendor's own file first, then set the interfaces.
VENDOR = "export NCCL_FASTRAK_NUM_FLOWS=2\nexport NCCL_BUFFSIZE=8388608\n"
PROFILE = """
if [ -r {vendor} ]; then
  . {vendor}
fi
export NCCL_FASTRAK_CTRL_DEV='enp0s12'
export NCCL_FASTRAK_IFNAME='enp6s0,enp7s0'
export LD_LIBRARY_PATH="/var/lib/tcpxo/lib64${{LD_LIBRARY_PATH:+:${{LD_LIBRARY_PATH}}}}"
export NCCL_TUNER_CONFIG_PATH='/var/lib/tcpxo/lib64/a3plus_tuner_config.textproto'
echo "a profile that talks"
"""


@pytest.fixture
def profile(tmp_path: Path) -> str:
    vendor = tmp_path / "nccl-env-profile.sh"
    vendor.write_text(VENDOR)
    path = tmp_path / "nccl-fabric.sh"
    path.write_text(PROFILE.format(vendor=vendor))
    return str(path)


def test_the_changes_are_what_the_profile_and_the_file_it_sources_set(profile: str) -> None:
    assert task_env.profile_changes(profile) == {
        "NCCL_BUFFSIZE": "8388608",
        "NCCL_FASTRAK_CTRL_DEV": "enp0s12",
        "NCCL_FASTRAK_IFNAME": "enp6s0,enp7s0",
        "NCCL_FASTRAK_NUM_FLOWS": "2",
        "NCCL_TUNER_CONFIG_PATH": "/var/lib/tcpxo/lib64/a3plus_tuner_config.textproto",
        "LD_LIBRARY_PATH": "/var/lib/tcpxo/lib64",
    }


def test_a_task_without_the_fabric_gets_all_of_it(profile: str) -> None:
    lines = list(task_env.exports(task_env.profile_changes(profile), {"PATH": "/usr/bin:/bin"}))
    assert lines == [
        "export LD_LIBRARY_PATH=/var/lib/tcpxo/lib64",
        "export NCCL_BUFFSIZE=8388608",
        "export NCCL_FASTRAK_CTRL_DEV=enp0s12",
        "export NCCL_FASTRAK_IFNAME=enp6s0,enp7s0",
        "export NCCL_FASTRAK_NUM_FLOWS=2",
        "export NCCL_TUNER_CONFIG_PATH=/var/lib/tcpxo/lib64/a3plus_tuner_config.textproto",
    ]


def test_what_the_job_sets_wins_and_its_libraries_come_after_the_plugins(profile: str) -> None:
    task = {"NCCL_BUFFSIZE": "4194304", "LD_LIBRARY_PATH": "/home/alice/lib:/var/lib/tcpxo/lib64"}
    lines = list(task_env.exports(task_env.profile_changes(profile), task))
    assert "export LD_LIBRARY_PATH=/var/lib/tcpxo/lib64:/home/alice/lib" in lines
    assert not any(line.startswith("export NCCL_BUFFSIZE=") for line in lines)
    # A task that already has everything (the batch script's tasks after the batch step) gets nothing.
    already = {**dict(line[len("export ") :].split("=", 1) for line in lines), **task}
    already["LD_LIBRARY_PATH"] = "/var/lib/tcpxo/lib64:/home/alice/lib"
    assert list(task_env.exports(task_env.profile_changes(profile), already)) == []


def test_values_slurm_cannot_read_are_left_out() -> None:
    changes = {"NCCL_MULTILINE": "a\nb", "BASH_FUNC_x%%": "() { :; }", "SHLVL": "2", "NCCL_DEBUG": "WARN"}
    assert list(task_env.exports(changes, {})) == ["export NCCL_DEBUG=WARN"]


def test_main_prints_the_lines_for_its_own_environment(
    profile: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(task_env, "PROFILE", profile)
    monkeypatch.setenv("NCCL_FASTRAK_IFNAME", "enp6s0")
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    assert task_env.main() == 0
    out = capsys.readouterr().out.splitlines()
    assert "export LD_LIBRARY_PATH=/var/lib/tcpxo/lib64" in out
    assert "export NCCL_FASTRAK_CTRL_DEV=enp0s12" in out
    assert not any(line.startswith("export NCCL_FASTRAK_IFNAME=") for line in out)


def test_a_profile_that_hangs_is_skipped_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hangs = tmp_path / "nccl-fabric.sh"
    hangs.write_text("sleep 30\n")
    monkeypatch.setattr(task_env, "PROFILE", str(hangs))
    monkeypatch.setattr(task_env, "SECONDS", 1)
    assert task_env.main() == 0
    out = capsys.readouterr().out
    assert out.startswith(f"print clusterfab-task-env: {hangs} was not read (")
    assert "NCCL may not use the fabric" in out


def test_a_node_without_a_fabric_prints_nothing() -> None:
    out = subprocess.run(
        [sys.executable, str(PROGRAM)],
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=False,
    )
    # This machine has no /etc/profile.d/nccl-fabric.sh.
    assert not Path(task_env.PROFILE).exists()
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


def test_every_fabric_role_writes_the_profile_the_program_reads() -> None:
    for role in FABRIC_ROLES:
        defaults = yaml.safe_load((REPO / f"playbooks/roles/{role}/defaults/main.yml").read_text())
        assert defaults[f"{role}_nccl_profile_path"] == task_env.PROFILE, role
