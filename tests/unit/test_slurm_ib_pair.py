"""The deep check's InfiniBand step (clusterfab/scheduler/slurm/ibpair.py, run by healthcheck.py): the
recorded ib_write_bw output it reads, the script each srun task runs (on a fake sysfs tree with a fake
ib_write_bw), the srun it issues for a pair, and its verdicts through the program's main() with a fake
Slurm."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from clusterfab.catalog.query import load_catalog
from clusterfab.scheduler.slurm import healthcheck, ibpair
from clusterfab.scheduler.slurm.hostvars import health_files
from tests.conftest import REPO
from tests.factories import example_spec
from tests.json_contract import check_document

PERFTEST = REPO / "tests/fixtures/perftest/ib_write_bw-gdr-report-gbits.txt"
"""A recorded client side of a two-host GPUDirect ib_write_bw run (tests/fixtures/perftest/SOURCES.md):
92.39 Gb/sec average at 8388608 B."""
MIB8 = 8388608


def _client(hca: str, text: str) -> str:
    """A client's lines as the script prints them: each prefixed with its HCA."""
    return "".join(f"{hca}: {line}\n" for line in text.splitlines())


# ------------------------------------------------------------------------------------------ parsing
def test_parse_reads_each_hcas_8_mib_average_from_the_recorded_run() -> None:
    recorded = PERFTEST.read_text()
    both = _client("mlx5_ib1", recorded) + _client("mlx5_ib0", recorded)
    assert ibpair.parse(both, MIB8) == {"mlx5_ib0": 92.39, "mlx5_ib1": 92.39}
    # The same run's 64 KiB row (peak 92.39, average 92.38): the average column, not the peak.
    assert ibpair.parse(both, 65536) == {"mlx5_ib0": 92.38, "mlx5_ib1": 92.38}


def test_parse_leaves_out_tables_not_in_gbits_and_lines_of_no_hca() -> None:
    """Without --report_gbits perftest's header reads MB/sec (RESULT_FMT): not the unit of the floor."""
    mbytes = (
        "#bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
        "8388608    5000             11548.75            11548.61              0.001377\n"
    )
    assert ibpair.parse(_client("mlx5_ib0", mbytes) + PERFTEST.read_text(), MIB8) == {}


def test_missing_program_and_last_words_pick_the_scripts_own_lines() -> None:
    stderr = (
        "clusterfab-ib-pair: missing ib_write_bw on h100-1\n"
        "srun: error: h100-1: task 2: Exited with exit code 127\n"
    )
    assert ibpair.missing_program(stderr) == "missing ib_write_bw on h100-1"
    assert ibpair.missing_program("srun: error: h100-1: task 2: Exited with exit code 1\n") is None
    assert ibpair.last_words(stderr, "") == "clusterfab-ib-pair: missing ib_write_bw on h100-1"
    assert ibpair.last_words("", "Couldn't connect to h100-0:18510\n") == "Couldn't connect to h100-0:18510"


# ------------------------------------------------------------------------------ the task's script
@pytest.fixture
def node(tmp_path: Path) -> Path:
    """A node's sysfs (Azure's Ethernet mlx5_an0 beside two InfiniBand HCAs, no NUMA node known) and an
    ib_write_bw that records its arguments and prints the recorded client output."""
    for device, layer in (("mlx5_an0", "Ethernet"), ("mlx5_ib0", "InfiniBand"), ("mlx5_ib1", "InfiniBand")):
        port = tmp_path / "sys/class/infiniband" / device / "ports/1"
        port.mkdir(parents=True)
        (port / "link_layer").write_text(f"{layer}\n")
        (tmp_path / "sys/class/infiniband" / device / "device").mkdir()
        (tmp_path / "sys/class/infiniband" / device / "device/numa_node").write_text("-1\n")
    program = tmp_path / "ib_write_bw"
    program.write_text(f'#!/bin/bash\nprintf "%s\\n" "$@" > {tmp_path}/argv\ncat {PERFTEST}\n')
    program.chmod(0o755)
    return tmp_path


def _task(root: Path, program: str, node_id: int, local_id: int) -> subprocess.CompletedProcess[str]:
    argv = ["bash", "-c", ibpair.SCRIPT, "clusterfab-ib-pair", "h100-0", program, "18510", str(MIB8), "0"]
    env = {**os.environ, "SLURM_NODEID": str(node_id), "SLURM_LOCALID": str(local_id)}
    command = [*argv, str(root / "sys")]
    return subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=30)


