"""The deep check's NCCL pair test on GKE's GPUDirect-TCPX (a3-highgpu-8g) node groups: the pair's exact
pods (GKE's multi-network annotations on the GPU networks, the receive daemon as a sidecar with its GPU
devices and its unix socket, the plugin's libraries and NCCL settings), valid for Kubernetes 1.35 and
JobSet v0.12.0; the settings a GKE stack with an a3-highgpu-8g group gives; the networks its pods ask
for, which the GKE program creates; the run on recorded answers, judged by the network NCCL says it used
(`GPUDirectTCPX_v7`) and, with no floor recorded for a3-highgpu-8g, measured and reported but not
judged."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.outputs import read_outputs
from clusterfab.scheduler.kubernetes import gpudirect
from clusterfab.scheduler.kubernetes.health import objects as obj
from clusterfab.scheduler.kubernetes.health.run import Group, Settings
from clusterfab.scheduler.kubernetes.health.start import check_cluster, settings
from tests.apimodels.kubernetes_objects import object_problems
from tests.components.harness import plan_text
from tests.factories import blueprint_yaml
from tests.json_contract import check_document
from tests.unit.kubernetes_health_fixtures import (
    FakeApi,
    allreduce_log,
    check_pod,
    dcgm_log,
    node,
    stack_outputs,
)

VERSION = "1.35.0"
RUN = "clusterfab-health-1764172800"
PYTORCH = "nvcr.io/nvidia/pytorch:25.12-py3"
INDEX = "batch.kubernetes.io/job-completion-index"
MANAGED = {"app.kubernetes.io/managed-by": "clusterfab"}
A = obj.Target("gke-llm-high-0a1b2c3d-x1y2", "gke-llm-high-0a1b2c3d-x1y2", 8)
B = obj.Target("gke-llm-high-0a1b2c3d-z3w4", "gke-llm-high-0a1b2c3d-z3w4", 8)
DAEMON = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12"
"""The receive daemon container-engine-accelerators gpudirect-tcpx/nccl-test-latest.yaml runs (commit
992db812)."""
A3_HIGH = gpudirect.Tcpx(("vpc1", "vpc2", "vpc3", "vpc4"), DAEMON, "/home/kubernetes/bin/nvidia")
# Google's recipe for an a3-highgpu-8g pod (container-engine-accelerators gpudirect-tcpx/
# nccl-test-latest.yaml and nccl-config.yaml at commit 992db812; Cluster Toolkit's
# enable-tcpx-in-workload.py).
INTERFACES = """[
  {"interfaceName":"eth0","network":"default"},
  {"interfaceName":"eth1","network":"vpc1"},
  {"interfaceName":"eth2","network":"vpc2"},
  {"interfaceName":"eth3","network":"vpc3"},
  {"interfaceName":"eth4","network":"vpc4"}
]
"""
DEVICES = (
    "- path: /dev/nvidia0\n- path: /dev/nvidia1\n- path: /dev/nvidia2\n- path: /dev/nvidia3\n"
    "- path: /dev/nvidia4\n- path: /dev/nvidia5\n- path: /dev/nvidia6\n- path: /dev/nvidia7\n"
    "- path: /dev/nvidiactl\n- path: /dev/nvidia-uvm\n"
)
NCCL_ENV = [
    {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"},
    {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"},
    {"name": "NCCL_ALGO", "value": "Ring,Tree"},
    {"name": "NCCL_PROTO", "value": "Simple"},
    {"name": "NCCL_CROSS_NIC", "value": "0"},
    {"name": "NCCL_NET_GDR_LEVEL", "value": "PIX"},
    {"name": "NCCL_P2P_PXN_LEVEL", "value": "0"},
    {"name": "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", "value": "eth1,eth2,eth3,eth4"},
    {"name": "NCCL_GPUDIRECTTCPX_CTRL_DEV", "value": "eth0"},
    {"name": "NCCL_DYNAMIC_CHUNK_SIZE", "value": "524288"},
    {"name": "NCCL_P2P_NET_CHUNKSIZE", "value": "524288"},
    {"name": "NCCL_P2P_PCI_CHUNKSIZE", "value": "524288"},
    {"name": "NCCL_P2P_NVL_CHUNKSIZE", "value": "1048576"},
    {"name": "NCCL_BUFFSIZE", "value": "4194304"},
    {"name": "NCCL_NSOCKS_PERTHREAD", "value": "4"},
    {"name": "NCCL_SOCKET_NTHREADS", "value": "1"},
    {"name": "NCCL_GPUDIRECTTCPX_TX_BINDINGS",
     "value": "eth1:8-21,112-125;eth2:8-21,112-125;eth3:60-73,164-177;eth4:60-73,164-177"},
    {"name": "NCCL_GPUDIRECTTCPX_RX_BINDINGS",
     "value": "eth1:22-35,126-139;eth2:22-35,126-139;eth3:74-87,178-191;eth4:74-87,178-191"},
    {"name": "NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS", "value": "500000"},
]  # fmt: skip


def test_on_tcpx_the_pairs_pods_get_the_gpu_networks_the_receive_daemon_and_the_plugins_settings() -> None:
    jobset = obj.nccl_jobset(RUN, 1, (A, B), PYTORCH, tcpx=A3_HIGH)
    name = f"{RUN}-nccl-1"
    labels = {obj.RUN_LABEL: RUN, obj.CHECK_LABEL: "nccl", obj.JOB_LABEL: name}
    template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert template == {
        "metadata": {
            "labels": {**labels, **MANAGED},
            "annotations": {
                "devices.gke.io/container.tcpx-daemon": DEVICES,
                "networking.gke.io/default-interface": "eth0",
                "networking.gke.io/interfaces": INTERFACES,
            },
        },
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [A.name, B.name]}
                ]}]
            }}},
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"},
            ],
            "initContainers": [{
                "name": "tcpx-daemon",
                "image": DAEMON,
                "restartPolicy": "Always",
                "command": [
                    "/tcpgpudmarxd/build/app/tcpgpudmarxd", "--gpu_nic_preset", "a3vm", "--gpu_shmem_type",
                    "fd", "--uds_path", "/run/tcpx", "--setup_param", '\\"--verbose 128 2 0 \\"',
                ],
                "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}},
                "env": [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}],
                "volumeMounts": [
                    {"name": "libraries", "mountPath": "/usr/local/nvidia/lib64"},
                    {"name": "tcpx-socket", "mountPath": "/run/tcpx"},
                    {"name": "sys", "mountPath": "/hostsysfs"},
                    {"name": "proc-sys", "mountPath": "/hostprocsysfs"},
                ],
            }],
            "containers": [{
                "name": "allreduce",
                "image": PYTORCH,
                # No profile to source: NCCL's settings are in the environment.
                "command": [
                    "torchrun", "--nnodes=2", "--nproc-per-node=8", "--node-rank=$(NODE_RANK)",
                    f"--master-addr={name}-pair-0-0.{name}", "--master-port=29500",
                    "/clusterfab/allreduce.py", "--bytes=8589934592", "--timeout=600",
                ],
                "env": [
                    {"name": "NODE_RANK",
                     "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX}']"}}},
                    {"name": "NCCL_DEBUG", "value": "INFO"},
                    {"name": "NCCL_DEBUG_SUBSYS", "value": "INIT,NET"},
                    *NCCL_ENV,
                ],
                "resources": {"limits": {"nvidia.com/gpu": 8}},
                "volumeMounts": [
                    {"name": "program", "mountPath": "/clusterfab", "readOnly": True},
                    {"name": "shm", "mountPath": "/dev/shm"},
                    # The plugin finds the daemon's socket under /tmp.
                    {"name": "tcpx-socket", "mountPath": "/tmp"},
                    {"name": "libraries", "mountPath": "/usr/local/nvidia/lib64"},
                ],
            }],
            "volumes": [
                {"name": "program", "configMap": {"name": RUN}},
                {"name": "shm", "emptyDir": {"medium": "Memory"}},
                {"name": "libraries", "hostPath": {"path": "/home/kubernetes/bin/nvidia/lib64"}},
                {"name": "tcpx-socket", "emptyDir": {}},
                {"name": "sys", "hostPath": {"path": "/sys"}},
                {"name": "proc-sys", "hostPath": {"path": "/proc/sys"}},
            ],
        },
    }  # fmt: skip
    # The rest of the JobSet is the plain pair's.
    plain = obj.nccl_jobset(RUN, 1, (A, B), PYTORCH)
    for each in (plain, jobset):
        each["spec"]["replicatedJobs"][0]["template"]["spec"].pop("template")
    assert jobset == plain
    full = obj.nccl_jobset(RUN, 1, (A, B), PYTORCH, tcpx=A3_HIGH)
    assert object_problems(full, VERSION) == []
    job = full["spec"]["replicatedJobs"][0]["template"]["spec"]
    wrapped = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": job}
    assert object_problems(wrapped, VERSION) == []


def test_the_schema_check_catches_a_wrong_field_in_the_tcpx_daemon() -> None:
    jobset = copy.deepcopy(obj.nccl_jobset(RUN, 0, (A, B), PYTORCH, tcpx=A3_HIGH))
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["initContainers"][0]["securityContext"]["capability"] = {"add": ["NET_ADMIN"]}
    job = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    wrapped = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": job}
    assert object_problems(wrapped, VERSION) == [
        "Job j spec.template.spec.initContainers.0.securityContext: "
        "Additional properties are not allowed ('capability' was unexpected)"
    ]


def test_the_helper_names_the_container_it_cannot_find_on_tcpx() -> None:
    with pytest.raises(ValueError, match="the pod has no container trainer"):
        gpudirect.tcpx_pod({"spec": {"containers": [{"name": "allreduce"}]}}, A3_HIGH, 8, ["trainer"])


def _gke_tcpx_outputs() -> dict[str, Any]:
    """The GKE stack's outputs with an a3-highgpu-8g group on GPUDirect-TCPX and one kept off it."""
    outputs = stack_outputs("gcp")
    group = outputs["node_groups"]["plain"]
    outputs["node_groups"] = {
        "high": group | {"machine_type": "a3-highgpu-8g", "fabric": "gpudirect-tcpx"},
        "plain": group | {"machine_type": "a3-highgpu-8g", "fabric": None},
    }
    return outputs


