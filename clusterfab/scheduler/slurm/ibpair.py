"""The deep check's InfiniBand step between the two nodes of a pair: perftest's `ib_write_bw`.

Standard library only: shipped beside the deep check (bin/clusterfab_slurm_ibpair.py, hostvars'
health_files) and imported by it on the controller.

Azure's node health checks (Azure/azurehpc-health-checks @ 0e0a1ac, customTests/azure_ib_write_bw_gdr.nhc)
run ib_write_bw from GPU memory on every HCA at once, HCA i with GPU i (`--use_cuda=i`) on out-of-band
port 18510 + i, 8 MiB messages, `-x 0 -F --report_gbits --perform_warm_up`, NUMA-bound to the HCA's
node, the server first and the client 5 s later, and read the client's `BW average[Gb/sec]` of the
8 MiB row; they loop each HCA back to itself and have no test between two nodes. Here the server runs on
the pair's first node and the client on the second: one srun of one task per HCA on each node, each
task picks its HCA (SLURM_LOCALID) among the node's ports whose link layer is InfiniBand (AzNHC's
determine_IB_devices) and its role from SLURM_NODEID. Each client line is prefixed with its HCA, so the
eight interleaved tables can be told apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

SECONDS = 120
"""The bound of one pair's run: perftest's default 5000 iterations of 8 MiB take about a second per HCA
at 400 Gb/s; the rest is CUDA start-up, the client's wait and srun's own."""
SERVER_WAIT = 5
"""Seconds the clients wait for the servers to listen (AzNHC's SLEEP_TIME)."""
MISSING = "clusterfab-ib-pair: missing"

SCRIPT = r"""
i=${SLURM_LOCALID:?}; hcas=()
for d in "$6"/class/infiniband/*; do
  [ "$(cat "$d/ports/1/link_layer" 2>/dev/null)" = InfiniBand ] && hcas+=("${d##*/}")
done
dev=${hcas[$i]:-}
if [ -z "$dev" ]; then
  echo "clusterfab-ib-pair: $(hostname) has no InfiniBand HCA $i (${#hcas[@]} found)" >&2; exit 3
fi
if ! command -v "$2" >/dev/null; then echo "clusterfab-ib-pair: missing $2 on $(hostname)" >&2; exit 127; fi
bind=(); node=$(cat "$6/class/infiniband/$dev/device/numa_node" 2>/dev/null)
if command -v numactl >/dev/null && [[ $node =~ ^[0-9]+$ ]]; then bind=(numactl -N "$node" -m "$node"); fi
run=("${bind[@]}" "$2" -d "$dev" -p $(($3 + i)) -s "$4" -x 0 -F --report_gbits --perform_warm_up)
run+=(--use_cuda="$i")
if [ "${SLURM_NODEID:?}" = 0 ]; then exec "${run[@]}" >/dev/null; fi
sleep "$5"
"${run[@]}" "$1" | while IFS= read -r line; do printf '%s: %s\n' "$dev" "$line"; done
exit "${PIPESTATUS[0]}"
""".strip()
"""$1 the server's address, $2 ib_write_bw, $3 the first port, $4 the message size, $5 the wait, $6 sysfs."""


def command(server: str, program: str, settings: Mapping[str, Any], sysfs: str = "/sys") -> list[str]:
    """What each task of a pair's srun runs (the server's address is the first node's); `sysfs` is
    where the node's HCAs are listed (a test's fake tree)."""
    return [
        "bash",
        "-c",
        SCRIPT,
        "clusterfab-ib-pair",
        server,
        program,
        str(settings["first_port"]),
        str(settings["message_size_bytes"]),
        str(SERVER_WAIT),
        sysfs,
    ]


_LINE = re.compile(r"^(\S+): (.*)$")


def parse(text: str, message_size: int) -> dict[str, float]:
    """HCA -> the client's average bandwidth in Gb/s of `message_size` (perftest's RESULT_FMT_G header
    `#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]`, the column AzNHC reads); an
    HCA whose table has no such row, or is not in Gb/sec (run without --report_gbits), is left out."""
    gbits: dict[str, bool] = {}
    found: dict[str, float] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        hca, fields = match.group(1), match.group(2).split()
        if fields[:1] == ["#bytes"]:
            gbits[hca] = "average[Gb/sec]" in fields
        elif gbits.get(hca) and len(fields) >= 4 and fields[0] == str(message_size):
            try:
                found.setdefault(hca, float(fields[3]))
            except ValueError:
                continue
    return dict(sorted(found.items()))


def missing_program(text: str) -> str | None:
    """The script's words when ib_write_bw is not on a node (a fault of the setup, not of the node)."""
    for line in text.splitlines():
        if MISSING in line:
            return line[line.index(MISSING) + len("clusterfab-ib-pair: ") :].strip()
    return None


def last_words(ran_stderr: str, ran_stdout: str) -> str:
    """Why a run failed: the script's own last line when it wrote one, else the last line (srun's own
    `srun: error: ...` lines follow a task's)."""
    lines = (ran_stderr or ran_stdout).strip().splitlines()
    own = [line for line in lines if line.startswith("clusterfab-ib-pair: ")]
    return (own or lines or [""])[-1]


def shortfall(
    measured: Mapping[str, float], hcas: int, floor: float | None, names: Sequence[str]
) -> str | None:
    """None when every HCA was measured and reached the floor (or there is no floor), else what is wrong:
    the HCAs below the floor, or those the run did not measure."""
    pair = f"({names[0]} and {names[1]})"
    if len(measured) < hcas:
        return f"ib_write_bw measured {len(measured)} of {hcas} HCAs {pair}"
    if floor is None:
        return None
    slow = [f"{hca} {gbps:g}" for hca, gbps in measured.items() if gbps < floor]
    if not slow:
        return None
    return f"ib_write_bw Gb/s {', '.join(slow)} below floor {floor:g} {pair}"
