"""The NCCL all-reduce bus bandwidth across a node pair, run by `clusterfab health` on Kubernetes.

Shipped in a ConfigMap to the pair's pods (NVIDIA's PyTorch container) and started by torchrun on each
node, one process per GPU, both nodes one NCCL world. Rank 0 prints one JSON line: the world's size and
hosts, the message size, the slowest rank's mean time per all-reduce, and the bandwidths as nccl-tests
defines them (NVIDIA/nccl-tests doc/PERFORMANCE.md): algbw = bytes / time, busbw = algbw * 2(n-1)/n for
an all-reduce of n ranks, in GB/s (10^9 bytes). `bytes` is each rank's buffer, nccl-tests' `size`.

Standard library only at import (torch is imported in `main`), so the formula is tested without torch.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import socket
import time
from collections.abc import Sequence
from typing import Any

MARK = "clusterfab_allreduce"
"""The key that tells the result line from anything else on the pod's log."""


def bandwidths(size_bytes: int, seconds: float, ranks: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s of one all-reduce of `size_bytes` per rank over `ranks` ranks."""
    algbw = size_bytes / seconds / 1e9
    return algbw, algbw * 2 * (ranks - 1) / ranks


def result(size_bytes: int, seconds: float, hosts: Sequence[str], correct: bool) -> dict[str, Any]:
    """The line rank 0 prints (`hosts`: each rank's host name, in rank order)."""
    algbw, busbw = bandwidths(size_bytes, seconds, len(hosts))
    return {
        MARK: 1,
        "ranks": len(hosts),
        "hosts": sorted(set(hosts)),
        "bytes": size_bytes,
        "seconds": round(seconds, 6),
        "algbw_gbytes_per_s": round(algbw, 2),
        "busbw_gbytes_per_s": round(busbw, 2),
        "correct": correct,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="NCCL all-reduce bus bandwidth (clusterfab health).")
    parser.add_argument("--bytes", type=int, default=8 << 30, help="each rank's buffer (default 8 GiB)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--timeout", type=int, default=600, help="seconds NCCL may wait for a peer")
    args = parser.parse_args(argv)
    torch: Any = importlib.import_module("torch")
    dist: Any = importlib.import_module("torch.distributed")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl", timeout=dt.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    hosts: list[Any] = [None] * world
    dist.all_gather_object(hosts, socket.gethostname())
    # Correctness on a small buffer: the sum of 1..world on every element.
    check = torch.full((1 << 20,), float(rank + 1), dtype=torch.float32, device="cuda")
    dist.all_reduce(check)
    correct = bool(torch.all(check == world * (world + 1) / 2).item())
    # The timed buffer stays zeros: its sum never overflows, and NCCL moves every byte all the same.
    data = torch.zeros(args.bytes // 4, dtype=torch.float32, device="cuda")
    for _ in range(args.warmup):
        dist.all_reduce(data)
    torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.iters):
        dist.all_reduce(data)
    torch.cuda.synchronize()
    elapsed = torch.tensor([(time.perf_counter() - start) / args.iters], device="cuda")
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the operation takes as long as its slowest rank
    if rank == 0:
        print(json.dumps(result(data.numel() * 4, float(elapsed.item()), hosts, correct)), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
