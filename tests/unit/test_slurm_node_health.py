"""The GPU node's health check (playbooks/roles/slurm_node/files/clusterfab_slurm_health.py), run as the
program slurmd runs, with stand-ins for nvidia-smi, dcgmi and scontrol on PATH that print the vendors'
recorded formats (tests/fixtures/health/SOURCES.md) and fail, hang or slow down on a fault file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm.render import render_slurm
from tests.conftest import REPO
from tests.factories import example_spec, load_program

PROGRAM = REPO / "playbooks/roles/slurm_node/files/clusterfab_slurm_health.py"
FIXTURES = REPO / "tests/fixtures/health"
NODE = "trainers-0"
SCONTROL = """#!/bin/sh
printf '%s\\n' "$*" >> "$CLUSTERFAB_FAKE_FAULTS/scontrol.log"
"""


health = load_program("clusterfab_slurm_health", PROGRAM)


class Node:
    """A fake GPU node: stand-ins on PATH, a fault directory, a kernel log file, a state directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir()
        for name in ("nvidia-smi", "dcgmi"):
            (self.bin / name).symlink_to(FIXTURES / "standins" / name)
        (self.bin / "scontrol").write_text(SCONTROL)
        (self.bin / "scontrol").chmod(0o755)
        self.faults = root / "faults"
        (self.faults / NODE).mkdir(parents=True)
        self.kmsg = root / "kmsg"
        self.kmsg.write_text("6,1,1000,-;Linux version 6.8.0\n")
        self.env = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "SLURMD_NODENAME": NODE,
            "SLURM_JOB_ID": "42",
            "CLUSTERFAB_HEALTH_CONFIG": str(root / "none"),
            "CLUSTERFAB_HEALTH_KMSG": str(self.kmsg),
            "CLUSTERFAB_HEALTH_STATE_DIR": str(root / "state"),
            "CLUSTERFAB_HEALTH_LOG": str(root / "health.log"),
            "CLUSTERFAB_FAKE_FAULTS": str(self.faults),
            "CLUSTERFAB_FAKE_DATA": str(FIXTURES),
        }

    def fault(self, name: str, content: str = "") -> None:
        (self.faults / NODE / name).write_text(content)

    def clear(self, name: str) -> None:
        (self.faults / NODE / name).unlink()

    def log_kernel(self, seq: int, message: str) -> None:
        with self.kmsg.open("a") as handle:
            handle.write(f"3,{seq},{seq * 1000},-;{message}\n")

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(PROGRAM), *args],
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def drains(self) -> list[str]:
        log = self.faults / "scontrol.log"
        return log.read_text().splitlines() if log.exists() else []

    def dcgm_levels(self) -> list[str]:
        levels = self.faults / NODE / "dcgmi-levels"
        return levels.read_text().split() if levels.exists() else []


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


def _drain(reason: str) -> str:
    return f"update NodeName={NODE} State=DRAIN Reason={reason}"


def test_a_healthy_node_passes_the_prolog_with_dcgm_level_1(node: Node) -> None:
    done = node.run(SLURM_SCRIPT_CONTEXT="prolog_slurmd")
    assert (done.returncode, node.drains(), node.dcgm_levels()) == (0, [], ["1"])
    assert "trainers-0 job 42 prolog (dcgm level 1" in (node.root / "health.log").read_text()


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("gpu-lost", "clusterfab-health: GPU: nvidia-smi failed (exit 255): Unable to determine the device"),
        ("gpu-missing", "clusterfab-health: GPU: expected 8 GPUs, nvidia-smi lists 7"),
        ("ecc", "clusterfab-health: ECC: 2 uncorrected ECC errors on GPU 0000:55:00.0"),
        ("nvlink", "clusterfab-health: NVLINK: Replay Errors 7 on GPU 0000:54:00.0 link 4"),
        ("dcgm-1", "clusterfab-health: DCGM: level 1 software failed on GPU 3: Persistence Mode:"),
        ("dcgm-runtime-error", "clusterfab-health: DCGM: level 1 could not run: Error: Unable to complete"),
    ],
)
def test_each_failure_drains_the_node_with_its_category(node: Node, fault: str, reason: str) -> None:
    node.fault(fault)
    done = node.run(SLURM_SCRIPT_CONTEXT="prolog_slurmd")
    assert done.returncode == 1
    [drain] = node.drains()
    assert drain.startswith(_drain(reason)), drain
    assert len(drain.split("Reason=", 1)[1]) <= 200  # kept well inside slurmdbd's 255-byte reason


