"""The deep check's NCCL pair test on GKE's RDMA (gIB) node groups: the pair's exact pods (GKE's
multi-network annotations on the RDMA networks, the driver's and the gIB plugin's host directories, the
plugin's NCCL settings sourced before torchrun), valid for Kubernetes 1.35 and JobSet v0.12.0; the
settings a GKE stack with a3-ultragpu-8g and a4x-highgpu-4g groups gives; the run on recorded answers,
judged by the network NCCL says it used (`gIB`) and, with no floor recorded for these machines, measured
and reported but not judged."""

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
A = obj.Target("gke-llm-ultra-0a1b2c3d-x1y2", "gke-llm-ultra-0a1b2c3d-x1y2", 8)
B = obj.Target("gke-llm-ultra-0a1b2c3d-z3w4", "gke-llm-ultra-0a1b2c3d-z3w4", 8)
A3_ULTRA = gpudirect.Rdma(
    ("rdma-0", "rdma-1", "rdma-2", "rdma-3", "rdma-4", "rdma-5", "rdma-6", "rdma-7"),
    "/home/kubernetes/bin/nvidia",
    "/home/kubernetes/bin/gib",
)
# Google's recipe for an a3-ultragpu-8g / a4-highgpu-8g pod (Cluster Toolkit examples/gke-a3-ultragpu and
# examples/gke-a4 nccl-jobset-example.yaml; container-engine-accelerators gpudirect-rdma/nccl-test.yaml).
INTERFACES = """[
  {"interfaceName":"eth0","network":"default"},
  {"interfaceName":"eth2","network":"rdma-0"},
  {"interfaceName":"eth3","network":"rdma-1"},
  {"interfaceName":"eth4","network":"rdma-2"},
  {"interfaceName":"eth5","network":"rdma-3"},
  {"interfaceName":"eth6","network":"rdma-4"},
  {"interfaceName":"eth7","network":"rdma-5"},
  {"interfaceName":"eth8","network":"rdma-6"},
  {"interfaceName":"eth9","network":"rdma-7"}
]
"""
PROFILE = (
    "export LD_LIBRARY_PATH=/usr/local/gib/lib64:/usr/local/nvidia/lib64"
    "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n"
    "source /usr/local/gib/scripts/set_nccl_env.sh\n"
)
"""The gIB plugin's libraries first on the library path (Google's "Collect and understand NCCL/gIB logs",
"Check GKE workload manifest"), then its NCCL settings ("Run NCCL on Compute Engine instances")."""


def test_on_rdma_the_pairs_pods_get_the_rdma_networks_and_the_gib_plugins_settings() -> None:
    jobset = obj.nccl_jobset(RUN, 1, (A, B), PYTORCH, rdma=A3_ULTRA)
    name = f"{RUN}-nccl-1"
    labels = {obj.RUN_LABEL: RUN, obj.CHECK_LABEL: "nccl", obj.JOB_LABEL: name}
    template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert template == {
        "metadata": {
            "labels": {**labels, **MANAGED},
            "annotations": {
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
            "containers": [{
                "name": "allreduce",
                "image": PYTORCH,
                "command": [
                    "/bin/bash", "-c",
                    f"set -e\n{PROFILE}"
                    "export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET\n"
                    "exec torchrun --nnodes=2 --nproc-per-node=8 '--node-rank=$(NODE_RANK)' "
                    f"--master-addr={name}-pair-0-0.{name} --master-port=29500 /clusterfab/allreduce.py "
                    "--bytes=8589934592 --timeout=600\n",
                ],
                "env": [
                    {"name": "NODE_RANK",
                     "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX}']"}}},
                    {"name": "NCCL_DEBUG", "value": "INFO"},
                    {"name": "NCCL_DEBUG_SUBSYS", "value": "INIT,NET"},
                ],
                "resources": {"limits": {"nvidia.com/gpu": 8}},
                "volumeMounts": [
                    {"name": "program", "mountPath": "/clusterfab", "readOnly": True},
                    {"name": "shm", "mountPath": "/dev/shm"},
                    {"name": "nvidia", "mountPath": "/usr/local/nvidia", "readOnly": True},
                    {"name": "gib", "mountPath": "/usr/local/gib", "readOnly": True},
                ],
            }],
            "volumes": [
                {"name": "program", "configMap": {"name": RUN}},
                {"name": "shm", "emptyDir": {"medium": "Memory"}},
                {"name": "nvidia", "hostPath": {"path": "/home/kubernetes/bin/nvidia"}},
                {"name": "gib", "hostPath": {"path": "/home/kubernetes/bin/gib"}},
            ],
        },
    }  # fmt: skip
    # The rest of the JobSet is the plain pair's.
    plain = obj.nccl_jobset(RUN, 1, (A, B), PYTORCH)
    for each in (plain, jobset):
        each["spec"]["replicatedJobs"][0]["template"]["spec"].pop("template")
    assert jobset == plain
    full = obj.nccl_jobset(RUN, 1, (A, B), PYTORCH, rdma=A3_ULTRA)
    assert object_problems(full, VERSION) == []
    job = full["spec"]["replicatedJobs"][0]["template"]["spec"]
    wrapped = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": job}
    assert object_problems(wrapped, VERSION) == []


