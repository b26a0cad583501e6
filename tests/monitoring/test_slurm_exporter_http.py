"""The Slurm exporter as the controller runs it (clusterfab-slurm-exporter.service): the program the
controller's archive ships, started with python3 and `--listen 127.0.0.1:<port> --counts <totals>`, with
an `scontrol` on PATH that answers as Slurm does, scraped over HTTP.

The content type it must send is the Prometheus documentation's (tests/fixtures/prometheus); what it
serves is parsed by Debian's promtool, and written out here in full."""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm.hostvars import controller_files
from tests.conftest import REPO
from tests.factories import example_spec
from tests.monitoring import tools

DOCS = REPO / "tests" / "fixtures" / "prometheus" / "exposition-formats-excerpt.md"
UNIT = REPO / "playbooks/roles/slurm_controller/templates/clusterfab-slurm-exporter.service.j2"

SCONTROL = """#!/bin/sh
case "$1 $2" in
  "show nodes") cat "$SCONTROL_ANSWERS/nodes" ;;
  "show jobs") cat "$SCONTROL_ANSWERS/jobs" ;;
  "show assoc_mgr") cat "$SCONTROL_ANSWERS/assoc_mgr" ;;
  *) echo "unexpected: scontrol $*" >&2; exit 1 ;;
esac
"""
NODES = (
    "NodeName=h100-0 Arch=x86_64 CoresPerSocket=48 CPUAlloc=16 CPUEfctv=192 CPUTot=192 CPULoad=3.10"
    " AvailableFeatures=h100 ActiveFeatures=h100 Gres=gpu:h100:8 NodeAddr=10.0.1.10 NodeHostName=h100-0"
    " Version=24.11.5 OS=Linux 6.8.0-1015-aws #16-Ubuntu SMP RealMemory=2000000 AllocMem=0 Sockets=2"
    " Boards=1 State=MIXED ThreadsPerCore=1 Partitions=train"
    " CfgTRES=cpu=192,mem=2000000M,billing=192,gres/gpu=8 AllocTRES=cpu=16,gres/gpu=2\n"
    "NodeName=h100-1 Arch=x86_64 CoresPerSocket=48 CPUAlloc=0 CPUEfctv=192 CPUTot=192 Gres=gpu:h100:8"
    " State=IDLE+DRAIN ThreadsPerCore=1 Partitions=train CfgTRES=cpu=192,mem=2000000M,billing=192,gres/gpu=8"
    " AllocTRES= Reason=clusterfab-health: XID: 79 on GPU 0000:53:00.0 [root@2026-11-20T10:00:00]\n"
    "NodeName=h100-2 Arch=x86_64 CoresPerSocket=48 CPUAlloc=0 CPUEfctv=192 CPUTot=192 Gres=gpu:h100:8"
    " State=IDLE+CLOUD+POWERED_DOWN ThreadsPerCore=1 Partitions=train"
    " CfgTRES=cpu=192,mem=2000000M,billing=192,gres/gpu=8 AllocTRES=\n"
)
"""`scontrol show nodes -o`: a node running a 2-GPU job, one the health check drained, one powered down."""
JOBS = (
    "JobId=7 JobName=train UserId=alice(40207) GroupId=alice(40207) Account=research QOS=research"
    " JobState=RUNNING Reason=None Partition=train NodeList=h100-0"
    " AllocTRES=cpu=16,mem=0,node=1,billing=16,gres/gpu=2\n"
    "JobId=8 JobName=eval UserId=bob(38650) GroupId=bob(38650) Account=interns QOS=interns"
    " JobState=PENDING Reason=Resources Partition=train NodeList= AllocTRES=(null)\n"
)
ASSOC_MGR = """Current Association Manager state

QOS Records

QOS=normal(1)
    UsageRaw=0.000000
    GrpJobs=N(0) GrpJobsAccrue=N(0) GrpSubmitJobs=N(0) GrpWall=N(0.00)
    GrpTRES=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0),gres/gpu=N(0)
    GrpTRESMins=cpu=N(0),mem=N(0),energy=N(0),node=N(0),billing=N(0),fs/disk=N(0),vmem=N(0),pages=N(0),gres/gpu=N(0)
QOS=research(2)
    UsageRaw=720.000000
    GrpJobs=N(1) GrpJobsAccrue=N(0) GrpSubmitJobs=N(1) GrpWall=N(6.00)
    GrpTRES=cpu=N(16),mem=N(0),energy=N(0),node=N(1),billing=N(16),fs/disk=N(0),vmem=N(0),pages=N(0),gres/gpu=16(2)
    GrpTRESMins=cpu=N(96),mem=N(0),energy=N(0),node=N(6),billing=N(96),fs/disk=N(0),vmem=N(0),pages=N(0),gres/gpu=1800000(12)
"""
"""`scontrol show assoc_mgr flags=qos`: QOS research's budget, 12 of 1,800,000 GPU-minutes used."""
COUNTS = {
    "format": 1,
    "programs": {
        "sync": {"runs": 12, "last_run": 1764000000.0, "done": {"SetAddress": 3}, "failed": {"Terminate": 1}}
    },
}
"""The node programs' running totals (nodes/counts.py's file)."""