def test_the_client_task_runs_azs_gpudirect_flags_on_its_hca_and_labels_its_lines(node: Path) -> None:
    done = _task(node, str(node / "ib_write_bw"), node_id=1, local_id=1)
    assert (done.returncode, done.stderr) == (0, "")
    # Task 1 takes the second InfiniBand HCA (mlx5_an0 is Ethernet), GPU 1 and port 18510 + 1.
    assert (node / "argv").read_text().split() == [
        "-d", "mlx5_ib1", "-p", "18511", "-s", "8388608", "-x", "0", "-F", "--report_gbits",
        "--perform_warm_up", "--use_cuda=1", "h100-0",
    ]  # fmt: skip
    assert done.stdout == _client("mlx5_ib1", PERFTEST.read_text())
    assert ibpair.parse(done.stdout, MIB8) == {"mlx5_ib1": 92.39}


def test_the_server_task_listens_without_an_address_and_prints_nothing(node: Path) -> None:
    done = _task(node, str(node / "ib_write_bw"), node_id=0, local_id=0)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert (node / "argv").read_text().split() == [
        "-d", "mlx5_ib0", "-p", "18510", "-s", "8388608", "-x", "0", "-F", "--report_gbits",
        "--perform_warm_up", "--use_cuda=0",
    ]  # fmt: skip


def test_a_missing_hca_or_program_is_said_in_the_scripts_words(node: Path) -> None:
    host = socket.gethostname()
    done = _task(node, str(node / "ib_write_bw"), node_id=1, local_id=2)
    assert (done.returncode, done.stderr) == (
        3,
        f"clusterfab-ib-pair: {host} has no InfiniBand HCA 2 (2 found)\n",
    )
    done = _task(node, str(node / "absent"), node_id=1, local_id=0)
    assert (done.returncode, done.stderr) == (
        127,
        f"clusterfab-ib-pair: missing {node / 'absent'} on {host}\n",
    )


# ------------------------------------------------------------------------------ the srun of a pair
SETTINGS = {
    "hcas": 2,
    "message_size_bytes": MIB8,
    "first_port": 18510,
    "min_gbps": None,
    "floor_source": None,
}


def test_the_pair_runs_one_task_per_hca_on_each_node_with_the_server_on_the_first() -> None:
    seen: list[list[str]] = []

    def runner(argv: Sequence[str], timeout: float) -> healthcheck.Ran:
        seen.append([*argv, f"timeout={timeout:g}"])
        return healthcheck.Ran(
            0, _client("mlx5_ib0", PERFTEST.read_text()) + _client("mlx5_ib1", PERFTEST.read_text()), ""
        )

    groups = {"h100": {"ib_write_bw": SETTINGS}}
    check = healthcheck.Check(level=1, groups=groups, runner=runner, reservation="clusterfab-health-1")
    pair = [
        healthcheck.Node("h100-0", "IDLE", "train", 8, "10.1.0.4"),
        healthcheck.Node("h100-1", "IDLE", "train", 8),
    ]
    check.verdicts = {n.name: healthcheck.Verdict(n.name) for n in pair}
    assert check.ib_pair(pair) is None  # no floor: measured, not judged
    assert seen == [
        [
            "srun",
            "--reservation=clusterfab-health-1",
            "--partition=train",
            "--nodelist=h100-0,h100-1",
            "--nodes=2",
            "--ntasks-per-node=2",
            "--exclusive",
            "--job-name=clusterfab-health-1",
            "--time=2",  # 120 s
            "--extra=healthchecks_prolog=off,healthchecks_epilog=off",
            "--gres=gpu:8",
            "--kill-on-bad-exit=1",
            "bash",
            "-c",
            ibpair.SCRIPT,
            "clusterfab-ib-pair",
            "10.1.0.4",  # the first node's NodeAddr: the server
            "ib_write_bw",
            "18510",
            "8388608",
            "5",
            "/sys",
            "timeout=135",  # the run's 120 s and the grace
        ]
    ]
    assert check.verdicts["h100-1"].ib_write_bw == {
        "partner": "h100-0",
        "gbps": {"mlx5_ib0": 92.39, "mlx5_ib1": 92.39},
        "floor_gbps": None,
    }


# ----------------------------------------------------------------------- verdicts through main()
NODES = (
    "NodeName=h100-0 NodeAddr=10.1.0.4 Gres=gpu:8 State=IDLE Partitions=train\n"
    "NodeName=h100-1 NodeAddr=10.1.0.5 Gres=gpu:8 State=IDLE Partitions=train\n"
    "NodeName=h100-2 NodeAddr=10.1.0.6 Gres=gpu:8 State=IDLE Partitions=train\n"
)
SLOW_ROW = "8388608    5000             45.20              45.17              0.000673\n"
"""A slow HCA's 8 MiB row, in RESULT_FMT_G's columns as the recorded run prints them."""


