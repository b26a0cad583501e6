"""Slurm hostlist expressions (`trainers-[0-7]`), the compact form slurm.conf and gres.conf use."""

from __future__ import annotations

from collections.abc import Sequence


def hostlist(prefix: str, count: int) -> str:
    """The nodes `prefix-0` .. `prefix-(count-1)` as one hostlist expression."""
    if count < 1:
        raise ValueError(f"a hostlist needs at least one node, not {count}")
    return f"{prefix}-0" if count == 1 else f"{prefix}-[0-{count - 1}]"


def join(expressions: Sequence[str]) -> str:
    """Several hostlist expressions as one (Slurm accepts a comma-separated list)."""
    return ",".join(expressions)
