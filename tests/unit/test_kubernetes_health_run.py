"""The deep check's run on Kubernetes against recorded API answers (tests/unit/kubernetes_health_fixtures.py):
which nodes it checks, what it applies, how it judges DCGM's output and the pairs' bandwidth, the exact
patches that cordon and taint a failed node, the clean-up, and the report `clusterfab health` shows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clusterfab.core.errors import UsageError
from clusterfab.scheduler.kubernetes import gpudirect
from clusterfab.scheduler.kubernetes.health import judge
from clusterfab.scheduler.kubernetes.health.run import Group, Settings
from clusterfab.scheduler.kubernetes.health.start import check_cluster
from tests.json_contract import check_document
from tests.unit.kubernetes_health_fixtures import (
    FakeApi,
    allreduce_log,
    check_pod,
    dcgm_log,
    node,
    workload_pod,
)

RUN = "clusterfab-health-1764172800"
PODS = "/api/v1/namespaces/clusterfab-system/pods"
EFA = Group("p5.48xlarge", "efa", 32, None)
FLOORED = Group("a3-megagpu-8g", None, 0, 160.4)
TCPXO = Group(
    "a3-megagpu-8g",
    "gpudirect-tcpxo",
    0,
    160.4,
    gpudirect.Tcpxo(
        ("vpc1", "vpc2", "vpc3", "vpc4", "vpc5", "vpc6", "vpc7", "vpc8"),
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21",
        "/home/kubernetes/bin/nvidia",
    ),
)
SOFTWARE_FAILURE = (
    "level 1 software failed on GPU 3: Persistence Mode: Persistence mode for GPU 3 is disabled. Enable "
    'persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.'
)
REASON = judge.reason("DCGM", SOFTWARE_FAILURE)


def _settings(groups: dict[str, Group], level: int = 1) -> Settings:
    return Settings(
        level=level,
        groups=groups,
        dcgm_image="nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04",
        pytorch_image="nvcr.io/nvidia/pytorch:25.12-py3",
        host_driver=None,
        program="print('allreduce')\n",
    )


def _check(api: FakeApi, groups: dict[str, Group], wanted: list[str] | None = None) -> tuple[Any, list[str]]:
    said: list[str] = []
    report = check_cluster(api, _settings(groups), wanted, said.append, run=RUN)
    return report, said


def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("clusterfab.scheduler.kubernetes.health.run.time.sleep", lambda seconds: None)


def _dcgm(index: int, phase: str, name: str, exit_code: int = 0) -> dict[str, Any]:
    return check_pod(f"{RUN}-dcgm-{index}", phase, name, exit_code=exit_code)


def _pair(index: int, phase: str, names: tuple[str, str]) -> list[dict[str, Any]]:
    return [check_pod(f"{RUN}-nccl-{index}", phase, n, index=i) for i, n in enumerate(names)]


def _row(report: Any, name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(n for n in report.document["nodes"] if n["node"] == name)
    return found


def test_a_busy_node_is_skipped_a_dcgm_failure_is_cordoned_and_the_pair_measured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_sleep(monkeypatch)
    names = ("n-a", "n-b", "n-c", "n-d")
    dcgm_running = [_dcgm(i, "Running", n) for i, n in enumerate(names[1:])]
    dcgm_done = [_dcgm(0, "Failed", "n-b", 1), _dcgm(1, "Succeeded", "n-c"), _dcgm(2, "Succeeded", "n-d")]
    api = FakeApi(
        nodes=[node(n, "train") for n in names] + [node("sys-0", "system", gpus=0)],
        workloads=[workload_pod("n-a", 8)],
        rounds=[dcgm_running, dcgm_done, dcgm_done + _pair(0, "Succeeded", ("n-c", "n-d"))],
        logs={
            f"{RUN}-dcgm-0-0-x": dcgm_log("dcgmi-diag-r1-fail-software.json"),
            f"{RUN}-dcgm-1-0-x": dcgm_log("dcgmi-diag-r1-pass.json"),
            f"{RUN}-dcgm-2-0-x": dcgm_log("dcgmi-diag-r1-pass.json"),
            f"{RUN}-nccl-0-0-x": allreduce_log(0.045, ["n-c", "n-d"]),
        },
    )
    report, said = _check(api, {"train": EFA, "system": EFA})
    check_document(report.document, "health")
    assert report.exit_code == 1
    assert report.document["nodes"] == [
        {"node": "n-a", "status": "skipped", "reason": None, "detail": "not idle (1 pod(s) holding GPUs)",
         "busbw_gbytes_per_s": None, "floor_gbytes_per_s": None, "partner": None, "failures": []},
        {"node": "n-b", "status": "failed", "reason": REASON, "detail": None,
         "busbw_gbytes_per_s": None, "floor_gbytes_per_s": None, "partner": None,
         "failures": [{"category": "DCGM", "detail": SOFTWARE_FAILURE, "reason": REASON}]},
        {"node": "n-c", "status": "healthy", "reason": None, "detail": None, "busbw_gbytes_per_s": 357.91,
         "floor_gbytes_per_s": None, "partner": "n-d", "failures": []},
        {"node": "n-d", "status": "healthy", "reason": None, "detail": None, "busbw_gbytes_per_s": 357.91,
         "floor_gbytes_per_s": None, "partner": "n-c", "failures": []},
    ]  # fmt: skip
    posted = [(c[1].rsplit("/", 1)[1], c[2]["metadata"]["name"]) for c in api.calls if c[0] == "POST"]
    assert posted == [
        ("namespaces", "clusterfab-system"), ("configmaps", RUN),
        ("jobs", f"{RUN}-dcgm-0"), ("jobs", f"{RUN}-dcgm-1"), ("jobs", f"{RUN}-dcgm-2"),
        ("jobsets", f"{RUN}-nccl-0"),
    ]  # fmt: skip
    jobset = next(c[2] for c in api.calls if c[0] == "POST" and c[1].endswith("/jobsets"))
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}}
    assert [c for c in api.calls if c[0] in ("PATCH", "DELETE")] == [
        ("DELETE", "/apis/jobset.x-k8s.io/v1alpha2/namespaces/clusterfab-system/jobsets",
         {"labelSelector": f"clusterfab.dev/health-run={RUN}", "propagationPolicy": "Background"}),
        ("DELETE", "/apis/batch/v1/namespaces/clusterfab-system/jobs",
         {"labelSelector": f"clusterfab.dev/health-run={RUN}", "propagationPolicy": "Background"}),
        ("DELETE", "/api/v1/namespaces/clusterfab-system/configmaps",
         {"labelSelector": f"clusterfab.dev/health-run={RUN}", "propagationPolicy": "Background"}),
        ("PATCH", "/api/v1/nodes/n-b", {
            "metadata": {"resourceVersion": "7",
                         "annotations": {"clusterfab.dev/unhealthy-reason": REASON}},
            "spec": {"unschedulable": True, "taints": [
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                {"key": "clusterfab.dev/unhealthy", "value": "DCGM", "effect": "NoSchedule"},
            ]},
        }),
    ]  # fmt: skip
    assert said[0] == f"{RUN}: 3 idle GPU node(s) to check, 1 skipped"
    assert said[-1] == f"cordoned and tainted n-b: {judge.reason('DCGM', SOFTWARE_FAILURE)}"


def test_a_slow_pair_is_measured_again_with_good_nodes_so_only_the_slow_node_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_sleep(monkeypatch)
    names = ("m-0", "m-1", "m-2", "m-3")
    dcgm_done = [_dcgm(i, "Succeeded", n) for i, n in enumerate(names)]
    first = _pair(0, "Succeeded", ("m-0", "m-1")) + _pair(1, "Succeeded", ("m-2", "m-3"))
    again = _pair(2, "Succeeded", ("m-0", "m-2")) + _pair(3, "Succeeded", ("m-1", "m-3"))
    slow, fast = 0.4, 0.08  # 8 GiB per rank over 16 ranks: 40.27 and 201.33 GB/s busbw
    api = FakeApi(
        nodes=[node(n, "mega") for n in names],
        rounds=[dcgm_done, dcgm_done + first, dcgm_done + first + again],
        logs={
            **{f"{RUN}-dcgm-{i}-0-x": dcgm_log("dcgmi-diag-r1-pass.json") for i in range(4)},
            f"{RUN}-nccl-0-0-x": allreduce_log(slow, ["m-0", "m-1"], network="Socket"),
            f"{RUN}-nccl-1-0-x": allreduce_log(fast, ["m-2", "m-3"], network="Socket"),
            f"{RUN}-nccl-2-0-x": allreduce_log(fast, ["m-0", "m-2"], network="Socket"),
            f"{RUN}-nccl-3-0-x": allreduce_log(slow, ["m-1", "m-3"], network="Socket"),
        },
    )
    report, _ = _check(api, {"mega": FLOORED})
    slow_detail = "all_reduce busbw 40.27 GB/s below floor 160.4 (m-1 and m-3)"
    assert [(r.node, r.status, r.category, r.detail) for r in report.rows] == [
        ("m-0", "healthy", "", "busbw 201.33 GB/s with m-2 (floor 160.4)"),
        ("m-1", "failed", "PERF", slow_detail),
        ("m-2", "healthy", "", "busbw 201.33 GB/s with m-3 (floor 160.4)"),
        ("m-3", "healthy", "", "busbw 201.33 GB/s with m-2 (floor 160.4)"),
    ]
    assert report.exit_code == 1
    patch = next(c[2] for c in api.calls if c[0] == "PATCH")
    assert patch["spec"]["taints"][-1] == {
        "key": "clusterfab.dev/unhealthy",
        "value": "PERF",
        "effect": "NoSchedule",
    }


def test_a_tcpxo_group_is_measured_over_fastrak_against_the_a3_mega_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_sleep(monkeypatch)
    names = ("x-0", "x-1", "x-2", "x-3")
    dcgm_done = [_dcgm(i, "Succeeded", n) for i, n in enumerate(names)]
    first = _pair(0, "Succeeded", ("x-0", "x-1")) + _pair(1, "Succeeded", ("x-2", "x-3"))
    again = _pair(2, "Succeeded", ("x-2", "x-0")) + _pair(3, "Succeeded", ("x-3", "x-1"))
    slow, fast = 0.12, 0.08  # 8 GiB per rank over 16 ranks: 134.22 and 201.33 GB/s busbw
    api = FakeApi(
        nodes=[node(n, "mega") for n in names],
        rounds=[dcgm_done, dcgm_done + first, dcgm_done + first + again],
        logs={
            **{f"{RUN}-dcgm-{i}-0-x": dcgm_log("dcgmi-diag-r1-pass.json") for i in range(4)},
            f"{RUN}-nccl-0-0-x": allreduce_log(fast, ["x-0", "x-1"], network="FasTrak"),
            f"{RUN}-nccl-1-0-x": allreduce_log(slow, ["x-2", "x-3"], network="FasTrak"),
            f"{RUN}-nccl-2-0-x": allreduce_log(slow, ["x-2", "x-0"], network="FasTrak"),
            f"{RUN}-nccl-3-0-x": allreduce_log(fast, ["x-3", "x-1"], network="FasTrak"),
        },
    )
    report, _ = _check(api, {"mega": TCPXO})
    slow_detail = "all_reduce busbw 134.22 GB/s below floor 160.4 (x-2 and x-0)"
    assert [(r.node, r.status, r.category, r.detail) for r in report.rows] == [
        ("x-0", "healthy", "", "busbw 201.33 GB/s with x-1 (floor 160.4)"),
        ("x-1", "healthy", "", "busbw 201.33 GB/s with x-0 (floor 160.4)"),
        ("x-2", "failed", "PERF", slow_detail),
        ("x-3", "healthy", "", "busbw 201.33 GB/s with x-1 (floor 160.4)"),
    ]
    assert (report.exit_code, report.error) == (1, None)
    jobsets = [c[2] for c in api.calls if c[0] == "POST" and c[1].endswith("/jobsets")]
    assert len(jobsets) == 4
    for jobset in jobsets:
        pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        assert [c["name"] for c in pod["spec"]["initContainers"]] == ["tcpxo-daemon"]
        interfaces = json.loads(pod["metadata"]["annotations"]["networking.gke.io/interfaces"])
        assert [i["network"] for i in interfaces] == ["default"] + [f"vpc{i}" for i in range(1, 9)]
    assert [c[2]["spec"]["taints"][-1]["value"] for c in api.calls if c[0] == "PATCH"] == ["PERF"]


@pytest.mark.parametrize(
    ("network", "said"),
    [pytest.param("Socket", "Socket", id="socket"), pytest.param(None, "an unnamed network", id="silent")],
)
def test_a_tcpxo_pair_whose_nccl_did_not_use_fastrak_blames_no_node(
    monkeypatch: pytest.MonkeyPatch, network: str | None, said: str
) -> None:
    _no_sleep(monkeypatch)
    dcgm_done = [_dcgm(0, "Succeeded", "x-0"), _dcgm(1, "Succeeded", "x-1")]
    log = allreduce_log(0.4, ["x-0", "x-1"], network="Socket")
    if network is None:  # NCCL_DEBUG=WARN: NCCL does not say which network it chose
        log = "\n".join(line for line in log.splitlines() if "Using network" not in line) + "\n"
    api = FakeApi(
        nodes=[node("x-0", "mega"), node("x-1", "mega")],
        rounds=[dcgm_done, dcgm_done + _pair(0, "Succeeded", ("x-0", "x-1"))],
        logs={
            **{f"{RUN}-dcgm-{i}-0-x": dcgm_log("dcgmi-diag-r1-pass.json") for i in range(2)},
            f"{RUN}-nccl-0-0-x": log,
        },
    )
    report, _ = _check(api, {"mega": TCPXO})
    assert (report.exit_code, report.error) == (
        2,
        f"NCCL used {said}, not FasTrak (GPUDirect-TCPXO), between x-0 and x-1: the pods' NCCL did not load "
        "the TCPXO plugin from /usr/local/nvidia/lib64 (is the nccl-tcpxo-installer DaemonSet running on "
        "the nodes?)",
    )
    assert {(r.status, r.detail) for r in report.rows} == {
        ("healthy", "DCGM passed; NCCL test not measured (see the error)")
    }
    assert not [c for c in api.calls if c[0] == "PATCH"]


@pytest.mark.parametrize(
    ("log", "error"),
    [
        pytest.param(
            allreduce_log(0.1, ["e-0"], ranks=8),
            "the all-reduce ran 8 rank(s) on 1 host(s), not one world of 16 ranks on 2 nodes (e-0 and e-1)",
            id="not-one-world",
        ),
        pytest.param(
            allreduce_log(0.1, ["e-0", "e-1"], network="Socket"),
            "NCCL used Socket, not EFA, between e-0 and e-1: the image's NCCL found no EFA plugin "
            "(aws-ofi-nccl)",
            id="sockets-on-efa",
        ),
    ],
)
def test_a_pair_that_measured_the_wrong_thing_blames_no_node(
    monkeypatch: pytest.MonkeyPatch, log: str, error: str
) -> None:
    _no_sleep(monkeypatch)
    dcgm_done = [_dcgm(0, "Succeeded", "e-0"), _dcgm(1, "Succeeded", "e-1")]
    api = FakeApi(
        nodes=[node("e-0", "train"), node("e-1", "train")],
        rounds=[dcgm_done, dcgm_done + _pair(0, "Succeeded", ("e-0", "e-1"))],
        logs={
            **{f"{RUN}-dcgm-{i}-0-x": dcgm_log("dcgmi-diag-r1-pass.json") for i in range(2)},
            f"{RUN}-nccl-0-0-x": log,
        },
    )
    report, _ = _check(api, {"train": EFA})
    assert (report.exit_code, report.error) == (2, error)
    assert {(r.status, r.detail) for r in report.rows} == {
        ("healthy", "DCGM passed; NCCL test not measured (see the error)")
    }
    assert not [c for c in api.calls if c[0] == "PATCH"]


def test_a_dcgm_runtime_error_and_a_hanging_diagnostic_fail_their_nodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_sleep(monkeypatch)
    ticks = iter(range(0, 100_000, 500))
    monkeypatch.setattr("clusterfab.scheduler.kubernetes.health.run.time.monotonic", lambda: next(ticks))
    pods = [_dcgm(0, "Failed", "h-0", 255), _dcgm(1, "Running", "h-1"), _dcgm(2, "Pending", "h-2")]
    pods[2]["status"]["conditions"] = [{"type": "PodScheduled", "status": "False"}]
    api = FakeApi(
        nodes=[node("h-0", "train"), node("h-1", "train"), node("h-2", "train")],
        rounds=[pods],
        logs={f"{RUN}-dcgm-0-0-x": dcgm_log("dcgmi-diag-runtime-error.json")},
        conflicts={"h-0"},
    )
    report, _ = _check(api, {"train": EFA})
    assert [(r.node, r.status, r.category) for r in report.rows] == [
        ("h-0", "failed", "DCGM"),
        ("h-1", "failed", "GPU"),
        ("h-2", "skipped", ""),
    ]
    assert report.rows[0].detail.startswith("level 1 could not run: ")
    assert report.rows[1].detail == "dcgmi diag -r 1 did not finish within 1080s"
    assert report.rows[2].detail == "its GPUs were taken before the check's pod started"
    # h-0 changed under the first patch: read again, patched again.
    assert [c[:2] for c in api.calls if c[1].startswith("/api/v1/nodes/")] == [
        ("GET", "/api/v1/nodes/h-0"), ("PATCH", "/api/v1/nodes/h-0"),
        ("GET", "/api/v1/nodes/h-0"), ("PATCH", "/api/v1/nodes/h-0"),
        ("GET", "/api/v1/nodes/h-1"), ("PATCH", "/api/v1/nodes/h-1"),
    ]  # fmt: skip


def test_an_image_that_cannot_be_pulled_stops_the_check_and_its_objects_are_deleted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_sleep(monkeypatch)
    pod = check_pod(f"{RUN}-dcgm-0", "Pending", "p-0", waiting="ImagePullBackOff")
    api = FakeApi(nodes=[node("p-0", "train")], rounds=[[pod]], logs={})
    with pytest.raises(
        UsageError, match=r"could not run: cannot pull the check's image: nvcr\.io/nvidia/pytorch"
    ):
        _check(api, {"train": EFA})
    assert [c[0] for c in api.calls if c[0] in ("DELETE", "PATCH")] == ["DELETE"] * 3


def test_nodes_named_on_the_command_line_are_the_ones_checked() -> None:
    api = FakeApi(nodes=[node("n-0", "train"), node("cpu-0", "system", gpus=0)], rounds=[[]], logs={})
    with pytest.raises(UsageError, match="--nodes: the cluster has no node n-9"):
        _check(api, {"train": EFA}, ["n-0", "n-9"])
    report, _ = _check(api, {"train": EFA}, ["cpu-0"])
    assert [(r.node, r.status, r.detail) for r in report.rows] == [
        ("cpu-0", "skipped", "no GPUs of a clusterfab node group")
    ]
    assert report.exit_code == 0


def test_an_rxdm_image_that_cannot_be_pulled_stops_the_measuring_and_blames_no_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_sleep(monkeypatch)
    dcgm_done = [_dcgm(0, "Succeeded", "x-0"), _dcgm(1, "Succeeded", "x-1")]
    pending = _pair(0, "Pending", ("x-0", "x-1"))
    rxdm = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21"
    pending[0]["status"]["initContainerStatuses"] = [
        {"image": rxdm, "state": {"waiting": {"reason": "ErrImagePull", "message": "denied"}}}
    ]
    api = FakeApi(
        nodes=[node("x-0", "mega"), node("x-1", "mega")],
        rounds=[dcgm_done, dcgm_done + pending],
        logs={f"{RUN}-dcgm-{i}-0-x": dcgm_log("dcgmi-diag-r1-pass.json") for i in range(2)},
    )
    report, _ = _check(api, {"mega": TCPXO})
    assert (report.exit_code, report.error) == (
        2,
        f"cannot pull the check's image: {rxdm}: ErrImagePull: denied",
    )
    assert [c[0] for c in api.calls if c[0] in ("DELETE", "PATCH")] == ["DELETE"] * 3
