"""The cluster's Linux accounts for the teams' users: one name, one uid on every host.

Slurm runs a job's tasks as the submitting user's numeric uid on every node it allocates, and munge
credentials carry that uid: a user must have the same uid on the login nodes, the controller and every
GPU node, or their job fails (or runs as somebody else). The cloud images have no directory service, so
the uid is derived from the name alone (every host computes the same one with no shared state) in a
range no distribution or cloud agent allocates from (Ubuntu's adduser: 1000-59999 by default, here
20000-49999 with collisions settled in name order).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

FIRST_UID = 20000
UID_SPAN = 30000


def user_ids(names: Iterable[str]) -> dict[str, int]:
    """Each user's uid (and the gid of their own group), stable for a name whatever else changes,
    unless two names hash alike: then the later name (sorted) takes the next free uid."""
    taken: set[int] = set()
    ids: dict[str, int] = {}
    for name in sorted(set(names)):
        offset = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") % UID_SPAN
        while FIRST_UID + offset in taken:
            offset = (offset + 1) % UID_SPAN
        taken.add(FIRST_UID + offset)
        ids[name] = FIRST_UID + offset
    return ids
