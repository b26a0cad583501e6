"""Hosts for the Slurm roles: a copy of the golden root file system, a playbook applied to it twice
through the chroot connection (the second run must change nothing), and what the tests read back."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterfab.provision.runner import PlaybookResult, run_playbook
from tests.slurm.rootfs import GoldenRootfs

PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"


@dataclass
class HostRun:
    root: Path
    extravars: dict[str, Any]
    first: PlaybookResult
    second: PlaybookResult

    def path(self, inside: str) -> Path:
        return self.root / inside.lstrip("/")

    def chroot(self, *argv: str, timeout: float = 60) -> str:
        return subprocess.run(
            ["chroot", str(self.root), *argv], capture_output=True, text=True, check=True, timeout=timeout
        ).stdout

    def assert_converged(self) -> None:
        """The first run succeeded and changed the host; the second succeeded and changed nothing."""
        assert self.first.succeeded, self.first.failed_tasks
        assert self.first.hosts["node"].changed > 0
        assert self.second.succeeded, self.second.failed_tasks
        assert self.second.hosts["node"].changed == 0


def copy_golden(golden: GoldenRootfs, dest: Path) -> Path:
    subprocess.run(["cp", "-a", "--reflink=auto", str(golden.path), str(dest)], check=True, timeout=600)
    return dest


def debian_version(root: Path, package: str) -> str:
    """The installed package's version string."""
    return subprocess.run(
        ["chroot", str(root), "dpkg-query", "-W", "-f=${Version}", package],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def inventory(root: Path) -> dict[str, Any]:
    return {
        "all": {
            "hosts": {
                "node": {
                    "ansible_host": str(root),
                    "ansible_connection": "community.general.chroot",
                    "ansible_python_interpreter": "/usr/bin/python3",
                }
            }
        }
    }


def apply_twice(
    root: Path, playbook: str, extravars: dict[str, Any], tags: list[str] | None = None
) -> HostRun:
    """`playbook` (under playbooks/) applied to `root` twice with the same extravars."""

    def once() -> PlaybookResult:
        return run_playbook(PLAYBOOKS / playbook, inventory=inventory(root), extravars=extravars, tags=tags)

    first = once()
    return HostRun(root, extravars, first, once())
