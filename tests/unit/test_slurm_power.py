"""Elastic Slurm nodes: the resume and suspend programs and the node sync's elastic rules.

The plans are tested as data; the EC2 side against moto (instances really launched from the node group's
launch template, in its auto scaling group's subnet, with its tags) and, for the cloud's refusals, against
botocore's Stubber (which checks every request against EC2's own API model); Slurm's side against a
recording scontrol.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from clusterfab.core.vocab import BLUEPRINT_TAG, NODE_GROUP_TAG, SLURM_ELASTIC_TAG, SLURM_NODE_TAG, STACK_TAG
from clusterfab.scheduler.slurm.nodes import power
from clusterfab.scheduler.slurm.nodes.actions import (
    MarkDown,
    PowerDown,
    Recreate,
    Replace,
    ReportFaulty,
    Return,
    SetAddress,
    Terminate,
)
from clusterfab.scheduler.slurm.nodes.aws import Ec2Fleet, Ec2Group
from clusterfab.scheduler.slurm.nodes.fleet import ELASTIC_TAG, CloudError, Instance
from clusterfab.scheduler.slurm.nodes.groups import Group
from clusterfab.scheduler.slurm.nodes.power import Launch, ResumeJob, plan_resume, resume, suspend
from clusterfab.scheduler.slurm.nodes.reconcile import (
    FAULT_BEHAVIORS,
    GRACE,
    INTERRUPTED_PREFIX,
    LOST_REASON,
    REPORT_WAIT,
    RETRY_AFTER,
    elastic_holders,
    fault_behavior,
    plan_actions,
)
from clusterfab.scheduler.slurm.nodes.scontrol import Scontrol, SlurmNode

T0 = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)


def health_categories() -> tuple[str, ...]:
    """The categories the node's own health check drains with (its CATEGORIES, read from its source)."""
    import ast
    from pathlib import Path

    path = Path(__file__).parents[2] / "playbooks/roles/slurm_node/files/clusterfab_slurm_health.py"
    for statement in ast.parse(path.read_text()).body:
        if isinstance(statement, ast.Assign) and ast.unparse(statement.targets[0]) == "CATEGORIES":
            return tuple(ast.literal_eval(statement.value))
    raise AssertionError("the health check has no CATEGORIES")


def compute_schema(name: str) -> dict[str, Any]:
    """A schema of the compute.v1 discovery document google-api-python-client ships."""
    from pathlib import Path

    import googleapiclient

    path = Path(googleapiclient.__file__).parent / "discovery_cache/documents/compute.v1.json"
    schema: dict[str, Any] = json.loads(path.read_text())["schemas"][name]
    return schema


GROUPS = {"h100": Group("h100", 2, 6), "b200": Group("b200", 0, 1200)}
TAGS = {BLUEPRINT_TAG: "llm", STACK_TAG: "prod", NODE_GROUP_TAG: "h100", "clusterfab-component": "h100"}


def test_the_vocabulary_and_the_shipped_package_agree() -> None:
    assert ELASTIC_TAG == SLURM_ELASTIC_TAG


def test_a_group_has_its_static_nodes_then_its_elastic_ones() -> None:
    assert GROUPS["h100"].static_names == ["h100-0", "h100-1"]
    assert GROUPS["h100"].elastic_names == ["h100-2", "h100-3", "h100-4", "h100-5"]
    assert [power.group_of(n, GROUPS) for n in ("h100-1", "h100-2", "h100-6", "h100-02", "x-3")] == [
        None,
        GROUPS["h100"],
        None,
        None,
        None,
    ]


def test_resume_plans_one_request_per_job_and_group() -> None:
    jobs = [ResumeJob(7, ("h100-3", "h100-4", "b200-0")), ResumeJob(8, ("h100-5",))]
    plan = plan_resume(["h100-3", "h100-4", "h100-5", "b200-0", "h100-2"], jobs, GROUPS)
    assert plan.units == (
        (Launch("h100", ("h100-3", "h100-4"), 7), Launch("b200", ("b200-0",), 7)),
        (Launch("h100", ("h100-5",), 8),),
        (Launch("h100", ("h100-2",), None),),
    )
    assert plan.unknown == ()
    assert plan.existing == ()


