"""Contracts between components: what storage offers to the nodes that mount it.

Any storage component (FSx for Lustre, Managed Lustre, Filestore) produces a `MountTarget`, and any
compute component consumes a list of them, so compute never needs to know which storage it mounts.
The node software (user-data, Ansible) receives the resolved values as `clusterfab.bootstrap.Mount`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from clusterfab.core.vocab import MountFsType


@dataclass(frozen=True)
class MountTarget:
    """A file system as its clients see it."""

    name: str
    """The storage's name (what the node software calls the mount)."""
    fs_type: MountFsType
    source: pulumi.Output[str]
    """What `mount -t <fs_type>` takes: `<nid>@tcp:/<fsname>` for Lustre, `<ip>:/<share>` for NFS."""
    mount_point: str
    options: str
