"""Hint text shared by the rules: near matches and short lists of valid values."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(value: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The candidate closest to `value`, if any is close enough to be a likely typo; letter case does
    not count (`AWS` is `aws`, `zonal` is `ZONAL`)."""
    pool = list(candidates)
    by_case = {c.casefold(): c for c in pool}
    if value.casefold() in by_case:
        return by_case[value.casefold()]
    matches = difflib.get_close_matches(value.casefold(), list(by_case), n=1, cutoff=cutoff)
    return by_case[matches[0]] if matches else None


def listing(values: Iterable[object], limit: int = 8) -> str:
    """'a, b, c' or 'a, b, c, … (12 more)'."""
    items = [str(v) for v in values]
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f", … ({len(items) - limit} more)"


def did_you_mean(value: str, candidates: Iterable[str], *, what: str = "", cutoff: float = 0.6) -> str:
    """'did you mean X?' when a candidate is close, else the valid values."""
    pool = list(candidates)
    near = closest(value, pool, cutoff)
    if near is not None:
        return f"did you mean '{near}'?"
    prefix = f"{what}: " if what else "use one of: "
    return prefix + listing(pool) if pool else ""