SCRAPE = """\
# HELP clusterfab_slurm_node_program_runs_total Runs of a node program
# TYPE clusterfab_slurm_node_program_runs_total counter
clusterfab_slurm_node_program_runs_total{program="sync"} 12
# HELP clusterfab_slurm_node_program_last_run_timestamp_seconds When a node program last ran (seconds since the epoch)
# TYPE clusterfab_slurm_node_program_last_run_timestamp_seconds gauge
clusterfab_slurm_node_program_last_run_timestamp_seconds{program="sync"} 1764000000
# HELP clusterfab_slurm_node_actions_total Actions of the node programs by kind and outcome
# TYPE clusterfab_slurm_node_actions_total counter
clusterfab_slurm_node_actions_total{action="SetAddress",outcome="done",program="sync"} 3
clusterfab_slurm_node_actions_total{action="Terminate",outcome="failed",program="sync"} 1
# HELP slurm_nodes_alloc Nodes in state alloc
# TYPE slurm_nodes_alloc gauge
slurm_nodes_alloc 0
# HELP slurm_nodes_comp Nodes in state comp
# TYPE slurm_nodes_comp gauge
slurm_nodes_comp 0
# HELP slurm_nodes_down Nodes in state down
# TYPE slurm_nodes_down gauge
slurm_nodes_down 0
# HELP slurm_nodes_drain Nodes in state drain
# TYPE slurm_nodes_drain gauge
slurm_nodes_drain 1
# HELP slurm_nodes_fail Nodes in state fail
# TYPE slurm_nodes_fail gauge
slurm_nodes_fail 0
# HELP slurm_nodes_idle Nodes in state idle
# TYPE slurm_nodes_idle gauge
slurm_nodes_idle 1
# HELP slurm_nodes_maint Nodes in state maint
# TYPE slurm_nodes_maint gauge
slurm_nodes_maint 0
# HELP slurm_nodes_mix Nodes in state mix
# TYPE slurm_nodes_mix gauge
slurm_nodes_mix 1
# HELP slurm_nodes_resv Nodes in state resv
# TYPE slurm_nodes_resv gauge
slurm_nodes_resv 0
# HELP slurm_nodes_unknown Nodes in state unknown
# TYPE slurm_nodes_unknown gauge
slurm_nodes_unknown 0
# HELP slurm_gpus_total GPUs configured on all nodes
# TYPE slurm_gpus_total gauge
slurm_gpus_total 24
# HELP slurm_gpus_alloc GPUs allocated to jobs
# TYPE slurm_gpus_alloc gauge
slurm_gpus_alloc 2
# HELP slurm_gpus_idle GPUs free on nodes that take jobs
# TYPE slurm_gpus_idle gauge
slurm_gpus_idle 14
# HELP clusterfab_slurm_job_gpus GPUs a running job holds
# TYPE clusterfab_slurm_job_gpus gauge
clusterfab_slurm_job_gpus{account="research",job_id="7",partition="train",user="alice"} 2
# HELP slurm_account_jobs Jobs per account and state
# TYPE slurm_account_jobs gauge
slurm_account_jobs{account="interns",state="pending"} 1
slurm_account_jobs{account="research",state="running"} 1
# HELP clusterfab_slurm_qos_gpu_minutes_used GPU-minutes a QOS has used
# TYPE clusterfab_slurm_qos_gpu_minutes_used gauge
clusterfab_slurm_qos_gpu_minutes_used{qos="normal"} 0
clusterfab_slurm_qos_gpu_minutes_used{qos="research"} 12
# HELP clusterfab_slurm_qos_gpu_minutes_limit GPU-minute budget of a QOS
# TYPE clusterfab_slurm_qos_gpu_minutes_limit gauge
clusterfab_slurm_qos_gpu_minutes_limit{qos="research"} 1800000
# HELP clusterfab_slurm_exporter_up Whether every scontrol query of this scrape answered
# TYPE clusterfab_slurm_exporter_up gauge
clusterfab_slurm_exporter_up 1
"""  # noqa: E501
"""One scrape of the answers above: the drained node counts as drain, the powered-down cloud node as idle
(Slurm powers it up for a job), its 8 GPUs and the mixed node's 6 free ones as idle GPUs."""


