"""Names: stable logical names for children and physical names within each cloud's limits.

Logical names are `<component name>-<role>`: never list indexes, so adding a node group or a subnet
never renames (and thereby replaces) another resource. Physical names, where a cloud needs one, are
built from the same parts and shortened with a stable hash when they exceed the cloud's limit.
"""

from __future__ import annotations

import hashlib
import re

GCP_NAME_MAX = 63
"""RFC 1035 names on GCP: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63 characters."""


def child(name: str, role: str) -> str:
    """The logical name of a component's child: `trainers` + `lt` -> `trainers-lt`."""
    return f"{name}-{role}"


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
