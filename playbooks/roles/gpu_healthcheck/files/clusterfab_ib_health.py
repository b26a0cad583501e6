#!/usr/bin/python3
"""clusterfab's InfiniBand checks of a GPU node, the gpu_healthcheck role's `ib_ports` and
`ib_write_bw_gdr`, in the style of Azure's node health checks (Azure/azurehpc-health-checks, "AzNHC").
Standard library only: it runs with the node's own python3.

- ib_ports: the node has as many InfiniBand HCAs as its machine type (AzNHC's one `check_hw_ib` line per
  HCA), and port 1 of every one reads state `4: ACTIVE`, phys_state `5: LinkUp` and the machine type's
  rate (`400 Gb/sec (4X NDR)`) under /sys/class/infiniband/<device>/ports/1/. An RDMA device whose port's
  link_layer is not InfiniBand is not an HCA of the fabric (Azure's accelerated networking NIC, mlx5_an0,
  is Ethernet); AzNHC's determine_IB_devices skips those the same way.
- ib_write_bw_gdr: AzNHC's `check_ib_bw_gdr`: `ib_write_bw` from a GPU buffer (`--use_cuda=<i>`, the i-th
  HCA with the i-th GPU) back to the same HCA through a server and a client on this node, 8 MiB messages,
  every HCA at once, NUMA-pinned to the HCA's node when numactl is there; the client's average bandwidth
  in Gbps (`--report_gbits`) must reach the machine type's floor. Skipped, with the reason, when
  ib_write_bw is missing or built without CUDA, or the node shows no NVIDIA GPU.

Every path is read under --root (default /), so a test can hand it a fake sysfs tree. Prints one JSON
document {"ib_ports": {...}, "ib_write_bw_gdr": {...}} (each with status pass, fail or skipped, and
message) and exits 1 when a check failed, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ACTIVE = "4: ACTIVE"
LINK_UP = "5: LinkUp"
MESSAGE_SIZE = 8388608
"""AzNHC's message size (customTests/azure_ib_write_bw_gdr.nhc MESSAGE_SIZE)."""
FIRST_PORT = 18510
"""AzNHC's first out-of-band port; HCA i uses FIRST_PORT + i."""
SERVER_START_S = 2.0
"""How long the servers get to listen before the clients connect (AzNHC sleeps 5 s)."""


@dataclass(frozen=True)
class Port:
    device: str
    state: str
    phys_state: str
    rate: str

    @property
    def gbps(self) -> float | None:
        """The rate file's Gb/s ("400 Gb/sec (4X NDR)" -> 400.0); None when it reads otherwise."""
        first = self.rate.split(" ", 1)[0]
        try:
            return float(first)
        except ValueError:
            return None


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as error:
        return f"unreadable ({error.strerror})"


def infiniband_ports(root: Path) -> list[Port] | None:
    """Port 1 of every RDMA device whose link layer is InfiniBand, by device name; None without the
    /sys/class/infiniband class (no RDMA driver loaded)."""
    base = root / "sys" / "class" / "infiniband"
    if not base.is_dir():
        return None
    ports = []
    for device in sorted(p.name for p in base.iterdir()):
        port = base / device / "ports" / "1"
        if _read(port / "link_layer") != "InfiniBand":
            continue
        ports.append(Port(device, _read(port / "state"), _read(port / "phys_state"), _read(port / "rate")))
    return ports


def port_failures(ports: Sequence[Port], *, hcas: int, gbps: int) -> list[str]:
    """What is wrong with the node's ports, one sentence each; empty when all is well."""
    failures = []
    if len(ports) != hcas:
        names = ", ".join(p.device for p in ports) or "none"
        failures.append(f"found {len(ports)} InfiniBand HCAs ({names}), expected {hcas}")
    for port in ports:
        where = f"{port.device} port 1"
        if port.state != ACTIVE:
            failures.append(f"{where}: state is {port.state}, expected {ACTIVE}")
        if port.phys_state != LINK_UP:
            failures.append(f"{where}: physical state is {port.phys_state}, expected {LINK_UP}")
        if port.gbps != gbps:
            failures.append(f"{where}: rate is {port.rate}, expected {gbps} Gb/sec")
    return failures


