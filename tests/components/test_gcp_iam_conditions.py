"""The IAM conditions of GCP plans, read and evaluated by a CEL implementation (cel-python), as IAM reads
them: every expression must parse, and what a condition grants is checked on the resources IAM would name
in its checks (resource.type, resource.name)."""

from __future__ import annotations

import functools
from typing import Any

import celpy
import pytest

from tests.components.harness import GCP_HEAD, GCP_PROJECT, all_of, gcp_plan, plan_text
from tests.components.test_gcp_slurm import ELASTIC, GSE_H100
from tests.components.test_gcp_slurm_accounting import NAME, managed

INSTANCE = "sqladmin.googleapis.com/Instance"
VM = "compute.googleapis.com/Instance"


def conditions(plan: Any) -> dict[str, str]:
    """Every conditioned grant of the plan: its logical name and expression."""
    return {r.name: r.inputs["condition"]["expression"] for r in plan.resources if r.inputs.get("condition")}


@functools.cache
def _cel() -> celpy.Environment:
    return celpy.Environment()  # builds its parser: once


@functools.cache
def _program(expression: str) -> Any:
    return _cel().program(_cel().compile(expression))  # raises CELParseError on what IAM would refuse


def grants(expression: str, resource_type: str, name: str) -> bool:
    verdict = _program(expression).evaluate(
        {"resource": celpy.json_to_cel({"type": resource_type, "name": name})}
    )
    return bool(verdict)


@pytest.mark.parametrize(
    ("plan", "granted"),
    [
        (managed, ["gac-cluster-slurm-accounting-users", "gac-cluster-slurm-mig", "gac-cluster-slurm-name"]),
        (
            lambda: gcp_plan(ELASTIC, name="gse", env="prod"),
            ["gse-cluster-slurm-mig", "gse-cluster-slurm-name", "gse-cluster-slurm-vms"],
        ),
    ],
    ids=["accounting", "elastic"],
)
def test_every_condition_is_an_expression_iam_can_read(plan: Any, granted: list[str]) -> None:
    """The conditioned grants: the accounting users' on the instance, the controller's on the node VMs
    (naming them) and the node MIGs, and, with elastic nodes, the power programs' on the elastic VMs and
    the node templates."""
    found = conditions(plan())
    assert sorted(found) == granted
    for name, expression in found.items():
        assert isinstance(grants(expression, VM, "projects/x/zones/z/instances/nothing"), bool), name


def test_the_accounting_grant_reaches_this_instance_only() -> None:
    expression = conditions(managed())["gac-cluster-slurm-accounting-users"]
    assert grants(expression, INSTANCE, f"projects/test-project/instances/{NAME}")
    # Not another instance of the project, nor one of the same name in another project.
    assert not grants(expression, INSTANCE, "projects/test-project/instances/payroll")
    assert not grants(expression, INSTANCE, f"projects/other-project/instances/{NAME}")
    assert not grants(expression, INSTANCE, f"projects/test-project/instances/{NAME}-2")
    # A check that names something else (an operation of the users calls) is the role's to pass.
    assert grants(expression, "sqladmin.googleapis.com/Operation", "projects/test-project/operations/op-1")


def test_the_node_sync_may_name_only_the_clusters_node_vms() -> None:
    expression = conditions(gcp_plan(ELASTIC, name="gse", env="prod"))["gse-cluster-slurm-name"]
    base = "projects/test-project/zones/us-central1-b/instances/"
    assert grants(expression, VM, f"{base}{GSE_H100}-0001")
    assert not grants(expression, VM, f"{base}gse-cluster-prod-login-0")
    assert not grants(expression, VM, f"projects/test-project/zones/us-central1-a/instances/{GSE_H100}-1")


ZONE = "projects/test-project/zones/us-central1-b"
TWO_GROUPS = """node_groups:
  - {{name: {first}, machine_type: a3-highgpu-8g, autoscaling: {{min: 1, max: 4}}, placement: none}}
  - {{name: {second}, machine_type: a3-highgpu-8g, autoscaling: {{min: 1, max: 4}}, placement: none}}
scheduler: {{kind: slurm}}
environments:
  prod: {{}}
"""


def _two_groups(cluster: str, first: str, second: str) -> Any:
    """Cluster `cluster` (stack prod, project test-project) with two elastic Slurm groups."""
    head = GCP_HEAD.format(name=cluster, zone="us-central1-b") + GCP_PROJECT
    return plan_text(head + TWO_GROUPS.format(first=first, second=second), "prod")


def _bases(plan: Any) -> dict[str, str]:
    """Each group's MIG base instance name, by the group's name."""
    migs = all_of(plan, "gcp:compute/instanceGroupManager:InstanceGroupManager")
    return {m.name.removesuffix("-mig").split("-", 1)[1]: m.inputs["baseInstanceName"] for m in migs}


def _acted_on(plan: Any) -> list[str]:
    """What a cluster's controller acts on by name: its groups' MIG VMs, elastic VMs and their disks."""
    names = []
    for base in _bases(plan).values():
        names += [f"{ZONE}/instances/{base}-ab12", f"{ZONE}/instances/{base}-elastic-3"]
        names += [f"{ZONE}/disks/{base}-elastic-3"]
    return names


def test_cluster_mls_controller_cannot_act_on_cluster_ml_prods_nodes() -> None:
    """Conditions on name prefixes are exact. `<cluster>-<stack>-<group>-` alone is not, since the parts
    have hyphens of their own: cluster `ml`'s group `prod-h100` and cluster `ml-prod`'s group `h100` both
    make `ml-prod-prod-h100-` in stack prod. Each group's names carry a tag of its cluster, stack and group
    (gcp.names.group_name), so one controller's rights reach its own VMs only."""
    ml, ml_prod = _two_groups("ml", "prod-h100", "a100"), _two_groups("ml-prod", "h100", "a100")
    for cluster, ours, theirs in (("ml", ml, ml_prod), ("ml-prod", ml_prod, ml)):
        found = conditions(ours)
        naming, vms = found[f"{cluster}-slurm-name"], found[f"{cluster}-slurm-vms"]
        assert [n for n in _acted_on(theirs) if grants(naming, VM, n) or grants(vms, VM, n)] == []
        own = _acted_on(ours)
        assert all(grants(naming, VM, n) for n in own if "/instances/" in n)
        assert all(grants(vms, VM, n) for n in own if "-elastic-" in n)


def test_a_groups_elastic_rights_miss_the_vms_of_a_group_named_like_them() -> None:
    """Group h100's elastic VMs and group h100-elastic's MIG VMs no longer share a prefix: the controller
    may delete the one, not the other."""
    plan = _two_groups("ml", "h100", "h100-elastic")
    vms = conditions(plan)["ml-slurm-vms"]
    static = f"{ZONE}/instances/{_bases(plan)['h100-elastic']}-ab12"
    assert not grants(vms, VM, static)
    assert grants(vms, VM, f"{ZONE}/instances/{_bases(plan)['h100']}-elastic-3")
