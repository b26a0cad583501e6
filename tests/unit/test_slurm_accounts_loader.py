"""The controller's accounts loader (playbooks/roles/slurm_controller/files/clusterfab_slurm_accounts.py)
reads the rendered files as the renderer means them: every QOS attribute as one sacctmgr word, shell
quoting undone and nothing evaluated, and knows clusterfab's accounts and QOS by the marks the renderer
writes. What it does with them against the real slurmdbd is tests/slurm/test_accounts_sync_lab.py."""

from __future__ import annotations

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm import render
from clusterfab.scheduler.slurm.render import render_slurm
from tests.conftest import REPO
from tests.factories import example_spec, load_program

PROGRAM = REPO / "playbooks/roles/slurm_controller/files/clusterfab_slurm_accounts.py"
loader = load_program("clusterfab_slurm_accounts", PROGRAM)
FILES = render_slurm(example_spec("aws-p5-slurm", "prod"), load_catalog().slurm)


def test_each_qos_line_is_the_words_sacctmgr_gets() -> None:
    # Preempt='' reaches sacctmgr as `Preempt=` (an empty word: what clears the list; the two quote
    # characters themselves are refused with "You gave me an empty qos list").
    assert loader.parse_qos(FILES["qos.cfg"]) == [
        ("interns", ["Description=clusterfab team interns of llm-slurm", "Priority=10", "GrpTRES=gres/gpu=8",
                     "GrpTRESMins=gres/gpu=60000", "Flags=NoDecay", "Preempt=", "PreemptMode=cluster"]),
        ("applied", ["Description=clusterfab team applied of llm-slurm", "Priority=100",
                     "GrpTRES=gres/gpu=32", "GrpTRESMins=gres/gpu=600000", "Flags=NoDecay", "Preempt=interns",
                     "PreemptMode=requeue"]),
        ("research", ["Description=clusterfab team research of llm-slurm", "Priority=1000",
                      "GrpTRES=gres/gpu=64", "GrpTRESMins=gres/gpu=1800000", "Flags=NoDecay",
                      "Preempt=applied,interns", "PreemptMode=requeue"]),
    ]  # fmt: skip


def test_qos_text_is_never_run_by_a_shell() -> None:
    assert loader.parse_qos("evil Description='$(touch /tmp/x)' Priority=1;reboot\n") == [
        ("evil", ["Description=$(touch /tmp/x)", "Priority=1;reboot"])
    ]


def test_the_accounts_file_is_read_as_sacctmgr_load_would() -> None:
    cluster, desired = loader.parse_accounts(FILES["accounts.cfg"])
    assert cluster == "llm-slurm"
    assert {name: (a.parent, a.settings) for name, a in desired.accounts.items()} == {
        team: (
            "root",
            {"Description": f"team {team}", "Organization": "llm-slurm", "QOS": team, "DefaultQOS": team},
        )
        for team in ("research", "applied", "interns")
    }
    assert desired.members == [
        ("alice", "research"),
        ("bob", "research"),
        ("carol", "applied"),
        ("dave", "interns"),
    ]
    assert desired.defaults == {"alice": "research", "bob": "research", "carol": "applied", "dave": "interns"}


def test_the_loader_knows_clusterfabs_accounts_and_qos_by_the_renderers_marks() -> None:
    assert loader.QOS_DESCRIPTION == render.QOS_DESCRIPTION
    assert loader.ACCOUNT_DESCRIPTION == render.ACCOUNT_DESCRIPTION
