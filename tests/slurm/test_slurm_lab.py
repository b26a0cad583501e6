"""End to end: the rendered Slurm configuration, run by Debian 13's Slurm 24.11 daemons (slurmctld,
slurmdbd with MariaDB, one slurmd per node with eight fake H100s), does what clusterfab promises:
multi-node GPU jobs, per-team GPU caps (QOS GrpTRES), monthly GPU-minute budgets (GrpTRESMins), QOS
preemption by requeue, a health-check prolog that drains a sick node and lets the job run elsewhere, and
GPU accounting per account.

The cluster is `clusterfab render slurm tests/fixtures/blueprints/slurm-lab.yaml` as the command writes
it, with only the lab's documented overrides (tests/slurm/overrides.py, asserted in test_overrides.py):
research (16 GPUs, 10000 GPU-hours, high priority) and interns (8 GPUs, 1000 GPU-hours = 60000
GPU-minutes, low) on three 8-GPU nodes `trainers-0..2`.

All tests share one cluster per module; the ``lab`` fixture brings it back to quiet (no jobs, no
faults, all nodes IDLE) before each, so they pass in any order.
"""

from __future__ import annotations

import re

import pytest

from tests.slurm.lab import SlurmLab
from tests.slurm.rootfs import EXPECTED_SLURM_SERIES

pytestmark = pytest.mark.slurm

GPU_LINE = re.compile(r"^(\S+) CUDA_VISIBLE_DEVICES=(\S*)$")
ALL_GPUS = "0,1,2,3,4,5,6,7"
SLEEP = "#!/bin/sh\nsleep 300\n"
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"}

# Lines slurmctld logs as "error:" on any first start with an empty state directory, and the one
# Debian's own plugstack.conf causes (it includes plugstack.conf.d/*.conf, which is empty; the render
# writes no plugstack.conf without pyxis). Any other error or warning in the controller's log fails
# test_rendered_configuration_is_accepted.
EXPECTED_CONTROLLER_ERRORS = (
    re.compile(r"Could not open (node|job|reservation|trigger) state file"),
    re.compile(r"NOTE: Trying backup state save file"),
    re.compile(r"No fed_mgr state file"),
    re.compile(r"Slurm does not support glob parsing\. /etc/slurm/plugstack\.conf\.d/\*\.conf"),
    re.compile(r'"Include" failed in file /etc/slurm/plugstack\.conf line 1'),
)


CONFIG = {
    "SelectType": "select/cons_tres",
    "SelectTypeParameters": "CR_CORE_MEMORY",
    "PreemptType": "preempt/qos",
    "PreemptMode": "REQUEUE",
    "PriorityType": "priority/multifactor",
    "PriorityDecayHalfLife": "7-00:00:00",
    "PriorityUsageResetPeriod": "MONTHLY",
    "PriorityWeightQOS": "10000",
    "AccountingStorageEnforce": "associations,limits,qos,safe",
    # Rendered gres/gpu,gres/gpu:h100: Slurm adds its default TRES before, and "Setting gres/gpu will
    # also set gres/gpumem and gres/gpuutil" (slurm.conf(5) of 24.11.5) after.
    "AccountingStorageTRES": (
        "cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu,gres/gpu:h100,gres/gpumem,gres/gpuutil"
    ),
    "JobRequeue": "1",
    "MailProg": "/bin/true",
    "TaskProlog": "/usr/local/sbin/clusterfab-task-env",
    "TopologyPlugin": "topology/tree",
}
QOS_FIELDS = "name,priority,grptres,grptresmins,flags,preempt,preemptmode"


def _config(lab: SlurmLab) -> dict[str, str]:
    """`scontrol show config` as setting -> value."""
    lines = lab.run("scontrol show config").stdout.splitlines()
    return {key.strip(): value.strip() for key, sep, value in (ln.partition(" = ") for ln in lines) if sep}


def _unexpected_errors(log: str) -> list[str]:
    lines = [line for line in log.splitlines() if re.search(r"\b(error|warning|fatal):", line)]
    return [line for line in lines if not any(p.search(line) for p in EXPECTED_CONTROLLER_ERRORS)]