def check_ports(root: Path, *, hcas: int, gbps: int) -> dict[str, Any]:
    ports = infiniband_ports(root)
    if ports is None:
        failures = [f"no {root / 'sys/class/infiniband'}: no InfiniBand driver is loaded"]
    else:
        failures = port_failures(ports, hcas=hcas, gbps=gbps)
    passed = f"{hcas} InfiniBand HCAs, every port {ACTIVE}, {LINK_UP}, {gbps} Gb/sec"
    return {
        "status": "fail" if failures else "pass",
        "expected_hcas": hcas,
        "expected_gbps_per_port": gbps,
        "ports": [asdict(p) for p in ports or []],
        "failures": failures,
        "message": "; ".join(failures) if failures else passed,
    }


def parse_write_bw(output: str, message_size: int = MESSAGE_SIZE) -> float | None:
    """The average bandwidth in Gb/s of `message_size` in ib_write_bw's result table (perftest's
    RESULT_FMT_G header `#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]`, the column
    AzNHC reads); None when the table has no such row or is not in Gb/sec (run without --report_gbits)."""
    in_gbits = False
    for line in output.splitlines():
        fields = line.split()
        if fields[:1] == ["#bytes"]:
            in_gbits = "average[Gb/sec]" in fields
        elif in_gbits and len(fields) >= 4 and fields[0] == str(message_size):
            try:
                return float(fields[3])
            except ValueError:
                return None
    return None


@dataclass(frozen=True)
class Loopback:
    device: str
    gpu: int
    gbps: float | None
    rc: int | None
    error: str | None


def _numa(root: Path, device: str) -> list[str]:
    """numactl binding the run to the HCA's NUMA node, as AzNHC does; none without numactl or a node."""
    node = _read(root / "sys" / "class" / "infiniband" / device / "device" / "numa_node")
    if shutil.which("numactl") is None or not node.isdigit():
        return []
    return ["numactl", "-N", node, "-m", node]