def test_the_dcgm_reason_is_cut_to_slurms_reason_length(node: Node) -> None:
    node.fault("dcgm-1")
    node.run(SLURM_SCRIPT_CONTEXT="prolog_slurmd")
    [drain] = node.drains()
    assert drain == _drain(
        "clusterfab-health: DCGM: level 1 software failed on GPU 3: Persistence Mode: Persistence mode for"
        " GPU 3 is disabled. Enable persistence mode by running nvidia-smi -i <gpuId> -pm 1 as root."
    )


def test_a_new_critical_xid_drains_once_and_not_again_after_a_resume(node: Node) -> None:
    node.log_kernel(7, "NVRM: Xid (PCI:0000:53:00): 79, pid=1101234, GPU has fallen off the bus.")
    assert node.run(SLURM_SCRIPT_CONTEXT="epilog_slurmd").returncode == 1
    assert node.drains() == [_drain("clusterfab-health: XID: 79 on GPU 0000:53:00.0")]
    # The operator resets the GPU and resumes the node: the same record does not drain it again.
    assert node.run(SLURM_SCRIPT_CONTEXT="prolog_slurmd").returncode == 0
    assert len(node.drains()) == 1
    node.log_kernel(9, "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 95, pid=7194, Uncontained: FBHUB. RST: Yes")
    assert node.run(SLURM_SCRIPT_CONTEXT="prolog_slurmd").returncode == 1
    assert node.drains()[-1] == _drain("clusterfab-health: XID: 95 on GPU 0000:01:00.0")


def test_an_application_xid_does_not_drain(node: Node) -> None:
    node.log_kernel(7, "NVRM: Xid (PCI:0000:53:00): 13, pid=77, Graphics Exception: ESR 0x405848=0x3f")
    node.log_kernel(8, "NVRM: Xid (PCI:0000:53:00): 31, pid=77, Ch 00000008, intr 00000000. MMU Fault")
    assert node.run(SLURM_SCRIPT_CONTEXT="prolog_slurmd").returncode == 0
    assert node.drains() == []


def test_xids_of_a_previous_boot_are_read_again_from_the_new_kernel_log(node: Node) -> None:
    state = node.root / "state"
    state.mkdir()
    (state / f"xid-{NODE}.json").write_text(json.dumps({"boot_id": "another boot", "seq": 100}))
    node.log_kernel(7, "NVRM: Xid (PCI:0000:53:00): 48, pid=1, DBE (double bit error) ECC error")
    assert node.run(SLURM_SCRIPT_CONTEXT="prolog_slurmd").returncode == 1
    assert node.drains() == [_drain("clusterfab-health: XID: 48 on GPU 0000:53:00.0")]


@pytest.mark.parametrize(
    ("exit_code2", "levels"),
    [("0:0", []), ("1:0", ["2"]), ("0:15", []), ("0:9", []), ("0:11", ["2"])],
)
def test_the_epilog_runs_the_medium_diagnostic_only_after_a_failed_job(
    node: Node, exit_code2: str, levels: list[str]
) -> None:
    done = node.run(SLURM_SCRIPT_CONTEXT="epilog_slurmd", SLURM_JOB_EXIT_CODE2=exit_code2)
    assert (done.returncode, node.dcgm_levels()) == (0, levels)


