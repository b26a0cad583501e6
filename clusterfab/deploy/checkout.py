"""The git commit of the checkout clusterfab runs from, as health records and promotion bind it.

A health check proves something about the code that built and configured the nodes; `promote` then
updates the target from the code at hand. Both name the commit, `-dirty` when tracked or untracked
(not ignored) files differ from it, so a check of edited code never passes for a clean commit.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from clusterfab.core.errors import UsageError


def _git(root: Path, *args: str) -> str:
    git = shutil.which("git")
    if git is None:
        raise UsageError("git is not installed: health records and promotion name the commit they ran from")
    proc = subprocess.run(
        [git, "-C", str(root), *args], capture_output=True, text=True, check=False, timeout=60
    )
    if proc.returncode != 0:
        message = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        raise UsageError(
            f"{root} is not a git checkout with a commit ({message}): health checks and promotion run "
            "from a committed checkout"
        )
    return proc.stdout


def checkout_commit(root: Path) -> str:
    """The commit at HEAD of the checkout around `root`, with `-dirty` when it has local changes."""
    head = _git(root, "rev-parse", "--verify", "HEAD").strip()
    changed = _git(root, "status", "--porcelain", "--untracked-files=normal").strip()
    return f"{head}-dirty" if changed else head
