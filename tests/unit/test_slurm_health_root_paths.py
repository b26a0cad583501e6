"""The health checks' root-only paths, outside the Slurm lab: what they do to the cluster and the host.

The deep check (clusterfab/scheduler/slurm/healthcheck.py) runs on the controller as root (`sudo -n`):
it reserves the idle nodes (`Users=root`), runs the node check and the NCCL pairs in the reservation,
deletes the reservation, always, and drains the nodes that failed. Here its `main` runs with the
controller's settings file and a Slurm that records every command and answers as slurmctld does; the
exact commands, their order where it matters, the report and the exit code are checked.

The node check (playbooks/roles/slurm_node/files/clusterfab_slurm_health.py) runs as root from slurmd:
it keeps its XID state under /var/lib and its log under /var/log/slurm; here under a temporary root given
by its settings file, with the exact files it leaves."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from clusterfab.scheduler.slurm import healthcheck
from tests.conftest import REPO

RESERVATION = "clusterfab-health-1764000000"
NODES = "".join(
    f"NodeName={name} Arch=x86_64 CPUTot=208 Gres=gpu:h100:8 State={state} Partitions=train\n"
    for name, state in [
        ("h100-0", "IDLE"),
        ("h100-1", "IDLE"),
        ("h100-2", "IDLE"),
        ("h100-3", "IDLE"),
        ("h100-4", "MIXED"),
        ("h100-5", "IDLE+DRAIN"),
    ]
)
"""`scontrol show nodes -o`: four idle nodes, one running a job, one drained."""
SETTINGS = {
    "groups": {
        "h100": {
            "machine_type": "a3-megagpu-8g",
            "min_pair_busbw_gbytes_per_s": 160.4,
            "floor_source": "Cluster Toolkit a3-mega two-node all_gather, less 15 %",
        }
    }
}
"""The controller's healthcheck.json (hostvars.health_files writes it beside the program)."""
DCGM_FAILURE = {
    "category": "DCGM",
    "detail": "level 1 software failed on GPU 3: Persistence Mode: Persistence mode for GPU 3 is disabled.",
}


def _table(busbw: float) -> str:
    """nccl-tests' result rows (NVIDIA/nccl-tests src/util.cu); the largest size's out-of-place busbw."""
    return (
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong\n"
        "   536870912     134217728     float     sum      -1   5418.9   99.07  185.76      0"
        "   5402.2   99.38  186.33      0\n"
        f"  8589934592    2147483648     float     sum      -1  86120.4   99.74  {busbw:6.2f}      0"
        "  86002.1   99.88  187.28      0\n"
    )


def _world(hosts: Sequence[str]) -> str:
    """One MPI world's `# Using devices` lines: 8 ranks per host (NVIDIA/nccl-tests src/common.cu)."""
    return "# Using devices\n" + "".join(
        f"#  Rank {8 * h + d:2d} Group  0 Pid {4000 + 8 * h + d:6d} on {host:>10s} device {d:2d}"
        f" [0000:{0x8F + d:02x}:00] NVIDIA H100 80GB HBM3\n"
        for h, host in enumerate(hosts)
        for d in range(8)
    )


