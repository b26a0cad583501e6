"""The Azure claims' keepers: the slurm_controller role's clusterfab-slurm-claims
(files/clusterfab_slurm_claims.py) run against a stand-in scontrol that keeps its nodes in a JSON file and
logs every call, and the slurm_node role's re-assertion program (templates/clusterfab-slurm-reassert.sh.j2)
rendered as Ansible renders it. The Slurm lab (tests/slurm/test_azure_claim_lab.py) runs both against the
real slurmctld."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import jinja2

from tests.conftest import REPO

CLAIMS = REPO / "playbooks/roles/slurm_controller/files/clusterfab_slurm_claims.py"
REASSERT = REPO / "playbooks/roles/slurm_node/templates/clusterfab-slurm-reassert.sh.j2"
# scontrol as the program calls it: `show config` (BOOT_TIME), `show node --json` (name, hostname,
# address: Slurm 24.11's fields), `update NodeName= NodeAddr= NodeHostname=`.
FAKE_SCONTROL = """#!/usr/bin/python3
import json, os, sys
state = os.environ["FAKE_SLURM"]
data = json.load(open(state))
with open(state + ".log", "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["show", "config"]:
    print("Configuration data as of 2026-11-29T10:00:00")
    print("BOOT_TIME               = " + data["boot"])
elif sys.argv[1:] == ["show", "node", "--json"]:
    nodes = [{"name": n, "hostname": h, "address": a} for n, (h, a) in data["nodes"].items()]
    print(json.dumps({"nodes": nodes}))
elif sys.argv[1] == "update":
    fields = dict(arg.split("=", 1) for arg in sys.argv[2:])
    data["nodes"][fields["NodeName"]] = [fields["NodeHostname"], fields["NodeAddr"]]
    json.dump(data, open(state, "w"))
else:
    sys.exit(2)
"""


def render_reassert(
    *,
    server: str = "10.30.0.10:6817",
    name_file: str = "/run/clusterfab-slurm-node",
    claim_conf: str = "/run/clusterfab-slurm-claim.conf",
) -> str:
    """The re-assertion program as Ansible renders it (the role's internal paths given, as the Slurm lab
    gives each of its VMs on one machine)."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True)
    env.filters["comment"] = lambda text: f"#\n# {text}\n#"
    env.filters["quote"] = shlex.quote
    return env.from_string(REASSERT.read_text()).render(
        ansible_managed="Ansible managed",
        slurm_node_conf_server=server,
        __slurm_node_name_file=name_file,
        __slurm_node_claim_conf=claim_conf,
    )


def _slurm(tmp_path: Path, boot: str, nodes: dict[str, list[str]]) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "scontrol").write_text(FAKE_SCONTROL)
    (bin_dir / "scontrol").chmod(0o755)
    state = tmp_path / "slurm.json"
    state.write_text(json.dumps({"boot": boot, "nodes": nodes}))
    return state