def test_resume_skips_nodes_that_have_instances_and_refuses_names_not_ours() -> None:
    plan = plan_resume(
        ["h100-2", "h100-3", "h100-0", "gpu-1"], [ResumeJob(1, ("h100-2", "h100-3"))], GROUPS, {"h100-2"}
    )
    assert plan.units == ((Launch("h100", ("h100-3",), 1),),)
    assert plan.existing == ("h100-2",)
    assert plan.unknown == ("h100-0", "gpu-1")  # h100-0 is a static node: never created by Slurm


@pytest.mark.parametrize(("nodes", "batches"), [(1, [1]), (64, [64]), (1024, [500, 500, 24])])
def test_a_big_job_is_created_in_batches_that_stand_or_fall_together(nodes: int, batches: list[int]) -> None:
    names = [f"b200-{i}" for i in range(nodes)]
    plan = plan_resume(names, [ResumeJob(3, tuple(names))], GROUPS)
    assert [len(launch.names) for launch in plan.units[0]] == batches
    assert len(plan.units) == 1


class FakeCloud:
    """A cloud that fails the `fail_at`-th create call with `error`."""

    def __init__(self, fail_at: int | None = None, error: Exception | None = None) -> None:
        self.fail_at, self.error = fail_at, error
        self.created: list[tuple[str, tuple[str, ...]]] = []
        self.terminated: list[str] = []

    def create(self, group: str, names: Any) -> list[str]:
        if self.fail_at is not None and len(self.created) == self.fail_at:
            assert self.error is not None
            raise self.error
        self.created.append((group, tuple(names)))
        return [f"i-{n}" for n in names]

    def terminate(self, ids: Any) -> None:
        self.terminated += list(ids)

    def instances(self) -> list[Instance]:
        return []

    def requests(self) -> list[Any]:
        return []

    def withdraw(self, mig: str) -> None:
        raise AssertionError(f"nothing to withdraw: {mig}")


class RecordingSlurm:
    def __init__(self) -> None:
        self.updates: list[tuple[list[str], Any]] = []

    def update(self, names: Any, action: Any) -> None:
        self.updates.append((list(names), action))


def test_no_capacity_rolls_back_the_job_and_sets_its_nodes_down_with_the_reason() -> None:
    names = [f"b200-{i}" for i in range(600)]
    plan = plan_resume(names, [ResumeJob(9, tuple(names)), ResumeJob(10, ())], GROUPS)
    cloud = FakeCloud(fail_at=1, error=CloudError("InsufficientInstanceCapacity", "no p6 in use1-az6"))
    slurm = RecordingSlurm()
    report = resume(plan, cloud, slurm)
    assert cloud.terminated == [f"i-b200-{i}" for i in range(500)]  # the first batch, rolled back
    reason = "clusterfab: resume failed: InsufficientInstanceCapacity"
    assert slurm.updates == [(names, MarkDown("b200-0", reason))]
    assert report.failed == dict.fromkeys(names, reason)
    assert report.codes == {"InsufficientInstanceCapacity": 600}
    assert (report.created, report.resumed) == ({}, [])


def test_the_nodes_resumed_are_counted_even_where_the_cloud_names_no_machine() -> None:
    """An Azure scale set grows by a count: no VM id comes back, yet each node got its machine."""

    class Counting(FakeCloud):
        def create(self, group: str, names: Any) -> list[str]:
            super().create(group, names)
            return []

    plan = plan_resume(["h100-2", "h100-3"], [ResumeJob(4, ("h100-2", "h100-3"))], GROUPS)
    report = resume(plan, Counting(), RecordingSlurm())
    assert (report.created, report.resumed) == ({"job 4": []}, ["h100-2", "h100-3"])


def test_an_unexpected_error_still_leaves_no_node_waiting() -> None:
    plan = plan_resume(["h100-2"], [], GROUPS)
    slurm = RecordingSlurm()
    resume(plan, FakeCloud(fail_at=0, error=KeyError("VPCZoneIdentifier")), slurm)
    assert slurm.updates == [(["h100-2"], MarkDown("h100-2", "clusterfab: resume failed: KeyError"))]