def test_a_failed_medium_diagnostic_drains_the_node(node: Node) -> None:
    node.fault("dcgm-2")
    done = node.run(SLURM_SCRIPT_CONTEXT="epilog_slurmd", SLURM_JOB_EXIT_CODE2="134:0")
    assert done.returncode == 1
    assert node.drains() == [
        _drain(
            "clusterfab-health: DCGM: level 2 memory failed on GPU 5: GPU 5 Thermal violations totaling 13.3"
            " seconds started at 9.7 seconds into the test for GPU 5 Verify that the cooling on this machine"
            " is functi"  # cut at MAX_REASON
        )
    ]


@pytest.mark.parametrize("mode", ["prolog", "epilog"])
def test_a_job_can_skip_the_check(node: Node, mode: str) -> None:
    node.fault("gpu-lost")
    extra = f"team=research,healthchecks_{mode}=off"
    done = node.run(SLURM_SCRIPT_CONTEXT=f"{mode}_slurmd", SLURM_JOB_EXTRA=extra, SLURM_JOB_EXIT_CODE2="1:0")
    assert (done.returncode, node.drains()) == (0, [])


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("hang-nvidia-smi", "clusterfab-health: GPU: nvidia-smi timed out after 2s"),
        ("hang-dcgmi", "clusterfab-health: DCGM: dcgmi diag -r 1 timed out after 3s"),
    ],
)
def test_a_hanging_command_is_cut_off_and_drains_the_node(node: Node, fault: str, reason: str) -> None:
    node.fault(fault)
    started = time.monotonic()
    done = node.run(
        SLURM_SCRIPT_CONTEXT="prolog_slurmd",
        CLUSTERFAB_HEALTH_TIMEOUT="2",
        CLUSTERFAB_HEALTH_DCGM_TIMEOUTS="3,5,7",
    )
    assert time.monotonic() - started < 15
    assert (done.returncode, node.drains()) == (1, [_drain(reason)])


def test_the_budget_bounds_the_whole_check(node: Node) -> None:
    """A slow diagnostic gets only what is left of the check's budget, not its own timeout."""
    node.fault("hang-dcgmi")
    started = time.monotonic()
    done = node.run(SLURM_SCRIPT_CONTEXT="prolog_slurmd", CLUSTERFAB_HEALTH_PROLOG_BUDGET="3")
    assert time.monotonic() - started < 12
    [drain] = node.drains()
    assert done.returncode == 1
    assert drain.startswith(_drain("clusterfab-health: DCGM: dcgmi diag -r 1 timed out after "))


def test_report_mode_prints_a_verdict_and_never_drains(node: Node) -> None:
    node.fault("dcgm-3")
    done = node.run("--mode", "report", "--level", "3")
    assert done.returncode == 0
    verdict = json.loads(done.stdout)
    assert verdict["schema_version"] == 1
    assert (verdict["node"], verdict["level"], verdict["healthy"]) == (NODE, 3, False)
    assert [f["category"] for f in verdict["failures"]] == ["DCGM"]
    assert verdict["failures"][0]["reason"].startswith("clusterfab-health: DCGM: level 3 memory failed")
    assert (node.drains(), node.dcgm_levels()) == ([], ["3"])


def test_report_mode_of_a_healthy_node(node: Node) -> None:
    verdict = json.loads(node.run("--mode", "report", "--level", "2").stdout)
    assert (verdict["healthy"], verdict["failures"], verdict["level"]) == (True, [], 2)


def test_the_settings_file_is_read(node: Node, tmp_path: Path) -> None:
    settings = tmp_path / "default"
    settings.write_text("# managed\nCLUSTERFAB_HEALTH_GPUS=4\nCLUSTERFAB_HEALTH_TIMEOUT=20\n")
    node.run(SLURM_SCRIPT_CONTEXT="prolog_slurmd", CLUSTERFAB_HEALTH_CONFIG=str(settings))
    assert node.drains() == [_drain("clusterfab-health: GPU: expected 4 GPUs, nvidia-smi lists 8")]


def test_dcgm_absent_skips_the_diagnostic(node: Node) -> None:
    (node.bin / "dcgmi").unlink()
    assert node.run(SLURM_SCRIPT_CONTEXT="prolog_slurmd").returncode == 0
    assert node.dcgm_levels() == []