def _claims(tmp_path: Path, state: Path, record: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FAKE_SLURM": str(state), "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    return subprocess.run(
        [sys.executable, str(CLAIMS), str(record)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_records_the_nodes_whose_host_name_is_not_their_own(tmp_path: Path) -> None:
    nodes = {"gpu-0": ["vm-a", "10.0.0.4"], "gpu-1": ["gpu-1", "gpu-1"]}
    state = _slurm(tmp_path, "2026-11-29T10:00:00", nodes)
    record = tmp_path / "node-claims.json"
    done = _claims(tmp_path, state, record)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert json.loads(record.read_text()) == {
        "slurmctld": "2026-11-29T10:00:00",
        "claims": {"gpu-0": {"host": "vm-a", "address": "10.0.0.4"}},
    }
    assert Path(f"{state}.log").read_text() == "show config\nshow node --json\n"


def test_after_a_restart_restores_the_claims_of_unclaimed_nodes_only(tmp_path: Path) -> None:
    record = tmp_path / "node-claims.json"
    record.write_text(
        json.dumps(
            {
                "slurmctld": "2026-11-29T10:00:00",
                "claims": {
                    "gpu-0": {"host": "vm-a", "address": "10.0.0.4"},
                    "gpu-1": {"host": "vm-b", "address": "10.0.0.5"},
                    "gpu-2": {"host": "vm-c", "address": "10.0.0.6"},
                    "gpu-9": {"host": "vm-z", "address": "10.0.0.9"},
                },
            }
        )
    )
    # Restarted: gpu-0 forgotten; gpu-1 claimed since by vm-d; vm-c claimed gpu-3 since; gpu-9 is gone.
    nodes = {
        "gpu-0": ["gpu-0", "gpu-0"],
        "gpu-1": ["vm-d", "10.0.0.7"],
        "gpu-2": ["gpu-2", "gpu-2"],
        "gpu-3": ["vm-c", "10.0.0.6"],
    }
    state = _slurm(tmp_path, "2026-11-29T11:00:00", nodes)
    done = _claims(tmp_path, state, record)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "restored node gpu-0: vm-a at 10.0.0.4\n"
    assert done.stderr == (
        "node gpu-1 is held by vm-d now: the recorded claim by vm-b is dropped\n"
        "vm-c holds node gpu-3 now: its recorded claim of node gpu-2 is dropped\n"
        "node gpu-9 is no longer in slurm.conf: its claim by vm-z is dropped\n"
    )
    assert Path(f"{state}.log").read_text() == (
        "show config\nshow node --json\n"
        "update NodeName=gpu-0 NodeAddr=10.0.0.4 NodeHostname=vm-a\nshow node --json\n"
    )
    assert json.loads(record.read_text()) == {
        "slurmctld": "2026-11-29T11:00:00",
        "claims": {
            "gpu-0": {"host": "vm-a", "address": "10.0.0.4"},
            "gpu-1": {"host": "vm-d", "address": "10.0.0.7"},
            "gpu-3": {"host": "vm-c", "address": "10.0.0.6"},
        },
    }
    # The same slurmctld a minute later: nothing to restore, nothing changed.
    again = _claims(tmp_path, state, record)
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")


def test_a_slurmctld_that_does_not_answer_fails_without_touching_the_record(tmp_path: Path) -> None:
    state = _slurm(tmp_path, "x", {})
    (tmp_path / "bin" / "scontrol").write_text(
        "#!/bin/sh\necho 'Unable to contact slurm controller' >&2\nexit 1\n"
    )
    record = tmp_path / "node-claims.json"
    done = _claims(tmp_path, state, record)
    assert done.returncode == 1
    assert done.stderr == "slurmctld does not answer after 0s: Unable to contact slurm controller\n"
    assert not record.exists()


def test_the_node_reasserts_with_the_claims_client_configuration() -> None:
    lines = render_reassert().splitlines()
    assert "[ -s /run/clusterfab-slurm-node ] || exit 0" in lines
    assert '  SLURM_CONF=/run/clusterfab-slurm-claim.conf "$@"' in lines
    assert "if ! nodes=$(ctl sinfo -a -N -h -o '%N %n %o' 2>&1); then" in lines
    assert 'ctl scontrol update NodeName="$name" NodeAddr="$address" NodeHostname="$host"' in lines


def _reassert(tmp_path: Path, listing: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """The rendered re-assertion program on host vm-a (address 10.0.0.4, node gpu-0 in its name file),
    with stand-ins for hostname, curl (the instance metadata) and the Slurm client commands; sinfo lists
    `listing`. What it printed, and the Slurm commands it ran."""
    tmp_path.mkdir(exist_ok=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    stand_ins = {
        "hostname": "#!/bin/sh\necho vm-a\n",
        "curl": "#!/bin/sh\necho 10.0.0.4\n",
        "sinfo": (
            f'#!/bin/sh\necho "SLURM_CONF=$SLURM_CONF sinfo $*" >> {calls}\n'
            f"printf %s {shlex.quote(listing)}\n"
        ),
        "scontrol": f'#!/bin/sh\necho "SLURM_CONF=$SLURM_CONF scontrol $*" >> {calls}\n',
    }
    for name, text in stand_ins.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    name_file = tmp_path / "node"
    name_file.write_text("gpu-0\n")
    program = tmp_path / "reassert"
    program.write_text(render_reassert(name_file=str(name_file)))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(
        ["sh", str(program)], env=env, capture_output=True, text=True, check=False, timeout=30
    )
    return done, calls.read_text() if calls.exists() else ""


SINFO = "SLURM_CONF=/run/clusterfab-slurm-claim.conf sinfo -a -N -h -o %N %n %o\n"


def test_a_node_slurmctld_knows_as_its_own_is_left_alone(tmp_path: Path) -> None:
    done, calls = _reassert(tmp_path, "gpu-0 vm-a 10.0.0.4\ngpu-1 vm-b 10.0.0.5\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert calls == SINFO


def test_a_node_slurmctld_forgot_is_claimed_again(tmp_path: Path) -> None:
    done, calls = _reassert(tmp_path, "gpu-0 gpu-0 gpu-0\ngpu-1 vm-b 10.0.0.5\n")
    assert (done.returncode, done.stderr) == (0, "")
    assert (
        done.stdout
        == "this VM (vm-a, 10.0.0.4) re-asserted its claim of node gpu-0 (slurmctld had: gpu-0 gpu-0)\n"
    )
    assert calls == SINFO + (
        "SLURM_CONF=/run/clusterfab-slurm-claim.conf scontrol update NodeName=gpu-0 NodeAddr=10.0.0.4 "
        "NodeHostname=vm-a\n"
    )


def test_a_node_another_host_holds_or_a_second_node_is_never_taken(tmp_path: Path) -> None:
    done, calls = _reassert(tmp_path / "held", "gpu-0 vm-z 10.0.0.9\n")
    assert (done.returncode, done.stdout, calls) == (1, "", SINFO)
    assert done.stderr == "node gpu-0 is held by vm-z now: this VM (vm-a) does not take it back\n"
    done, calls = _reassert(tmp_path / "second", "gpu-0 gpu-0 gpu-0\ngpu-1 vm-a 10.0.0.4\n")
    assert (done.returncode, done.stdout, calls) == (1, "", SINFO)
    assert (
        done.stderr == "this VM (vm-a) holds node gpu-1 in slurmctld, not gpu-0: not claiming gpu-0 as well\n"
    )
