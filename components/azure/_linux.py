"""What every Azure Linux VM of the cluster shares, scale-set node or Slurm host: boot text base64-encoded
as custom and user data take it, and an administrator who logs in with an SSH key only."""

from __future__ import annotations

import base64
import re

import pulumi
from pulumi_azure_native import compute

_USERNAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")


def encoded(script: str) -> str:
    """`script` as custom data and user data carry it (base64)."""
    return base64.b64encode(script.encode()).decode()


def username_problems(username: str) -> list[tuple[str, str]]:
    """An administrator name Linux would refuse, or root."""
    if not _USERNAME.fullmatch(username) or username == "root":
        return [("admin_username", f"'{username}' is not a usable Linux user name")]
    return []


def linux_login(user: str, ssh_public_key: pulumi.Input[str]) -> compute.LinuxConfigurationArgs:
    """SSH keys only (no password), and the VM agent: Run Command needs it, and it brings IPoIB up on the HPC
    images (OS.EnableRDMA=y in waagent.conf, learn.microsoft.com/azure/virtual-machines/extensions/
    enable-infiniband)."""
    return compute.LinuxConfigurationArgs(
        disable_password_authentication=True,
        provision_vm_agent=True,
        ssh=compute.SshConfigurationArgs(
            public_keys=[
                compute.SshPublicKeyArgs(path=f"/home/{user}/.ssh/authorized_keys", key_data=ssh_public_key)
            ]
        ),
    )
