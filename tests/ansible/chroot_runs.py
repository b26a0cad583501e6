"""Running playbooks into chroots through clusterfab's runner, shared by the chroot tests.

Kept out of conftest.py so test modules can import it by a unique name (``from conftest import``
breaks as soon as another directory grows a conftest.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chroot_testbed

from clusterfab.provision.runner import PlaybookEvent, PlaybookResult, run_playbook
from tests.timings import section

# Durations collected by the fixtures; printed at the end of the session (tests/timings.py).
TIMINGS = section("clusterfab Ansible timings")


@dataclass
class NodeRun:
    """One variant applied twice to its own copy of the golden root file system."""

    variant: str
    rootfs: Path
    extravars: dict[str, Any]
    first: PlaybookResult
    second: PlaybookResult
    first_events: list[PlaybookEvent] = field(repr=False)

    def path(self, inside: str) -> Path:
        """A path inside the node's root file system."""
        return self.rootfs / inside.lstrip("/")


def chroot_inventory(rootfs: Path) -> dict[str, Any]:
    """Inventory with one alias host whose chroot is ``rootfs``.

    The alias matters: with the path itself as hostname, ansible-runner's fact cache tries to
    write a file named after it and fails on the slashes.
    """
    return {
        "all": {
            "hosts": {
                "node": {
                    "ansible_host": str(rootfs),
                    "ansible_connection": "community.general.chroot",
                    "ansible_python_interpreter": "/usr/bin/python3",
                }
            }
        }
    }


def run_in_chroot(
    playbook: str,
    rootfs: Path,
    extravars: dict[str, Any],
    *,
    tags: list[str] | None = None,
    on_event: Callable[[PlaybookEvent], None] | None = None,
) -> PlaybookResult:
    """Run a playbook from playbooks/ into ``rootfs`` through the clusterfab runner."""
    return run_playbook(
        chroot_testbed.PLAYBOOKS_DIR / playbook,
        inventory=chroot_inventory(rootfs),
        extravars=extravars,
        tags=tags,
        on_event=on_event,
    )