class FakeSlurm:
    """scontrol and srun as the check calls them: every node passes DCGM, the NCCL test has no floor, and
    ib_write_bw reads the recorded run on every HCA but mlx5_ib1 of `slow` (45.17 Gb/s)."""

    def __init__(
        self, slow: str | None = None, ib_stderr: str = "", ib_rc: int = 0, nodes: str = NODES
    ) -> None:
        self.slow, self.ib_stderr, self.ib_rc, self.nodes = slow, ib_stderr, ib_rc, nodes
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], timeout: float) -> healthcheck.Ran:
        self.calls.append(list(argv))
        if list(argv[:3]) == ["scontrol", "show", "nodes"]:
            return healthcheck.Ran(0, self.nodes, "")
        if "bash" not in argv:
            return self.other(argv)
        if self.ib_rc:
            return healthcheck.Ran(self.ib_rc, "", self.ib_stderr)
        nodes = next(a for a in argv if a.startswith("--nodelist=")).removeprefix("--nodelist=").split(",")
        recorded = PERFTEST.read_text()
        slow = recorded.replace(recorded.splitlines()[-2] + "\n", SLOW_ROW)
        second = slow if self.slow in nodes else recorded
        return healthcheck.Ran(0, _client("mlx5_ib0", recorded) + _client("mlx5_ib1", second), "")

    def other(self, argv: Sequence[str]) -> healthcheck.Ran:
        if healthcheck.NODE_PROGRAM in argv:
            return healthcheck.Ran(0, '{"failures": []}\n', "")
        if "/opt/nccl-tests/build/all_reduce_perf" in argv:
            nodes = (
                next(a for a in argv if a.startswith("--nodelist=")).removeprefix("--nodelist=").split(",")
            )
            # nccl-tests' `# Using devices` lines: one world of both nodes (src/common.cu's format)
            table = "".join(
                f"#  Rank {r:2d} Group  0 Pid {4000 + r:6d} on {nodes[r // 8]:>10s} device {r % 8:2d}"
                " [0000:8f:00] NVIDIA H100 80GB HBM3\n"
                for r in range(16)
            )
            return healthcheck.Ran(
                0, table + (REPO / "tests/fixtures/health/nccl-tests-all_gather-a3mega.txt").read_text(), ""
            )
        return healthcheck.Ran(0, "", "")

    def drains(self) -> list[list[str]]:
        return [c for c in self.calls if c[:2] == ["scontrol", "update"]]


def _main(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], slurm: FakeSlurm, floor: float | None
) -> tuple[int, dict[str, object]]:
    """The program's main() with a healthcheck.json of one InfiniBand group: its exit status and its JSON
    report (checked against the documented contract)."""
    settings = {**SETTINGS, "min_gbps": floor, "floor_source": "tests" if floor else None}
    config = {
        "groups": {
            "h100": {
                "machine_type": "Standard_ND96isr_H100_v5",
                "min_pair_busbw_gbytes_per_s": None,
                "floor_source": None,
                "ib_write_bw": settings,
            }
        }
    }
    (tmp_path / "healthcheck.json").write_text(json.dumps(config))
    status = healthcheck.main(
        ["--level", "1", "--json", "--config", str(tmp_path / "healthcheck.json")], runner=slurm
    )
    report: dict[str, object] = json.loads(capsys.readouterr().out)
    check_document(report, "health")
    return status, report


