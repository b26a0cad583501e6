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


def test_the_lab_changes_only_the_documented_keys_of_the_render() -> None:
    """The lab's cluster is `clusterfab render slurm` of the lab blueprint with exactly these changes
    (one machine runs every slurmd): a renderer change to any other key reaches the lab as rendered."""
    rendered = rendered_files()
    files, overrides = apply_lab_overrides(rendered)
    assert [(o.file, o.setting, o.rendered, o.lab) for o in overrides] == [
        ("slurm.conf", "NodeName ... Port=", None, "trainers-0:17001, trainers-1:17002, trainers-2:17003"),
        ("slurm.conf", "SlurmdSpoolDir", "/var/spool/slurmd", "/var/spool/slurmd/%n"),
        ("slurm.conf", "SlurmdPidFile", "/run/slurm/slurmd.pid", "/run/slurmd/%n.pid"),
        ("slurm.conf", "SlurmdLogFile", "/var/log/slurm/slurmd.log", "/var/log/slurm/slurmd-%n.log"),
        ("slurm.conf", "SlurmdParameters", None, "config_overrides"),
    ]
    assert all(o.why for o in overrides)
    # Only slurm.conf changes; every other rendered file reaches the daemons as rendered.
    assert {name for name in files if files[name] != rendered[name]} == {"slurm.conf"}
    node_lines = [line for line in files["slurm.conf"].splitlines() if line.startswith("NodeName=")]
    assert node_lines == [
        f"NodeName=trainers-{i} Port={17001 + i} CPUs=192 RealMemory=1992294 Gres=gpu:h100:8 State=UNKNOWN"
        for i in range(3)
    ]
    kept = settings(rendered["slurm.conf"])
    changed = settings(files["slurm.conf"])
    assert {k: v for k, v in kept.items() if changed.get(k) != v} == {
        "slurmdspooldir": "/var/spool/slurmd",
        "slurmdpidfile": "/run/slurm/slurmd.pid",
        "slurmdlogfile": "/var/log/slurm/slurmd.log",
    }
    assert {k: v for k, v in changed.items() if k not in kept} == {"slurmdparameters": "config_overrides"}
    # Apart from the NodeName line split per node, no other line of slurm.conf differs.
    differing = set(files["slurm.conf"].splitlines()) ^ set(rendered["slurm.conf"].splitlines())
    assert sorted(line for line in differing if not line.startswith("NodeName=")) == [
        "SlurmdLogFile=/var/log/slurm/slurmd-%n.log",
        "SlurmdLogFile=/var/log/slurm/slurmd.log",
        "SlurmdParameters=config_overrides",
        "SlurmdPidFile=/run/slurm/slurmd.pid",
        "SlurmdPidFile=/run/slurmd/%n.pid",
        "SlurmdSpoolDir=/var/spool/slurmd",
        "SlurmdSpoolDir=/var/spool/slurmd/%n",
    ]
    assert node_names(files["slurm.conf"]) == ["trainers-0", "trainers-1", "trainers-2"]


def test_existing_slurmd_parameters_are_kept() -> None:
    files = {"slurm.conf": "ClusterName=x\nSlurmdParameters=l3cache_as_socket\nNodeName=n1 CPUs=4\n"}
    out, overrides = apply_lab_overrides(files)
    assert "SlurmdParameters=l3cache_as_socket,config_overrides" in out["slurm.conf"].splitlines()
    assert overrides[-1].rendered == "l3cache_as_socket"


def test_account_users() -> None:
    assert account_users(rendered_files()["accounts.cfg"]) == ["alice", "ivan"]


def test_controller_addresses() -> None:
    # The lab blueprint's network is 10.40.0.0/16: the controller's fixed address is the tenth.
    assert controller_addresses(rendered_files()) == ["10.40.0.10"]
    files = {
        "slurm.conf": "SlurmctldHost=c(10.30.0.10)\nAccountingStorageHost=10.30.0.10\n",
        "slurmdbd.conf": "DbdHost=c\nDbdAddr=10.30.0.11\n",
    }
    assert controller_addresses(files) == ["10.30.0.10", "10.30.0.11"]
