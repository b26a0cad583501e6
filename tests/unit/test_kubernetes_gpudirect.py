"""GPUDirect-TCPXO in a pod (clusterfab/scheduler/kubernetes/gpudirect.py): the researcher's example is
exactly what the helper makes of its trainer, the deep check's pods get the same from it, and the
networks the pods ask for are the Network objects the GKE example's program creates; the same for the
RDMA pods of an a3-ultragpu-8g cluster's program."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ruamel.yaml import YAML

from clusterfab.catalog import load_catalog
from clusterfab.outputs import read_outputs
from clusterfab.scheduler.kubernetes import gpudirect
from clusterfab.scheduler.kubernetes.health.start import settings
from clusterfab.scheduler.kubernetes.software import kubernetes_software
from tests.components.harness import plan_text
from tests.conftest import REPO
from tests.factories import blueprint_yaml
from tests.unit.kubernetes_health_fixtures import stack_outputs

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


ULTRA_BLUEPRINT = blueprint_yaml(
    "gcp",
    name="gke-ultra",
    node_groups=[{"name": "ultra", "machine_type": "a3-ultragpu-8g", "count": 2}],
    scheduler={"kind": "kubernetes"},
)
"""A GKE cluster with an a3-ultragpu-8g group on its RDMA fabric (no example or golden plan has one)."""


def test_the_rdma_pods_networks_are_the_ones_the_gke_program_creates() -> None:
    plan = plan_text(ULTRA_BLUEPRINT)
    networks = [
        r.inputs["metadata"]["name"]
        for r in plan.resources
        if r.type == "kubernetes:networking.gke.io/v1:Network"
    ]
    # a3-ultragpu-8g: the second gVNIC network, then its 8 RDMA subnets (the catalog's rdma_subnets).
    assert networks == [
        "gvnic-1",
        "rdma-0",
        "rdma-1",
        "rdma-2",
        "rdma-3",
        "rdma-4",
        "rdma-5",
        "rdma-6",
        "rdma-7",
    ]
    outputs = stack_outputs("gcp")
    outputs["node_groups"] = {"ultra": outputs["node_groups"]["mega"] | {"machine_type": "a3-ultragpu-8g"}}
    outputs["node_groups"]["ultra"]["fabric"] = "rdma"
    rdma = settings(read_outputs(outputs), 1, load_catalog()).groups["ultra"].rdma
    assert rdma is not None
    pod = gpudirect.rdma_pod({"spec": {"containers": [{"name": "allreduce"}]}}, rdma, ["allreduce"])
    asked = [i["network"] for i in json.loads(pod["metadata"]["annotations"]["networking.gke.io/interfaces"])]
    # The pods ask for the pod network and every RDMA network the program made; the recipes leave the
    # second gVNIC network out.
    assert asked == ["default"] + [n for n in networks if n.startswith("rdma-")]
