"""Resources laid out as text for a terminal: short type tokens, lines cut to the width."""

from __future__ import annotations


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
