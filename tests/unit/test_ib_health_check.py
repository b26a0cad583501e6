"""The gpu_healthcheck role's InfiniBand program (its files/clusterfab_ib_health.py) against fake sysfs
trees and a stand-in ib_write_bw: the port checks' exact failures, the parsing of recorded ib_write_bw
output, the GPUDirect loopback's arguments (Azure's node health checks'), its floor, and the reasons it
is skipped. No InfiniBand or GPU is needed.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO
from tests.factories import load_program

PROGRAM = REPO / "playbooks" / "roles" / "gpu_healthcheck" / "files" / "clusterfab_ib_health.py"
RECORDED = REPO / "tests" / "fixtures" / "perftest" / "ib_write_bw-gdr-report-gbits.txt"
RESULT_FMT_G = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
"""perftest 23.10.0-0.29 src/perftest_parameters.h RESULT_FMT_G, verbatim."""
RESULT_FMT = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
"""The same file's RESULT_FMT (ib_write_bw without --report_gbits)."""


def report_row(size: int, iterations: int, peak: float, average: float, rate: float) -> str:
    """A result row as perftest prints it: REPORT_FMT " %-7lu    %-10" PRIu64 "       %-7.2lf
    %-7.2lf\\t\\t   %-7.6lf" (same file)."""
    return f" {size:<7}    {iterations:<10}       {peak:<7.2f}            {average:<7.2f}\t\t   {rate:<7.6f}"


def single_size(average: float) -> str:
    """ib_write_bw -s 8388608 --report_gbits: the table of one message size."""
    dashes = "-" * 87
    return (
        f"{dashes}\n{RESULT_FMT_G}\n{report_row(8388608, 5000, average + 0.2, average, 0.005843)}\n{dashes}\n"
    )


@pytest.fixture(scope="module")
def ib() -> ModuleType:
    return load_program("clusterfab_ib_health", PROGRAM)


def hca(root: Path, device: str, *, state: str = "4: ACTIVE", phys: str = "5: LinkUp",
        rate: str = "400 Gb/sec (4X NDR)", link_layer: str = "InfiniBand") -> None:  # fmt: skip
    """A device's port 1 as the kernel's InfiniBand class shows it."""
    port = root / "sys" / "class" / "infiniband" / device / "ports" / "1"
    port.mkdir(parents=True)
    for name, value in (("state", state), ("phys_state", phys), ("rate", rate), ("link_layer", link_layer)):
        (port / name).write_text(f"{value}\n")


def nd_v5(root: Path, hcas: int = 8) -> Path:
    """An ND H100 v5 node: mlx5_ib0..7 at 400 Gb/s and the Ethernet accelerated networking NIC."""
    for index in range(hcas):
        hca(root, f"mlx5_ib{index}")
    hca(root, "mlx5_an0", rate="100 Gb/sec (2X EDR)", link_layer="Ethernet")
    return root


def test_a_healthy_node_passes(ib: ModuleType, tmp_path: Path) -> None:
    result = ib.check_ports(nd_v5(tmp_path), hcas=8, gbps=400)
    assert result["status"] == "pass"
    assert result["failures"] == []
    assert result["message"] == "8 InfiniBand HCAs, every port 4: ACTIVE, 5: LinkUp, 400 Gb/sec"
    assert [p["device"] for p in result["ports"]] == [f"mlx5_ib{i}" for i in range(8)]
    assert result["ports"][0] == {
        "device": "mlx5_ib0",
        "state": "4: ACTIVE",
        "phys_state": "5: LinkUp",
        "rate": "400 Gb/sec (4X NDR)",
    }


