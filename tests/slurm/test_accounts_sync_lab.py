"""The slurm_controller role's accounts loader against the real slurmdbd: the teams' QOS, accounts and
users follow the blueprint both ways. Files rendered for blueprints of the lab's cluster (`lab`) are
loaded in turn: the teams as first written, then a team demoted (no budget, fewer GPUs, no preemption)
and another raised, then a team and two users removed. After each load `sacctmgr show` must print exactly
the blueprint, beside what was made by hand (an account of the same organization, a QOS, a user's
association with the hand-made account), `root` and `normal`, which stay. An association that still has a
running job is shut (no new job, its pending jobs cancelled) and removed by the next load after the job.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm import render_slurm
from tests.factories import spec
from tests.slurm.lab import ACCOUNTS_LOADER, Result, SlurmLab

pytestmark = pytest.mark.slurm

CLUSTER = "lab"
HOLD = "#!/bin/sh\nsleep 600\n"
FIRST = [
    {"name": "research", "max_gpus": 16, "gpu_hours_per_month": 20000, "priority": "high",
     "users": ["alice", "ivan", "carol"]},
    {"name": "interns", "max_gpus": 8, "gpu_hours_per_month": 1000, "priority": "low", "users": ["ivan"]},
]  # fmt: skip
DEMOTED = [
    {"name": "research", "max_gpus": 4, "priority": "low", "users": ["alice", "ivan", "carol"]},
    {"name": "interns", "max_gpus": 12, "gpu_hours_per_month": 1000, "priority": "normal", "users": ["ivan"]},
]  # fmt: skip
REMOVED = [
    {"name": "research", "max_gpus": 4, "priority": "low", "users": ["alice"]},
]

QOS = "qos format=name,description,priority,grptres,grptresmins,flags,preempt,preemptmode"
ASSOC = f"assoc where cluster={CLUSTER} format=account,user,parentname,qos,defaultqos,maxsubmit,maxjobs"
USERS = "user format=user,defaultaccount"
ACCOUNTS = "account format=account,description,organization"

HAND_MADE_QOS = "batch|batch|0|||||cluster"
NORMAL_QOS = "normal|Normal QOS default|0|||||cluster"
HAND_MADE_ASSOC = ["ops||root|normal|||", "ops|ivan||normal|||"]
ROOT_ASSOC = ["root|||normal|||", "root|root||normal|||"]


def files(teams: list[dict[str, Any]]) -> dict[str, str]:
    cluster = spec(
        name=CLUSTER,
        node_groups=[{"name": "h100", "machine_type": "p5.48xlarge", "count": 1}],
        scheduler={"kind": "slurm"},
        teams=teams,
    )
    return render_slurm(cluster, load_catalog().slurm)


def load(lab: SlurmLab, teams: list[dict[str, Any]]) -> Result:
    """`clusterfab render slurm`'s qos.cfg and accounts.cfg for `teams`, loaded as the role loads them."""
    rendered = files(teams)
    lab.path("/root/sync/qos.cfg").write_text(rendered["qos.cfg"])
    lab.path("/root/sync/accounts.cfg").write_text(rendered["accounts.cfg"])
    return lab.run([ACCOUNTS_LOADER, CLUSTER, "/root/sync/qos.cfg", "/root/sync/accounts.cfg"], timeout=120)


def show(lab: SlurmLab, what: str) -> list[str]:
    return lab.run(f"sacctmgr -n -P show {what}").stdout.splitlines()


@pytest.fixture(scope="module")
def hand_made(running_lab: SlurmLab) -> None:
    """What an administrator made beside clusterfab: a QOS, an account under root of the cluster's
    organization (as clusterfab's accounts are, but not described as a team), and a team user's
    association with it."""
    running_lab.path("/root/sync").mkdir(exist_ok=True)
    running_lab.run(
        f"sacctmgr -i add qos batch && sacctmgr -i add account ops cluster={CLUSTER} Description=ops"
        f" Organization={CLUSTER} && sacctmgr -i add user ivan account=ops cluster={CLUSTER}"
    )


@pytest.fixture
def synced(lab: SlurmLab, hand_made: None) -> Iterator[SlurmLab]:
    """The lab's cluster with the first blueprint's teams loaded (from whatever an earlier test left)."""
    assert load(lab, FIRST).returncode == 0
    yield lab
    lab.reset()


def test_the_first_load_writes_the_teams_beside_what_was_made_by_hand(synced: SlurmLab) -> None:
    lab = synced
    # In the order slurmdbd made them: the lab's start loaded the render's qos.cfg (lowest priority
    # first), then the hand-made one came.
    assert show(lab, QOS) == [
        NORMAL_QOS,
        "interns|clusterfab team interns of lab|10|gres/gpu=8|gres/gpu=60000|NoDecay||cluster",
        "research|clusterfab team research of lab|1000|gres/gpu=16|gres/gpu=1200000|NoDecay|interns|requeue",
        HAND_MADE_QOS,
    ]
    assert show(lab, ASSOC) == [
        *ROOT_ASSOC,
        "interns||root|interns|interns||",
        "interns|ivan||interns|interns||",
        *HAND_MADE_ASSOC,
        "research||root|research|research||",
        "research|alice||research|research||",
        "research|carol||research|research||",
        "research|ivan||research|research||",
    ]
    assert show(lab, USERS) == ["alice|research", "carol|research", "ivan|research", "root|root"]
    assert load(lab, FIRST).stdout == "unchanged\n"


