"""The lab's overrides of the rendered Slurm files are exactly the documented ones (no root needed)."""

from __future__ import annotations

import pytest

from tests.slurm.lab import account_users, controller_addresses
from tests.slurm.overrides import apply_lab_overrides, expand_hostlist, node_names, settings
from tests.slurm.rendered import rendered_files


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("trainers-[0-2]", ["trainers-0", "trainers-1", "trainers-2"]),
        ("gpu-[08-10,12]", ["gpu-08", "gpu-09", "gpu-10", "gpu-12"]),
        ("a,b-[1-2],c", ["a", "b-1", "b-2", "c"]),
        ("solo", ["solo"]),
    ],
)
def test_expand_hostlist(expression: str, names: list[str]) -> None:
    assert expand_hostlist(expression) == names


def test_overrides_of_the_handwritten_set() -> None:
    rendered = rendered_files()
    files, overrides = apply_lab_overrides(rendered)
    assert [(o.file, o.setting, o.rendered, o.lab) for o in overrides] == [
        ("slurm.conf", "NodeName ... Port=", None, "trainers-0:17001, trainers-1:17002, trainers-2:17003"),
        ("slurm.conf", "SlurmdSpoolDir", "/var/lib/slurm/slurmd", "/var/spool/slurmd/%n"),
        ("slurm.conf", "SlurmdPidFile", None, "/run/slurmd/%n.pid"),
        ("slurm.conf", "SlurmdLogFile", None, "/var/log/slurm/slurmd-%n.log"),
        ("slurm.conf", "SlurmctldLogFile", None, "/var/log/slurm/slurmctld.log"),
        ("slurm.conf", "SlurmdParameters", None, "config_overrides"),
    ]
    assert all(o.why for o in overrides)
    # Only slurm.conf changes; every other rendered file reaches the daemons as rendered.
    assert {name for name in files if files[name] != rendered[name]} == {"slurm.conf"}
    node_lines = [line for line in files["slurm.conf"].splitlines() if line.startswith("NodeName=")]
    assert node_lines == [
        f"NodeName=trainers-{i} Port={17001 + i} CPUs=192 Boards=1 SocketsPerBoard=2 CoresPerSocket=48"
        " ThreadsPerCore=2 RealMemory=1900000 Gres=gpu:h100:8 State=UNKNOWN"
        for i in range(3)
    ]
    kept = settings(rendered["slurm.conf"])
    changed = settings(files["slurm.conf"])
    assert {k: v for k, v in kept.items() if changed.get(k) != v} == {
        "slurmdspooldir": "/var/lib/slurm/slurmd"
    }
    assert node_names(files["slurm.conf"]) == ["trainers-0", "trainers-1", "trainers-2"]


def test_existing_slurmd_parameters_are_kept() -> None:
    files = {"slurm.conf": "ClusterName=x\nSlurmdParameters=l3cache_as_socket\nNodeName=n1 CPUs=4\n"}
    out, overrides = apply_lab_overrides(files)
    assert "SlurmdParameters=l3cache_as_socket,config_overrides" in out["slurm.conf"].splitlines()
    assert overrides[-1].rendered == "l3cache_as_socket"


def test_account_users() -> None:
    assert account_users(rendered_files()["accounts.cfg"]) == ["alice", "ivan"]


def test_controller_addresses() -> None:
    assert controller_addresses(rendered_files()) == []
    files = {
        "slurm.conf": "SlurmctldHost=c(10.30.0.10)\nAccountingStorageHost=10.30.0.10\n",
        "slurmdbd.conf": "DbdHost=c\nDbdAddr=10.30.0.11\n",
    }
    assert controller_addresses(files) == ["10.30.0.10", "10.30.0.11"]
