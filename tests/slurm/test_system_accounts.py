"""The accounts a team user may not be (BP143), checked against a real Debian 13 host with the Slurm,
MUNGE and MariaDB packages installed: every user and group it has is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterfab.core.accounts import system_account
from clusterfab.provision.runner import PlaybookResult, run_playbook
from tests.slurm.hosts import PLAYBOOKS, copy_golden, inventory
from tests.slurm.rootfs import GoldenRootfs

pytestmark = pytest.mark.slurm


def _names(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    return [line.split(":", 1)[0] for line in lines if line and not line.startswith("#")]


def test_every_account_and_group_of_a_slurm_host_is_refused_as_a_team_user(golden: GoldenRootfs) -> None:
    users = _names(golden.path / "etc" / "passwd")
    groups = _names(golden.path / "etc" / "group")
    assert {"root", "slurm", "munge", "mysql"} <= set(users)
    assert {name: system_account(name) for name in [*users, *groups] if system_account(name) is None} == {}


def test_the_base_systems_master_files_are_refused(golden: GoldenRootfs) -> None:
    """Debian's base-passwd masters (the list's first source), as the host ships them."""
    masters = golden.path / "usr" / "share" / "base-passwd"
    names = _names(masters / "passwd.master") + _names(masters / "group.master")
    assert len(names) > 40
    assert [name for name in names if system_account(name) is None] == []


def test_the_users_role_takes_over_no_account_or_group_the_host_has(
    golden: GoldenRootfs, tmp_path: Path
) -> None:
    """Whatever validation knows, the role itself refuses a name the host has with another id (an account,
    `daemon`, or a group only, `sudo`) and changes nothing; the role's own users pass on the next run."""
    root = copy_golden(golden, tmp_path / "root")
    playbook = tmp_path / "play" / "users.yml"
    playbook.parent.mkdir()
    playbook.write_text("- name: Team users\n  hosts: all\n  roles: [slurm_users]\n")
    roles = {"ANSIBLE_ROLES_PATH": str(PLAYBOOKS / "roles")}

    def apply(*accounts: tuple[str, int]) -> PlaybookResult:
        users = [{"name": name, "uid": uid} for name, uid in accounts]
        return run_playbook(
            playbook, inventory=inventory(root), extravars={"slurm_users_accounts": users}, envvars=roles
        )

    before = ((root / "etc/passwd").read_text(), (root / "etc/group").read_text())
    refused = apply(("alice", 20001), ("daemon", 20002), ("sudo", 20003))
    assert not refused.succeeded
    (failed,) = refused.failed_tasks
    assert "Check that no user is an account or group the host already has" in str(failed)
    assert ((root / "etc/passwd").read_text(), (root / "etc/group").read_text()) == before
    assert apply(("alice", 20001)).succeeded
    assert apply(("alice", 20001), ("bob", 20004)).succeeded
    assert "alice:x:20001:20001:" in (root / "etc/passwd").read_text()
