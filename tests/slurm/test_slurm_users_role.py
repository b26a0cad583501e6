"""The slurm_users role takes away the Linux accounts of users who left every team, and only those: it is
applied (slurm_login.yml, tag `slurm_users`) to a copy of the Debian 13 root file system in a chroot, with
a team's users, then with one of them gone from every team, beside accounts the role did not make (the
image's, a package's, one made by hand in the teams' uid range). A departed user whose process still runs
on the host (a job) is locked, not removed, and removed by the next run once the process has ended."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterfab.provision.runner import PlaybookResult, run_playbook
from clusterfab.scheduler.slurm.users import user_ids
from tests.slurm.hosts import PLAYBOOKS, copy_golden, inventory
from tests.slurm.rootfs import GoldenRootfs

pytestmark = pytest.mark.slurm

HAND_MADE = "ops"
"""An account made by hand with a uid in the teams' range (the role must leave it alone)."""
HAND_MADE_UID = 20001


def _apply(root: Path, users: list[str]) -> PlaybookResult:
    accounts = [{"name": name, "uid": uid} for name, uid in user_ids(users).items()]
    return run_playbook(
        PLAYBOOKS / "slurm_login.yml",
        inventory=inventory(root),
        extravars={"slurm_users_accounts": accounts},
        tags=["slurm_users"],
    )


def _passwd(root: Path) -> dict[str, list[str]]:
    return {line.split(":")[0]: line.split(":") for line in (root / "etc/passwd").read_text().splitlines()}


def _shadow_expiry(root: Path, name: str) -> str:
    for line in (root / "etc/shadow").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == name:
            return fields[7]
    raise KeyError(name)


def _group_members(root: Path, group: str) -> list[str]:
    for line in (root / "etc/group").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == group:
            return [m for m in fields[3].split(",") if m]
    raise KeyError(group)


@pytest.fixture(scope="module")
def host(golden: GoldenRootfs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = copy_golden(golden, tmp_path_factory.mktemp("users") / "root")
    subprocess.run(
        ["chroot", str(root), "useradd", "--create-home", "--uid", str(HAND_MADE_UID), HAND_MADE],
        check=True,
        timeout=60,
    )
    yield root
    shutil.rmtree(root.parent, ignore_errors=True)


@contextlib.contextmanager
def running_as(root: Path, user: str) -> Iterator[None]:
    """A process of `user` inside the chroot (as a job would be), with /proc there for userdel to see it."""
    (root / "proc").mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "proc", "proc", str(root / "proc")], check=True, timeout=30)
    process = subprocess.Popen(["chroot", str(root), "runuser", "-u", user, "--", "sleep", "600"])
    try:
        yield
    finally:
        process.kill()
        process.wait(timeout=30)
        subprocess.run(["umount", str(root / "proc")], check=True, timeout=30)


def test_a_user_who_left_every_team_is_removed_and_keeps_the_home_directory(host: Path) -> None:
    image = _passwd(host)  # the image's accounts and the hand-made one
    first = _apply(host, ["alice", "bob"])
    assert first.succeeded, first.failed_tasks
    assert _group_members(host, "clusterfab-slurm-users") == ["alice", "bob"]
    again = _apply(host, ["alice", "bob"])
    assert again.succeeded, again.failed_tasks
    assert again.hosts["node"].changed == 0
    (host / "home/bob/checkpoint.pt").write_text("weights")

    left = _apply(host, ["alice"])

    assert left.succeeded, left.failed_tasks
    after = _passwd(host)
    assert "bob" not in after
    assert "bob" not in (host / "etc/group").read_text().split(":")  # nor his own group
    assert (host / "home/bob/checkpoint.pt").read_text() == "weights"
    assert after["alice"][2:4] == ["40207", "40207"]  # uid and private group: alice's derived id
    assert after["alice"][6] == "/bin/bash"
    assert _group_members(host, "clusterfab-slurm-users") == ["alice"]
    # Accounts the role did not make are untouched, the hand-made one in the teams' uid range too.
    assert {name: fields for name, fields in after.items() if name != "alice"} == image
    assert image[HAND_MADE][2] == str(HAND_MADE_UID)
    assert _apply(host, ["alice"]).hosts["node"].changed == 0


def test_a_departed_user_with_a_running_process_is_locked_then_removed(host: Path) -> None:
    assert _apply(host, ["alice", "carol"]).succeeded
    with running_as(host, "carol"):
        busy = _apply(host, ["alice"])
        assert busy.succeeded, busy.failed_tasks
        locked = _passwd(host)["carol"]
        assert locked[6] == "/usr/sbin/nologin"
        assert _shadow_expiry(host, "carol") == "1"  # days since the epoch: expired
    done = _apply(host, ["alice"])
    assert done.succeeded, done.failed_tasks
    assert "carol" not in _passwd(host)
    assert (host / "home/carol").is_dir()


def test_a_user_who_comes_back_is_open_again(host: Path) -> None:
    assert _apply(host, ["alice", "dave"]).succeeded
    with running_as(host, "dave"):
        assert _apply(host, ["alice"]).succeeded  # locked, not removed
    back = _apply(host, ["alice", "dave"])
    assert back.succeeded, back.failed_tasks
    fields = _passwd(host)["dave"]
    assert (fields[2], fields[6]) == ("46851", "/bin/bash")  # dave's derived uid
    assert _shadow_expiry(host, "dave") == ""