def test_a_demoted_team_loses_its_budget_and_preemption_and_a_raised_one_gains_them(synced: SlurmLab) -> None:
    lab = synced
    demoted = load(lab, DEMOTED)
    assert (demoted.stdout, demoted.stderr) == ("changed\n", "")
    assert show(lab, QOS) == [
        NORMAL_QOS,
        "interns|clusterfab team interns of lab|100|gres/gpu=12|gres/gpu=60000|NoDecay|research|requeue",
        # No GrpTRESMins, no NoDecay, no Preempt: cleared, not left from the first blueprint.
        "research|clusterfab team research of lab|10|gres/gpu=4||||cluster",
        HAND_MADE_QOS,
    ]
    assert load(lab, DEMOTED).stdout == "unchanged\n"
    assert load(lab, FIRST).stdout == "changed\n"  # and back
    assert show(lab, QOS)[2] == (
        "research|clusterfab team research of lab|1000|gres/gpu=16|gres/gpu=1200000|NoDecay|interns|requeue"
    )


def test_a_removed_team_and_users_go_and_what_was_made_by_hand_stays(synced: SlurmLab) -> None:
    lab = synced
    removed = load(lab, REMOVED)
    assert (removed.stdout, removed.stderr) == ("changed\n", "")
    # interns' QOS and account are gone; normal and the hand-made batch stay.
    assert show(lab, QOS) == [
        NORMAL_QOS,
        "research|clusterfab team research of lab|10|gres/gpu=4||||cluster",
        HAND_MADE_QOS,
    ]
    # ivan left both teams and keeps the hand-made association, now his default; carol left every team
    # and is no Slurm user any more.
    assert show(lab, ASSOC) == [
        *ROOT_ASSOC,
        *HAND_MADE_ASSOC,
        "research||root|research|research||",
        "research|alice||research|research||",
    ]
    assert show(lab, USERS) == ["alice|research", "ivan|ops", "root|root"]
    assert show(lab, ACCOUNTS) == [
        "ops|ops|lab",
        "research|team research|lab",
        "root|default root account|root",
    ]
    assert load(lab, REMOVED).stdout == "unchanged\n"


def _submit(lab: SlurmLab, *args: str) -> int:
    return lab.sbatch(HOLD, "-A", "interns", "--time=10", "-N1", *args, user="ivan")


def test_a_member_with_a_running_job_is_shut_until_it_ends_then_removed(synced: SlurmLab) -> None:
    lab = synced
    running = _submit(lab)
    lab.wait_job(running, {"RUNNING"})
    pending = _submit(lab, "--hold")

    kept = load(lab, REMOVED)

    # The load does not fail: it shuts the association, cancels what would never start, and says so.
    assert kept.stdout == "changed\n"
    assert kept.stderr.splitlines() == [
        "clusterfab-slurm-accounts: kept ivan in interns until its jobs end (1 running, cancelled pending "
        f"job(s) {pending}): it takes and starts no new job",
        "clusterfab-slurm-accounts: kept account interns: its users' jobs have not ended",
    ]
    assert lab.job_state(lab.wait_job(pending, {"CANCELLED"})) == "CANCELLED"
    assert lab.job_state(lab.job(running)) == "RUNNING"
    assert "interns|ivan||interns|interns|0|0" in show(lab, ASSOC)
    refused = lab.run(
        ["runuser", "-u", "ivan", "--", "sbatch", "-A", "interns", "--wrap=true"], user=None, check=False
    )
    assert refused.returncode != 0
    assert "AssocMaxSubmitJobLimit" in refused.stderr
    assert "interns" in [line.split("|")[0] for line in show(lab, QOS)]  # its jobs still run under it

    # Named again, the association opens again; gone again, it is shut again.
    assert load(lab, FIRST).stdout == "changed\n"
    assert "interns|ivan||interns|interns||" in show(lab, ASSOC)
    assert load(lab, REMOVED).stderr.splitlines()[0] == (
        "clusterfab-slurm-accounts: kept ivan in interns until its jobs end (1 running): it takes and "
        "starts no new job"
    )

    lab.run(f"scancel {running}")
    lab.wait_job(running, {"CANCELLED"})
    lab.wait_for(
        lambda: load(lab, REMOVED).stderr == "", timeout=60, what="the load after the job to remove interns"
    )
    assert show(lab, ASSOC) == [
        *ROOT_ASSOC,
        *HAND_MADE_ASSOC,
        "research||root|research|research||",
        "research|alice||research|research||",
    ]
    assert [line.split("|")[0] for line in show(lab, QOS)] == ["normal", "research", "batch"]
    assert load(lab, REMOVED).stdout == "unchanged\n"


def test_a_removed_team_with_a_hand_made_sub_account_stays_until_that_is_gone(synced: SlurmLab) -> None:
    """Removing a team's account would take an account made by hand under it along (sacctmgr gives it the
    parent's name as organization), so the team's account stays, and says why, until that one is gone."""
    lab = synced
    lab.run(f"sacctmgr -i add account interns-extra parent=interns cluster={CLUSTER} Description=extra")
    try:
        kept = load(lab, REMOVED)
        assert kept.stdout == "changed\n"  # ivan's and carol's associations went all the same
        assert kept.stderr.splitlines() == [
            "clusterfab-slurm-accounts: kept account interns: it has sub-accounts interns-extra"
        ]
        assert show(lab, ASSOC)[2:5] == [
            "interns||root|interns|interns||",
            "interns-extra||interns|interns|interns||",
            *HAND_MADE_ASSOC[:1],
        ]
        assert "interns-extra|extra|interns" in show(lab, ACCOUNTS)
    finally:
        lab.run(f"sacctmgr -i delete account name=interns-extra cluster={CLUSTER}")
        lab.run("sacctmgr -i delete account name=interns-extra")
    gone = load(lab, REMOVED)
    assert (gone.stdout, gone.stderr) == ("changed\n", "")
    assert [line.split("|")[0] for line in show(lab, QOS)] == ["normal", "research", "batch"]
