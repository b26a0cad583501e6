"""The metric names the real node exporter exposes, read from a running one: Debian bookworm's 1.5.0 and
trixie's 1.9.0, which bracket the Ubuntu 24.04 build (1.7.0) the GPU nodes and the monitoring host run.

Two runs: the default collectors on this machine (file systems, NICs, disks, CPU, memory), and the
infiniband and mountstats collectors over a small fake /sys and /proc holding an RDMA port (the files
the kernel's InfiniBand class exposes) and an NFS mount (a /proc/self/mountstats entry).
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from tests.monitoring import tools

_PORT_COUNTERS = (
    "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery", "local_link_integrity_errors",
    "multicast_rcv_packets", "multicast_xmit_packets", "port_rcv_constraint_errors", "port_rcv_data",
    "port_rcv_discards", "port_rcv_errors", "port_rcv_packets", "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors", "port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards",
    "port_xmit_packets", "port_xmit_wait", "symbol_error", "unicast_rcv_packets", "unicast_xmit_packets",
    "VL15_dropped",
)  # fmt: skip
_MOUNTSTATS = """device 10.20.255.2:/share mounted on /mnt/share with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.1,rsize=1048576,wsize=1048576,namlen=255,acregmin=3,acregmax=60,hard,proto=tcp,timeo=600,retrans=2,sec=sys
\tage:\t3600
\tcaps:\tcaps=0x3ffbffff,wtmult=512,dtsize=1048576,bsize=0,namlen=255
\tsec:\tflavor=1,pseudoflavor=1
\tevents:\t1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27
\tbytes:\t100 200 300 400 500 600 700 800
\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)
\txprt:\ttcp 832 1 1 0 11 6428 6428 0 12154 0 24 26 5726
\tper-op statistics
\t        NULL: 0 0 0 0 0 0 0 0
\t        READ: 1298 1298 0 207680 1210292152 6 79386 79407
\t       WRITE: 0 0 0 0 0 0 0 0
"""

_MOUNTINFO = """24 1 259:1 / / rw,relatime shared:1 - ext4 /dev/root rw
90 24 0:50 / /mnt/share rw,relatime shared:60 - nfs4 10.20.255.2:/share rw,vers=4.1,addr=10.20.255.2
"""


def fake_trees(root: Path) -> tuple[Path, Path]:
    """(sysfs, procfs) with one RDMA port and one NFS mount."""
    sysfs, procfs = root / "sys", root / "proc"
    device = sysfs / "class" / "infiniband" / "mlx5_0"
    port = device / "ports" / "1"
    (port / "counters").mkdir(parents=True)
    (device / "fw_ver").write_text("28.39.1002\n")
    (device / "board_id").write_text("GOOG0000000001\n")
    (device / "hca_type").write_text("MT4129\n")
    (port / "state").write_text("4: ACTIVE\n")
    (port / "phys_state").write_text("5: LinkUp\n")
    (port / "rate").write_text("400 Gb/sec (4X NDR)\n")
    for counter in _PORT_COUNTERS:
        (port / "counters" / counter).write_text("7\n")
    # mlx5 devices (GCP's MRDMA NICs) must also have hw_counters, or the collector skips the device.
    (port / "hw_counters").mkdir()
    for counter in (
        "np_ecn_marked_roce_packets",
        "out_of_sequence",
        "packet_seq_err",
        "local_ack_timeout_err",
    ):
        (port / "hw_counters" / counter).write_text("3\n")
    pid = procfs / "4242"
    pid.mkdir(parents=True)
    (procfs / "self").symlink_to("4242")
    (pid / "mountstats").write_text(_MOUNTSTATS)
    (pid / "mountinfo").write_text(_MOUNTINFO)
    return sysfs, procfs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape_names(args: Sequence[str], suite: str = tools.NEWEST) -> set[str]:
    port = _free_port()
    binary = tools.tool(suite, "prometheus-node-exporter")
    process = subprocess.Popen(
        [str(binary), f"--web.listen-address=127.0.0.1:{port}", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                    text = response.read().decode()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("the node exporter did not answer")
    finally:
        process.terminate()
        process.wait(timeout=10)
    return set(re.findall(r"^# TYPE (\S+) ", text, re.M))


def node_exporter_names(scratch: Path, suite: str = tools.NEWEST) -> set[str]:
    sysfs, procfs = fake_trees(scratch)
    names = scrape_names([], suite)
    names |= scrape_names(
        [
            "--collector.disable-defaults",
            "--collector.infiniband",
            "--collector.mountstats",
            f"--path.sysfs={sysfs}",
            f"--path.procfs={procfs}",
        ],
        suite,
    )
    return names