@dataclass
class Exporter:
    port: int
    answers: Path
    process: subprocess.Popen[str]

    def get(self, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request(method, path)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the exporter exited {process.returncode}: {process.communicate()}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError("the exporter did not listen within 15 s")


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[Exporter]:
    # The program exactly as the controller's archive carries it (bin/clusterfab-slurm-exporter).
    files = controller_files(example_spec("aws-p5-slurm", env="prod"), load_catalog().slurm, stack="prod")
    program = tmp_path / "clusterfab-slurm-exporter"
    program.write_text(files["bin/clusterfab-slurm-exporter"])
    bin_dir, answers = tmp_path / "bin", tmp_path / "answers"
    bin_dir.mkdir()
    answers.mkdir()
    (bin_dir / "scontrol").write_text(SCONTROL)
    (bin_dir / "scontrol").chmod(0o755)
    for name, text in (("nodes", NODES), ("jobs", JOBS), ("assoc_mgr", ASSOC_MGR)):
        (answers / name).write_text(text)
    totals = tmp_path / "counts.json"
    totals.write_text(json.dumps(COUNTS))
    port = _free_port()
    # ExecStart=/usr/bin/python3 <program> --listen <address:port> --counts <totals>; -I: the standard
    # library only, as the controller's python3 has it.
    process = subprocess.Popen(
        [sys.executable, "-I", str(program), "--listen", f"127.0.0.1:{port}", "--counts", str(totals)],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SCONTROL_ANSWERS": str(answers)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _listening(port, process)
        yield Exporter(port, answers, process)
    finally:
        process.kill()
        process.communicate(timeout=10)


def test_the_unit_starts_the_program_as_this_test_does() -> None:
    unit = UNIT.read_text()
    assert (
        "ExecStart=/usr/bin/python3 {{ slurm_controller_exporter_program }} --listen "
        "{{ slurm_controller_exporter_listen }}{% if slurm_controller_nodes_lib | length > 0 %} --counts "
        "{{ __slurm_controller_nodes_counts }}{% endif %}\n"
    ) in unit


def test_metrics_are_served_in_the_documented_text_format(exporter: Exporter) -> None:
    [documented] = re.findall(r"\| \*\*HTTP `Content-Type`\*\* \| `([^`]+)`", DOCS.read_text())
    assert documented == "text/plain; version=0.0.4"
    status, headers, body = exporter.get("/metrics")
    assert status == 200
    assert headers["content-type"] == documented
    assert headers["content-length"] == str(len(body))
    assert body.decode() == SCRAPE


@pytest.mark.parametrize("suite", tools.SUITES)
def test_promtool_parses_the_scrape(exporter: Exporter, suite: str) -> None:
    """promtool parses it (a parse error exits 1, "text format parsing error"); the lint findings are the
    names kept on purpose: vpenso's slurm_gpus_total, and budgets in GPU-minutes as Slurm counts them."""
    _, _, body = exporter.get("/metrics")
    checked = subprocess.run(
        [str(tools.tool(suite, "promtool")), "check", "metrics"],
        input=body.decode(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (checked.returncode, checked.stdout, checked.stderr.splitlines()) == (
        3,
        "",
        [
            'clusterfab_slurm_qos_gpu_minutes_limit use base unit "seconds" instead of "minutes"',
            'clusterfab_slurm_qos_gpu_minutes_used use base unit "seconds" instead of "minutes"',
            'slurm_gpus_total non-counter metrics should not have "_total" suffix',
        ],
    )


@pytest.mark.parametrize("path", ["/", "/other", "/metrics/", "/metricsx", "/favicon.ico"])
def test_anything_but_metrics_is_not_found(exporter: Exporter, path: str) -> None:
    status, _, _ = exporter.get(path)
    assert status == 404


def test_only_get_is_answered(exporter: Exporter) -> None:
    assert [exporter.get("/metrics", method)[0] for method in ("POST", "PUT", "DELETE")] == [501, 501, 501]


def test_a_failing_scontrol_is_served_as_down_not_as_an_error(exporter: Exporter) -> None:
    """A scrape still answers 200 when slurmctld does not: clusterfab_slurm_exporter_up 0 is what the
    SlurmExporterDown alert reads."""
    (exporter.answers / "jobs").unlink()  # the stand-in's cat fails: scontrol exits non-zero
    status, _, body = exporter.get("/metrics")
    jobs = SCRAPE.index("# HELP clusterfab_slurm_job_gpus")
    budgets = SCRAPE.index("# HELP clusterfab_slurm_qos_gpu_minutes_used")
    # What did answer (nodes, budgets, the node programs) is still served; the jobs' metrics are not.
    expected = SCRAPE[:jobs] + SCRAPE[budgets:].replace("exporter_up 1\n", "exporter_up 0\n")
    assert (status, body.decode()) == (200, expected)