def test_rendered_configuration_is_accepted(lab: SlurmLab) -> None:
    assert lab.slurm_version.startswith(EXPECTED_SLURM_SERIES + ".")
    assert lab.run("slurmctld -V").stdout.strip() == f"slurm-wlm {lab.slurm_version}"
    assert lab.run("sinfo -V").stdout.strip() == f"slurm-wlm {lab.slurm_version}"
    assert lab.nodes_state() == {
        name: {"state": "IDLE", "reason": ""} for name in ("trainers-0", "trainers-1", "trainers-2")
    }
    gres = lab.run("sinfo -N -h -o '%N %G %c %m'").stdout.split("\n")
    assert [line for line in gres if line] == [f"trainers-{i} gpu:h100:8 192 1992294" for i in range(3)]
    # The settings the quota, budget and preemption tests rest on, as slurmctld read them from the render
    # (written out here, not read from the renderer: a changed render fails this test).
    config = _config(lab)
    assert {key: config[key] for key in CONFIG} == CONFIG
    qos = lab.run(f"sacctmgr -n -P show qos format={QOS_FIELDS}").stdout.splitlines()
    assert sorted(qos) == [
        "interns|10|gres/gpu=8|gres/gpu=60000|NoDecay||cluster",
        "normal|0|||||cluster",
        "research|1000|gres/gpu=16|gres/gpu=600000|NoDecay|interns|requeue",
    ]
    assert _unexpected_errors(lab.log("slurmctld")) == []


def test_two_node_job_gets_eight_gpus_on_each_node(lab: SlurmLab) -> None:
    script = "#!/bin/sh\nsrun sh -c 'echo \"$(hostname) CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES\"'\n"
    job_id = lab.sbatch(
        script, "-N2", "--gpus-per-node=8", "-A", "research", "-o", "out-%j.txt", user="alice"
    )
    job = lab.wait_job(job_id, FINAL, timeout=60)
    assert lab.job_state(job).split("+")[0] == "COMPLETED"
    output = lab.run(f"cat /home/alice/out-{job_id}.txt").stdout.splitlines()
    tasks = sorted(GPU_LINE.match(line).groups() for line in output)  # type: ignore[union-attr]
    assert tasks == [("trainers-0", ALL_GPUS), ("trainers-1", ALL_GPUS)]
    assert job["user_name"] == "alice"
    assert job["account"] == "research"
    assert job["qos"] == "research"


def test_job_can_open_only_its_own_gpus(lab: SlurmLab) -> None:
    """ConstrainDevices=yes: the devices cgroup lets a 2-GPU step open /dev/nvidia0-1 only. The fake
    devices have no driver, so an allowed open fails with ENXIO and a denied one with EPERM. (The probe
    runs as an srun step: the partition is OverSubscribe=EXCLUSIVE, so the job itself, and with it the
    batch step, holds all eight GPUs of the node.)"""
    probe = (
        "#!/bin/sh\nsrun sh -c 'for i in 0 1 2 3 4 5 6 7; do\n"
        '  head -c1 /dev/nvidia$i 2>&1 >/dev/null | sed "s/.*: /$i /"\ndone\n'
        "echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES'\n"
    )
    job_id = lab.sbatch(probe, "-N1", "--gpus-per-node=2", "-A", "research", "-o", "out-%j.txt", user="alice")
    assert lab.job_state(lab.wait_job(job_id, FINAL)).split("+")[0] == "COMPLETED"
    assert lab.run(f"cat /home/alice/out-{job_id}.txt").stdout.splitlines() == [
        "0 No such device or address",
        "1 No such device or address",
        *(f"{i} Operation not permitted" for i in range(2, 8)),
        "CUDA_VISIBLE_DEVICES=0,1",
    ]


def test_team_at_its_gpu_cap_waits_while_another_team_runs(lab: SlurmLab) -> None:
    research = lab.sbatch(SLEEP, "-N1", "--gpus-per-node=8", "-A", "research", user="alice")
    interns = lab.sbatch(SLEEP, "-N1", "--gpus-per-node=8", "-A", "interns", user="ivan")
    lab.wait_job(research, {"RUNNING"})
    lab.wait_job(interns, {"RUNNING"})
    second = lab.sbatch(SLEEP, "-N1", "--gpus-per-node=8", "-A", "interns", user="ivan")

    def reason() -> str | None:
        job = lab.job(second)
        return job["state_reason"] if job["state_reason"] not in ("None", "Priority") else None

    assert lab.wait_for(reason, timeout=30, what="a pending reason") == "QOSGrpGRES"
    assert lab.job_state(lab.job(second)) == "PENDING"
    # One node is still idle: only the interns' QOS cap (gres/gpu=8) holds the job back.
    idle = [name for name, node in lab.nodes_state().items() if node["state"] == "IDLE"]
    assert len(idle) == 1