def _argv(binary: str, device: str, gpu: int, message_size: int) -> list[str]:
    """AzNHC's ib_write_bw arguments (customTests/azure_ib_write_bw_gdr.nhc IB_WRITE_BW_ARGS)."""
    port = str(FIRST_PORT + gpu)
    return [binary, "-p", port, "-s", str(message_size), "-x", "0", "-F", "--report_gbits",
            "--perform_warm_up", f"--use_cuda={gpu}", "-d", device]  # fmt: skip


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_loopbacks(
    root: Path, devices: Sequence[str], *, binary: str, message_size: int, timeout: float
) -> list[Loopback]:
    """Every HCA's loopback at once: the servers first, then a client each against 127.0.0.1."""

    def start(argv: list[str]) -> subprocess.Popen[str]:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)  # fmt: skip

    runs = [(device, gpu, _numa(root, device) + _argv(binary, device, gpu, message_size))
            for gpu, device in enumerate(devices)]  # fmt: skip
    servers = [start(argv) for _, _, argv in runs]
    time.sleep(SERVER_START_S)
    clients = [start([*argv, "127.0.0.1"]) for _, _, argv in runs]
    deadline = time.monotonic() + timeout
    results = []
    for (device, gpu, _), client in zip(runs, clients, strict=True):
        try:
            out, err = client.communicate(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            _stop(client)
            results.append(Loopback(device, gpu, None, None, f"ran past {timeout:g} s"))
            continue
        gbps = parse_write_bw(out, message_size) if client.returncode == 0 else None
        error = None if gbps is not None else (err.strip().splitlines() or ["no result"])[-1]
        results.append(Loopback(device, gpu, gbps, client.returncode, error))
    for server in servers:
        _stop(server)
    return results


def gdr_skip_reason(root: Path, binary: str) -> str | None:
    """Why the loopback cannot run here, or None."""
    found = shutil.which(binary)
    if found is None:
        return f"{binary} not found (perftest is not installed): GPUDirect loopback not measured"
    if not (root / "dev" / "nvidia0").exists():
        return f"no NVIDIA GPU ({root / 'dev/nvidia0'} is missing): GPUDirect loopback not measured"
    try:
        usage = subprocess.run([found, "--help"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{found} --help failed ({error}): GPUDirect loopback not measured"
    if "--use_cuda" not in usage.stdout + usage.stderr:
        return f"{found} is built without CUDA (no --use_cuda in its --help): GPUDirect loopback not measured"
    return None


def loopback_failures(results: Sequence[Loopback], floor: float | None, message_size: int) -> list[str]:
    failures = []
    for run in results:
        where = f"{run.device} (GPU {run.gpu})"
        if run.gbps is None and run.rc not in (0, None):
            failures.append(f"{where}: ib_write_bw exited {run.rc}: {run.error}")
        elif run.gbps is None and run.rc is None:
            failures.append(f"{where}: ib_write_bw {run.error}")
        elif run.gbps is None:
            failures.append(f"{where}: no {message_size}-byte result in ib_write_bw's output")
        elif floor is not None and run.gbps < floor:
            failures.append(f"{where}: {run.gbps:g} Gbps, below the floor of {floor:g} Gbps")
    return failures


def check_gdr(
    root: Path, *, binary: str, floor: float | None, message_size: int, timeout: float
) -> dict[str, Any]:
    ports = infiniband_ports(root) or []
    reason = gdr_skip_reason(root, binary) if ports else "no InfiniBand HCA to measure"
    base: dict[str, Any] = {"min_gbps": floor, "message_size_bytes": message_size}
    if reason is not None:
        return {"status": "skipped", **base, "message": reason}
    devices = [p.device for p in ports]
    results = run_loopbacks(root, devices, binary=binary, message_size=message_size, timeout=timeout)
    failures = loopback_failures(results, floor, message_size)
    measured = [r for r in results if r.gbps is not None]
    if failures:
        message = "; ".join(failures)
    else:
        low = min(measured, key=lambda r: r.gbps or 0.0)
        judged = f">= the floor {floor:g} Gbps" if floor is not None else "(no floor for this machine type)"
        message = f"lowest {low.gbps:g} Gbps ({low.device}) of {len(results)} HCAs {judged}"
    return {
        "status": "fail" if failures else "pass",
        **base,
        "hcas": [asdict(r) for r in results],
        "failures": failures,
        "message": message,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--checks", default="ib_ports,ib_write_bw_gdr", help="comma-separated checks")
    parser.add_argument("--root", default="/", help="where /sys and /dev are read from")
    parser.add_argument("--expected-hcas", type=int, required=True)
    parser.add_argument("--gbps-per-port", type=int, required=True)
    parser.add_argument("--min-gdr-gbps", type=float, default=0.0, help="0: no floor, measured only")
    parser.add_argument("--message-size", type=int, default=MESSAGE_SIZE)
    parser.add_argument("--ib-write-bw", default="ib_write_bw")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds for all loopbacks")
    args = parser.parse_args(argv)
    checks = set(args.checks.split(","))
    root = Path(args.root)
    skipped = {"status": "skipped", "message": "not asked for"}
    report = {
        "ib_ports": check_ports(root, hcas=args.expected_hcas, gbps=args.gbps_per_port)
        if "ib_ports" in checks
        else skipped,
        "ib_write_bw_gdr": check_gdr(
            root,
            binary=args.ib_write_bw,
            floor=args.min_gdr_gbps or None,
            message_size=args.message_size,
            timeout=args.timeout,
        )
        if "ib_write_bw_gdr" in checks
        else skipped,
    }
    print(json.dumps(report, indent=2, sort_keys=True))
    return 1 if any(r["status"] == "fail" for r in report.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