def test_each_bad_port_is_named(ib: ModuleType, tmp_path: Path) -> None:
    for index in (0, 1, 2, 5, 6, 7):
        hca(tmp_path, f"mlx5_ib{index}")
    hca(tmp_path, "mlx5_ib3", state="1: DOWN", phys="3: Disabled")
    hca(tmp_path, "mlx5_ib4", phys="7: PhyTest", rate="200 Gb/sec (4X HDR)")
    result = ib.check_ports(tmp_path, hcas=8, gbps=400)
    assert result["status"] == "fail"
    assert result["failures"] == [
        "mlx5_ib3 port 1: state is 1: DOWN, expected 4: ACTIVE",
        "mlx5_ib3 port 1: physical state is 3: Disabled, expected 5: LinkUp",
        "mlx5_ib4 port 1: physical state is 7: PhyTest, expected 5: LinkUp",
        "mlx5_ib4 port 1: rate is 200 Gb/sec (4X HDR), expected 400 Gb/sec",
    ]
    assert result["message"] == "; ".join(result["failures"])


def test_a_missing_hca_fails_the_count(ib: ModuleType, tmp_path: Path) -> None:
    result = ib.check_ports(nd_v5(tmp_path, hcas=7), hcas=8, gbps=400)
    assert result["failures"] == [
        "found 7 InfiniBand HCAs (mlx5_ib0, mlx5_ib1, mlx5_ib2, mlx5_ib3, mlx5_ib4, mlx5_ib5, mlx5_ib6), "
        "expected 8"
    ]


def test_gb300_ports_must_run_at_800(ib: ModuleType, tmp_path: Path) -> None:
    for index in range(4):
        hca(tmp_path, f"mlx5_{index}", rate="800 Gb/sec (4X XDR)" if index else "400 Gb/sec (4X NDR)")
    assert ib.check_ports(tmp_path, hcas=4, gbps=800)["failures"] == [
        "mlx5_0 port 1: rate is 400 Gb/sec (4X NDR), expected 800 Gb/sec"
    ]


def test_no_infiniband_class_fails(ib: ModuleType, tmp_path: Path) -> None:
    result = ib.check_ports(tmp_path, hcas=8, gbps=400)
    assert result["failures"] == [f"no {tmp_path}/sys/class/infiniband: no InfiniBand driver is loaded"]
    assert result["ports"] == []


def test_an_unreadable_state_file_is_a_failure(ib: ModuleType, tmp_path: Path) -> None:
    nd_v5(tmp_path, hcas=1)
    (tmp_path / "sys/class/infiniband/mlx5_ib0/ports/1/state").unlink()
    assert ib.check_ports(tmp_path, hcas=1, gbps=400)["failures"] == [
        "mlx5_ib0 port 1: state is unreadable (No such file or directory), expected 4: ACTIVE"
    ]


def test_the_recorded_gpudirect_run_parses(ib: ModuleType) -> None:
    text = RECORDED.read_text()
    assert ib.parse_write_bw(text) == 92.39
    assert ib.parse_write_bw(text, 65536) == 92.38
    assert ib.parse_write_bw(text, 1 << 30) is None


def test_the_single_size_table_parses(ib: ModuleType) -> None:
    assert report_row(8388608, 5000, 392.3, 392.08, 0.005843) == (
        " 8388608    5000             392.30             392.08 \t\t   0.005843"
    )
    assert ib.parse_write_bw(single_size(392.08)) == 392.08


def test_a_table_in_megabytes_is_not_read_as_gigabits(ib: ModuleType) -> None:
    text = f"{RESULT_FMT}\n{report_row(8388608, 5000, 11025.44, 11024.71, 0.001314)}\n"
    assert ib.parse_write_bw(text) is None


