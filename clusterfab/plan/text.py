"""Resources laid out as text for a terminal: short type tokens, lines cut or wrapped to the width."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence


def short_type(token: str) -> str:
    """A type token without its module file: `aws:ec2/launchTemplate:LaunchTemplate` is
    `aws:ec2:LaunchTemplate` (the JSON keeps the full token)."""
    parts = token.split(":")
    if len(parts) == 3 and "/" in parts[1]:
        return f"{parts[0]}:{parts[1].split('/')[0]}:{parts[2]}"
    return token


def fit(text: str, width: int) -> str:
    """`text` cut to `width` columns, an ellipsis where it was cut."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def type_column(types: Sequence[str], names: Sequence[str], width: int, *, margin: int) -> int:
    """How wide the type column of `type  name` rows is: its longest type, cut (never below 20) so that
    the longest name still fits whole in `width` after `margin` columns of marks and gaps."""
    longest = max((len(t) for t in types), default=20)
    return max(20, min(longest, width - margin - max((len(n) for n in names), default=0)))


def wrap(text: str, width: int, *, first: str = "", rest: str = "  ") -> list[str]:
    """`text` wrapped to `width` columns (at least 40), `first` before its first line and `rest` before
    the others; paths and names with hyphens are not split."""
    return textwrap.wrap(
        text,
        width=max(width, 40),
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )
