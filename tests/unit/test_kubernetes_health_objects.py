"""The deep check's objects on Kubernetes, exact and valid: the DCGM Job per node (GKE with the host's
driver, EKS without), the JobSet per pair (with EFA devices on EKS), the program's ConfigMap; each checked
against the Kubernetes OpenAPI schema of the newest control plane version clusterfab sets up, and the
JobSet against JobSet v0.12.0's CRD schema (its Job template also against Kubernetes' own Job schema).
The all-reduce program's bandwidths are nccl-tests' definitions."""

from __future__ import annotations

import copy

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.outputs import read_outputs
from clusterfab.scheduler.kubernetes import gpudirect
from clusterfab.scheduler.kubernetes.health import allreduce
from clusterfab.scheduler.kubernetes.health import objects as obj
from clusterfab.scheduler.kubernetes.health.start import parse_nodes, settings
from tests.apimodels.kubernetes_objects import object_problems
from tests.unit.kubernetes_health_fixtures import stack_outputs

VERSION = "1.35.0"
"""The default control plane version of both services (clusterfab/scheduler/kubernetes/facts.yaml)."""
RUN = "clusterfab-health-1764172800"
A = obj.Target("gke-llm-mega-0a1b2c3d-x1y2", "gke-llm-mega-0a1b2c3d-x1y2", 8)
B = obj.Target("gke-llm-mega-0a1b2c3d-z3w4", "gke-llm-mega-0a1b2c3d-z3w4", 8)
P5 = obj.Target("ip-10-1-2-3.ec2.internal", "ip-10-1-2-3.ec2.internal", 8, efa=32)
P5B = obj.Target("ip-10-1-2-4.ec2.internal", "ip-10-1-2-4.ec2.internal", 8, efa=32)
INDEX = "batch.kubernetes.io/job-completion-index"
MANAGED = {"app.kubernetes.io/managed-by": "clusterfab"}
DCGM = "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"
PYTORCH = "nvcr.io/nvidia/pytorch:25.12-py3"
SCRIPT = (
    "nv-hostengine 1>&2 || exit 3\ndcgmi diag -r 3 -j\nstatus=$?\nnv-hostengine --term 1>&2\nexit $status\n"
)


def test_the_dcgm_job_on_gke_mounts_the_hosts_driver_and_asks_for_all_the_nodes_gpus() -> None:
    job = obj.dcgm_job(RUN, 0, 3, A, image=DCGM, host_driver="/home/kubernetes/bin/nvidia")
    labels = {obj.RUN_LABEL: RUN, obj.CHECK_LABEL: "dcgm", obj.JOB_LABEL: f"{RUN}-dcgm-0"}
    assert job == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{RUN}-dcgm-0",
            "namespace": "clusterfab-system",
            "labels": {**labels, **MANAGED},
            "annotations": {"clusterfab.dev/health-nodes": A.name},
        },
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": 1800 + 120 + 900,
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "metadata": {"labels": {**labels, **MANAGED}},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "nodeSelector": {"kubernetes.io/hostname": A.hostname},
                    "tolerations": [
                        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                        {
                            "key": "kubernetes.io/arch",
                            "operator": "Equal",
                            "value": "arm64",
                            "effect": "NoSchedule",
                        },
                    ],
                    "containers": [
                        {
                            "name": "dcgm",
                            "image": DCGM,
                            "command": ["/bin/sh", "-c", SCRIPT],
                            "resources": {"limits": {"nvidia.com/gpu": 8}},
                            "securityContext": {"privileged": True},
                            "env": [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}],
                            "volumeMounts": [
                                {"name": "nvidia", "mountPath": "/usr/local/nvidia", "readOnly": True}
                            ],
                        }
                    ],
                    "volumes": [
                        {
                            "name": "nvidia",
                            "hostPath": {"path": "/home/kubernetes/bin/nvidia", "type": "Directory"},
                        }
                    ],
                },
            },
        },
    }
    assert object_problems(job, VERSION) == []