def _node_group(ec2: Any, autoscaling: Any, *, stack: str = "prod", twin: str = "") -> tuple[str, str, str]:
    """A node group as components/aws/node_group.py builds it: an EFA-style launch template with its
    interfaces and security group, and an auto scaling group (at its static size, 0 here) in a subnet."""
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24", AvailabilityZone="us-east-1a")["Subnet"][
        "SubnetId"
    ]
    group = ec2.create_security_group(GroupName=f"nodes-{stack}{twin}", Description="nodes", VpcId=vpc)[
        "GroupId"
    ]
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    tags = [{"Key": k, "Value": v} for k, v in {**TAGS, STACK_TAG: stack}.items()]
    template = ec2.create_launch_template(
        LaunchTemplateName=f"h100-{stack}{twin}",
        LaunchTemplateData={
            "ImageId": image,
            "InstanceType": "p5.48xlarge",
            "NetworkInterfaces": [
                {
                    "DeviceIndex": 0,
                    "NetworkCardIndex": 0,
                    "InterfaceType": "efa",
                    "Groups": [group],
                    "DeleteOnTermination": True,
                }
            ],
            "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}],
        },
        TagSpecifications=[{"ResourceType": "launch-template", "Tags": tags}],
    )["LaunchTemplate"]["LaunchTemplateId"]
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=f"h100-asg-{stack}{twin}",
        MinSize=0,
        MaxSize=0,
        LaunchTemplate={"LaunchTemplateId": template, "Version": "1"},
        VPCZoneIdentifier=subnet,
        Tags=[{**t, "PropagateAtLaunch": False} for t in tags],
    )
    return template, subnet, group


@mock_aws
def test_elastic_nodes_are_launched_from_their_groups_template_named_and_tagged() -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    autoscaling = boto3.client("autoscaling", region_name="us-east-1")
    _, subnet, group = _node_group(ec2, autoscaling)
    _node_group(ec2, autoscaling, stack="dev")  # another stack's group of the same name: never used
    fleet = Ec2Fleet(ec2, blueprint="llm", stack="prod", autoscaling=autoscaling)
    ids = fleet.create("h100", ["h100-2", "h100-3"])
    described = {
        i["InstanceId"]: i
        for r in ec2.describe_instances(InstanceIds=ids)["Reservations"]
        for i in r["Instances"]
    }
    assert sorted(described) == sorted(ids)
    for instance_id, name in zip(ids, ["h100-2", "h100-3"], strict=True):
        item = described[instance_id]
        tags = {t["Key"]: t["Value"] for t in item["Tags"]}
        assert tags[SLURM_NODE_TAG] == name
        assert tags[SLURM_ELASTIC_TAG] == "true"
        assert {k: tags[k] for k in TAGS} == TAGS
        assert item["SubnetId"] == subnet
        assert item["InstanceType"] == "p5.48xlarge"
        interfaces = item["NetworkInterfaces"]
        assert [[g["GroupId"] for g in i["Groups"]] for i in interfaces] == [[group]]
    held = elastic_holders(fleet.instances(), ["h100-2", "h100-3", "h100-4"])
    assert held == dict(zip(["h100-2", "h100-3"], ids, strict=True))
    # Suspend deletes exactly these; a static node of the group (no elastic tag) is never touched.
    static = ec2.run_instances(
        ImageId=described[ids[0]]["ImageId"],
        MinCount=1,
        MaxCount=1,
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [
                    *({"Key": k, "Value": v} for k, v in TAGS.items()),
                    {"Key": SLURM_NODE_TAG, "Value": "h100-0"},
                ],
            }
        ],
    )["Instances"][0]["InstanceId"]
    assert sorted(suspend(["h100-2", "h100-3", "h100-0"], fleet)) == sorted(ids)
    states = {
        i["InstanceId"]: i["State"]["Name"]
        for r in ec2.describe_instances(InstanceIds=[*ids, static])["Reservations"]
        for i in r["Instances"]
    }
    assert states == {ids[0]: "terminated", ids[1]: "terminated", static: "running"}


@mock_aws
def test_elastic_nodes_get_their_groups_profile_from_their_groups_own_template() -> None:
    """A same-named deployment's group carries the same tags: the launch takes the group whose template the
    stack deployed, passes the group's instance profile, and gives no public address."""
    ec2 = boto3.client("ec2", region_name="us-east-1")
    autoscaling = boto3.client("autoscaling", region_name="us-east-1")
    iam = boto3.client("iam", region_name="us-east-1")
    profile = iam.create_instance_profile(InstanceProfileName="llm-h100-profile")["InstanceProfile"]["Arn"]
    _node_group(ec2, autoscaling, twin="-twin")  # the other deployment's, created first
    template, subnet, _ = _node_group(ec2, autoscaling)
    groups = {"h100": Ec2Group(template, profile)}
    fleet = Ec2Fleet(ec2, blueprint="llm", stack="prod", autoscaling=autoscaling, groups=groups)
    ids = fleet.create("h100", ["h100-2"])
    item = ec2.describe_instances(InstanceIds=ids)["Reservations"][0]["Instances"][0]
    assert item["IamInstanceProfile"]["Arn"] == profile
    assert "PublicIpAddress" not in item
    assert item["SubnetId"] == subnet
    assert {t["Key"]: t["Value"] for t in item["Tags"]}["aws:ec2launchtemplate:id"] == template
    # Without the group's template among its groups, nothing is launched.
    other = Ec2Fleet(ec2, blueprint="llm", stack="prod", autoscaling=autoscaling, groups={})
    with pytest.raises(CloudError, match="the stack deployed no node group h100"):
        other.create("h100", ["h100-3"])