def test_a_node_with_an_hca_below_the_floor_is_blamed_after_a_retry_and_drained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pairs (h100-0, h100-1) and (h100-2, h100-0); the second is slow, so h100-2 is run again with
    h100-0, known good, and alone is drained."""
    slurm = FakeSlurm(slow="h100-2")
    status, report = _main(tmp_path, capsys, slurm, floor=90.0)
    reason = "clusterfab-health: PERF: ib_write_bw Gb/s mlx5_ib1 45.17 below floor 90 (h100-2 and h100-0)"
    assert status == 1
    assert slurm.drains() == [["scontrol", "update", "NodeName=h100-2", "State=DRAIN", f"Reason={reason}"]]
    ib_runs = [c for c in slurm.calls if "bash" in c]
    assert [c[3] for c in ib_runs] == [
        "--nodelist=h100-0,h100-1",
        "--nodelist=h100-2,h100-0",
        "--nodelist=h100-2,h100-0",
    ]
    assert [c[c.index("clusterfab-ib-pair") + 1] for c in ib_runs] == ["10.1.0.4", "10.1.0.6", "10.1.0.6"]
    nodes = {n["node"]: n for n in report["nodes"]}  # type: ignore[attr-defined]
    assert (nodes["h100-2"]["status"], nodes["h100-2"]["reason"]) == ("failed", reason)
    assert nodes["h100-2"]["ib_write_bw"] == {
        "partner": "h100-0",
        "gbps": {"mlx5_ib0": 92.39, "mlx5_ib1": 45.17},
        "floor_gbps": 90.0,
    }
    assert nodes["h100-0"]["ib_write_bw"] == {
        "partner": "h100-1",
        "gbps": {"mlx5_ib0": 92.39, "mlx5_ib1": 92.39},
        "floor_gbps": 90.0,
    }
    assert [nodes[n]["status"] for n in ("h100-0", "h100-1")] == ["healthy", "healthy"]


def test_without_a_floor_the_bandwidth_is_reported_and_no_node_is_drained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slurm = FakeSlurm(slow="h100-2")
    status, report = _main(tmp_path, capsys, slurm, floor=None)
    assert (status, slurm.drains()) == (0, [])
    nodes = {n["node"]: n for n in report["nodes"]}  # type: ignore[attr-defined]
    assert nodes["h100-2"]["ib_write_bw"] == {
        "partner": "h100-0",
        "gbps": {"mlx5_ib0": 92.39, "mlx5_ib1": 45.17},
        "floor_gbps": None,
    }
    assert healthcheck.text_report(report).splitlines()[-1] == (
        " " * 36 + "ib_write_bw Gb/s with h100-0: mlx5_ib0 92.39, mlx5_ib1 45.17 (no floor in the catalog)"
    )


def test_a_missing_ib_write_bw_is_the_checks_error_and_blames_no_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stderr = (
        "clusterfab-ib-pair: missing ib_write_bw on h100-1\n"
        "srun: error: h100-1: task 2: Exited with exit code 127\n"
    )
    slurm = FakeSlurm(ib_rc=127, ib_stderr=stderr)
    status, report = _main(tmp_path, capsys, slurm, floor=90.0)
    assert (status, slurm.drains()) == (2, [])
    assert (
        report["error"]
        == "missing ib_write_bw on h100-1: the InfiniBand pair test needs perftest's ib_write_bw (with CUDA)"
    )
    assert [(n["status"], n["detail"], "ib_write_bw" in n) for n in report["nodes"]] == [  # type: ignore[attr-defined]
        ("healthy", "DCGM passed; ib_write_bw not measured (see the error)", False)
    ] * 3


def test_a_failed_run_blames_the_pair_with_the_scripts_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two nodes, no node known good to retry with: both carry the verdict, as in the NCCL step."""
    stderr = (
        "clusterfab-ib-pair: h100-1 has no InfiniBand HCA 1 (1 found)\n"
        "srun: error: h100-1: task 3: Exited with exit code 3\n"
    )
    slurm = FakeSlurm(ib_rc=3, ib_stderr=stderr, nodes="".join(NODES.splitlines(keepends=True)[:2]))
    status, report = _main(tmp_path, capsys, slurm, floor=None)
    reason = (
        "clusterfab-health: PERF: ib_write_bw failed (exit 3): clusterfab-ib-pair: h100-1 has no InfiniBand"
        " HCA 1 (1 found) (h100-0 and h100-1)"
    )
    assert status == 1
    assert [c[2] for c in slurm.drains()] == ["NodeName=h100-0", "NodeName=h100-1"]
    assert [n["reason"] for n in report["nodes"]] == [reason, reason]  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ the catalog's part
def test_the_catalog_gives_infiniband_types_the_step_with_no_floor_and_others_none() -> None:
    catalog = load_catalog()
    ib = catalog.pair_bandwidth.ib_write_bw
    # AzNHC has no test between two nodes, so no machine type has a floor (software.yaml).
    assert ib.per_machine_type == {}
    assert ib.settings(catalog.azure.machine_types["Standard_ND96isr_H100_v5"]) == {
        "ib_write_bw": {
            "hcas": 8,
            "message_size_bytes": 8388608,
            "first_port": 18510,
            "min_gbps": None,
            "floor_source": None,
        }
    }
    assert ib.settings(catalog.azure.machine_types["Standard_ND96is_H100_v5"]) == {}
    assert ib.settings(catalog.gcp_machine_types["a3-megagpu-8g"]) == {}


def test_the_controller_archive_ships_the_module_beside_the_program_and_no_step_without_infiniband() -> None:
    files = health_files(example_spec("aws-p5-slurm"), load_catalog().pair_bandwidth)
    assert (
        files["bin/clusterfab_slurm_ibpair.py"] == (REPO / "clusterfab/scheduler/slurm/ibpair.py").read_text()
    )
    # p5.48xlarge's fabric is EFA: its group has no InfiniBand step.
    assert [sorted(g) for g in json.loads(files["healthcheck.json"])["groups"].values()] == [
        ["floor_source", "machine_type", "min_pair_busbw_gbytes_per_s"]
    ]
