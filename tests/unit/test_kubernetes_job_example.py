"""The researcher path of docs/kubernetes-job.md (issue 32 item 6): the 64-GPU PyTorch JobSet of
examples/kubernetes/ is a valid JobSet for the pinned JobSet release, its pods valid for the cluster's
Kubernetes version, and it fits the GKE example it is written for: the queue and priority class it names
are rendered there, it asks for exactly team research's GPU quota, it tolerates the GPU nodes' taint, and
its TCPXO daemon and networks are the ones the cluster's program pins and creates."""

from __future__ import annotations

import copy
import json
from typing import Any

from ruamel.yaml import YAML

from clusterfab.scheduler.kubernetes.labels import GPU_TAINT
from clusterfab.scheduler.kubernetes.queues import kueue_objects
from clusterfab.scheduler.kubernetes.software import kubernetes_software
from tests.apimodels.kubernetes_objects import object_problems
from tests.conftest import REPO
from tests.crd_schema import crd_problems
from tests.factories import example_spec

JOB = REPO / "examples" / "kubernetes" / "research-pytorch-jobset.yaml"
BLUEPRINT = "gcp-gke-a3mega"


def _job() -> dict[str, Any]:
    loaded: dict[str, Any] = YAML(typ="safe").load(JOB.read_text())
    return loaded


def _pod(job: dict[str, Any]) -> dict[str, Any]:
    template: dict[str, Any] = job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    return template


def test_the_example_is_a_valid_jobset_whose_pods_are_valid_for_the_clusters_kubernetes() -> None:
    job = _job()
    named = copy.deepcopy(job)
    named["metadata"]["name"] = "pretrain-x7k2p"  # what the API server makes of generateName
    assert crd_problems(named) == []
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pretrain-x7k2p-workers-0-0"}, **_pod(job)}
    section = example_spec(BLUEPRINT, "prod").scheduler
    assert section is not None
    assert object_problems(pod, section.version) == []  # type: ignore[attr-defined]


def test_it_names_the_teams_queue_and_priority_class_the_cluster_has() -> None:
    spec = example_spec(BLUEPRINT, "prod")
    objects = kueue_objects(spec, "gcp")
    local_queues = {
        (o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == "LocalQueue"
    }
    priorities = {o["metadata"]["name"] for o in objects if o["kind"] == "WorkloadPriorityClass"}
    labels = _job()["metadata"]["labels"]
    assert ("research", labels["kueue.x-k8s.io/queue-name"]) in local_queues
    assert labels["kueue.x-k8s.io/priority-class"] in priorities
    assert labels["kueue.x-k8s.io/priority-class"] == "clusterfab-high"  # research is a high-priority team


def test_it_asks_for_64_gpus_team_researchs_quota_one_whole_node_per_pod() -> None:
    spec = example_spec(BLUEPRINT, "prod")
    job = _job()["spec"]["replicatedJobs"][0]["template"]["spec"]
    gpus_per_pod = int(_pod(_job())["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
    assert (job["parallelism"], job["completions"], gpus_per_pod) == (8, 8, 8)
    research = next(t for t in spec.teams if t.name == "research")
    assert research.max_gpus == 64
    group = spec.node_groups[0]
    assert (group.gpus_per_node, group.max_size) == (8, 8)


def test_it_tolerates_the_gpu_taint_and_runs_the_pinned_tcpxo_daemon_on_the_clusters_networks() -> None:
    pod = _pod(_job())
    assert {"key": GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"} in pod["spec"]["tolerations"]
    daemon = pod["spec"]["initContainers"][0]
    assert daemon["restartPolicy"] == "Always"  # a sidecar: the Job completes when the trainer does
    assert daemon["image"] == kubernetes_software().piece("nccl-tcpxo-installer").image("rxdm")
    # The Network objects the program applies, as the example's golden plan has them.
    plan = json.loads((REPO / "tests" / "golden" / "plans" / f"{BLUEPRINT}.prod.json").read_text())
    networks = {
        r["inputs"]["metadata"]["name"]
        for r in plan["resources"]
        if r["type"] == "kubernetes:networking.gke.io/v1:Network"
    }
    interfaces = json.loads(pod["metadata"]["annotations"]["networking.gke.io/interfaces"])
    assert {i["network"] for i in interfaces} - {"default"} == networks
    assert len(networks) == 8