def test_the_dcgm_job_on_eks_leaves_the_driver_to_the_nvidia_runtime() -> None:
    job = obj.dcgm_job(RUN, 4, 1, P5, image=DCGM, host_driver=None)
    assert job["spec"]["activeDeadlineSeconds"] == 60 + 120 + 900
    pod = job["spec"]["template"]["spec"]
    assert "volumes" not in pod
    assert pod["containers"][0] == {
        "name": "dcgm",
        "image": DCGM,
        "command": ["/bin/sh", "-c", SCRIPT.replace("-r 3", "-r 1")],
        "resources": {"limits": {"nvidia.com/gpu": 8}},
        "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}},
    }
    assert object_problems(job, VERSION) == []


def test_the_pairs_jobset_runs_torchrun_on_both_nodes_with_the_leader_as_rendezvous() -> None:
    jobset = obj.nccl_jobset(RUN, 2, (A, B), PYTORCH)
    name = f"{RUN}-nccl-2"
    labels = {obj.RUN_LABEL: RUN, obj.CHECK_LABEL: "nccl", obj.JOB_LABEL: name}
    assert jobset["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert jobset["metadata"]["annotations"] == {"clusterfab.dev/health-nodes": f"{A.name},{B.name}"}
    assert {k: v for k, v in jobset["spec"].items() if k != "replicatedJobs"} == {
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "failurePolicy": {"maxRestarts": 0},
        "ttlSecondsAfterFinished": 3600,
    }
    (replicated,) = jobset["spec"]["replicatedJobs"]
    assert (replicated["name"], replicated["replicas"]) == ("pair", 1)
    job = replicated["template"]["spec"]
    assert {k: v for k, v in job.items() if k != "template"} == {
        "backoffLimit": 0,
        "activeDeadlineSeconds": 600 + 900,
        "ttlSecondsAfterFinished": 3600,
        "parallelism": 2,
        "completions": 2,
        "completionMode": "Indexed",
    }
    pod = job["template"]["spec"]
    assert job["template"]["metadata"]["labels"] == {**labels, **MANAGED}
    assert pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [A.name, B.name]}
                ]
            }
        ]
    }
    (container,) = pod["containers"]
    assert container["command"] == [
        "torchrun",
        "--nnodes=2",
        "--nproc-per-node=8",
        "--node-rank=$(NODE_RANK)",
        f"--master-addr={name}-pair-0-0.{name}",
        "--master-port=29500",
        "/clusterfab/allreduce.py",
        f"--bytes={8 << 30}",
        "--timeout=600",
    ]
    assert container["env"][0] == {
        "name": "NODE_RANK",
        "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX}']"}},
    }
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 8}}
    assert pod["volumes"] == [
        {"name": "program", "configMap": {"name": RUN}},
        {"name": "shm", "emptyDir": {"medium": "Memory"}},
    ]
    assert object_problems(jobset, VERSION) == []
    wrapped = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": job}
    assert object_problems(wrapped, VERSION) == []


def test_on_efa_each_pod_asks_for_its_nodes_efa_devices() -> None:
    jobset = obj.nccl_jobset(RUN, 0, (P5, P5B), PYTORCH)
    container = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}}
    assert object_problems(jobset, VERSION) == []


def test_the_schema_checks_catch_a_wrong_field_in_the_check_objects() -> None:
    jobset = copy.deepcopy(obj.nccl_jobset(RUN, 0, (A, B), PYTORCH))
    jobset["spec"]["failurePolicy"]["maxRestart"] = 0
    assert object_problems(jobset, VERSION) == [
        f"JobSet clusterfab-system/{RUN}-nccl-0 spec.failurePolicy: "
        "Additional properties are not allowed ('maxRestart' was unexpected)"
    ]
    job = copy.deepcopy(obj.dcgm_job(RUN, 0, 1, A, image=DCGM, host_driver=None))
    job["spec"]["backoffLimit"] = "0"
    assert object_problems(job, VERSION) == [
        f"Job clusterfab-system/{RUN}-dcgm-0 spec.backoffLimit: '0' is not of type 'integer', 'null'"
    ]


def test_the_namespace_and_the_programs_config_map() -> None:
    program = "print('x')\n"
    assert obj.namespace() == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "clusterfab-system", "labels": MANAGED},
    }
    config = obj.program_config_map(RUN, program)
    assert config == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": RUN,
            "namespace": "clusterfab-system",
            "labels": {obj.RUN_LABEL: RUN, **MANAGED},
        },
        "data": {"allreduce.py": program},
    }
    assert object_problems(obj.namespace(), VERSION) + object_problems(config, VERSION) == []