class Slurm:
    """slurmctld and srun as the deep check meets them; every command recorded in the order it ran."""

    def __init__(self) -> None:
        self.commands: list[list[str]] = []
        self.lock = threading.Lock()
        self.failing: dict[str, dict[str, str]] = {}
        """Node -> the failure its node check reports."""
        self.hanging: set[str] = set()
        """Nodes whose node check runs past its time."""
        self.slow: set[str] = set()
        """Nodes whose NCCL pairs measure below the floor."""
        self.one_world = True
        self.reserve_error = ""
        self.busy_deletes = 0
        """How many times deleting the reservation fails first (its jobs are still ending)."""
        self.sleeps: list[float] = []

    def __call__(self, argv: Sequence[str], timeout: float) -> healthcheck.Ran:
        with self.lock:
            self.commands.append(list(argv))
        if argv[:4] == ["scontrol", "show", "nodes", "-o"]:
            return healthcheck.Ran(0, NODES, "")
        if argv[:3] == ["scontrol", "create", "reservation"]:
            if self.reserve_error:
                return healthcheck.Ran(1, "", self.reserve_error)
            return healthcheck.Ran(0, f"Reservation created: {RESERVATION}\n", "")
        if argv[:2] == ["scontrol", "delete"]:
            if self.busy_deletes:
                self.busy_deletes -= 1
                return healthcheck.Ran(1, "", "delete_reservation: Requested operation is presently disabled")
            return healthcheck.Ran(0, "", "")
        if argv[0] in ("scancel",) or argv[:2] == ["scontrol", "update"]:
            return healthcheck.Ran(0, "", "")
        if argv[0] == "srun":
            nodes = next(a for a in argv if a.startswith("--nodelist=")).split("=", 1)[1].split(",")
            if "--mode" in argv:
                [node] = nodes
                if node in self.hanging:
                    return healthcheck.Ran(None, "", "")
                failures = [self.failing[node]] if node in self.failing else []
                verdict = {"schema_version": 1, "node": node, "level": 1, "healthy": not failures,
                           "failures": failures, "seconds": 4.2}  # fmt: skip
                return healthcheck.Ran(0, json.dumps(verdict) + "\n", "")
            busbw = 120.5 if self.slow & set(nodes) else 188.73
            world = _world(nodes) if self.one_world else "".join(_world([n])[:-1] + "\n" for n in nodes)
            return healthcheck.Ran(0, world + _table(busbw), "")
        raise AssertionError(f"unexpected command {argv}")

    def steps(self) -> list[list[str]]:
        """The commands, the node checks' (which run in parallel, in any order) sorted among themselves."""
        checks = sorted(c for c in self.commands if "--mode" in c)
        first = next((i for i, c in enumerate(self.commands) if "--mode" in c), len(self.commands))
        others = [c for c in self.commands if "--mode" not in c]
        return others[:first] + checks + others[first:]


def _srun(nodes: str, job: list[str], minutes: int, tasks: int, *options: str) -> list[str]:
    count = len(nodes.split(","))
    return ["srun", f"--reservation={RESERVATION}", "--partition=train", f"--nodelist={nodes}",
            f"--nodes={count}", f"--ntasks-per-node={tasks}", "--exclusive", f"--job-name={RESERVATION}",
            f"--time={minutes}", "--extra=healthchecks_prolog=off,healthchecks_epilog=off", "--gres=gpu:8",
            *options, *job]  # fmt: skip


def check_of(node: str) -> list[str]:
    """The node's own check at level 1: 60 s of DCGM and 120 s of margin, 3 minutes."""
    return _srun(node, ["/usr/local/sbin/clusterfab-slurm-health", "--mode", "report", "--level", "1"], 3, 1)


def pair(nodes: str) -> list[str]:
    """all_reduce_perf across two nodes, 8 ranks each, one MPI world over TCP, within 10 minutes."""
    job = ["env", "OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,vader,tcp", "/opt/nccl-tests/build/all_reduce_perf",
           "-b", "512M", "-e", "8G", "-f", "2", "-g", "1"]  # fmt: skip
    return _srun(nodes, job, 10, 8, "--mpi=pmix")


def reserve(nodes: str) -> list[str]:
    # Level 1: 60 s of DCGM, 120 s of margin and four NCCL runs of 600 + 15 s: 44 minutes.
    return ["scontrol", "create", "reservation", f"ReservationName={RESERVATION}", "StartTime=now",
            "Duration=44", "Users=root", "Flags=MAINT", f"Nodes={nodes}"]  # fmt: skip


RELEASE = [["scancel", f"--name={RESERVATION}"], ["scontrol", "delete", f"ReservationName={RESERVATION}"]]


def drain(node: str, reason: str) -> list[str]:
    return ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]


@pytest.fixture
def slurm(monkeypatch: pytest.MonkeyPatch) -> Slurm:
    """The reservation is named by the clock; a busy reservation is retried every 2 s (recorded here)."""
    fake = Slurm()
    clock = SimpleNamespace(time=lambda: 1764000000.25, monotonic=lambda: 0.0, sleep=fake.sleeps.append)
    monkeypatch.setattr(healthcheck, "time", clock)
    return fake


def _run(
    slurm: Slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, Any, str]:
    settings = tmp_path / "healthcheck.json"
    settings.write_text(json.dumps(SETTINGS))
    code = healthcheck.main(["--level", "1", "--config", str(settings), "--json", *args], runner=slurm)
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


def _node(name: str, status: str = "healthy", **fields: Any) -> dict[str, Any]:
    return {"node": name, "status": status, "reason": None, "detail": None, "busbw_gbytes_per_s": None,
            "floor_gbytes_per_s": None, "partner": None, "failures": [], **fields}  # fmt: skip


