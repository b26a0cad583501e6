"""Physical names of cloud resources: built from stable parts, within each cloud's limits, shortened with
a stable hash when they exceed them. Shared by the components and the hosts' settings that must name the
same resource (a controller finds its accounting database by name)."""

from __future__ import annotations

import hashlib
import re

GCP_NAME_MAX = 63
"""RFC 1035 names on GCP: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63 characters."""


def physical(*parts: str, max_length: int = GCP_NAME_MAX) -> str:
    """A cloud resource name from `parts`, lowercase, hyphenated, shortened with a hash if needed."""
    joined = "-".join(p for p in parts if p)
    cleaned = re.sub(r"[^a-z0-9-]+", "-", joined.lower()).strip("-")
    cleaned = re.sub(r"-{2,}", "-", cleaned)
    if not cleaned or not cleaned[0].isalpha():
        cleaned = f"c-{cleaned}"
    if len(cleaned) <= max_length:
        return cleaned
    digest = hashlib.sha256(joined.encode()).hexdigest()[:8]
    return f"{cleaned[: max_length - 9].rstrip('-')}-{digest}"