# The stand-in ib_write_bw: `--help` lists --use_cuda (or not, with FAKE_NO_CUDA); a server (no address at
# the end) waits for its client's file; a client writes its arguments and prints <device>.out.
FAKE = """#!/usr/bin/python3
import os, sys, time
from pathlib import Path
state = Path(os.environ["FAKE_DIR"])
args = sys.argv[1:]
if args == ["--help"]:
    print("Usage:\\n  ib_write_bw            start a server and wait for connection")
    if not os.environ.get("FAKE_NO_CUDA"):
        print(" --use_cuda=<cuda device id> Use CUDA specific device for GPUDirect RDMA testing")
    sys.exit(0)
device = args[args.index("-d") + 1]
if args[-1] != "127.0.0.1":
    (state / f"{device}.server").write_text(" ".join(args))
    time.sleep(30)
    sys.exit(0)
(state / f"{device}.client").write_text(" ".join(args))
out = state / f"{device}.out"
if not out.exists():
    print("Couldn't connect to 127.0.0.1:18510", file=sys.stderr)
    sys.exit(1)
print(out.read_text(), end="")
"""
NUMACTL = """#!/bin/bash
echo "$@" >> "$FAKE_DIR/numactl"
shift 4
exec "$@"
"""


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ib: ModuleType) -> Path:
    """A PATH with the stand-in ib_write_bw (and numactl with `numactl=True` tests), FAKE_DIR its state."""
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    _executable(bin_dir / "ib_write_bw", FAKE)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_DIR", str(state))
    monkeypatch.setattr(ib, "SERVER_START_S", 0.0)
    return state


def gpu_node(root: Path, hcas: int = 8) -> Path:
    nd_v5(root, hcas)
    (root / "dev").mkdir()
    (root / "dev" / "nvidia0").write_text("")
    return root


def test_the_loopback_runs_azure_s_arguments_on_every_hca(
    ib: ModuleType, tools: Path, tmp_path: Path
) -> None:
    root = gpu_node(tmp_path / "root")
    for index in range(8):
        (tools / f"mlx5_ib{index}.out").write_text(single_size(390.0 + index))
    result = ib.check_gdr(root, binary="ib_write_bw", floor=380.0, message_size=8388608, timeout=30)
    assert result["status"] == "pass", result
    assert result["message"] == "lowest 390 Gbps (mlx5_ib0) of 8 HCAs >= the floor 380 Gbps"
    assert [(h["device"], h["gpu"], h["gbps"]) for h in result["hcas"]] == [
        (f"mlx5_ib{i}", i, 390.0 + i) for i in range(8)
    ]
    # customTests/azure_ib_write_bw_gdr.nhc: -p <18510+i> -s 8388608 -x 0 -F --report_gbits
    # --perform_warm_up --use_cuda=<i> -d <device>, the client against this host.
    assert (tools / "mlx5_ib3.server").read_text() == (
        "-p 18513 -s 8388608 -x 0 -F --report_gbits --perform_warm_up --use_cuda=3 -d mlx5_ib3"
    )
    assert (tools / "mlx5_ib3.client").read_text() == (
        "-p 18513 -s 8388608 -x 0 -F --report_gbits --perform_warm_up --use_cuda=3 -d mlx5_ib3 127.0.0.1"
    )
    assert not (tools / "mlx5_an0.client").exists()


def test_an_hca_below_the_floor_fails(ib: ModuleType, tools: Path, tmp_path: Path) -> None:
    root = gpu_node(tmp_path / "root", hcas=2)
    (tools / "mlx5_ib0.out").write_text(single_size(392.08))
    (tools / "mlx5_ib1.out").write_text(single_size(351.5))
    result = ib.check_gdr(root, binary="ib_write_bw", floor=360.0, message_size=8388608, timeout=30)
    assert result["status"] == "fail"
    assert result["failures"] == ["mlx5_ib1 (GPU 1): 351.5 Gbps, below the floor of 360 Gbps"]


def test_a_failed_run_and_a_missing_row_fail(ib: ModuleType, tools: Path, tmp_path: Path) -> None:
    root = gpu_node(tmp_path / "root", hcas=2)
    (tools / "mlx5_ib1.out").write_text(RECORDED.read_text().replace("8388608 ", "8388607 "))
    result = ib.check_gdr(root, binary="ib_write_bw", floor=380.0, message_size=8388608, timeout=30)
    assert result["failures"] == [
        "mlx5_ib0 (GPU 0): ib_write_bw exited 1: Couldn't connect to 127.0.0.1:18510",
        "mlx5_ib1 (GPU 1): no 8388608-byte result in ib_write_bw's output",
    ]


