"""Running totals of what the node programs did, in one JSON file that the Slurm exporter serves.

The sync (root, from its timer) and resume and suspend (SlurmUser, from slurmctld) each add what one run
did, under an exclusive lock, and replace the file whole (a reader never sees half of it); the exporter
only reads. Totals only grow, so Prometheus takes them as counters: a lost file starts them over, which
`increase()` reads as a counter reset, not as a drop.

Layout (format 1)::

    {"format": 1, "programs": {"sync": {"runs": 12, "last_run": 1764000000.0,
                                        "done": {"SetAddress": 3}, "failed": {"Terminate": 1}}}}

`done` and `failed` count actions (the sync: by kind; resume: nodes created, and failed nodes by the
cloud's error code; suspend and resume-fail: instances deleted).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

from . import files

FORMAT = 1


def add(path: str, program: str, done: Mapping[str, int], failed: Mapping[str, int], *, now: float) -> None:
    """Add one run of `program` to the totals in `path`."""
    with _locked(path):
        totals = load(path) or {"format": FORMAT, "programs": {}}
        entry = totals["programs"].setdefault(program, {"runs": 0, "last_run": 0.0, "done": {}, "failed": {}})
        entry["runs"] += 1
        entry["last_run"] = now
        for key, counter in (("done", done), ("failed", failed)):
            for name, count in counter.items():
                if count:
                    entry[key][name] = entry[key].get(name, 0) + int(count)
        files.replace(path, json.dumps(totals, sort_keys=True), 0o644, prefix=".counts-")


def load(path: str) -> dict[str, Any] | None:
    """The totals, or None when there are none yet (or the file is not ours to read)."""
    try:
        with open(path, encoding="utf-8") as handle:
            totals = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(totals, dict) or totals.get("format") != FORMAT:
        return None
    return totals


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    # A lock file beside it (the totals file itself is replaced, so a lock on it would not hold), opened
    # read-only: whichever of root and SlurmUser created it, the other can still lock it.
    fd = os.open(f"{path}.lock", os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