def test_the_settings_come_from_the_stack_and_the_catalog() -> None:
    eks = settings(read_outputs(stack_outputs("aws")), 2, load_catalog())
    assert (eks.level, eks.dcgm_image, eks.pytorch_image, eks.host_driver) == (2, DCGM, PYTORCH, None)
    # p5.48xlarge: 32 EFA devices (the catalog's network layout); no floor recorded for it.
    assert {name: (g.machine_type, g.fabric, g.efa, g.floor) for name, g in eks.groups.items()} == {
        "train": ("p5.48xlarge", "efa", 32, None),
        "spot": ("p5.48xlarge", None, 0, None),
    }
    gke = settings(read_outputs(stack_outputs("gcp")), 3, load_catalog())
    assert gke.host_driver == "/home/kubernetes/bin/nvidia"
    # a3-megagpu-8g on its fabric: the catalog's reference 188.73 GB/s less 15 %; kept off it, no floor.
    assert {name: (g.fabric, g.efa, g.floor) for name, g in gke.groups.items()} == {
        "mega": ("gpudirect-tcpxo", 0, 160.4),
        "plain": (None, 0, None),
    }
    assert gke.program.startswith('"""The NCCL all-reduce bus bandwidth')


@pytest.mark.parametrize(
    ("written", "names"),
    [
        pytest.param("a,b", ["a", "b"], id="two"),
        pytest.param("ip-10-1-2-3.ec2.internal", ["ip-10-1-2-3.ec2.internal"], id="one"),
        pytest.param("a, b,a", ["a", "b"], id="spaces-and-duplicate"),
    ],
)
def test_nodes_on_kubernetes_are_comma_separated_names(written: str, names: list[str]) -> None:
    assert parse_nodes(written) == names


def test_the_bandwidths_are_nccl_tests_definitions() -> None:
    # 8 GiB (8589934592 bytes) in 0.1 s over 16 ranks: algbw 85.89934592 GB/s, busbw that * 30 / 16.
    algbw, busbw = allreduce.bandwidths(8 << 30, 0.1, 16)
    assert (round(algbw, 4), round(busbw, 4)) == (85.8993, 161.0613)
    assert allreduce.result(8 << 30, 0.1, ["b", "a"] * 8, correct=True) == {
        "clusterfab_allreduce": 1,
        "ranks": 16,
        "hosts": ["a", "b"],
        "bytes": 8 << 30,
        "seconds": 0.1,
        "algbw_gbytes_per_s": 85.9,
        "busbw_gbytes_per_s": 161.06,
        "correct": True,
    }


RXDM = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21"
"""RxDM v1.0.21, coupled with installer v1.0.15 (container-engine-accelerators gpudirect-tcpxo/README.md,
release of Jan 9, 2026)."""
A3_MEGA_NETWORKS = ("vpc1", "vpc2", "vpc3", "vpc4", "vpc5", "vpc6", "vpc7", "vpc8")
TCPXO = gpudirect.Tcpxo(A3_MEGA_NETWORKS, RXDM, "/home/kubernetes/bin/nvidia")
# Google's recipe for an a3-megagpu-8g pod (gpudirect-tcpxo/nccl-test-latest.yaml at commit 992db812).
TCPXO_DEVICES = (
    "- path: /dev/nvidia0\n- path: /dev/nvidia1\n- path: /dev/nvidia2\n- path: /dev/nvidia3\n"
    "- path: /dev/nvidia4\n- path: /dev/nvidia5\n- path: /dev/nvidia6\n- path: /dev/nvidia7\n"
    "- path: /dev/nvidiactl\n- path: /dev/nvidia-uvm\n- path: /dev/dmabuf_import_helper\n"
)
TCPXO_INTERFACES = """[
  {"interfaceName":"eth0","network":"default"},
  {"interfaceName":"eth1","network":"vpc1"},
  {"interfaceName":"eth2","network":"vpc2"},
  {"interfaceName":"eth3","network":"vpc3"},
  {"interfaceName":"eth4","network":"vpc4"},
  {"interfaceName":"eth5","network":"vpc5"},
  {"interfaceName":"eth6","network":"vpc6"},
  {"interfaceName":"eth7","network":"vpc7"},
  {"interfaceName":"eth8","network":"vpc8"}
]
"""