def test_the_gke_settings_carry_tcpx_for_the_group_on_it() -> None:
    gke = settings(read_outputs(_gke_tcpx_outputs()), 1, load_catalog())
    # The catalog's gpu_vpcs: 4 on a3-highgpu-8g. It records no pair floor for the machine
    # (software.yaml, healthcheck_pair_busbw_gbytes_per_s): measured, not judged.
    assert gke.groups == {
        "high": Group("a3-highgpu-8g", "gpudirect-tcpx", 0, None, None, None, A3_HIGH),
        "plain": Group("a3-highgpu-8g", None, 0, None, None, None, None),
    }


HIGH_BLUEPRINT = blueprint_yaml(
    "gcp",
    name="gke-high",
    node_groups=[{"name": "high", "machine_type": "a3-highgpu-8g", "count": 2}],
    scheduler={"kind": "kubernetes"},
)
"""A GKE cluster with an a3-highgpu-8g group on its GPUDirect-TCPX fabric (no example or golden plan has
one)."""


def test_the_tcpx_pods_networks_are_the_ones_the_gke_program_creates() -> None:
    plan = plan_text(HIGH_BLUEPRINT)
    networks = [
        r.inputs["metadata"]["name"]
        for r in plan.resources
        if r.type == "kubernetes:networking.gke.io/v1:Network"
    ]
    # a3-highgpu-8g: its 4 GPU networks (the catalog's gpu_vpcs).
    assert networks == ["vpc1", "vpc2", "vpc3", "vpc4"]
    tcpx = settings(read_outputs(_gke_tcpx_outputs()), 1, load_catalog()).groups["high"].tcpx
    assert tcpx is not None
    pod = gpudirect.tcpx_pod({"spec": {"containers": [{"name": "allreduce"}]}}, tcpx, 8, ["allreduce"])
    asked = [i["network"] for i in json.loads(pod["metadata"]["annotations"]["networking.gke.io/interfaces"])]
    assert asked == ["default", *networks]


