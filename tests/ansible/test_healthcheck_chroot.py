"""healthcheck.yml against the EFA node, with stand-in tools printing canned output in the real
formats: nvidia-smi and dcgmi come from the stand-in packages, all_reduce_perf from the nccl_tests
role's build of the stand-in nccl-tests release (it prints the ``.out`` file written next to it).
"""

from __future__ import annotations

import json
from typing import Any

import chroot_standins as standins
import pytest
from chroot_runs import NodeRun, run_in_chroot

from clusterfab.provision.runner import PlaybookResult

pytestmark = pytest.mark.ansible

HEALTHCHECK_VARS = {
    "gpu_healthcheck_expected_gpu_count": 8,
    "gpu_healthcheck_min_busbw_gbps": 2400,
    "gpu_healthcheck_expected_driver_version": standins.DRIVER,
}
ALL_REDUCE_PERF = "/opt/nccl-tests/build/all_reduce_perf"
RESULT = "/var/lib/clusterfab/gpu-healthcheck.json"


def run_healthcheck(
    node: NodeRun,
    *,
    peak_busbw_gbytes: float,
    dcgm_output: str | None = None,
    dcgm_rc: int = 0,
    extravars: dict[str, Any] | None = None,
) -> tuple[PlaybookResult, dict[str, Any]]:
    # gpu_node.yml's nccl_tests role installed it where the health check looks by default.
    assert node.path(ALL_REDUCE_PERF).read_text() == standins.NCCL_TESTS_PERF
    node.path(f"{ALL_REDUCE_PERF}.out").write_text(standins.all_reduce_perf(peak_busbw_gbytes))
    canned = node.path(f"{standins.CANNED}/dcgmi")
    (canned / "diag.txt").write_text(dcgm_output or standins.dcgmi_diag())
    (canned / "diag.rc").write_text(f"{dcgm_rc}\n")
    for stale in (RESULT, f"{ALL_REDUCE_PERF}.out.args", f"{standins.CANNED}/dcgmi/last-args"):
        node.path(stale).unlink(missing_ok=True)
    result = run_in_chroot("healthcheck.yml", node.rootfs, {**HEALTHCHECK_VARS, **(extravars or {})})
    return result, json.loads(node.path(RESULT).read_text())


def test_healthy_node_passes_and_records_the_measurements(efa_node: NodeRun) -> None:
    result, verdict = run_healthcheck(efa_node, peak_busbw_gbytes=360.0)
    assert result.succeeded, result.failed_tasks
    assert verdict["passed"] is True
    assert verdict["failed_checks"] == []
    assert verdict["host"] == "node"
    smi = verdict["checks"]["nvidia_smi"]
    assert {
        key: smi[key] for key in ("status", "rc", "gpu_count", "expected_gpu_count", "driver_versions")
    } == {
        "status": "pass",
        "rc": 0,
        "gpu_count": 8,
        "expected_gpu_count": 8,
        "driver_versions": [standins.DRIVER],
    }
    assert smi["gpus"][7] == {
        "index": 7,
        "name": "NVIDIA H100 80GB HBM3",
        "driver_version": standins.DRIVER,
        "memory_total_mib": 81559,
    }
    assert verdict["checks"]["dcgm_diag"] == {
        "status": "pass",
        "rc": 0,
        "level": 1,
        "failed_tests": [],
        "message": "all tests passed",
    }
    assert verdict["checks"]["nccl_all_reduce"] == {
        "status": "pass",
        "rc": 0,
        "message_size_bytes": 8589934592,
        "busbw_gbytes_per_s": 360.0,
        "busbw_gbps": 2880.0,
        "avg_busbw_gbytes_per_s": 279.0,
        "min_busbw_gbps": 2400.0,
        "wrong": 0,
        "message": "busbw 2880.0 Gbps at 8589934592 B >= the minimum 2400.0 Gbps",
    }
    # The tools were called the way the role documents.
    assert efa_node.path(f"{ALL_REDUCE_PERF}.out.args").read_text() == "-b 8M -e 8G -f 2 -g 8\n"
    assert efa_node.path(f"{standins.CANNED}/dcgmi/last-args").read_text() == "diag -r 1\n"