def test_gpu_minute_budget_keeps_out_jobs_that_could_overrun_it(lab: SlurmLab) -> None:
    """AccountingStorageEnforce=...,safe with interns' GrpTRESMins=gres/gpu=60000: a job is started only
    if it can finish within the budget. 8 GPUs x 7 days = 80640 GPU-minutes waits (forever, since the
    budget never grows); 8 GPUs x 5 days = 57600 runs."""
    too_long = lab.sbatch(
        SLEEP, "-N1", "--gpus-per-node=8", "--time=7-00:00:00", "-A", "interns", user="ivan"
    )
    fits = lab.sbatch(SLEEP, "-N1", "--gpus-per-node=8", "--time=5-00:00:00", "-A", "interns", user="ivan")
    lab.wait_job(fits, {"RUNNING"})
    reason = lab.wait_for(
        lambda: (r := lab.job(too_long)["state_reason"]) not in ("None", "Priority") and r, timeout=30
    )
    assert reason == "QOSGrpGRESMinutes"


def test_exclusive_partition_charges_a_small_job_the_whole_node(lab: SlurmLab) -> None:
    """OverSubscribe=EXCLUSIVE: a job asking for 2 GPUs is allocated (and charged against its QOS's
    GrpTRES) all 8 of its node, so an intern's second 2-GPU job waits on the 8-GPU cap."""
    first = lab.sbatch(SLEEP, "-N1", "--gpus-per-node=2", "-A", "interns", user="ivan")
    job = lab.wait_job(first, {"RUNNING"})
    assert "gres/gpu=8" in job["tres_alloc_str"].split(","), job["tres_alloc_str"]
    assert "gres/gpu=2" in job["tres_req_str"].split(","), job["tres_req_str"]
    second = lab.sbatch(SLEEP, "-N1", "--gpus-per-node=2", "-A", "interns", user="ivan")
    reason = lab.wait_for(
        lambda: (r := lab.job(second)["state_reason"]) not in ("None", "Priority") and r, timeout=30
    )
    assert reason == "QOSGrpGRES"


def test_research_preempts_interns_by_requeue(lab: SlurmLab) -> None:
    victim = lab.sbatch(SLEEP, "-N1", "--gpus-per-node=8", "-w", "trainers-0", "-A", "interns", user="ivan")
    lab.wait_job(victim, {"RUNNING"})
    urgent = lab.sbatch(
        SLEEP, "-N2", "--gpus-per-node=8", "-w", "trainers-[0-1]", "-A", "research", user="alice"
    )
    job = lab.wait_job(urgent, {"RUNNING"}, timeout=60)
    assert job["nodes"] == "trainers-[0-1]"
    preempted = lab.job(victim)
    assert lab.job_state(preempted).split("+")[0] in {"PENDING", "REQUEUED"}
    assert preempted["restart_cnt"] >= 1
    history = lab.wait_for(
        lambda: [r for r in lab.sacct("-j", str(victim), "--duplicates") if r["State"] == "PREEMPTED"],
        timeout=30,
        what="the preempted run in sacct",
    )
    assert history[0]["NodeList"] == "trainers-0"


