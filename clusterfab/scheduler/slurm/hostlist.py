"""Slurm hostlist expressions (`trainers-[0-7]`), the compact form slurm.conf and gres.conf use."""

from __future__ import annotations

from collections.abc import Sequence


def hostlist(prefix: str, count: int, start: int = 0) -> str:
    """The nodes `prefix-start` .. `prefix-(start+count-1)` as one hostlist expression."""
    if count < 1:
        raise ValueError(f"a hostlist needs at least one node, not {count}")
    last = start + count - 1
    return f"{prefix}-{start}" if count == 1 else f"{prefix}-[{start}-{last}]"


def join(expressions: Sequence[str]) -> str:
    """Several hostlist expressions as one (Slurm accepts a comma-separated list)."""
    return ",".join(expressions)