def test_without_a_floor_the_bandwidth_is_reported(ib: ModuleType, tools: Path, tmp_path: Path) -> None:
    root = gpu_node(tmp_path / "root", hcas=1)
    (tools / "mlx5_ib0.out").write_text(single_size(92.0))
    result = ib.check_gdr(root, binary="ib_write_bw", floor=None, message_size=8388608, timeout=30)
    assert (result["status"], result["message"]) == (
        "pass",
        "lowest 92 Gbps (mlx5_ib0) of 1 HCAs (no floor for this machine type)",
    )


def test_the_run_is_pinned_to_the_hca_s_numa_node(ib: ModuleType, tools: Path, tmp_path: Path) -> None:
    root = gpu_node(tmp_path / "root", hcas=1)
    (root / "sys/class/infiniband/mlx5_ib0/device").mkdir()
    (root / "sys/class/infiniband/mlx5_ib0/device/numa_node").write_text("1\n")
    _executable(Path(os.environ["PATH"].split(":")[0]) / "numactl", NUMACTL)
    (tools / "mlx5_ib0.out").write_text(single_size(395.0))
    result = ib.check_gdr(root, binary="ib_write_bw", floor=380.0, message_size=8388608, timeout=30)
    assert result["status"] == "pass", result
    assert (tools / "numactl").read_text().splitlines()[0].split()[:5] == [
        "-N",
        "1",
        "-m",
        "1",
        "ib_write_bw",
    ]


def test_the_loopback_is_skipped_without_the_tool_a_gpu_or_cuda(
    ib: ModuleType, tools: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = gpu_node(tmp_path / "root")

    def reason(binary: str = "ib_write_bw") -> tuple[str, str]:
        result = ib.check_gdr(root, binary=binary, floor=380.0, message_size=8388608, timeout=30)
        return result["status"], result["message"]

    assert reason("/opt/perftest/ib_write_bw") == (
        "skipped",
        "/opt/perftest/ib_write_bw not found (perftest is not installed): GPUDirect loopback not measured",
    )
    monkeypatch.setenv("FAKE_NO_CUDA", "1")
    fake = Path(os.environ["PATH"].split(":")[0]) / "ib_write_bw"
    assert reason() == (
        "skipped",
        f"{fake} is built without CUDA (no --use_cuda in its --help): GPUDirect loopback not measured",
    )
    (root / "dev" / "nvidia0").unlink()
    assert reason() == (
        "skipped",
        f"no NVIDIA GPU ({root}/dev/nvidia0 is missing): GPUDirect loopback not measured",
    )


def test_the_program_prints_one_verdict_and_exits_1_on_a_failure(tools: Path, tmp_path: Path) -> None:
    root = nd_v5(tmp_path / "root", hcas=7)
    argv = [sys.executable, str(PROGRAM), "--root", str(root), "--expected-hcas", "8",
            "--gbps-per-port", "400", "--min-gdr-gbps", "380"]  # fmt: skip
    run = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    assert run.returncode == 1, run.stderr
    verdict = json.loads(run.stdout)
    assert sorted(verdict) == ["ib_ports", "ib_write_bw_gdr"]
    assert verdict["ib_ports"]["status"] == "fail"
    assert verdict["ib_write_bw_gdr"] == {
        "status": "skipped",
        "min_gbps": 380.0,
        "message_size_bytes": 8388608,
        "message": f"no NVIDIA GPU ({root}/dev/nvidia0 is missing): GPUDirect loopback not measured",
    }
    only_ports = subprocess.run([*argv[:2], "--checks", "ib_ports", *argv[2:8]],
                                capture_output=True, text=True, check=False, timeout=60)  # fmt: skip
    assert json.loads(only_ports.stdout)["ib_write_bw_gdr"] == {
        "status": "skipped",
        "message": "not asked for",
    }
