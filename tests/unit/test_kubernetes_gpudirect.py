"""GPUDirect-TCPXO in a pod (clusterfab/scheduler/kubernetes/gpudirect.py): the researcher's example is
exactly what the helper makes of its trainer, the deep check's pods get the same from it, and the
networks the pods ask for are the Network objects the GKE example's program creates."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ruamel.yaml import YAML

from clusterfab.scheduler.kubernetes import gpudirect
from clusterfab.scheduler.kubernetes.software import kubernetes_software
from tests.conftest import REPO

JOB = REPO / "examples" / "kubernetes" / "research-pytorch-jobset.yaml"
RXDM = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21"
"""RxDM v1.0.21, which the release of Jan 9, 2026 couples with installer v1.0.15 (container-engine-
accelerators gpudirect-tcpxo/README.md)."""
A3_MEGA = gpudirect.Tcpxo(
    ("vpc1", "vpc2", "vpc3", "vpc4", "vpc5", "vpc6", "vpc7", "vpc8"), RXDM, "/home/kubernetes/bin/nvidia"
)
TRAINER_SCRIPT = (
    "set -e\n"
    "source ${NCCL_LIB_DIR}/nccl-env-profile.sh\n"
    "exec torchrun --nnodes=8 --nproc-per-node=8 --node-rank=${JOB_COMPLETION_INDEX} \\\n"
    "  --master-addr=${JOBSET_NAME}-workers-0-0.${JOBSET_NAME} --master-port=29500 \\\n"
    "  train.py\n"
)
BARE: dict[str, Any] = {
    "metadata": {
        "annotations": {"kueue.x-k8s.io/podset-preferred-topology": "cloud.google.com/gce-topology-block"}
    },
    "spec": {
        "restartPolicy": "Never",
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [
            {
                "name": "trainer",
                "image": "us-docker.pkg.dev/my-project/training/pytorch-train:2026.11",
                "command": ["/bin/bash", "-c"],
                "args": [TRAINER_SCRIPT],
                "env": [
                    {
                        "name": "JOBSET_NAME",
                        "valueFrom": {
                            "fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/jobset-name']"}
                        },
                    }
                ],
                "ports": [{"containerPort": 29500}],
                "resources": {"limits": {"nvidia.com/gpu": 8}},
                "volumeMounts": [{"name": "shared-memory", "mountPath": "/dev/shm"}],
            }
        ],
        "volumes": [{"name": "shared-memory", "emptyDir": {"medium": "Memory", "sizeLimit": "256Gi"}}],
    },
}
"""The example's pod without GPUDirect-TCPXO: the trainer as a researcher writes it."""


def _example_pod() -> dict[str, Any]:
    job: dict[str, Any] = YAML(typ="safe").load(JOB.read_text())
    pod: dict[str, Any] = job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    return pod


def test_the_examples_pod_is_what_the_helper_makes_of_its_trainer() -> None:
    assert gpudirect.tcpxo_pod(BARE, A3_MEGA, 8, ["trainer"]) == _example_pod()
    # The trainer sources NCCL's profile before torchrun starts, as the helper's users must.
    assert gpudirect.PROFILE + "\n" in TRAINER_SCRIPT
    assert gpudirect.tcpxo_pod(BARE, A3_MEGA, 8, ["trainer"]) != BARE  # BARE itself is left as it was
    assert "initContainers" not in BARE["spec"]


def test_the_pods_daemon_is_the_pinned_rxdm() -> None:
    assert kubernetes_software().piece("nccl-tcpxo-installer").image("rxdm") == RXDM


def test_the_pods_networks_are_the_ones_the_gke_examples_program_creates() -> None:
    plan = json.loads((REPO / "tests" / "golden" / "plans" / "gcp-gke-a3mega.prod.json").read_text())
    networks = sorted(
        r["inputs"]["metadata"]["name"]
        for r in plan["resources"]
        if r["type"] == "kubernetes:networking.gke.io/v1:Network"
    )
    # a3-megagpu-8g: 8 GPU networks (the catalog's gpu_vpcs).
    assert sorted(gpudirect.gpu_network(i) for i in range(8)) == networks
    assert list(A3_MEGA.networks) == [gpudirect.gpu_network(i) for i in range(8)]


def test_the_helper_names_the_container_it_cannot_find() -> None:
    with pytest.raises(ValueError, match="the pod has no container allreduce"):
        gpudirect.tcpxo_pod(BARE, A3_MEGA, 8, ["allreduce"])
