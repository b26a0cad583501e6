"""The node pool rules of a Kubernetes cluster (clusterfab.scheduler.kubernetes.pools) and the node image
facts they read: which node image runs each GPU machine the catalog sells (EKS's ML AMI page, S-EKS-ML-AMI;
Cluster Toolkit's GKE blueprints, S-CTK)."""

from __future__ import annotations

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.load import load_bytes
from clusterfab.scheduler.kubernetes import pools
from clusterfab.scheduler.kubernetes.facts import KubernetesFacts, NodeImage, kubernetes_facts
from tests.factories import TODAY

NODE_IMAGES = {
    ("aws", "p4d.24xlarge"): "AL2023_x86_64_NVIDIA",
    ("aws", "p4de.24xlarge"): "AL2023_x86_64_NVIDIA",
    ("aws", "p5.4xlarge"): "AL2023_x86_64_NVIDIA",
    ("aws", "p5.48xlarge"): "AL2023_x86_64_NVIDIA",
    ("aws", "p5e.48xlarge"): "AL2023_x86_64_NVIDIA",
    ("aws", "p5en.48xlarge"): "AL2023_x86_64_NVIDIA",
    ("aws", "p6-b200.48xlarge"): "AL2023_x86_64_NVIDIA",
    ("aws", "p6-b300.48xlarge"): "AL2023_x86_64_NVIDIA",
    ("aws", "p6e-gb200.36xlarge"): "AL2023_ARM_64_NVIDIA",
    ("gcp", "a3-highgpu-8g"): "COS_CONTAINERD",
    ("gcp", "a3-megagpu-8g"): "COS_CONTAINERD",
    ("gcp", "a3-ultragpu-8g"): "COS_CONTAINERD",
    ("gcp", "a4-highgpu-8g"): "COS_CONTAINERD",
    ("gcp", "a4x-highgpu-4g"): "COS_CONTAINERD",
}
"""The vendors' tables: the AL2023 x86_64 NVIDIA AMI runs p6-b300, p6-b200, p5, p5e, p5en, p4d, p4de; the
ARM NVIDIA AMI p6e-gb200 (Grace); GKE's GPU node pools run a3, a4 and a4x on its default image type."""


def test_every_catalog_machine_runs_on_a_node_image_of_its_cloud() -> None:
    catalog = load_catalog()
    machines = [*catalog.aws_machine_types.values(), *catalog.gcp_machine_types.values()]
    facts = kubernetes_facts()
    found = {}
    for machine in machines:
        node_pools = facts.pools(machine.cloud)
        assert node_pools is not None
        found[machine.cloud, machine.name] = node_pools.image(machine.name)
    assert found == NODE_IMAGES


def test_eks_names_each_capacity_kind_as_its_node_groups_do() -> None:
    eks = kubernetes_facts().pools("aws")
    assert eks is not None
    assert eks.capacity_types == {
        "on_demand": "ON_DEMAND",
        "reservation": "ON_DEMAND",
        "spot": "SPOT",
        "capacity_block": "CAPACITY_BLOCK",
    }


EKS_P5 = b"""\
version: 1
name: kube
cloud: aws
region: us-east-1
zone: use1-az6
node_groups:
  - name: trainers
    machine_type: p5.48xlarge
    count: 2
scheduler:
  kind: kubernetes
"""


def test_a_machine_without_a_node_image_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # A node image table without the p5 family, as if the catalog had gained a machine EKS's AMIs lack.
    facts = kubernetes_facts()
    eks = facts.pools("aws")
    assert eks is not None
    without_p5 = eks.model_copy(
        update={"images": [NodeImage(image="AL2023_x86_64_NVIDIA", families=["p4d"])]}
    )
    table = KubernetesFacts(
        control_planes=facts.control_planes,
        system_machines=facts.system_machines,
        node_pools=[p for p in facts.node_pools if p.cloud != "aws"] + [without_p5],
    )
    monkeypatch.setattr(pools, "kubernetes_facts", lambda: table)
    findings = load_bytes(EKS_P5, "kube.yaml", today=TODAY).findings
    assert [(f.code, f.field, f.line, f.column, f.message, f.hint) for f in findings] == [
        (
            "BP177",
            "node_groups[0].machine_type",
            8,
            19,
            "EKS's GPU node images do not run p5.48xlarge",
            "EKS node pools run the families p4d",
        )
    ]


GKE_FLEX_AND_MULTISLICE = b"""\
version: 1
name: kube
cloud: gcp
project: demo-project
region: us-central1
zone: us-central1-a
node_groups:
  - name: trainers
    machine_type: a3-megagpu-8g
    autoscaling: {min: 0, max: 8}
    capacity: {kind: flex_start, max_run_duration_hours: 24}
tpu_slices:
  - name: pods
    generation: v5p
    topology: 2x2x2
    slices: 2
scheduler:
  kind: kubernetes
"""


def test_a_flex_start_pool_from_zero_and_a_multislice_of_multi_host_slices_pass() -> None:
    assert load_bytes(GKE_FLEX_AND_MULTISLICE, "kube.yaml", today=TODAY).findings == []