def test_prolog_health_check_drains_sick_node_and_job_runs_elsewhere(lab: SlurmLab) -> None:
    lab.set_fault("trainers-0")
    job_id = lab.sbatch(
        "#!/bin/sh\nhostname\n",
        "-N1",
        "--gpus-per-node=8",
        "-A",
        "research",
        "-o",
        "out-%j.txt",
        user="alice",
    )

    def requeued() -> dict[str, object] | None:
        job = lab.job(job_id)
        return job if job["restart_cnt"] >= 1 and lab.job_state(job) == "PENDING" else None

    job = lab.wait_for(requeued, timeout=30, what="the job requeued after the prolog failed")
    # Not held (SchedulerParameters=nohold_on_prolog_fail), but Slurm 24.11 makes a requeued batch job
    # wait before it is eligible again (observed: EligibleTime = requeue + 121 s). The test does what
    # an operator would do and releases it now, then checks that it runs on a healthy node.
    assert job["state_reason"] == "BeginTime"
    assert not job["hold"]
    sick = lab.nodes_state()["trainers-0"]
    assert "DRAIN" in sick["state"]
    assert sick["reason"] == (
        "clusterfab-health: GPU: nvidia-smi failed (exit 255): Unable to determine the device handle for GPU"
        " 0000:53:00.0: Unknown Error"
    )
    lab.wait_for(lambda: lab.release(job_id), timeout=60, what="the requeued job released")
    job = lab.wait_job(job_id, FINAL, timeout=60)
    assert lab.job_state(job).split("+")[0] == "COMPLETED"
    assert lab.run(f"cat /home/alice/out-{job_id}.txt").stdout.strip() in {"trainers-1", "trainers-2"}
    assert lab.nodes_state()["trainers-0"]["reason"] == sick["reason"]


def test_accounting_shows_gpu_allocation_per_account(lab: SlurmLab) -> None:
    quick = "#!/bin/sh\ntrue\n"
    research = lab.sbatch(quick, "-N2", "--gpus-per-node=8", "-A", "research", user="alice")
    interns = lab.sbatch(quick, "-N1", "--gpus-per-node=8", "-A", "interns", user="ivan")
    for job_id in (research, interns):
        lab.wait_job(job_id, FINAL, timeout=60)

    def recorded() -> dict[str, str] | None:
        rows = {r["JobID"]: r for r in lab.sacct("-j", f"{research},{interns}")}
        done = all(rows.get(str(j), {}).get("State") == "COMPLETED" for j in (research, interns))
        return (
            {rows[str(j)]["Account"]: rows[str(j)]["AllocTRES"] for j in (research, interns)}
            if done
            else None
        )

    alloc = lab.wait_for(recorded, timeout=30, what="both jobs in the accounting database")
    assert re.search(r"(^|,)gres/gpu=16(,|$)", alloc["research"]), alloc
    assert re.search(r"(^|,)gres/gpu=8(,|$)", alloc["interns"]), alloc


# --- A job cannot reach the cluster's secrets (the munge key, the node's cloud credentials).

METADATA = "169.254.169.254"
KEY_PORT = 6816
ATTACKER_COPY = "/opt/fetch-the-key.py"  # jobs get a /tmp of their own
# systemd's socket activation as clusterfab-munge-key.socket uses it (Accept=yes): one handler per
# connection, the connection as its standard input and output, the peer in REMOTE_ADDR and REMOTE_PORT
# (systemd.socket(5)). The lab runs no systemd; this stand-in does the same for the role's own program.
_ACCEPT = """
import os, socket, subprocess, sys
host, port, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
with socket.create_server((host, port)) as server:
    while True:
        conn, peer = server.accept()
        env = {**os.environ, "REMOTE_ADDR": peer[0], "REMOTE_PORT": str(peer[1])}
        with conn:
            subprocess.run(command, stdin=conn, stdout=conn, env=env, timeout=30, check=False)
"""
_METADATA = """
import http.server
class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"role-credentials")
http.server.HTTPServer(("169.254.169.254", 80), Answer).serve_forever()
"""


def _probe(controller: str) -> str:
    """A job that tries both: the metadata service, and the key service (as the fetch program does, and
    from an ordinary port)."""
    connect = f"import socket; s = socket.create_connection(('{controller}', {KEY_PORT}))"
    curl = f"curl -s -m 5 -o /dev/null -w '%{{http_code}}' http://{METADATA}/"
    return "\n".join(
        [
            "#!/bin/sh",
            f'code=$({curl}); echo "metadata $code $?"',
            # The role installs its copy for root alone (0700); an attacker brings the same program.
            f"python3 {ATTACKER_COPY} {controller} {KEY_PORT} 0 /home/alice/stolen.key 2>&1 | tail -1",
            f"python3 -c \"{connect}; print('key bytes', len(s.recv(4096)))\"",
            "",
        ]
    )


