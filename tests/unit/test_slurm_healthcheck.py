"""The deep health check's pure parts (clusterfab/scheduler/slurm/healthcheck.py) on recorded output, and
what the controller's archive carries for it; the whole flow runs in the Slurm lab
(tests/slurm/test_health_lab.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from clusterfab.catalog.query import load_catalog
from clusterfab.scheduler.slurm import healthcheck
from clusterfab.scheduler.slurm.hostvars import health_files
from tests.conftest import REPO
from tests.factories import example_spec

FIXTURES = REPO / "tests/fixtures/health"


def test_largest_busbw_reads_the_recorded_nccl_tests_table() -> None:
    """Cluster Toolkit's two-node a3-megagpu-8g run: 8 GiB out-of-place busbw 188.73 (the average line
    says 53.8932, over all sizes)."""
    assert healthcheck.largest_busbw((FIXTURES / "nccl-tests-all_gather-a3mega.txt").read_text()) == 188.73
    assert healthcheck.largest_busbw("# nothing\n") is None


def _devices(ranks: list[tuple[int, str, int]]) -> str:
    """nccl-tests' `# Using devices` lines (NVIDIA/nccl-tests src/common.cu: `#  Rank %2d Group %2d Pid
    %6d on %10s device %2d [%04x:%02x:%02x] %s`)."""
    return "# Using devices\n" + "".join(
        f"#  Rank {rank:2d} Group {0:2d} Pid {4000 + rank:6d} on {host:>10s} device {device:2d}"
        f" [0000:{0x8F + device:02x}:00] NVIDIA H100 80GB HBM3\n"
        for rank, host, device in ranks
    )


def test_world_counts_the_ranks_and_hosts_of_one_nccl_test() -> None:
    """One MPI world of two 8-GPU nodes: rank 0 lists all 16 ranks. A build without MPI started by srun
    on the same nodes: 16 tests of one rank each, every one rank 0."""
    one_world = _devices([(r, f"a3-{r // 8}", r % 8) for r in range(16)])
    assert healthcheck.world(one_world) == (16, 2)
    separate = "".join(_devices([(0, f"a3-{t // 8}", 0)]) for t in range(16))
    assert healthcheck.world(separate) == (1, 2)
    assert healthcheck.world("# nothing\n") == (0, 0)


def test_parse_nodes_reads_scontrol_one_liners() -> None:
    text = (
        "NodeName=trainers-0 Arch=x86_64 CoresPerSocket=48 Gres=gpu:h100:8 State=IDLE Partitions=train\n"
        "NodeName=trainers-1 Gres=gpu:8(S:0-1) State=IDLE+DRAIN Partitions=train,debug\n"
    )
    assert healthcheck.parse_nodes(text) == [
        healthcheck.Node("trainers-0", "IDLE", "train", 8),
        healthcheck.Node("trainers-1", "IDLE+DRAIN", "train", 8),
    ]
    assert [n.idle for n in healthcheck.parse_nodes(text)] == [True, False]


def test_the_controller_archive_carries_the_program_and_the_floors() -> None:
    spec = example_spec("aws-p5-slurm")
    files = health_files(spec, load_catalog().pair_bandwidth)
    assert (
        files["bin/clusterfab-slurm-healthcheck"]
        == (REPO / "clusterfab/scheduler/slurm/healthcheck.py").read_text()
    )
    groups = json.loads(files["healthcheck.json"])["groups"]
    # p5.48xlarge has no recorded two-node reference: measured and reported, never judged.
    assert {g["machine_type"] for g in groups.values()} == {"p5.48xlarge"}
    assert {g["min_pair_busbw_gbytes_per_s"] for g in groups.values()} == {None}


def test_the_catalog_floor_is_the_reference_less_the_tolerance() -> None:
    floors = load_catalog().pair_bandwidth
    assert (floors.floor("a3-megagpu-8g"), floors.floor("p5.48xlarge")) == (160.4, None)


def test_the_pair_test_is_one_pmix_world_whose_mpi_keeps_to_tcp_and_shared_memory() -> None:
    """The exact srun of a pair: Open MPI's own traffic is pinned to ob1 over self/vader/tcp, so it never
    opens the RDMA NICs (UCX, libfabric) that NCCL's plugin uses."""
    seen: list[list[str]] = []
    recorded = (FIXTURES / "nccl-tests-all_gather-a3mega.txt").read_text()
    table = _devices([(r, f"h100-{r // 8}", r % 8) for r in range(16)]) + recorded

    def runner(argv: Sequence[str], timeout: float) -> healthcheck.Ran:
        seen.append(list(argv))
        return healthcheck.Ran(0, table, "")

    check = healthcheck.Check(level=1, groups={}, runner=runner, reservation="clusterfab-health-1")
    pair = [healthcheck.Node(f"h100-{i}", "IDLE", "train", 8) for i in range(2)]
    assert check.bandwidth(pair) == 188.73  # the recorded table's largest size, out-of-place busbw
    assert seen == [
        [
            "srun",
            "--reservation=clusterfab-health-1",
            "--partition=train",
            "--nodelist=h100-0,h100-1",
            "--nodes=2",
            "--ntasks-per-node=8",
            "--exclusive",
            "--job-name=clusterfab-health-1",
            "--time=10",  # the NCCL test's 600 s, in minutes
            "--extra=healthchecks_prolog=off,healthchecks_epilog=off",
            "--gres=gpu:8",
            "--mpi=pmix",
            "env",
            "OMPI_MCA_pml=ob1",
            "OMPI_MCA_btl=self,vader,tcp",
            "/opt/nccl-tests/build/all_reduce_perf",
            "-b",
            "512M",
            "-e",
            "8G",
            "-f",
            "2",
            "-g",
            "1",
        ]
    ]
