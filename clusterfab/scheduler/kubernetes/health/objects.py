"""The objects one run of the deep check applies, all in NAMESPACE and labelled with the run's id: a
ConfigMap with the all-reduce program, per GPU node a Job running `dcgmi diag`, per node pair a JobSet
running the all-reduce.

Each pod asks for every GPU its node advertises, so it starts only on a node where no other pod holds a
GPU, and no workload can start beside it while it runs. Every Job has backoffLimit 0 (a diagnostic that
failed is a verdict, not something to retry) and a deadline by level; finished objects are also removed
by their TTL should the run that made them die before it deletes them.

On GKE no NVIDIA container runtime puts the driver's tools into a container: the DCGM pod mounts the
host's driver directory at /usr/local/nvidia and runs privileged, as dcgm-exporter's does there
(manifests/dcgm_exporter.py) and as Google's cluster-health-scanner runs `dcgmi diag` on GKE
(deploy/helm/health_checks/gpu_healthcheck, commit 81c525d8). On EKS the AL2023 NVIDIA AMI's container
runtime does, and the pod gets SYS_ADMIN as NVIDIA's exporter manifest gives it.

On GPUDirect-TCPXO a pair's pods are decorated by the same helper as the researcher's example
(gpudirect.tcpxo_pod: the GPU networks, the RxDM sidecar, NCCL's plugin and settings), and torchrun starts
in a shell that first sources the plugin's NCCL profile. On GPUDirect-TCPX the helper is
gpudirect.tcpx_pod (the GPU networks, the receive daemon sidecar, NCCL's plugin and its settings in the
environment; torchrun starts as on a plain pair). On GKE's RDMA the helper is gpudirect.rdma_pod
(the RDMA networks, the driver's and the gIB plugin's directories), and the shell first runs
gpudirect.GIB_PROFILE.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clusterfab.scheduler.kubernetes import gpudirect
from clusterfab.scheduler.kubernetes.manifests.common import gpu_node_tolerations, host_path, metadata

NAMESPACE = "clusterfab-system"
RUN_LABEL = "clusterfab.dev/health-run"
"""Every object and pod of a run: `clusterfab-health-<unix seconds>`, the report's `reservation`."""
CHECK_LABEL = "clusterfab.dev/health-check"
"""`dcgm` or `nccl`."""
JOB_LABEL = "clusterfab.dev/health-job"
"""A pod's Job or JobSet, by name."""
NODE_ANNOTATION = "clusterfab.dev/health-nodes"
"""The nodes a Job or JobSet checks, comma-separated (a label value could not hold a node's name)."""
HOSTNAME_LABEL = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
EFA = "vpc.amazonaws.com/efa"
PROGRAM = "allreduce.py"
PROGRAM_DIR = "/clusterfab"
MASTER_PORT = 29500
REPLICATED_JOB = "pair"
ALLREDUCE = "allreduce"
"""The pair pods' container."""

DCGM_SECONDS = {1: 60, 2: 300, 3: 1800}
"""How long `dcgmi diag -r N` may take: the Slurm nodes' own bounds (clusterfab-slurm-health)."""
MARGIN = 120
"""Seconds for the host engine to start and the report to be written, beyond DCGM's own bound."""
PULL_SECONDS = 900
"""Seconds a pod may spend pulling its image before its Job's deadline cuts it off (NVIDIA's PyTorch
image is many gigabytes; the DCGM image pulls faster, and gets the same room)."""
NCCL_SECONDS = 600
"""How long one pair's all-reduce may take, rendezvous included (the Slurm check's bound)."""
TTL_SECONDS = 3600


def dcgm_deadline(level: int) -> int:
    return DCGM_SECONDS[level] + MARGIN + PULL_SECONDS


def nccl_deadline() -> int:
    return NCCL_SECONDS + PULL_SECONDS


@dataclass(frozen=True)
class Target:
    """One GPU node as the check's pods select and size themselves for it."""

    name: str
    hostname: str
    """Its `kubernetes.io/hostname` label, what the pods select it by."""
    gpus: int
    """The GPUs it advertises (`nvidia.com/gpu` allocatable): the pods ask for all of them."""
    efa: int = 0
    """The EFA devices its pods ask for (`vpc.amazonaws.com/efa`); 0 off EFA."""


def namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(NAMESPACE, None)}


def program_config_map(run: str, program: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(run, NAMESPACE, {RUN_LABEL: run}),
        "data": {PROGRAM: program},
    }


def dcgm_script(level: int) -> str:
    """Start a host engine in the pod, run the diagnostic as JSON, stop the engine; dcgmi's exit status."""
    diag = shlex.join(["dcgmi", "diag", "-r", str(level), "-j"])
    return f"nv-hostengine 1>&2 || exit 3\n{diag}\nstatus=$?\nnv-hostengine --term 1>&2\nexit $status\n"


def dcgm_job(
    run: str, index: int, level: int, target: Target, *, image: str, host_driver: str | None
) -> dict[str, Any]:
    """The Job that runs `dcgmi diag -r LEVEL -j` on `target`, alone on its GPUs."""
    name = f"{run}-dcgm-{index}"
    labels = {RUN_LABEL: run, CHECK_LABEL: "dcgm", JOB_LABEL: name}
    container: dict[str, Any] = {
        "name": "dcgm",
        "image": image,
        "command": ["/bin/sh", "-c", dcgm_script(level)],
        "resources": {"limits": {GPU: target.gpus}},
        "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}},
    }
    volumes: list[dict[str, Any]] = []
    if host_driver is not None:
        container["env"] = [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}]
        container["volumeMounts"] = [{"name": "nvidia", "mountPath": "/usr/local/nvidia", "readOnly": True}]
        container["securityContext"] = {"privileged": True}
        volumes.append(host_path("nvidia", host_driver, "Directory"))
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "nodeSelector": {HOSTNAME_LABEL: target.hostname},
        "tolerations": gpu_node_tolerations(),
        "containers": [container],
    }
    if volumes:
        pod["volumes"] = volumes
    return _job(name, labels, [target.name], dcgm_deadline(level), pod)