# ------------------------------------------------------------------- parsers on the recorded formats
def test_dcgm_parser_on_recorded_output() -> None:
    passing = (FIXTURES / "dcgmi-diag-r1-pass.json").read_text()
    assert health.parse_dcgm(passing, 1) == []
    assert health.parse_dcgm("Error: unable to connect\n", 1) == [
        health.Failure("DCGM", "level 1: no diagnostic in dcgmi's output")
    ]
    summary_only = {"DCGM Diagnostic": {"test_categories": [{"category": "Integration", "tests": [
        {"name": "pcie", "results": [], "test_summary": {"status": "Fail", "warnings": [{"warning": "x"}]}}
    ]}]}}  # fmt: skip
    expected = [health.Failure("DCGM", "level 2 pcie failed: x")]
    assert health.parse_dcgm(json.dumps(summary_only), 2) == expected


def test_nvlink_parser_on_recorded_output() -> None:
    counters = health.parse_nvlink_errors((FIXTURES / "nvlink-e-h100.txt").read_text())
    assert len(counters) == 8 * 18 * 3
    assert counters[:3] == [(0, 0, "Replay Errors", 0), (0, 0, "Recovery Errors", 0), (0, 0, "CRC Errors", 0)]
    assert health.parse_nvlink_errors("GPU 0: X\n\t Link 0: Tx0 Throughput: 1234\n") == []


def test_kmsg_records_and_continuation_lines(tmp_path: Path) -> None:
    kmsg = tmp_path / "kmsg"
    kmsg.write_text(
        "6,160,424069,-;pci_root PNP0A03:00: host bridge window\n SUBSYSTEM=acpi\n"
        "3,161,424070,-;NVRM: Xid (PCI:0000:53:00): 79, pid=1, GPU has fallen off the bus.\n"
    )
    xids, last = health.find_xids(health.kmsg_records(str(kmsg)), 159)
    assert (xids, last) == ([health.Xid(161, 79, "0000:53:00.0")], 161)
    assert health.find_xids(health.kmsg_records(str(kmsg)), 161) == ([], 161)
    assert list(health.kmsg_records(str(tmp_path / "missing"))) == []


@pytest.mark.parametrize(
    ("category", "detail", "reason"),
    [
        ("XID", "79 on GPU 0000:53:00.0", "clusterfab-health: XID: 79 on GPU 0000:53:00.0"),
        ("GPU", 'say "hi"\nnow', "clusterfab-health: GPU: say hi now"),
        ("PERF", "x" * 300, "clusterfab-health: PERF: " + "x" * 175),  # 200 characters in all
    ],
)
def test_drain_reasons_follow_the_contract(category: str, detail: str, reason: str) -> None:
    assert health.drain_reason(category, detail) == reason
    assert len(reason) <= 200


def test_an_unknown_category_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown health category 'BOGUS'"):
        health.drain_reason("BOGUS", "x")


def test_a_command_stuck_past_sigkill_is_abandoned(tmp_path: Path) -> None:
    """A process that ignores the kill (here: a child that keeps the pipes open after its parent is
    killed, in its own session) is not waited for."""
    script = tmp_path / "stuck"
    script.write_text("#!/bin/sh\nsetsid sleep 30 &\nsleep 30\n")
    script.chmod(0o755)
    started = time.monotonic()
    ran = health.run([str(script)], 1)
    assert ran.returncode is None
    assert time.monotonic() - started < 1 + health._KILL_WAIT + 2
    assert os.path.exists(script)


def test_slurmd_bounds_the_prolog_and_epilog_beyond_the_checks_own_budgets() -> None:
    budgets = [float(health.DEFAULTS[f"CLUSTERFAB_HEALTH_{k}_BUDGET"]) for k in ("PROLOG", "EPILOG")]
    assert budgets == [150.0, 420.0]
    assert max(budgets) < 600  # the check drains by itself before slurmd kills it
    conf = render_slurm(example_spec("aws-p5-slurm", "prod"), load_catalog().slurm)["slurm.conf"]
    assert "\nPrologEpilogTimeout=600\n" in conf