def test_low_bus_bandwidth_fails_the_play_after_writing_the_verdict(efa_node: NodeRun) -> None:
    result, verdict = run_healthcheck(efa_node, peak_busbw_gbytes=250.0)
    assert not result.succeeded
    [failure] = result.failed_tasks
    assert failure.task == "Assert every check passed"
    assert failure.message == (
        "GPU health check failed on node: nccl_all_reduce: busbw 2000.0 Gbps at 8589934592 B is below "
        f"the minimum 2400.0 Gbps. Details in {RESULT}."
    )
    assert verdict["passed"] is False
    assert verdict["failed_checks"] == ["nccl_all_reduce"]
    nccl = verdict["checks"]["nccl_all_reduce"]
    assert (nccl["status"], nccl["busbw_gbps"], nccl["busbw_gbytes_per_s"], nccl["min_busbw_gbps"]) == (
        "fail",
        2000.0,
        250.0,
        2400.0,
    )
    assert verdict["checks"]["nvidia_smi"]["status"] == "pass"
    assert verdict["checks"]["dcgm_diag"]["status"] == "pass"


def test_dcgm_failures_name_the_failing_tests(efa_node: NodeRun) -> None:
    output = standins.dcgmi_diag(level=2, failures={"GPU Memory": "Fail - GPU: 3"})
    result, verdict = run_healthcheck(
        efa_node,
        peak_busbw_gbytes=360.0,
        dcgm_output=output,
        dcgm_rc=226,
        extravars={"gpu_healthcheck_dcgm_diag_level": 2},
    )
    assert not result.succeeded
    assert verdict["failed_checks"] == ["dcgm_diag"]
    assert verdict["checks"]["dcgm_diag"] == {
        "status": "fail",
        "rc": 226,
        "level": 2,
        "failed_tests": ["GPU Memory: Fail - GPU: 3"],
        "message": "dcgmi diag exited 226; failed: GPU Memory: Fail - GPU: 3",
    }
    assert efa_node.path(f"{standins.CANNED}/dcgmi/last-args").read_text() == "diag -r 2\n"


def test_missing_gpus_and_missing_nccl_tests_are_reported(efa_node: NodeRun) -> None:
    result, verdict = run_healthcheck(
        efa_node,
        peak_busbw_gbytes=360.0,
        extravars={
            "gpu_healthcheck_expected_gpu_count": 16,
            "gpu_healthcheck_all_reduce_perf_path": "/opt/nccl-tests/build/missing_perf",
        },
    )
    assert not result.succeeded
    assert verdict["failed_checks"] == ["nvidia_smi", "nccl_all_reduce"]
    assert verdict["checks"]["nvidia_smi"]["message"] == f"8 of 16 GPUs visible, driver {standins.DRIVER}"
    nccl = verdict["checks"]["nccl_all_reduce"]
    assert (nccl["status"], nccl["busbw_gbps"], nccl["rc"]) == ("fail", None, 127)
    assert "missing_perf" in nccl["message"]


def test_skipped_checks_are_reported_as_skipped(efa_node: NodeRun) -> None:
    result, verdict = run_healthcheck(
        efa_node, peak_busbw_gbytes=10.0, extravars={"gpu_healthcheck_checks": ["nvidia_smi"]}
    )
    assert result.succeeded, result.failed_tasks
    assert verdict["checks"]["dcgm_diag"] == {"status": "skipped"}
    assert verdict["checks"]["nccl_all_reduce"] == {"status": "skipped"}
    assert not efa_node.path(f"{ALL_REDUCE_PERF}.out.args").exists()
    assert not efa_node.path(f"{standins.CANNED}/dcgmi/last-args").exists()