# ----------------------------------------------------------------------------------------------- the run
HIGH = Group("a3-highgpu-8g", "gpudirect-tcpx", 0, None, None, None, A3_HIGH)


def _settings(groups: dict[str, Group]) -> Settings:
    return Settings(
        level=1,
        groups=groups,
        dcgm_image="nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04",
        pytorch_image=PYTORCH,
        host_driver="/home/kubernetes/bin/nvidia",
        program="print('allreduce')\n",
    )


def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("clusterfab.scheduler.kubernetes.health.run.time.sleep", lambda seconds: None)


def _api(log: str) -> FakeApi:
    """Two idle a3-highgpu-8g nodes that pass DCGM; the pair's leader printed `log`."""
    dcgm_done = [check_pod(f"{RUN}-dcgm-{i}", "Succeeded", f"h-{i}") for i in range(2)]
    pair = [check_pod(f"{RUN}-nccl-0", "Succeeded", f"h-{i}", index=i) for i in range(2)]
    return FakeApi(
        nodes=[node("h-0", "high"), node("h-1", "high")],
        rounds=[dcgm_done, dcgm_done + pair],
        logs={
            **{f"{RUN}-dcgm-{i}-0-x": dcgm_log("dcgmi-diag-r1-pass.json") for i in range(2)},
            f"{RUN}-nccl-0-0-x": log,
        },
        namespace_exists=True,
    )


