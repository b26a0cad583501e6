"""The renderer's own output: `clusterfab render slurm blueprints/examples/aws-p5-slurm.yaml` (cluster
llm-slurm, eight h100 nodes, teams research/applied/interns) run by the lab as rendered, with the
slurm_node role's own health check as the prolog and epilog and the slurm_controller role's own accounts
loader.

The renderer targets the nodes' Slurm (Ubuntu 24.04's 23.11.4); the lab runs Debian 13's 24.11.5.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.conftest import REPO
from tests.slurm.conftest import TIMINGS
from tests.slurm.lab import SlurmLab
from tests.slurm.rendered import node_scripts, render
from tests.slurm.rootfs import GoldenRootfs

pytestmark = pytest.mark.slurm

BLUEPRINT = REPO / "blueprints" / "examples" / "aws-p5-slurm.yaml"
NODES = [f"h100-{i}" for i in range(8)]
QUICK = "#!/bin/sh\nsrun sh -c 'echo \"$(hostname) CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES\"'\n"
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}


@pytest.fixture(scope="module")
def example_lab(golden: GoldenRootfs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmLab]:
    files = render(BLUEPRINT, tmp_path_factory.mktemp("render"))
    with SlurmLab({**files, **node_scripts()}, golden, tmp_path_factory.mktemp("slurmlab-example")) as lab:
        TIMINGS["example_lab_start"] = dict(lab.timings.steps)
        yield lab
    assert lab.leftover_processes() == []


@pytest.fixture
def lab(example_lab: SlurmLab) -> SlurmLab:
    example_lab.reset()
    return example_lab


def test_rendered_example_starts_and_every_node_is_idle(lab: SlurmLab) -> None:
    assert lab.cluster == "llm-slurm"
    # The controller's fixed address, as rendered (SlurmctldHost=name(addr), AccountingStorageHost,
    # DbdAddr), exists in the lab (on lo): sacctmgr below reaches slurmdbd through it.
    assert lab.controller_addresses == ["10.30.0.10"]
    assert "inet 10.30.0.10/32" in lab.run("ip -4 addr show dev lo").stdout
    assert "AccountingStorageHost   = 10.30.0.10" in lab.run("scontrol show config").stdout
    assert sorted(lab.users) == ["alice", "bob", "carol", "dave"]
    assert lab.nodes_state() == {name: {"state": "IDLE", "reason": ""} for name in NODES}
    qos = lab.run("sacctmgr -n -P show qos format=name,grptres,preempt").stdout.splitlines()
    assert sorted(qos) == [
        "applied|gres/gpu=32|interns",
        "interns|gres/gpu=8|",
        "normal||",
        "research|gres/gpu=64|applied,interns",
    ]


def test_rendered_example_runs_a_two_node_gpu_job_with_a_time_limit(lab: SlurmLab) -> None:
    job_id = lab.sbatch(
        QUICK,
        "-N2",
        "--gpus-per-node=8",
        "--time=1:00:00",
        "-A",
        "research",
        "-o",
        "out-%j.txt",
        user="alice",
    )
    assert lab.job_state(lab.wait_job(job_id, FINAL)).split("+")[0] == "COMPLETED"
    lines = sorted(lab.run(f"cat /home/alice/out-{job_id}.txt").stdout.splitlines())
    assert lines == [f"h100-{i} CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" for i in range(2)]


FABRIC_PROFILE = (
    "# /etc/profile.d/nccl-fabric.sh as the efa role writes it (no huge pages, one extra variable)\n"
    'export LD_LIBRARY_PATH="/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib'
    '${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"\n'
    "export FI_EFA_USE_HUGE_PAGE=0\n"
    "export NCCL_SOCKET_IFNAME='^lo,docker'\n"
)
SHOW_FABRIC = (
    "#!/bin/sh\n"
    "srun sh -c 'echo \"$(hostname) $NCCL_SOCKET_IFNAME $FI_EFA_USE_HUGE_PAGE $LD_LIBRARY_PATH\"'\n"
)


@pytest.fixture
def fabric_profile(lab: SlurmLab) -> Iterator[None]:
    profile = lab.path("/etc/profile.d/nccl-fabric.sh")
    profile.parent.mkdir(parents=True, exist_ok=True)
    profile.write_text(FABRIC_PROFILE)
    yield
    profile.unlink()


@pytest.mark.usefixtures("fabric_profile")
@pytest.mark.parametrize(
    ("exported", "expected"),
    [
        # Submitted from a login node, which has no fabric: every task gets the node's profile.
        ("ALL", "^lo,docker 0 /opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib"),
        # What the job sets wins, and the plugin's libraries go before the job's own.
        (
            "ALL,NCCL_SOCKET_IFNAME=ens5,LD_LIBRARY_PATH=/home/alice/lib",
            "ens5 0 /opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib:/home/alice/lib",
        ),
    ],
)
def test_every_task_gets_the_nodes_fabric_environment(lab: SlurmLab, exported: str, expected: str) -> None:
    """slurm.conf's TaskProlog (the slurm_node role's clusterfab-task-env) under the real slurmd: a task
    starts without a login shell, so only this gives NCCL the fabric's plugin and settings."""
    assert (
        "TaskProlog              = /usr/local/sbin/clusterfab-task-env"
        in lab.run("scontrol show config").stdout
    )
    job_id = lab.sbatch(
        SHOW_FABRIC,
        "-N2",
        "--gpus-per-node=8",
        "--time=10",
        "-A",
        "research",
        f"--export={exported}",
        "-o",
        "fabric-%j.txt",
        user="alice",
    )
    assert lab.job_state(lab.wait_job(job_id, FINAL)).split("+")[0] == "COMPLETED"
    lines = sorted(lab.run(f"cat /home/alice/fabric-{job_id}.txt").stdout.splitlines())
    assert lines == [f"h100-{i} {expected}" for i in range(2)]


