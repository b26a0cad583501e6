"""The slurm_node role's GPU health check as Slurm 24.11 runs it: the prolog's quick check (with DCGM
level 1), the epilog's medium check after a failed job, the job's opt-out, and the time bounds, on a real
cluster whose nodes have stand-ins for nvidia-smi and dcgmi (tests/fixtures/health/standins) that print
the vendors' recorded formats and fail, hang or slow down on a fault file per node.

The deep check's reports under tests/fixtures/health/reports are this lab's output: each deep-check test
prints its scenario's report and asserts it equals the recorded one (HOST_SPECIFIC aside), so the reports
`clusterfab health`'s own tests read are what the program prints. A scenario's report is regenerated from
a lab run with UPDATE_GOLDEN=1, never edited by hand.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.conftest import REPO, assert_golden
from tests.json_contract import check_document
from tests.slurm.lab import SlurmLab

pytestmark = pytest.mark.slurm

FIXTURES = REPO / "tests/fixtures/health"
REPORTS = FIXTURES / "reports"
HOST_SPECIFIC = {"reservation": re.compile(r"clusterfab-health-\d+")}
"""The only report values that differ between runs of a scenario: the maintenance reservation is named
after the second the check started (healthcheck.py). The report holds no timings."""
FAULTS = "/run/clusterfab-lab/health"
DATA = "/usr/share/clusterfab-fake"
SETTINGS = "/etc/default/clusterfab-slurm-health"
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"}


def install_fakes(lab: SlurmLab) -> None:
    """dcgmi and the recorded outputs the stand-ins print (nvidia-smi is the lab's own stand-in)."""
    data = lab.path(DATA)
    data.mkdir(parents=True, exist_ok=True)
    for source in FIXTURES.iterdir():
        if source.is_file():
            (data / source.name).write_text(source.read_text())
    dcgmi = lab.path("/usr/bin/dcgmi")
    dcgmi.write_text((FIXTURES / "standins/dcgmi").read_text())
    dcgmi.chmod(0o755)


@pytest.fixture
def health(lab: SlurmLab) -> SlurmLab:
    install_fakes(lab)
    lab.run(f"rm -rf {FAULTS} /var/lib/clusterfab-slurm-health {SETTINGS} && mkdir -p {FAULTS}")
    for node in lab.nodes:
        lab.run(f"mkdir -p {FAULTS}/{node}")
    return lab


def fault(lab: SlurmLab, node: str, name: str, content: str = "") -> None:
    lab.path(f"{FAULTS}/{node}/{name}").write_text(content)


def dcgm_levels(lab: SlurmLab, node: str) -> list[str]:
    levels = lab.path(f"{FAULTS}/{node}/dcgmi-levels")
    return levels.read_text().split() if levels.exists() else []


def submit(lab: SlurmLab, script: str, *args: str) -> int:
    return lab.sbatch(script, "-N1", "--gpus-per-node=8", "-A", "research", *args, user="alice")


def drained(lab: SlurmLab, node: str, *, timeout: float = 60) -> dict[str, str]:
    def reason() -> dict[str, str] | None:
        state = lab.nodes_state()[node]
        return state if "DRAIN" in state["state"] and state["reason"] else None

    result: dict[str, str] = lab.wait_for(reason, timeout=timeout, what=f"{node} drained")
    return result


def test_healthy_node_runs_the_job_after_dcgm_level_1(health: SlurmLab) -> None:
    job = submit(health, "#!/bin/sh\nhostname\n", "-w", "trainers-0")
    assert health.job_state(health.wait_job(job, FINAL)).split("+")[0] == "COMPLETED"
    assert dcgm_levels(health, "trainers-0") == ["1"]
    assert health.settled("trainers-0") == {"state": "IDLE", "reason": ""}


def test_failed_dcgm_level_1_drains_the_node_and_the_job_runs_elsewhere(health: SlurmLab) -> None:
    fault(health, "trainers-0", "dcgm-1")
    job = submit(health, "#!/bin/sh\nhostname\n", "-o", "out-%j.txt")
    sick = drained(health, "trainers-0")
    assert sick["reason"] == (
        "clusterfab-health: DCGM: level 1 software failed on GPU 3: Persistence Mode: Persistence mode for"
        " GPU 3 is disabled. Enable persistence mode by running nvidia-smi -i <gpuId> -pm 1 as root."
    )
    health.wait_for(lambda: health.job(job)["restart_cnt"] >= 1, timeout=30, what="the job requeued")
    health.wait_for(lambda: health.release(job), timeout=60, what="the requeued job released")
    assert health.job_state(health.wait_job(job, FINAL)).split("+")[0] == "COMPLETED"
    assert health.run(f"cat /home/alice/out-{job}.txt").stdout.strip() in {"trainers-1", "trainers-2"}


def test_a_failed_job_gets_the_medium_diagnostic_in_the_epilog(health: SlurmLab) -> None:
    job = submit(health, "#!/bin/sh\nexit 3\n", "-w", "trainers-1")
    assert health.job_state(health.wait_job(job, FINAL)).split("+")[0] == "FAILED"
    health.wait_for(lambda: dcgm_levels(health, "trainers-1") == ["1", "2"], timeout=30, what="dcgmi -r 2")
    health.wait_nodes_idle(timeout=30)


def test_a_failed_medium_diagnostic_drains_the_node(health: SlurmLab) -> None:
    fault(health, "trainers-1", "dcgm-2")
    job = submit(health, "#!/bin/sh\nexit 3\n", "-w", "trainers-1")
    health.wait_job(job, FINAL)
    assert drained(health, "trainers-1")["reason"].startswith(
        "clusterfab-health: DCGM: level 2 memory failed on GPU 5: GPU 5 Thermal violations totaling 13.3"
    )


def test_a_successful_job_gets_no_medium_diagnostic(health: SlurmLab) -> None:
    fault(health, "trainers-2", "dcgm-2")
    job = submit(health, "#!/bin/sh\ntrue\n", "-w", "trainers-2")
    assert health.job_state(health.wait_job(job, FINAL)).split("+")[0] == "COMPLETED"
    health.wait_nodes_idle(timeout=30)
    assert dcgm_levels(health, "trainers-2") == ["1"]


def test_a_hanging_dcgmi_is_cut_off_and_drains_the_node_within_the_bound(health: SlurmLab) -> None:
    health.path(SETTINGS).write_text("CLUSTERFAB_HEALTH_DCGM_TIMEOUTS=5,10,20\n")
    fault(health, "trainers-2", "hang-dcgmi")
    started = time.monotonic()
    submit(health, "#!/bin/sh\nhostname\n", "-w", "trainers-2")
    sick = drained(health, "trainers-2", timeout=60)
    assert time.monotonic() - started < 40
    assert sick["reason"] == "clusterfab-health: DCGM: dcgmi diag -r 1 timed out after 5s"


def test_a_prolog_longer_than_the_batch_start_timeout_still_starts_the_job(health: SlurmLab) -> None:
    """DCGM level 1 takes seconds to tens of seconds; BatchStartTimeout (10 s by default) must not cut
    the job off while the prolog runs (PrologFlags=Alloc)."""
    fault(health, "trainers-0", "slow-dcgmi", "15")
    job = submit(health, "#!/bin/sh\nhostname\n", "-w", "trainers-0")
    assert health.job_state(health.wait_job(job, FINAL, timeout=90)).split("+")[0] == "COMPLETED"
    health.wait_for(lambda: health.nodes_state()["trainers-0"]["state"] == "IDLE", timeout=30)


def test_a_job_can_opt_out_of_the_checks(health: SlurmLab) -> None:
    health.set_fault("trainers-0")
    extra = "--extra=healthchecks_prolog=off,healthchecks_epilog=off"
    job = submit(health, "#!/bin/sh\nhostname\n", "-w", "trainers-0", extra)
    assert health.job_state(health.wait_job(job, FINAL)).split("+")[0] == "COMPLETED"
    assert health.settled("trainers-0") == {"state": "IDLE", "reason": ""}
    assert dcgm_levels(health, "trainers-0") == []


# ------------------------------------------------------------------------------- the deep check
DEEP = "/root/clusterfab-slurm-healthcheck"
DEEP_CONFIG = "/root/healthcheck.json"
FLOOR = {
    "machine_type": "a3-megagpu-8g",
    "min_pair_busbw_gbytes_per_s": 160.0,
    "floor_source": "tests: the recorded a3-megagpu-8g run, 188.73 GB/s, less 15 %",
}


def deep_check(
    lab: SlurmLab, *args: str, recorded: str, nccl_seconds: int = 60, **settings: object
) -> tuple[int, dict[str, object]]:
    """Install the controller's program, the node program and all_reduce_perf's stand-in, run the
    check as root on the controller, assert that its JSON report is the recorded one
    (reports/<recorded>.json), and return its exit status and the report."""
    program = REPO / "clusterfab/scheduler/slurm/healthcheck.py"
    lab.path(DEEP).write_text(program.read_text())
    # The InfiniBand pair step's module, imported from the program's directory as the archive ships it.
    ibpair = REPO / "clusterfab/scheduler/slurm/ibpair.py"
    lab.path(f"{DEEP.rsplit('/', 1)[0]}/clusterfab_slurm_ibpair.py").write_text(ibpair.read_text())
    node_program = lab.path("/usr/local/sbin/clusterfab-slurm-health")
    node_program.write_text(
        (REPO / "playbooks/roles/slurm_node/files/clusterfab_slurm_health.py").read_text()
    )
    node_program.chmod(0o755)
    nccl = lab.path("/usr/local/bin/all_reduce_perf")
    nccl.write_text((FIXTURES / "standins/all_reduce_perf").read_text())
    nccl.chmod(0o755)
    settings = {"groups": {"trainers": FLOOR}, "nccl_test": "/usr/local/bin/all_reduce_perf", **settings}
    lab.path(DEEP_CONFIG).write_text(json.dumps({**settings, "nccl_seconds": nccl_seconds}))
    done = lab.run(f"python3 {DEEP} --config {DEEP_CONFIG} --json {' '.join(args)}", timeout=400, check=False)
    assert done.stdout.strip(), done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    check_document(report, "health")  # the contract `clusterfab health --format json` documents
    assert_recorded(done.stdout, recorded)
    return done.returncode, report


def assert_recorded(printed: str, name: str) -> None:
    """The report the check printed, byte for byte, is reports/<name>.json but for the HOST_SPECIFIC
    values (each checked against its pattern, then taken from the recording). UPDATE_GOLDEN=1 records
    the printed report instead (a new scenario's verbatim; an existing one's keeps its reservation)."""
    path = REPORTS / f"{name}.json"
    document = json.loads(printed)
    recording = json.loads(path.read_text()) if path.exists() else document
    for key, pattern in HOST_SPECIFIC.items():
        value = str(document[key])
        assert pattern.fullmatch(value), (key, value)
        field = f"{json.dumps(key)}: {json.dumps(value)}"
        assert printed.count(field) == 1, (field, printed)
        printed = printed.replace(field, f"{json.dumps(key)}: {json.dumps(recording[key])}")
    # An absolute path: assert_golden compares with (and UPDATE_GOLDEN=1 writes) the fixture itself.
    assert_golden(str(path), printed)


def by_node(report: dict[str, object]) -> dict[str, dict[str, object]]:
    nodes = report["nodes"]
    assert isinstance(nodes, list)
    return {n["node"]: n for n in nodes}


def no_reservation(lab: SlurmLab) -> bool:
    return "No reservations in the system" in lab.run("scontrol show reservation").stdout


def test_deep_check_reports_per_node_and_drains_the_failing_one(health: SlurmLab) -> None:
    fault(health, "trainers-1", "dcgm-3")
    status, report = deep_check(health, "--level", "3", recorded="level3-dcgm-failed")
    assert status == 1
    assert (report["schema_version"], report["level"], report["healthy"]) == (1, 3, False)
    nodes = by_node(report)
    assert {name: n["status"] for name, n in nodes.items()} == {
        "trainers-0": "healthy",
        "trainers-1": "failed",
        "trainers-2": "healthy",
    }
    reason = "clusterfab-health: DCGM: level 3 memory failed on GPU 5: GPU 5 Thermal violations totaling 13.3"
    assert str(nodes["trainers-1"]["reason"]).startswith(reason)
    assert (nodes["trainers-0"]["busbw_gbytes_per_s"], nodes["trainers-0"]["partner"]) == (
        188.73,
        "trainers-2",
    )
    assert nodes["trainers-0"]["floor_gbytes_per_s"] == 160.0
    assert nodes["trainers-1"]["busbw_gbytes_per_s"] is None
    states = health.nodes_state()
    assert states["trainers-1"]["reason"] == nodes["trainers-1"]["reason"]
    assert "DRAIN" in states["trainers-1"]["state"]
    health.wait_for(lambda: health.nodes_state()["trainers-0"] == {"state": "IDLE", "reason": ""}, timeout=30)
    assert no_reservation(health)
    # The check's own jobs skip the prolog's quick check: only the level-3 diagnostic ran.
    assert dcgm_levels(health, "trainers-0") == ["3"]


def test_deep_check_blames_the_slow_node_of_a_pair(health: SlurmLab) -> None:
    fault(health, "trainers-2", "slow-nccl")
    status, report = deep_check(health, "--level", "1", recorded="level1-slow-nccl-pair")
    nodes = by_node(report)
    assert status == 1
    assert {name: n["status"] for name, n in nodes.items()} == {
        "trainers-0": "healthy",
        "trainers-1": "healthy",
        "trainers-2": "failed",
    }
    expected = (
        "clusterfab-health: PERF: all_reduce busbw 40.12 GB/s below floor 160 (trainers-2 and trainers-0)"
    )
    assert nodes["trainers-2"]["reason"] == expected
    assert health.nodes_state()["trainers-2"]["reason"] == expected
    health.wait_for(lambda: health.nodes_state()["trainers-0"]["state"] == "IDLE", timeout=30)
    assert no_reservation(health)


def test_deep_check_cuts_off_a_hanging_nccl_test_and_skips_busy_nodes(health: SlurmLab) -> None:
    busy = submit(health, "#!/bin/sh\nsleep 300\n", "-w", "trainers-0")
    health.wait_job(busy, {"RUNNING"})
    fault(health, "trainers-2", "hang-nccl")
    started = time.monotonic()
    status, report = deep_check(
        health, "--level", "1", recorded="level1-busy-and-hanging-nccl", nccl_seconds=20
    )
    assert time.monotonic() - started < 180
    nodes = by_node(report)
    assert status == 1
    assert (nodes["trainers-0"]["status"], nodes["trainers-0"]["detail"]) == (
        "skipped",
        "not idle (ALLOCATED)",
    )
    # Two nodes checked: one pair, no node known good to retry with, so both carry the verdict.
    assert nodes["trainers-2"]["reason"] == (
        "clusterfab-health: PERF: all_reduce_perf did not finish within 20s (trainers-1 and trainers-2)"
    )
    assert health.job_state(health.job(busy)) == "RUNNING"
    assert no_reservation(health)


def test_an_nccl_test_that_is_not_one_world_blames_no_node(health: SlurmLab) -> None:
    """Without a PMIx world (srun --mpi=none here; a build with MPI=0 is the same on a cluster) every
    process runs a one-rank test of its own, whose bus bandwidth is 0: not a measurement of the pair."""
    fault(health, "trainers-1", "dcgm-3")
    status, report = deep_check(health, "--level", "3", recorded="level3-not-one-world", nccl_mpi="none")
    assert status == 2
    assert report["healthy"] is False
    assert report["error"] == (
        "all_reduce_perf ran 1 rank(s) on 2 host(s), not one test of 16 ranks on 2 nodes:"
        " /usr/local/bin/all_reduce_perf must be built with MPI=1 and its MPI must take its world from"
        " srun --mpi=none"
    )
    nodes = by_node(report)
    assert {name: (n["status"], n["busbw_gbytes_per_s"]) for name, n in nodes.items()} == {
        "trainers-0": ("healthy", None),
        "trainers-1": ("failed", None),
        "trainers-2": ("healthy", None),
    }
    assert nodes["trainers-0"]["detail"] == "DCGM passed; NCCL test not measured (see the error)"
    states = health.nodes_state()
    assert "DRAIN" in states["trainers-1"]["state"]
    assert str(states["trainers-1"]["reason"]).startswith("clusterfab-health: DCGM: level 3 memory failed")
    assert health.settled("trainers-0") == {"state": "IDLE", "reason": ""}
    assert health.settled("trainers-2") == {"state": "IDLE", "reason": ""}
    assert no_reservation(health)