def test_a_tcpx_pair_is_measured_over_the_tcpx_plugin_and_reported_without_a_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_sleep(monkeypatch)
    # 8 GiB per rank over 16 ranks in 0.2 s: 80.53 GB/s busbw.
    api = _api(allreduce_log(0.2, ["h-0", "h-1"], network="GPUDirectTCPX_v7"))
    report = check_cluster(api, _settings({"high": HIGH}), None, lambda line: None, run=RUN)
    check_document(report.document, "health")
    assert (report.exit_code, report.error) == (0, None)
    assert report.document["nodes"] == [
        {"node": "h-0", "status": "healthy", "reason": None, "detail": None, "busbw_gbytes_per_s": 80.53,
         "floor_gbytes_per_s": None, "partner": "h-1", "failures": []},
        {"node": "h-1", "status": "healthy", "reason": None, "detail": None, "busbw_gbytes_per_s": 80.53,
         "floor_gbytes_per_s": None, "partner": "h-0", "failures": []},
    ]  # fmt: skip
    (jobset,) = [c[2] for c in api.calls if c[0] == "POST" and c[1].endswith("/jobsets")]
    assert jobset == obj.nccl_jobset(RUN, 0, (obj.Target("h-0", "h-0", 8), obj.Target("h-1", "h-1", 8)),
                                     PYTORCH, tcpx=A3_HIGH)  # fmt: skip
    assert not [c for c in api.calls if c[0] == "PATCH"]


@pytest.mark.parametrize(
    ("network", "said"),
    [
        pytest.param("Socket", "Socket", id="socket"),
        pytest.param("FasTrak", "FasTrak", id="tcpxo-plugin"),
        pytest.param(None, "an unnamed network", id="silent"),
    ],
)
def test_a_tcpx_pair_whose_nccl_did_not_use_the_tcpx_plugin_blames_no_node(
    monkeypatch: pytest.MonkeyPatch, network: str | None, said: str
) -> None:
    _no_sleep(monkeypatch)
    log = allreduce_log(0.4, ["h-0", "h-1"], network=network or "Socket")
    if network is None:  # NCCL does not say which network it chose
        log = "\n".join(line for line in log.splitlines() if "Using network" not in line) + "\n"
    api = _api(log)
    report = check_cluster(api, _settings({"high": HIGH}), None, lambda line: None, run=RUN)
    assert (report.exit_code, report.error) == (
        2,
        f"NCCL used {said}, not GPUDirectTCPX_v7 (GPUDirect-TCPX), between h-0 and h-1: the pods' NCCL did "
        "not load the TCPX plugin from /usr/local/nvidia/lib64 (is the nccl-tcpx-installer DaemonSet running "
        "on the nodes?)",
    )
    assert {(r.status, r.detail) for r in report.rows} == {
        ("healthy", "DCGM passed; NCCL test not measured (see the error)")
    }
    assert not [c for c in api.calls if c[0] == "PATCH"]
