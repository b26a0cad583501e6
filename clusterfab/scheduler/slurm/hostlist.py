"""Slurm hostlist expressions (`trainers-[0-7]`), the compact form slurm.conf and gres.conf use."""

from __future__ import annotations

import re
from collections.abc import Sequence

_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_RANGE = re.compile(r"(?P<prefix>[A-Za-z0-9._-]*)\[(?P<ranges>[0-9,-]+)\](?P<suffix>[A-Za-z0-9._-]*)")


def hostlist(prefix: str, count: int, start: int = 0) -> str:
    """The nodes `prefix-start` .. `prefix-(start+count-1)` as one hostlist expression."""
    if count < 1:
        raise ValueError(f"a hostlist needs at least one node, not {count}")
    last = start + count - 1
    return f"{prefix}-{start}" if count == 1 else f"{prefix}-[{start}-{last}]"


def join(expressions: Sequence[str]) -> str:
    """Several hostlist expressions as one (Slurm accepts a comma-separated list)."""
    return ",".join(expressions)


def expand(expression: str) -> list[str]:
    """A hostlist expression (`trainers-[0-3,7],b-1`) as node names, in order, each once; ValueError for
    anything else. One bracket per name, as the node names `hostlist` writes have."""
    names: list[str] = []
    for part in _split_outside_brackets(expression):
        match = _RANGE.fullmatch(part)
        if match is None:
            if not _NODE_NAME.fullmatch(part):
                raise ValueError(f"{part!r} is not a node name or a hostlist like trainers-[0-3]")
            names.append(part)
            continue
        for span in match["ranges"].split(","):
            first, _, last = span.partition("-")
            if not first.isdigit() or (last and not last.isdigit()) or (last and int(last) < int(first)):
                raise ValueError(f"{span!r} in {part!r} is not a range like 0-3")
            width = len(first) if first.startswith("0") else 0
            for number in range(int(first), int(last or first) + 1):
                names.append(f"{match['prefix']}{number:0{width}d}{match['suffix']}")
    return list(dict.fromkeys(names))


def _split_outside_brackets(expression: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in expression:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    if depth != 0 or any(not p for p in parts):
        raise ValueError(f"{expression!r} is not a hostlist like trainers-[0-3],login-0")
    return parts