def nccl_jobset(
    run: str,
    index: int,
    pair: tuple[Target, Target],
    image: str,
    message_bytes: int = 8 << 30,
    *,
    tcpxo: gpudirect.Tcpxo | None = None,
    rdma: gpudirect.Rdma | None = None,
    tcpx: gpudirect.Tcpx | None = None,
) -> dict[str, Any]:
    """The JobSet of one pair: one Indexed Job of two pods, one per node (each asks for all its node's
    GPUs and may run on either node of the pair), torchrun with the leader pod's stable DNS name as its
    rendezvous; with `tcpxo` or `tcpx`, NCCL over the nodes' GPU networks, with `rdma` over their RDMA
    networks."""
    name = f"{run}-nccl-{index}"
    labels = {RUN_LABEL: run, CHECK_LABEL: "nccl", JOB_LABEL: name}
    # JobSet's headless service (the JobSet's name) gives pod <jobset>-<job>-<job index>-<pod index> a
    # DNS name under it: rank 0's pod is the leader (kubernetes-sigs/jobset examples/pytorch).
    leader = f"{name}-{REPLICATED_JOB}-0-0.{name}"
    profile = gpudirect.PROFILE if tcpxo else gpudirect.GIB_PROFILE if rdma else None
    container = _allreduce_container(leader, pair[0], image, message_bytes, profile)
    pod = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "affinity": _on_nodes([t.hostname for t in pair]),
        "tolerations": gpu_node_tolerations(),
        "containers": [container],
        "volumes": [
            {"name": "program", "configMap": {"name": run}},
            {"name": "shm", "emptyDir": {"medium": "Memory"}},
        ],
    }
    job = _job(name, labels, [t.name for t in pair], nccl_deadline(), pod)
    job["spec"] |= {"parallelism": 2, "completions": 2, "completionMode": "Indexed"}
    if tcpxo is not None:
        job["spec"]["template"] = gpudirect.tcpxo_pod(
            job["spec"]["template"], tcpxo, pair[0].gpus, [ALLREDUCE]
        )
    if tcpx is not None:
        job["spec"]["template"] = gpudirect.tcpx_pod(job["spec"]["template"], tcpx, pair[0].gpus, [ALLREDUCE])
    if rdma is not None:
        job["spec"]["template"] = gpudirect.rdma_pod(job["spec"]["template"], rdma, [ALLREDUCE])
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": job["metadata"],
        "spec": {
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            "failurePolicy": {"maxRestarts": 0},
            "ttlSecondsAfterFinished": TTL_SECONDS,
            "replicatedJobs": [
                {
                    "name": REPLICATED_JOB,
                    "replicas": 1,
                    "template": {"metadata": {"labels": dict(labels)}, "spec": job["spec"]},
                }
            ],
        },
    }


def _allreduce_container(
    leader: str, first: Target, image: str, message_bytes: int, profile: str | None
) -> dict[str, Any]:
    torchrun = [
        "torchrun", "--nnodes=2", f"--nproc-per-node={first.gpus}", "--node-rank=$(NODE_RANK)",
        f"--master-addr={leader}", f"--master-port={MASTER_PORT}",
        f"{PROGRAM_DIR}/{PROGRAM}", f"--bytes={message_bytes}", f"--timeout={NCCL_SECONDS}",
    ]  # fmt: skip
    limits: dict[str, int] = {GPU: first.gpus}
    if first.efa:
        limits[EFA] = first.efa
    return {
        "name": ALLREDUCE,
        "image": image,
        "command": torchrun if profile is None else _profiled_command(profile, torchrun),
        "env": [
            {"name": "NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": _COMPLETION_INDEX}}},
            # NCCL says which network it chose ("Using network ..."): the check reads it back.
            {"name": "NCCL_DEBUG", "value": "INFO"},
            {"name": "NCCL_DEBUG_SUBSYS", "value": "INIT,NET"},
        ],
        "resources": {"limits": limits},
        "volumeMounts": [
            {"name": "program", "mountPath": PROGRAM_DIR, "readOnly": True},
            # NCCL's shared-memory transport needs more than a container's default 64 MiB /dev/shm.
            {"name": "shm", "mountPath": "/dev/shm"},
        ],
    }


def _profiled_command(profile: str, torchrun: list[str]) -> list[str]:
    """torchrun after the fabric plugin's NCCL profile (`profile`: shell lines). The TCPXO profile sets
    NCCL_DEBUG=WARN (the gIB one may set it too): the check sets INFO again so that NCCL still says which
    network it chose. Kubernetes puts NODE_RANK into `$(NODE_RANK)` before the shell runs."""
    script = (
        f"set -e\n{profile}\nexport NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET\nexec {shlex.join(torchrun)}\n"
    )
    return ["/bin/bash", "-c", script]


_COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def _job(
    name: str, labels: Mapping[str, str], nodes: Sequence[str], deadline: int, pod: dict[str, Any]
) -> dict[str, Any]:
    meta = metadata(name, NAMESPACE, dict(labels))
    meta["annotations"] = {NODE_ANNOTATION: ",".join(nodes)}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": deadline,
            "ttlSecondsAfterFinished": TTL_SECONDS,
            "template": {"metadata": {"labels": {**labels, **metadata(name, None)["labels"]}}, "spec": pod},
        },
    }


def _on_nodes(hostnames: Sequence[str]) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": list(hostnames)}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