def test_the_schema_check_catches_a_wrong_field_in_the_rdma_pod() -> None:
    jobset = copy.deepcopy(obj.nccl_jobset(RUN, 0, (A, B), PYTORCH, rdma=A3_ULTRA))
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["volumes"][-1]["hostPath"]["paths"] = "/home/kubernetes/bin/gib"
    job = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    wrapped = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": job}
    assert object_problems(wrapped, VERSION) == [
        "Job j spec.template.spec.volumes.3.hostPath: "
        "Additional properties are not allowed ('paths' was unexpected)"
    ]


def test_the_helper_names_the_container_it_cannot_find_on_rdma() -> None:
    with pytest.raises(ValueError, match="the pod has no container trainer"):
        gpudirect.rdma_pod({"spec": {"containers": [{"name": "allreduce"}]}}, A3_ULTRA, ["trainer"])


def _gke_rdma_outputs() -> dict[str, Any]:
    """The GKE stack's outputs with an a3-ultragpu-8g and an a4x-highgpu-4g group on RDMA, and one
    a3-ultragpu-8g group kept off it."""
    outputs = stack_outputs("gcp")
    group = outputs["node_groups"]["plain"]
    outputs["node_groups"] = {
        "ultra": group | {"machine_type": "a3-ultragpu-8g", "fabric": "rdma"},
        "gb200": group | {"machine_type": "a4x-highgpu-4g", "fabric": "rdma"},
        "plain": group | {"machine_type": "a3-ultragpu-8g", "fabric": None},
    }
    return outputs


def test_the_gke_settings_carry_rdma_for_the_groups_on_it() -> None:
    gke = settings(read_outputs(_gke_rdma_outputs()), 1, load_catalog())
    # The catalog's rdma_subnets: 8 on a3-ultragpu-8g, 4 on a4x-highgpu-4g. It records no pair floor for
    # either machine (software.yaml, healthcheck_pair_busbw_gbytes_per_s): measured, not judged.
    assert gke.groups == {
        "ultra": Group("a3-ultragpu-8g", "rdma", 0, None, None, A3_ULTRA),
        "gb200": Group(
            "a4x-highgpu-4g",
            "rdma",
            0,
            None,
            None,
            gpudirect.Rdma(
                ("rdma-0", "rdma-1", "rdma-2", "rdma-3"),
                "/home/kubernetes/bin/nvidia",
                "/home/kubernetes/bin/gib",
            ),
        ),
        "plain": Group("a3-ultragpu-8g", None, 0, None, None, None),
    }