def test_on_tcpxo_the_pairs_pods_get_the_gpu_networks_rxdm_and_nccls_profile() -> None:
    jobset = obj.nccl_jobset(RUN, 1, (A, B), PYTORCH, tcpxo=TCPXO)
    name = f"{RUN}-nccl-1"
    labels = {obj.RUN_LABEL: RUN, obj.CHECK_LABEL: "nccl", obj.JOB_LABEL: name}
    template = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    driver = {"name": "nvidia-install-dir-host", "mountPath": "/usr/local/nvidia"}
    assert template == {
        "metadata": {
            "labels": {**labels, **MANAGED},
            "annotations": {
                "devices.gke.io/container.tcpxo-daemon": TCPXO_DEVICES,
                "networking.gke.io/default-interface": "eth0",
                "networking.gke.io/interfaces": TCPXO_INTERFACES,
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
                "name": "tcpxo-daemon",
                "image": RXDM,
                "restartPolicy": "Always",
                "command": ["/bin/sh", "-c"],
                "args": [
                    "set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n"
                    "/fts/entrypoint_rxdm_container.sh --num_hops=2\n"
                ],
                "securityContext": {"capabilities": {"add": ["NET_ADMIN", "NET_BIND_SERVICE"]}},
                "env": [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}],
                "volumeMounts": [
                    driver,
                    {"name": "sys", "mountPath": "/hostsysfs"},
                    {"name": "proc-sys", "mountPath": "/hostprocsysfs"},
                ],
            }],
            "containers": [{
                "name": "allreduce",
                "image": PYTORCH,
                "command": [
                    "/bin/bash", "-c",
                    "set -e\nsource ${NCCL_LIB_DIR}/nccl-env-profile.sh\n"
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
                    {"name": "NCCL_LIB_DIR", "value": "/usr/local/nvidia/lib64"},
                    {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"},
                    {"name": "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "value": "/dev/aperture_devices"},
                ],
                "resources": {"limits": {"nvidia.com/gpu": 8}},
                "volumeMounts": [
                    {"name": "program", "mountPath": "/clusterfab", "readOnly": True},
                    {"name": "shm", "mountPath": "/dev/shm"},
                    driver,
                    {"name": "aperture-devices", "mountPath": "/dev/aperture_devices"},
                ],
            }],
            "volumes": [
                {"name": "program", "configMap": {"name": RUN}},
                {"name": "shm", "emptyDir": {"medium": "Memory"}},
                {"name": "nvidia-install-dir-host", "hostPath": {"path": "/home/kubernetes/bin/nvidia"}},
                {"name": "sys", "hostPath": {"path": "/sys"}},
                {"name": "proc-sys", "hostPath": {"path": "/proc/sys"}},
                {"name": "aperture-devices", "hostPath": {"path": "/dev/aperture_devices"}},
            ],
        },
    }  # fmt: skip
    # The rest of the JobSet is the plain pair's.
    plain = obj.nccl_jobset(RUN, 1, (A, B), PYTORCH)
    plain["spec"]["replicatedJobs"][0]["template"]["spec"].pop("template")
    jobset["spec"]["replicatedJobs"][0]["template"]["spec"].pop("template")
    assert jobset == plain
    full = obj.nccl_jobset(RUN, 1, (A, B), PYTORCH, tcpxo=TCPXO)
    assert object_problems(full, VERSION) == []
    job = full["spec"]["replicatedJobs"][0]["template"]["spec"]
    wrapped = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": job}
    assert object_problems(wrapped, VERSION) == []


def test_the_gke_settings_carry_tcpxo_for_the_a3_mega_group_on_its_fabric() -> None:
    gke = settings(read_outputs(stack_outputs("gcp")), 1, load_catalog())
    assert gke.groups["mega"].tcpxo == TCPXO
    assert gke.groups["plain"].tcpxo is None
    eks = settings(read_outputs(stack_outputs("aws")), 1, load_catalog())
    assert {g.tcpxo for g in eks.groups.values()} == {None}