def test_the_clouds_refusal_becomes_the_nodes_reason() -> None:
    """The request goes through botocore's Stubber, which validates it against EC2's API model."""
    ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    fleet = Ec2Fleet(ec2, blueprint="llm", stack="prod", autoscaling=object())
    fleet._sources["h100"] = {  # the group as _source reads it (tested above)
        "template": "lt-0abc",
        "version": "3",
        "subnet": "subnet-1",
        "interfaces": [{"DeviceIndex": 0, "NetworkCardIndex": 0, "InterfaceType": "efa", "Groups": ["sg-1"]}],
        "tags": [{"Key": NODE_GROUP_TAG, "Value": "h100"}],
    }
    with Stubber(ec2) as stub:
        stub.add_client_error(
            "run_instances",
            service_error_code="InsufficientInstanceCapacity",
            service_message="We currently do not have sufficient p5.48xlarge capacity in the AZ.",
            expected_params={
                "LaunchTemplate": {"LaunchTemplateId": "lt-0abc", "Version": "3"},
                "MinCount": 2,
                "MaxCount": 2,
                "NetworkInterfaces": [
                    {
                        "DeviceIndex": 0,
                        "NetworkCardIndex": 0,
                        "InterfaceType": "efa",
                        "Groups": ["sg-1"],
                        "SubnetId": "subnet-1",
                    }
                ],
                "TagSpecifications": [
                    {
                        "ResourceType": "instance",
                        "Tags": [
                            {"Key": NODE_GROUP_TAG, "Value": "h100"},
                            {"Key": SLURM_ELASTIC_TAG, "Value": "true"},
                        ],
                    }
                ],
            },
        )
        slurm = RecordingSlurm()
        report = resume(plan_resume(["h100-2", "h100-3"], [], GROUPS), fleet, slurm)
        stub.assert_no_pending_responses()
    reason = "clusterfab: resume failed: InsufficientInstanceCapacity"
    assert slurm.updates == [(["h100-2", "h100-3"], MarkDown("h100-2", reason))]
    assert report.failed == {"h100-2": reason, "h100-3": reason}


# --- the node sync's elastic rules ------------------------------------------------------------------

STATIC = {"h100": ["h100-0", "h100-1"]}
ELASTIC = {"h100": ["h100-2", "h100-3"]}


def node(
    name: str, *states: str, reason: str = "", at: dt.datetime | None = None, address: str | None = None
) -> SlurmNode:
    return SlurmNode(
        name, address or name, down="DOWN" in states, states=frozenset(states), reason=reason, reason_at=at
    )


def elastic(i: int, name: str | None, *, minutes: int = -10) -> Instance:
    return Instance(f"i-e{i}", "h100", f"10.0.1.{i}", T0 + dt.timedelta(minutes=minutes), name, elastic=True)


def settled(*extra: SlurmNode) -> dict[str, SlurmNode]:
    nodes = {
        "h100-0": node("h100-0", "IDLE", address="10.0.0.1"),
        "h100-1": node("h100-1", "IDLE", address="10.0.0.2"),
        "h100-2": node("h100-2", "IDLE", "CLOUD", "POWERED_DOWN"),
        "h100-3": node("h100-3", "IDLE", "CLOUD", "POWERED_DOWN"),
    }
    nodes.update({n.name: n for n in extra})
    return nodes


STATIC_INSTANCES = [
    Instance("i-s0", "h100", "10.0.0.1", T0 - dt.timedelta(days=1), "h100-0"),
    Instance("i-s1", "h100", "10.0.0.2", T0 - dt.timedelta(days=1), "h100-1"),
]


