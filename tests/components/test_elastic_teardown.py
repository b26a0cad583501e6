"""The delete hook that tears down the instances Slurm created: bound to each node group's instance group
of a Slurm cluster (whose delete comes before its launch / instance template's, the security groups' and
the subnets'), on neither cloud without Slurm, and emptying the right node group when called."""

from __future__ import annotations

import asyncio
from typing import Any

import pulumi
import pytest

from clusterfab.scheduler.slurm.nodes.fleet import ElasticInstance
from tests.components import test_aws_slurm, test_gcp_slurm
from tests.components.harness import aws_plan, gcp_plan, stacks_module

ASG = "aws:autoscaling/group:Group"
MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
HOOK = "clusterfab-slurm-elastic-teardown"

AWS_TWO_GROUPS = test_aws_slurm.BODY.replace(
    "    count: 2\n", "    count: 2\n  - name: a100\n    machine_type: p4d.24xlarge\n    count: 1\n", 1
)


def _bound(plan: Any) -> dict[tuple[str, str], tuple[str, ...]]:
    return {(r.type, r.name): r.before_delete for r in plan.resources if r.before_delete}


def test_every_node_groups_auto_scaling_group_of_a_slurm_cluster_runs_the_teardown_first() -> None:
    plan = aws_plan(AWS_TWO_GROUPS, name="hk")
    assert _bound(plan) == {
        (ASG, "hk-cluster-h100-asg"): (HOOK,),
        (ASG, "hk-cluster-a100-asg"): (HOOK,),
    }
    # The group is deleted before what it depends on: the launch template (and through it the security
    # group, placement group and instance profile) and the subnet.
    group = next(r for r in plan.resources if r.name == "hk-cluster-h100-asg")
    assert group.inputs["launchTemplate"]["id"] == "hk-cluster-h100-lt-id"
    assert group.inputs["vpcZoneIdentifiers"] == ["hk-cluster-net-nodes-id"]


def test_every_node_groups_managed_instance_group_of_a_slurm_cluster_runs_the_teardown_first() -> None:
    plan = gcp_plan(test_gcp_slurm.BODY, name="hk")
    assert _bound(plan) == {(MIG, "hk-cluster-h100-mig"): (HOOK,)}


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_without_slurm_nothing_is_bound(cloud: str) -> None:
    body = (
        "network:\n  cidr: 10.60.0.0/16\nnode_groups:\n  - name: h100\n    machine_type: {}\n    count: 1\n"
    )
    plan = (
        aws_plan(body.format("p5.48xlarge"), name="nohk")
        if cloud == "aws"
        else gcp_plan(body.format("a3-highgpu-8g"), name="nohk")
    )
    assert [r.type for r in plan.resources if r.type in {ASG, MIG}] == [ASG if cloud == "aws" else MIG]
    assert _bound(plan) == {}


class _Fleet:
    def __init__(self, instances: list[ElasticInstance]) -> None:
        self.instances = instances

    def elastic(self) -> list[ElasticInstance]:
        return list(self.instances)

    def terminate(self, ids: Any) -> None:
        self.instances = [i for i in self.instances if i.id not in ids]

    def requests(self) -> list[Any]:
        return []

    def withdraw(self, mig: str) -> None:
        raise AssertionError(f"nothing to withdraw: {mig}")


def _hook_args(name: str) -> pulumi.ResourceHookArgs:
    return pulumi.ResourceHookArgs(
        urn=f"urn:pulumi:prod::clusterfab::aws:autoscaling/group:Group::{name}",
        id=f"{name}-id",
        name=name,
        type=ASG,
    )


@pytest.mark.parametrize(
    ("deleted", "left"),
    [
        ("llm-h100-asg", ["i-l4", "i-old"]),  # a kept group's delete empties that group
        ("llm-old-asg", ["i-h100", "i-l4"]),  # a removed group's: what no kept group owns
    ],
)
def test_the_hook_empties_the_group_being_deleted(deleted: str, left: list[str]) -> None:
    shared = stacks_module("slurm_common")
    fleet = _Fleet(
        [ElasticInstance("i-h100", "h100"), ElasticInstance("i-l4", "l4"), ElasticInstance("i-old", "old")]
    )
    callback = shared.elastic_teardown(lambda _deleted: fleet, {"llm-h100-asg": "h100", "llm-l4-asg": "l4"})
    # Its own loop, not asyncio.run: that leaves the thread without a current loop, which the SDK's mock
    # engine needs for the plans that later tests run in this process.
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(callback(_hook_args(deleted)))
    finally:
        loop.close()
    assert [i.id for i in fleet.instances] == left