def _background(lab: SlurmLab, name: str, program: str, *args: str) -> None:
    lab.path(f"/root/{name}.py").write_text(program)
    quoted = " ".join(f"'{a}'" for a in args)
    lab.run(f"setsid python3 /root/{name}.py {quoted} >/root/{name}.log 2>&1 < /dev/null &")


def test_a_job_gets_neither_the_munge_key_nor_the_nodes_cloud_credentials(lab: SlurmLab) -> None:
    """The attack of the security review: a job takes the node's instance credentials from the metadata
    service, reads the munge key with them, and forges credentials for uid 0. Now the metadata service
    answers root alone (the metadata_guard role's own rules, loaded as its unit loads them), and the key
    comes from the controller's key service (the munge role's programs), which hands it to root alone."""
    from clusterfab.provision.runner import run_playbook
    from tests.slurm.hosts import PLAYBOOKS, inventory

    guard = run_playbook(
        PLAYBOOKS / "slurm_login.yml", inventory=inventory(lab.path("/")), tags=["metadata_guard"]
    )
    assert guard.succeeded, guard.failed_tasks
    unit = lab.path("/etc/systemd/system/clusterfab-metadata-guard.service").read_text()
    [load] = [line.removeprefix("ExecStart=") for line in unit.splitlines() if line.startswith("ExecStart=")]
    roles = PLAYBOOKS / "roles" / "munge" / "files"
    for program in ("clusterfab-munge-key-fetch", "clusterfab-munge-key-serve"):
        target = lab.path(f"/usr/local/sbin/{program}")
        target.write_bytes((roles / program).read_bytes())
        target.chmod(0o700)
    attacker = lab.path(ATTACKER_COPY)
    attacker.write_bytes((roles / "clusterfab-munge-key-fetch").read_bytes())
    attacker.chmod(0o755)
    controller = lab.controller_addresses[0] if lab.controller_addresses else "10.217.0.1"
    lab.run(f"ip addr add {METADATA}/32 dev lo")
    try:
        lab.run(load)
        _background(lab, "metadata", _METADATA)
        _background(
            lab,
            "keyservice",
            _ACCEPT,
            controller,
            str(KEY_PORT),
            "/usr/local/sbin/clusterfab-munge-key-serve",
            "/etc/munge/munge.key",
            "10.0.0.0/8",
        )
        lab.wait_for(lambda: lab.run(f"curl -s -m 2 http://{METADATA}/", check=False).stdout, what="metadata")

        # Root (the boot script) reaches both.
        assert lab.run(f"curl -s -m 5 http://{METADATA}/").stdout == "role-credentials"
        fetched = lab.run(
            f"/usr/local/sbin/clusterfab-munge-key-fetch {controller} {KEY_PORT} 5 /root/fetched.key"
        )
        assert fetched.stdout == "changed\n"
        assert lab.path("/root/fetched.key").read_bytes() == lab.path("/etc/munge/munge.key").read_bytes()

        # A job of a team's user reaches neither.
        job_id = lab.sbatch(_probe(controller), "-N1", "-A", "research", "-o", "probe-%j.txt", user="alice")
        assert lab.job_state(lab.wait_job(job_id, FINAL)).split("+")[0] == "COMPLETED"
        out = lab.path(f"/home/alice/probe-{job_id}.txt").read_text().splitlines()
        assert out[0] == "metadata 000 7", out  # curl: couldn't connect
        assert out[1].startswith("no MUNGE key from the Slurm controller's key service"), out
        assert "Permission denied" in out[1], out  # binding a port below 1024 needs root
        assert out[2] == "key bytes 0", out  # from a port above 1023 the service sends nothing
        assert not lab.path("/home/alice/stolen.key").exists()
        log = lab.path("/root/keyservice.log").read_text()
        assert "refused" in log
        assert f"handed the key to {controller}" in log
    finally:
        lab.run("pkill -f /root/metadata.py; pkill -f /root/keyservice.py", check=False)
        lab.run("nft delete table inet clusterfab_metadata_guard", check=False)
        lab.run(f"ip addr del {METADATA}/32 dev lo", check=False)
