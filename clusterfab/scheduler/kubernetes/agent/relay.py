"""Kueue's own metrics, relayed: the controller's endpoint wants a token authorized for the non-resource
URL /metrics, which the agent has and a cluster's Prometheus may not; so the agent serves Kueue's
`kueue_*` families (their HELP and TYPE lines and samples, as Kueue wrote them) after its own."""

from __future__ import annotations

import re

PREFIX = "kueue_"
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def kueue_families(text: str) -> str:
    """The lines of `text` that belong to a `kueue_*` family; Go runtime, controller-runtime and
    workqueue families (which the scrape of the agent itself would mislabel) are dropped."""
    kept: list[str] = []
    for line in text.splitlines():
        if line.startswith(("# HELP ", "# TYPE ")):
            words = line.split(maxsplit=3)
            name = words[2] if len(words) > 2 else ""
        elif line.startswith("#") or not line.strip():
            continue
        else:
            match = _NAME.match(line)
            name = match.group(0) if match else ""
        if name.startswith(PREFIX):
            kept.append(line)
    return "".join(f"{line}\n" for line in kept)