def test_rendered_example_runs_a_job_without_a_time_limit(lab: SlurmLab) -> None:
    # The partition's DefaultTime bounds the job: under safe enforcement a job without a limit would wait
    # for ever on the team's GPU-minute budget (QOSGrpGRESMinutes); this test found that.
    job_id = lab.sbatch(QUICK, "-N1", "--gpus-per-node=8", "-A", "research", user="alice")

    def decided() -> tuple[str, str] | None:
        job = lab.job(job_id)
        state, reason = lab.job_state(job).split("+")[0], job["state_reason"]
        return (state, reason) if state != "PENDING" or reason not in ("None", "Priority") else None

    assert lab.wait_for(decided, timeout=20, what="the scheduler's decision") != (
        "PENDING",
        "QOSGrpGRESMinutes",
    )


def test_the_node_sync_moves_a_node_and_downs_a_lost_one_in_slurmctld(lab: SlurmLab) -> None:
    """The controller's node sync (clusterfab/scheduler/slurm/nodes/) against the real slurmctld: it
    reads the nodes' JSON, points a static node at its instance's address (Slurm accepts NodeAddr on
    static nodes), and marks a node no instance holds DOWN with the sync's reason."""
    from clusterfab.scheduler.slurm.nodes.actions import MarkDown, SetAddress
    from clusterfab.scheduler.slurm.nodes.reconcile import GONE_REASON
    from clusterfab.scheduler.slurm.nodes.scontrol import Scontrol

    def run(command: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        done = lab.run(command, check=bool(options.get("check")))
        return subprocess.CompletedProcess(command, done.returncode, done.stdout, done.stderr)

    scontrol = Scontrol(run=run)
    before = scontrol.nodes()
    assert sorted(before) == NODES
    assert not any(node.down for node in before.values())
    try:
        scontrol.apply(SetAddress("h100-3", "127.0.0.1"))
        scontrol.apply(MarkDown("h100-5", GONE_REASON))
        after = scontrol.nodes()
        assert after["h100-3"].address == "127.0.0.1"
        assert after["h100-5"].down
        assert lab.nodes_state()["h100-5"]["reason"] == GONE_REASON
        # slurmctld still reaches h100-3's slurmd at the new address: a job lands there and runs.
        job_id = lab.sbatch(
            QUICK, "-N1", "-w", "h100-3", "--gpus-per-node=8", "--time=5", "-A", "research", user="alice"
        )
        assert lab.job_state(lab.wait_job(job_id, FINAL)).split("+")[0] == "COMPLETED"
    finally:
        scontrol.apply(SetAddress("h100-3", before["h100-3"].address))


def test_the_roles_accounts_loader_is_idempotent_on_the_real_slurmdbd(lab: SlurmLab) -> None:
    assert lab.accounts_loads == ["changed"]
    assert lab.load_accounts() == "unchanged"
    qos = lab.run("sacctmgr -n -P show qos research format=name,grptres,grptresmins,flags").stdout.split("|")
    assert qos[0] == "research"
    assert "gres/gpu=64" in qos[1]
    assert qos[2] == "gres/gpu=1800000"
    assert "NoDecay" in qos[3]


EXPORTER = REPO / "clusterfab" / "scheduler" / "slurm" / "exporter.py"
HOLD = "#!/bin/sh\nsrun sleep 300\n"


def scrape(lab: SlurmLab) -> dict[str, float]:
    """One scrape of the controller's Slurm exporter (`--once`), run in the lab against the real slurmctld."""
    lab.path("/usr/local/bin/clusterfab-slurm-exporter").write_text(EXPORTER.read_text())
    text = lab.run("python3 /usr/local/bin/clusterfab-slurm-exporter --once").stdout
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_the_slurm_exporter_reads_nodes_gpus_jobs_and_budgets_from_slurmctld(lab: SlurmLab) -> None:
    idle = scrape(lab)
    assert idle["clusterfab_slurm_exporter_up"] == 1
    assert (idle["slurm_nodes_idle"], idle["slurm_nodes_drain"]) == (8, 0)
    assert (idle["slurm_gpus_total"], idle["slurm_gpus_alloc"], idle["slurm_gpus_idle"]) == (64, 0, 64)
    # research: 30,000 GPU-hours a month (the example's base) = 1,800,000 GPU-minutes.
    assert idle['clusterfab_slurm_qos_gpu_minutes_limit{qos="research"}'] == 1_800_000

    job_id = lab.sbatch(HOLD, "-N2", "--gpus-per-node=8", "--time=10", "-A", "research", user="alice")
    lab.wait_job(job_id, {"RUNNING"})
    lab.run("scontrol update NodeName=h100-7 State=DRAIN Reason=exporter-test")
    busy = scrape(lab)
    assert (busy["slurm_nodes_alloc"], busy["slurm_nodes_drain"], busy["slurm_nodes_idle"]) == (2, 1, 5)
    assert (busy["slurm_gpus_alloc"], busy["slurm_gpus_idle"]) == (16, 40)
    key = f'clusterfab_slurm_job_gpus{{account="research",job_id="{job_id}",partition="train",user="alice"}}'
    assert busy[key] == 16
    assert busy['slurm_account_jobs{account="research",state="running"}'] == 1