# ----------------------------------------------------------------------------------------------- the run
ULTRA = Group("a3-ultragpu-8g", "rdma", 0, None, None, A3_ULTRA)


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
    """Two idle a3-ultragpu-8g nodes that pass DCGM; the pair's leader printed `log`."""
    dcgm_done = [check_pod(f"{RUN}-dcgm-{i}", "Succeeded", f"u-{i}") for i in range(2)]
    pair = [check_pod(f"{RUN}-nccl-0", "Succeeded", f"u-{i}", index=i) for i in range(2)]
    return FakeApi(
        nodes=[node("u-0", "ultra"), node("u-1", "ultra")],
        rounds=[dcgm_done, dcgm_done + pair],
        logs={
            **{f"{RUN}-dcgm-{i}-0-x": dcgm_log("dcgmi-diag-r1-pass.json") for i in range(2)},
            f"{RUN}-nccl-0-0-x": log,
        },
        namespace_exists=True,
    )


def test_an_rdma_pair_is_measured_over_gib_and_reported_without_a_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_sleep(monkeypatch)
    # 8 GiB per rank over 16 ranks in 0.05 s: 322.12 GB/s busbw.
    api = _api(allreduce_log(0.05, ["u-0", "u-1"], network="gIB"))
    report = check_cluster(api, _settings({"ultra": ULTRA}), None, lambda line: None, run=RUN)
    check_document(report.document, "health")
    assert (report.exit_code, report.error) == (0, None)
    assert report.document["nodes"] == [
        {"node": "u-0", "status": "healthy", "reason": None, "detail": None, "busbw_gbytes_per_s": 322.12,
         "floor_gbytes_per_s": None, "partner": "u-1", "failures": []},
        {"node": "u-1", "status": "healthy", "reason": None, "detail": None, "busbw_gbytes_per_s": 322.12,
         "floor_gbytes_per_s": None, "partner": "u-0", "failures": []},
    ]  # fmt: skip
    (jobset,) = [c[2] for c in api.calls if c[0] == "POST" and c[1].endswith("/jobsets")]
    assert jobset == obj.nccl_jobset(RUN, 0, (obj.Target("u-0", "u-0", 8), obj.Target("u-1", "u-1", 8)),
                                     PYTORCH, rdma=A3_ULTRA)  # fmt: skip
    assert not [c for c in api.calls if c[0] == "PATCH"]


@pytest.mark.parametrize(
    ("network", "said"),
    [
        pytest.param("IB", "IB", id="nccls-own-ib"),
        pytest.param("Socket", "Socket", id="socket"),
        pytest.param(None, "an unnamed network", id="silent"),
    ],
)
def test_an_rdma_pair_whose_nccl_did_not_use_gib_blames_no_node(
    monkeypatch: pytest.MonkeyPatch, network: str | None, said: str
) -> None:
    _no_sleep(monkeypatch)
    log = allreduce_log(0.4, ["u-0", "u-1"], network=network or "Socket")
    if network is None:  # NCCL does not say which network it chose
        log = "\n".join(line for line in log.splitlines() if "Using network" not in line) + "\n"
    api = _api(log)
    report = check_cluster(api, _settings({"ultra": ULTRA}), None, lambda line: None, run=RUN)
    assert (report.exit_code, report.error) == (
        2,
        f"NCCL used {said}, not gIB (GKE's RDMA), between u-0 and u-1: the pods' NCCL did not load the gIB "
        "plugin from /usr/local/gib/lib64 (is the nccl-rdma-installer DaemonSet running on the nodes?)",
    )
    assert {(r.status, r.detail) for r in report.rows} == {
        ("healthy", "DCGM passed; NCCL test not measured (see the error)")
    }
    assert not [c for c in api.calls if c[0] == "PATCH"]


def test_the_pods_interfaces_name_the_rdma_networks_in_nic_order() -> None:
    jobset = obj.nccl_jobset(RUN, 0, (A, B), PYTORCH, rdma=A3_ULTRA)
    annotations = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"][
        "annotations"
    ]
    interfaces = json.loads(annotations["networking.gke.io/interfaces"])
    assert [(i["interfaceName"], i["network"]) for i in interfaces] == [
        ("eth0", "default"), ("eth2", "rdma-0"), ("eth3", "rdma-1"), ("eth4", "rdma-2"), ("eth5", "rdma-3"),
        ("eth6", "rdma-4"), ("eth7", "rdma-5"), ("eth8", "rdma-6"), ("eth9", "rdma-7"),
    ]  # fmt: skip
