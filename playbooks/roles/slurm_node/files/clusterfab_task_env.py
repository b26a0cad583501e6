#!/usr/bin/env python3
"""Slurm's TaskProlog on a GPU node: every task gets the node's NCCL fabric environment.

The fabric roles (efa, gpudirect_tcpx, gpudirect_tcpxo, infiniband, rdma_gib) write what NCCL needs to use
the node's fabric (the network plugin's library directory, the interfaces, the vendor's tuned values) to
one login-shell profile, /etc/profile.d/nccl-fabric.sh. Slurm starts a task without a login shell, with
the environment of the host the job was submitted from (a login node, which has no fabric), so without
this a job's NCCL would not load the plugin and would fall back to plain sockets.

slurmstepd runs this program as the job's user before each task, with the task's environment, and applies
the `export NAME=value` lines it prints (slurm.conf(5), TaskProlog). What the job sets itself wins: a
variable the task already has keeps its value, and the profile's library and command directories go in
front of the task's own. Standard library only: it runs on the node's python3.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping

PROFILE = "/etc/profile.d/nccl-fabric.sh"
"""Where every fabric role writes its profile (their `*_nccl_profile_path` default)."""
SEARCH_PATHS = ("LD_LIBRARY_PATH", "PATH")
"""Colon-separated lists: the profile's entries are put before the task's."""
CLEAN = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"}
"""The environment the profile is read in: what it sets, not what the job has."""
SECONDS = 10
"""A profile that does not finish in this time is skipped: the task starts without it."""


MARK = b"clusterfab-task-env-sourced"
"""Printed between the environment before and after the profile, in the one bash that reads both."""


def _environments(profile: str) -> tuple[dict[str, str], dict[str, str]]:
    """The environment of a clean bash before and after it sources the profile."""
    # `exit` last: bash would exec a last `env` in its own place, one shell level down (SHLVL differs).
    script = f'env -0; printf "%s\\0" {MARK.decode()}; . "$1" >/dev/null 2>&1 </dev/null; env -0; exit'
    # A session of its own: on a timeout the whole group goes, with any child holding the pipe.
    with subprocess.Popen(
        ["/bin/bash", "--noprofile", "--norc", "-c", script, "clusterfab-task-env", profile],
        env=CLEAN,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    ) as proc:
        try:
            out, _ = proc.communicate(timeout=SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    before, _, after = out.partition(b"\0" + MARK + b"\0")
    return _pairs(before), _pairs(after)


def _pairs(text: bytes) -> dict[str, str]:
    pairs = (entry.split(b"=", 1) for entry in text.split(b"\0") if b"=" in entry)
    return {name.decode(errors="replace"): value.decode(errors="replace") for name, value in pairs}


def profile_changes(profile: str) -> dict[str, str]:
    """The variables sourcing the profile sets or changes, with their values."""
    before, after = _environments(profile)
    changed = {name: value for name, value in after.items() if before.get(name) != value}
    for name in SEARCH_PATHS:
        if name in changed:
            kept = set(before.get(name, "").split(":"))
            changed[name] = ":".join(d for d in changed[name].split(":") if d and d not in kept)
    return changed


def exports(changes: Mapping[str, str], task: Mapping[str, str]) -> Iterator[str]:
    """The TaskProlog lines giving a task with environment `task` the profile's changes."""
    for name, value in sorted(changes.items()):
        if "\n" in value or not name.isidentifier() or name in {"_", "PWD", "OLDPWD", "SHLVL"}:
            continue  # slurmstepd reads one line per variable
        if name in SEARCH_PATHS:
            added = [d for d in value.split(":") if d]
            current = [d for d in task.get(name, "").split(":") if d]
            merged = added + [d for d in current if d not in added]
            if merged != current:
                yield f"export {name}={':'.join(merged)}"
        elif name not in task:
            yield f"export {name}={value}"


def main() -> int:
    if not os.access(PROFILE, os.R_OK):
        return 0  # a node without a fabric: nothing to add
    try:
        changes = profile_changes(PROFILE)
    except (OSError, subprocess.SubprocessError) as err:
        # The task still starts; its output says why it has no fabric environment.
        print(f"print clusterfab-task-env: {PROFILE} was not read ({err}); NCCL may not use the fabric")
        return 0
    for line in exports(changes, os.environ):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