# ---------------------------------------------------------------------------------------- the deep check
def test_the_deep_check_reserves_checks_releases_and_drains_exactly_the_failing_nodes(
    slurm: Slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slurm.failing["h100-2"] = DCGM_FAILURE
    slurm.slow.add("h100-3")
    code, report, err = _run(slurm, tmp_path, capsys)
    dcgm = "clusterfab-health: DCGM: " + DCGM_FAILURE["detail"]
    perf = "clusterfab-health: PERF: all_reduce busbw 120.5 GB/s below floor 160.4 (h100-3 and h100-0)"
    assert slurm.steps() == [
        ["scontrol", "show", "nodes", "-o"],
        reserve("h100-0,h100-1,h100-2,h100-3"),  # the idle nodes only: h100-4 runs a job, h100-5 is drained
        check_of("h100-0"), check_of("h100-1"), check_of("h100-2"), check_of("h100-3"),
        pair("h100-0,h100-1"),  # fast: both good
        pair("h100-3,h100-0"),  # the odd one out with the first: slow
        pair("h100-3,h100-0"),  # again with a node known good: h100-3 is the slow one
        *RELEASE,
        drain("h100-2", dcgm),
        drain("h100-3", perf),
    ]  # fmt: skip
    assert (code, err) == (1, "")
    assert report == {
        "schema_version": 1,
        "level": 1,
        "reservation": RESERVATION,
        "healthy": False,
        "error": None,
        "nodes": [
            _node("h100-0", busbw_gbytes_per_s=188.73, floor_gbytes_per_s=160.4, partner="h100-1"),
            _node("h100-1", busbw_gbytes_per_s=188.73, floor_gbytes_per_s=160.4, partner="h100-0"),
            _node("h100-2", "failed", reason=dcgm, failures=[{**DCGM_FAILURE, "reason": dcgm}]),
            _node(
                "h100-3", "failed", reason=perf, busbw_gbytes_per_s=120.5, floor_gbytes_per_s=160.4,
                partner="h100-0",
                failures=[{"category": "PERF", "detail": perf.split("PERF: ", 1)[1], "reason": perf}],
            ),
            _node("h100-4", "skipped", detail="not idle (MIXED)"),
            _node("h100-5", "skipped", detail="not idle (IDLE+DRAIN)"),
        ],
    }  # fmt: skip


def test_a_healthy_cluster_is_released_and_nothing_is_drained(
    slurm: Slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, _ = _run(slurm, tmp_path, capsys, "--nodes", "h100-0,h100-1")
    assert slurm.steps() == [
        ["scontrol", "show", "nodes", "-o"],
        reserve("h100-0,h100-1"),
        check_of("h100-0"),
        check_of("h100-1"),
        pair("h100-0,h100-1"),
        *RELEASE,
    ]
    assert (code, report["healthy"], [n["status"] for n in report["nodes"]]) == (0, True, ["healthy"] * 2)


def test_a_node_check_that_hangs_is_cancelled_and_drains_its_node(
    slurm: Slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slurm.hanging.add("h100-1")
    code, report, _ = _run(slurm, tmp_path, capsys, "--nodes", "h100-0,h100-1")
    reason = "clusterfab-health: GPU: health check did not finish within 180s"
    assert slurm.steps() == [
        ["scontrol", "show", "nodes", "-o"],
        reserve("h100-0,h100-1"),
        check_of("h100-0"),
        check_of("h100-1"),
        ["scancel", f"--name={RESERVATION}", "--nodelist=h100-1"],  # its job, not the others'
        *RELEASE,
        drain("h100-1", reason),
    ]
    assert code == 1
    assert [(n["node"], n["status"], n["reason"], n["detail"]) for n in report["nodes"]] == [
        ("h100-0", "healthy", None, "no partner for the NCCL test"),
        ("h100-1", "failed", reason, None),
    ]


def test_a_reservation_still_in_use_is_deleted_once_its_jobs_end(
    slurm: Slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slurm.busy_deletes = 2
    code, _, err = _run(slurm, tmp_path, capsys, "--nodes", "h100-0,h100-1")
    deletes = [c for c in slurm.commands if c[:2] == ["scontrol", "delete"]]
    assert deletes == [RELEASE[1]] * 3
    assert slurm.sleeps == [2, 2]
    assert (code, err) == (0, "")


def test_a_measurement_that_is_not_one_world_still_releases_and_blames_no_node(
    slurm: Slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slurm.one_world = False
    code, report, err = _run(slurm, tmp_path, capsys, "--nodes", "h100-0,h100-1")
    error = (
        "all_reduce_perf ran 8 rank(s) on 2 host(s), not one test of 16 ranks on 2 nodes: "
        "/opt/nccl-tests/build/all_reduce_perf must be built with MPI=1 and its MPI must take its world "
        "from srun --mpi=pmix"
    )
    assert slurm.steps()[-2:] == RELEASE  # released, and no node drained
    assert (code, report["error"], report["healthy"]) == (2, error, False)
    assert [(n["status"], n["detail"]) for n in report["nodes"]] == [
        ("healthy", "DCGM passed; NCCL test not measured (see the error)")
    ] * 2
    assert err == f"clusterfab health: NCCL test not measured: {error}\n"


def test_a_reservation_slurm_refuses_touches_no_node(
    slurm: Slurm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slurm.reserve_error = "Error creating the reservation: Requested nodes are busy"
    code, report, err = _run(slurm, tmp_path, capsys)
    assert slurm.commands == [["scontrol", "show", "nodes", "-o"], reserve("h100-0,h100-1,h100-2,h100-3")]
    assert (code, report) == (2, None)
    assert err == (
        "clusterfab health: could not reserve the nodes: Error creating the reservation: "
        "Requested nodes are busy\n"
    )


# ----------------------------------------------------------------------------------------- the node check
NODE_PROGRAM = REPO / "playbooks/roles/slurm_node/files/clusterfab_slurm_health.py"
NVIDIA_SMI = """#!/bin/sh
case "$*" in
  *--query-gpu*) i=0; while [ $i -lt 8 ]; do echo "$i, 00000000:5$i:00.0, 0"; i=$((i + 1)); done ;;
  "nvlink -e") exit 3 ;;
esac
"""
"""Eight healthy GPUs (`index, pci.bus_id, uncorrected ECC` rows) without NVLink counters."""
SCONTROL = """#!/bin/sh
printf '%s\\n' "$*" >> "$(dirname "$0")/scontrol.log"
"""


def test_the_node_check_keeps_its_state_and_log_where_its_settings_say(tmp_path: Path) -> None:
    """As root under slurmd, state in /var/lib/clusterfab-slurm-health, log in /var/log/slurm; here both
    under a temporary root through the settings file (/etc/default/clusterfab-slurm-health)."""
    root = tmp_path / "root"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("nvidia-smi", NVIDIA_SMI), ("scontrol", SCONTROL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (root / "var/log/slurm").mkdir(parents=True)
    kmsg = tmp_path / "kmsg"
    kmsg.write_text(
        "6,1,1000,-;Linux version 6.8.0\n"
        "3,7,7000,-;NVRM: Xid (PCI:0000:53:00): 79, pid=1101234, GPU has fallen off the bus.\n"
    )
    settings = tmp_path / "clusterfab-slurm-health"
    settings.write_text(
        f"CLUSTERFAB_HEALTH_STATE_DIR={root}/var/lib/clusterfab-slurm-health\n"
        f"CLUSTERFAB_HEALTH_LOG={root}/var/log/slurm/clusterfab-health.log\n"
        f"CLUSTERFAB_HEALTH_KMSG={kmsg}\n"
    )
    done = subprocess.run(
        [sys.executable, str(NODE_PROGRAM)],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "CLUSTERFAB_HEALTH_CONFIG": str(settings),
             "SLURMD_NODENAME": "h100-3", "SLURM_JOB_ID": "42", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    reason = "clusterfab-health: XID: 79 on GPU 0000:53:00.0"
    assert done.returncode == 1, done.stderr
    assert (bin_dir / "scontrol.log").read_text() == f"update NodeName=h100-3 State=DRAIN Reason={reason}\n"
    state = root / "var/lib/clusterfab-slurm-health"
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert sorted(p.name for p in state.iterdir()) == ["xid-h100-3.json", "xid-h100-3.json.lock"]
    assert json.loads((state / "xid-h100-3.json").read_text()) == {"boot_id": boot, "seq": 7}
    [line] = (root / "var/log/slurm/clusterfab-health.log").read_text().splitlines()
    assert re.fullmatch(
        rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d h100-3 job 42 prolog \(dcgm level 1, \d+\.\d+s\): {reason}", line
    ), line
    assert done.stderr == line.split(" ", 1)[1] + "\n"


def test_the_node_checks_root_paths_are_the_documented_ones() -> None:
    """Where slurmd's root run keeps state and log unless the settings file says otherwise."""
    text = NODE_PROGRAM.read_text()
    assert '    "CLUSTERFAB_HEALTH_STATE_DIR": "/var/lib/clusterfab-slurm-health",\n' in text
    assert '    "CLUSTERFAB_HEALTH_LOG": "/var/log/slurm/clusterfab-health.log",\n' in text
    assert 'CONFIG = "/etc/default/clusterfab-slurm-health"\n' in text