def plan(instances: list[Instance], nodes: dict[str, SlurmNode]) -> list[Any]:
    return plan_actions(STATIC, [*STATIC_INSTANCES, *instances], nodes, elastic=ELASTIC, now=T0)


def test_powered_down_nodes_without_instances_need_nothing() -> None:
    assert plan([], settled()) == []


def test_a_running_elastic_node_with_its_instance_needs_nothing() -> None:
    assert (
        plan([elastic(2, "h100-2")], settled(node("h100-2", "ALLOCATED", "CLOUD", address="10.0.1.2"))) == []
    )


def test_a_resume_in_progress_is_left_alone() -> None:
    """POWERING_UP without an instance yet, and an instance not yet named: the resume is still at work."""
    nodes = settled(node("h100-2", "IDLE", "CLOUD", "POWERING_UP"))
    assert plan([elastic(9, None, minutes=-1)], nodes) == []


def test_an_instance_whose_node_is_powered_down_is_terminated() -> None:
    """A suspend that failed half way would leave it running, and billed, for ever."""
    assert plan([elastic(3, "h100-3")], settled()) == [Terminate("i-e3", "h100-3 is powered down")]


def test_an_instance_that_never_got_its_name_is_terminated_after_the_grace() -> None:
    late = elastic(9, None, minutes=-int(GRACE.total_seconds() // 60) - 1)
    assert plan([late], settled()) == [Terminate("i-e9", "no node name (its resume failed)")]


def test_a_node_whose_instance_vanished_is_marked_down_then_powered_down() -> None:
    """A spot interruption: DOWN requeues the job at once; the next round hands the node back to power
    saving, so the job's next start creates a new instance."""
    running = node("h100-2", "ALLOCATED", "CLOUD", address="10.0.1.2")
    assert plan([], settled(running)) == [MarkDown("h100-2", LOST_REASON)]
    down = node("h100-2", "DOWN", "CLOUD", reason=LOST_REASON, at=T0)
    assert plan([], settled(down)) == [PowerDown("h100-2", LOST_REASON)]


def test_a_node_that_failed_to_resume_is_powered_down_after_the_retry_wait() -> None:
    reason = "clusterfab: resume failed: InsufficientInstanceCapacity"
    fresh = node("h100-3", "DOWN", "CLOUD", reason=reason, at=T0 - RETRY_AFTER / 2)
    assert plan([], settled(fresh)) == []
    waited = node("h100-3", "DOWN", "CLOUD", reason=reason, at=T0 - RETRY_AFTER)
    assert plan([], settled(waited)) == [PowerDown("h100-3", reason)]


def test_a_node_an_operator_set_down_is_left_to_the_operator() -> None:
    manual = node(
        "h100-3", "DOWN", "CLOUD", reason="maintenance: swapping the NIC", at=T0 - dt.timedelta(days=1)
    )
    assert plan([elastic(3, "h100-3")], settled(manual)) == []


def test_an_elastic_node_drained_for_hardware_is_powered_down() -> None:
    reason = "clusterfab-health: XID: 79 on GPU 0000:53:00.0"
    drained = node("h100-2", "IDLE", "DRAIN", "CLOUD", reason=reason, address="10.0.1.2")
    assert plan([elastic(2, "h100-2")], settled(drained)) == [PowerDown("h100-2", reason)]
    still_busy = node("h100-2", "MIXED", "DRAIN", "CLOUD", reason=reason, address="10.0.1.2")
    assert plan([elastic(2, "h100-2")], settled(still_busy)) == []


def test_a_static_node_drained_for_hardware_gets_a_new_machine() -> None:
    reason = "clusterfab-health: ECC: 2 uncorrectable errors on GPU 3"
    nodes = settled(node("h100-1", "IDLE", "DRAIN", reason=reason, address="10.0.0.2"))
    assert plan([], nodes) == [
        Recreate("i-s1", "h100", f"h100-1: {reason}"),  # by its group: never deleted behind its back
        Replace("h100-1", f"clusterfab: replacing i-s1 ({reason})"),
    ]
    drained_by_hand = settled(node("h100-1", "IDLE", "DRAIN", reason="reboot requested", address="10.0.0.2"))
    assert plan([], drained_by_hand) == []


def test_the_health_categories_map_to_the_reports_fault_behaviors() -> None:
    reasons = {
        "clusterfab-health: XID: 79 on GPU 0000:53:00.0": "UNRECOVERABLE_GPU_ERROR",
        "clusterfab-health: ECC: 2 uncorrected ECC errors on GPU 0000:53:00.0": "UNRECOVERABLE_GPU_ERROR",
        "clusterfab-health: NVLINK: replay 12 on GPU 3 link 2": "BEHAVIOR_UNSPECIFIED",
        "clusterfab-health: DCGM: level 2 memory failed on GPU 1": "BEHAVIOR_UNSPECIFIED",
        "clusterfab-health: PERF: busbw 310 GB/s below 360": "PERFORMANCE",
        "clusterfab-health: GPU: expected 8 GPUs, nvidia-smi lists 7": None,  # a driver breaks it too
        "clusterfab-health: XIDS: not a category": None,
        "reboot requested": None,
        "clusterfab: XID: ours, not the health check's": None,
    }
    assert {reason: fault_behavior(reason) for reason in reasons} == reasons
    # Every category the node's health check drains with is decided, and every behavior is one of the API's.
    assert set(FAULT_BEHAVIORS) | {"GPU"} == {*health_categories(), "PERF"}
    enum = compute_schema("InstancesReportHostAsFaultyRequestFaultReason")["properties"]["behavior"]["enum"]
    assert set(FAULT_BEHAVIORS.values()) <= set(enum)


def reportable(instance: Instance) -> Instance:
    return dataclasses.replace(instance, reportable=True)


def test_a_reportable_static_node_drained_for_hardware_has_its_host_reported() -> None:
    reason = "clusterfab-health: XID: 79 on GPU 0000:53:00.0"
    nodes = settled(node("h100-1", "IDLE", "DRAIN", reason=reason, address="10.0.0.2"))
    instances = [STATIC_INSTANCES[0], reportable(STATIC_INSTANCES[1])]
    assert plan_actions(STATIC, instances, nodes, elastic=ELASTIC, now=T0) == [
        ReportFaulty("i-s1", "UNRECOVERABLE_GPU_ERROR", reason),
        Replace("h100-1", f"clusterfab-repair: host of i-s1 reported faulty ({reason})"),
    ]
    # Not a hardware category: the group replaces the VM as anywhere else.
    gpu = "clusterfab-health: GPU: nvidia-smi timed out after 30s"
    nodes = settled(node("h100-1", "IDLE", "DRAIN", reason=gpu, address="10.0.0.2"))
    assert plan_actions(STATIC, instances, nodes, elastic=ELASTIC, now=T0)[0] == Recreate(
        "i-s1", "h100", f"h100-1: {gpu}"
    )


def test_a_report_that_did_not_take_falls_back_to_a_new_machine() -> None:
    """Repair takes the VM away within about 12 minutes; one still running after REPORT_WAIT was refused."""
    reason = "clusterfab-repair: host of i-s1 reported faulty (clusterfab-health: XID: 79 on GPU 0)"
    instances = [STATIC_INSTANCES[0], reportable(STATIC_INSTANCES[1])]

    def waiting(since: dt.timedelta) -> dict[str, SlurmNode]:
        return settled(node("h100-1", "DOWN", reason=reason, at=T0 - since, address="10.0.0.2"))

    almost = REPORT_WAIT - dt.timedelta(seconds=1)
    assert plan_actions(STATIC, instances, waiting(almost), elastic=ELASTIC, now=T0) == []
    assert plan_actions(STATIC, instances, waiting(REPORT_WAIT), elastic=ELASTIC, now=T0) == [
        Recreate("i-s1", "h100", f"h100-1: {reason}"),
        Replace("h100-1", f"clusterfab: replacing i-s1 ({reason})"),
    ]
    # Its VM stopped for the repair: the node waits for it (the same VM comes back).
    assert plan_actions(STATIC, STATIC_INSTANCES[:1], waiting(REPORT_WAIT), elastic=ELASTIC, now=T0) == []


def test_a_reportable_elastic_node_drained_for_hardware_has_its_host_reported() -> None:
    reason = "clusterfab-health: ECC: 2 uncorrected ECC errors on GPU 0000:53:00.0"
    drained = node("h100-2", "IDLE", "DRAIN", "CLOUD", reason=reason, address="10.0.1.2")
    assert plan([reportable(elastic(2, "h100-2"))], settled(drained)) == [
        ReportFaulty("i-e2", "UNRECOVERABLE_GPU_ERROR", reason),
        Replace("h100-2", f"clusterfab-repair: host of i-e2 reported faulty ({reason})"),
    ]
    repair = f"clusterfab-repair: host of i-e2 reported faulty ({reason})"
    almost = T0 - REPORT_WAIT + dt.timedelta(seconds=1)
    # While the report runs its VM is not deleted (that fails the report), whether it still runs or stopped.
    for instances in ([reportable(elastic(2, "h100-2"))], []):
        waiting = node("h100-2", "DOWN", "CLOUD", reason=repair, at=almost, address="10.0.1.2")
        assert plan(instances, settled(waiting)) == []
        waited = node("h100-2", "DOWN", "CLOUD", reason=repair, at=T0 - REPORT_WAIT, address="10.0.1.2")
        assert plan(instances, settled(waited)) == [PowerDown("h100-2", repair)]


NOTICE = f"{INTERRUPTED_PREFIX} (terminate at 2026-11-26T12:02:00Z)"


def test_an_elastic_node_its_watcher_set_down_on_a_notice_is_powered_down_at_once() -> None:
    """The instance still runs (two minutes left): the power-down's suspend program deletes it, and the
    node is power-saved, ready for new capacity, without waiting for the retry wait of a failed resume."""
    notified = node("h100-2", "DOWN", "DRAIN", "CLOUD", reason=NOTICE, at=T0, address="10.0.1.2")
    assert plan([elastic(2, "h100-2")], settled(notified)) == [PowerDown("h100-2", NOTICE)]
    # The cloud was quicker than the sync: the same, without an instance.
    assert plan([], settled(notified)) == [PowerDown("h100-2", NOTICE)]


def test_a_static_node_its_watcher_set_down_on_a_notice_gets_a_new_machine_now() -> None:
    """Set aside DOWN and drained by its watcher: its group replaces the machine now, and the node stays
    drained until the new machine has started (the old slurmd answers pings until the cloud takes it)."""
    notified = node("h100-1", "DOWN", "DRAIN", reason=NOTICE, at=T0, address="10.0.0.2")
    assert plan([], settled(notified)) == [
        Recreate("i-s1", "h100", f"h100-1: {NOTICE}"),
        Replace("h100-1", f"clusterfab: replacing i-s1 ({NOTICE})"),
    ]
    # The next round, the old instance gone: the node waits DOWN and drained for the group's new machine.
    reason = f"clusterfab: replacing i-s1 ({NOTICE})"
    replacing = node("h100-1", "DOWN", "DRAIN", reason=reason, at=T0, address="10.0.0.2")
    assert plan_actions(STATIC, STATIC_INSTANCES[:1], settled(replacing), elastic=ELASTIC, now=T0) == []


def test_a_notice_reason_on_a_node_that_is_not_down_is_not_acted_on() -> None:
    """Only the watcher's DOWN counts: an operator who resumed the node has the last word."""
    resumed = node("h100-1", "IDLE", reason=NOTICE, address="10.0.0.2")
    assert plan([], settled(resumed)) == []


class RecordingScontrol:
    def __init__(self, nodes: list[dict[str, Any]], hostnames: dict[str, list[str]] | None = None) -> None:
        self.nodes, self.hostnames = nodes, hostnames or {}
        self.calls: list[list[str]] = []

    def __call__(self, command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        self.calls.append(command)
        if command[:3] == ["scontrol", "show", "nodes"]:
            return subprocess.CompletedProcess(command, 0, json.dumps({"nodes": self.nodes}), "")
        if command[:3] == ["scontrol", "show", "hostnames"]:
            return subprocess.CompletedProcess(command, 0, "\n".join(self.hostnames[command[3]]) + "\n", "")
        return subprocess.CompletedProcess(command, 0, "", "")


def test_scontrol_reads_power_states_reasons_and_their_time() -> None:
    """slurmctld 24.11's JSON (data_parser v0.0.42): states as a list, times as {set, infinite, number}."""
    run = RecordingScontrol(
        [
            {
                "name": "h100-3",
                "address": "h100-3",
                "state": ["DOWN", "CLOUD", "POWERED_DOWN"],
                "reason": "clusterfab: resume failed: InsufficientInstanceCapacity",
                "reason_changed_at": {"set": True, "infinite": False, "number": int(T0.timestamp())},
            }
        ],
        {"h100-[2-3]": ["h100-2", "h100-3"]},
    )
    scontrol = Scontrol(run=run)
    found = scontrol.nodes()["h100-3"]
    assert found.down
    assert found.powered_down
    assert not found.powering_up
    assert found.reason_at == T0
    assert scontrol.hostnames("h100-[2-3]") == ["h100-2", "h100-3"]
    scontrol.update(["h100-2", "h100-3"], PowerDown("h100-2", "clusterfab: x"))
    assert run.calls[-1] == [
        "scontrol",
        "update",
        "NodeName=h100-2,h100-3",
        "State=POWER_DOWN_FORCE",
        "Reason=clusterfab: x",
    ]


def test_a_replaced_node_stays_drained_until_its_new_machine_starts() -> None:
    """DOWN alone would let the old machine's slurmd put it back in service with its next ping answer
    (ReturnToService=2); DOWN and still drained, it waits for Return."""
    run = RecordingScontrol([])
    Scontrol(run=run).apply(Replace("h100-1", "clusterfab: replacing i-1 (x)"))
    assert run.calls == [
        ["scontrol", "update", "NodeName=h100-1", "State=DOWN", "Reason=clusterfab: replacing i-1 (x)"],
    ]
    set_aside = T0 - dt.timedelta(minutes=5)
    reason = "clusterfab: replacing i-s1 (clusterfab-health: XID: 79 on GPU 0000:53:00.0)"
    waiting = settled(node("h100-1", "DOWN", "DRAIN", reason=reason, at=set_aside, address="10.0.0.2"))
    # The old instance still runs (terminating): nothing; the new one, launched after, holds the name:
    assert plan([], waiting) == []
    new = Instance("i-s9", "h100", "10.0.0.2", T0 - dt.timedelta(minutes=1), "h100-1")
    back = f"clusterfab: i-s9 started for it ({reason})"
    assert plan_actions(STATIC, [STATIC_INSTANCES[0], new], waiting, elastic=ELASTIC, now=T0) == [
        Return("h100-1", back, down=True)
    ]
    # At another address: the node's address follows first, so its pings reach the new machine.
    elsewhere = dataclasses.replace(new, address="10.0.0.9")
    assert plan_actions(STATIC, [STATIC_INSTANCES[0], elsewhere], waiting, elastic=ELASTIC, now=T0) == [
        SetAddress("h100-1", "10.0.0.9"),
        Return("h100-1", back, down=True),
    ]
    # Its slurmd registered first (IDLE+DRAIN): undraining it is all that is left.
    registered = settled(node("h100-1", "IDLE", "DRAIN", reason=reason, at=set_aside, address="10.0.0.2"))
    assert plan_actions(STATIC, [STATIC_INSTANCES[0], new], registered, elastic=ELASTIC, now=T0) == [
        Return("h100-1", back, down=False)
    ]
    run = RecordingScontrol([])
    Scontrol(run=run).apply(Return("h100-1", back, down=True))
    Scontrol(run=run).apply(Return("h100-1", back, down=False))
    assert run.calls == [
        ["scontrol", "update", "NodeName=h100-1", "State=UNDRAIN"],
        ["scontrol", "update", "NodeName=h100-1", "State=DOWN", f"Reason={back}"],
        ["scontrol", "update", "NodeName=h100-1", "State=UNDRAIN"],
    ]


def test_a_repaired_hosts_vm_returns_its_node_when_it_restarts() -> None:
    reason = "clusterfab-repair: host of i-s1 reported faulty (clusterfab-health: XID: 79 on GPU 3)"
    reported = T0 - dt.timedelta(minutes=40)
    nodes = settled(node("h100-1", "DOWN", "DRAIN", reason=reason, at=reported, address="10.0.0.2"))
    vm = Instance("i-s1", "h100", "10.0.0.2", T0 - dt.timedelta(days=1), "h100-1", reportable=True)
    restarted = dataclasses.replace(vm, started=T0 - dt.timedelta(minutes=2))
    assert plan_actions(STATIC, [STATIC_INSTANCES[0], restarted], nodes, elastic=ELASTIC, now=T0) == [
        Return("h100-1", f"clusterfab: i-s1 started for it ({reason})", down=True)
    ]
    # Still running since before the report, 40 minutes on: the report did not take, the group replaces it.
    assert plan_actions(STATIC, [STATIC_INSTANCES[0], vm], nodes, elastic=ELASTIC, now=T0)[0] == Recreate(
        "i-s1", "h100", f"h100-1: {reason}"
    )
