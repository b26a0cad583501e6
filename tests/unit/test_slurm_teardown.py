"""The destroy hook's teardown of the instances Slurm created: only this cluster's elastic instances of the
groups being deleted go, and the wait for them is bounded. EC2 against moto; Compute Engine against a fake
whose requests are checked against the compute.v1 discovery document."""

from __future__ import annotations

import urllib.parse
from typing import Any

import boto3
import pytest
from moto import mock_aws

from clusterfab.core import vocab
from clusterfab.core.vocab import BLUEPRINT_TAG, NODE_GROUP_TAG, SLURM_ELASTIC_TAG, SLURM_NODE_TAG, STACK_TAG
from clusterfab.scheduler.slurm.nodes.aws import Ec2Fleet
from clusterfab.scheduler.slurm.nodes.fleet import ELASTIC_TAG, ElasticInstance
from clusterfab.scheduler.slurm.nodes.gcp import COMPUTE_API, GceFleet
from clusterfab.scheduler.slurm.teardown import TeardownError, delete_elastic, group_filter
from clusterfab.scheduler.slurm.teardown_aws import ec2_group_of
from tests.unit.test_slurm_nodesync import FakeCompute

EVERY_GROUP = group_filter(None, ())


def test_the_elastic_tag_agrees_with_the_vocabulary() -> None:
    assert ELASTIC_TAG == vocab.SLURM_ELASTIC_TAG


# --- EC2 ---------------------------------------------------------------------------------------------


def _launch(ec2: Any, image: str, tags: dict[str, str], count: int = 1) -> list[str]:
    spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    launched = ec2.run_instances(ImageId=image, MinCount=count, MaxCount=count, TagSpecifications=spec)
    return sorted(i["InstanceId"] for i in launched["Instances"])


def _state(ec2: Any, ids: list[str]) -> dict[str, str]:
    found = ec2.describe_instances(InstanceIds=ids)["Reservations"]
    return {i["InstanceId"]: i["State"]["Name"] for r in found for i in r["Instances"]}


@mock_aws
def test_ec2_only_this_clusters_elastic_instances_are_terminated() -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    elastic = {
        BLUEPRINT_TAG: "llm",
        STACK_TAG: "prod",
        NODE_GROUP_TAG: "h100",
        SLURM_NODE_TAG: "h100-4",
        SLURM_ELASTIC_TAG: "true",
    }
    ours = _launch(ec2, image, elastic, count=2)
    other_group = _launch(ec2, image, {**elastic, NODE_GROUP_TAG: "l4"})
    spared = [
        *_launch(ec2, image, {**elastic, STACK_TAG: "dev"}),  # another stack's
        *_launch(ec2, image, {**elastic, BLUEPRINT_TAG: "rag"}),  # another blueprint's
        # a static node Pulumi owns (its auto scaling group): no elastic tag
        *_launch(ec2, image, {k: v for k, v in elastic.items() if k != SLURM_ELASTIC_TAG}),
        *_launch(ec2, image, {**elastic, SLURM_ELASTIC_TAG: "false"}),
    ]
    fleet = Ec2Fleet(ec2, blueprint="llm", stack="prod")
    assert sorted(fleet.elastic(), key=lambda i: i.id) == sorted(
        [ElasticInstance(i, "h100") for i in ours] + [ElasticInstance(i, "l4") for i in other_group],
        key=lambda i: i.id,
    )

    deleted = delete_elastic(fleet, group_filter("h100", {"h100", "l4"}), sleep=_no_sleep)

    assert deleted == ours
    states = _state(ec2, ours + other_group + spared)
    assert {i: states[i] for i in ours} == dict.fromkeys(ours, "terminated")
    assert {i: states[i] for i in other_group + spared} == dict.fromkeys(other_group + spared, "running")
    assert fleet.elastic() == [ElasticInstance(other_group[0], "l4")]


@mock_aws
def test_ec2_a_removed_groups_instances_go_with_its_group() -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    base = {BLUEPRINT_TAG: "llm", STACK_TAG: "prod", SLURM_ELASTIC_TAG: "true"}
    kept = _launch(ec2, image, {**base, NODE_GROUP_TAG: "h100"})
    removed = _launch(ec2, image, {**base, NODE_GROUP_TAG: "l4"})
    fleet = Ec2Fleet(ec2, blueprint="llm", stack="prod")

    # The program no longer has l4: its group's delete names no group the program keeps.
    assert delete_elastic(fleet, group_filter(None, {"h100"}), sleep=_no_sleep) == removed
    assert _state(ec2, kept + removed) == {kept[0]: "running", removed[0]: "terminated"}


def _profile(name: str) -> str:
    iam = boto3.client("iam", region_name="us-east-1")
    iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")
    arn: str = iam.create_instance_profile(InstanceProfileName=name)["InstanceProfile"]["Arn"]
    iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=name)
    return arn


@mock_aws
def test_ec2_a_destroy_leaves_a_same_named_deployments_instances_alone() -> None:
    """The attack: two deployments of the same blueprint and stack names in one account (or an instance
    anyone tagged like the cluster's) carry the same tags, and one's destroy terminated the other's elastic
    nodes. The hook now reads the deleted auto scaling group's launch template and its instance profile, and
    deletes only instances of that profile."""
    ec2 = boto3.client("ec2", region_name="us-east-1")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    ours, theirs = _profile("llm-prod-h100"), _profile("llm-prod-h100-elsewhere")
    template = ec2.create_launch_template(
        LaunchTemplateName="llm-prod-h100-lt",
        LaunchTemplateData={"ImageId": image, "IamInstanceProfile": {"Arn": ours}},
    )["LaunchTemplate"]["LaunchTemplateId"]
    tags = {BLUEPRINT_TAG: "llm", STACK_TAG: "prod", NODE_GROUP_TAG: "h100", SLURM_ELASTIC_TAG: "true"}
    spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]

    def launch(profile: str) -> str:
        found = ec2.run_instances(
            ImageId=image, MinCount=1, MaxCount=1, TagSpecifications=spec, IamInstanceProfile={"Arn": profile}
        )
        return str(found["Instances"][0]["InstanceId"])

    mine, other = launch(ours), launch(theirs)
    # The auto scaling group's state as the engine hands it to the hook (Pulumi's property names).
    deleted = {
        "launchTemplate": {"id": template, "version": "1"},
        "tags": [{"key": NODE_GROUP_TAG, "value": "h100", "propagateAtLaunch": True}],
    }
    groups = ec2_group_of(ec2, deleted)
    assert {name: (g.template, g.profile) for name, g in groups.items()} == {"h100": (template, ours)}
    fleet = Ec2Fleet(ec2, blueprint="llm", stack="prod", groups=groups)

    assert delete_elastic(fleet, group_filter("h100", {"h100"}), sleep=_no_sleep) == [mine]
    assert _state(ec2, [mine, other]) == {mine: "terminated", other: "running"}


@mock_aws
def test_ec2_a_deleted_group_without_a_template_or_group_tag_is_refused() -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    with pytest.raises(TeardownError, match="names no launch template"):
        ec2_group_of(ec2, {"tags": [{"key": NODE_GROUP_TAG, "value": "h100"}]})
    with pytest.raises(TeardownError, match="names no node group"):
        ec2_group_of(ec2, {"launchTemplate": {"id": "lt-0123"}, "tags": []})
    with pytest.raises(TeardownError, match="cannot read launch template lt-0123 of node group h100"):
        ec2_group_of(
            ec2, {"launchTemplate": {"id": "lt-0123"}, "tags": [{"key": NODE_GROUP_TAG, "value": "h100"}]}
        )


class _Batches:
    """An EC2 client that records terminate_instances' batches."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def terminate_instances(self, InstanceIds: list[str]) -> None:  # noqa: N803 - boto3's keyword
        self.batches.append(InstanceIds)


def test_ec2_terminates_at_most_1000_instances_a_call() -> None:
    client = _Batches()
    ids = [f"i-{n:05d}" for n in range(2001)]
    Ec2Fleet(client, blueprint="llm", stack="prod").terminate(ids)
    assert [len(batch) for batch in client.batches] == [1000, 1000, 1]
    assert [i for batch in client.batches for i in batch] == ids


# --- the wait ----------------------------------------------------------------------------------------


class _StuckFleet:
    """Instances that never go (a stuck termination), and one more that appears after the first look."""

    def __init__(self) -> None:
        self.looks = 0
        self.deleted: list[list[str]] = []

    def elastic(self) -> list[ElasticInstance]:
        self.looks += 1
        found = [ElasticInstance("i-1", "h100")]
        return found + ([ElasticInstance("i-2", "h100")] if self.looks > 1 else [])

    def terminate(self, ids: Any) -> None:
        self.deleted.append(list(ids))

    def requests(self) -> list[Any]:
        return []

    def withdraw(self, mig: str) -> None:
        raise AssertionError(f"nothing to withdraw: {mig}")


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_wait_is_bounded_and_names_what_did_not_go() -> None:
    fleet, clock = _StuckFleet(), _Clock()
    with pytest.raises(TeardownError) as raised:
        delete_elastic(fleet, EVERY_GROUP, timeout_s=60, poll_s=15, clock=clock, sleep=clock.sleep)
    assert str(raised.value) == (
        "2 instance(s) Slurm created did not go within 60 s: i-1, i-2; delete them in the cloud console "
        "or CLI, then run destroy again"
    )
    assert clock.now == 60
    # Each instance is asked to go once, the late one as soon as it is seen.
    assert fleet.deleted == [["i-1"], ["i-2"]]


def test_nothing_to_delete_asks_nothing() -> None:
    fleet = _StuckFleet()
    assert delete_elastic(fleet, group_filter("a100", {"a100"}), sleep=_no_sleep) == []
    assert fleet.deleted == []
    assert fleet.looks == 1


# --- Compute Engine -----------------------------------------------------------------------------------


def _vm(name: str, *, group: str = "h100", stack: str = "prod", blueprint: str = "llm", **labels: str) -> Any:
    return {
        "name": name,
        "status": "RUNNING",
        "creationTimestamp": "2026-11-25T12:00:00.000-08:00",
        "labels": {BLUEPRINT_TAG: blueprint, STACK_TAG: stack, NODE_GROUP_TAG: group, **labels},
        "metadata": {"fingerprint": f"fp-{name}", "items": [{"key": SLURM_NODE_TAG, "value": "h100-9"}]},
        "networkInterfaces": [{"networkIP": "10.50.0.9"}],
    }


def test_gce_only_this_clusters_elastic_vms_are_deleted_and_awaited() -> None:
    elastic = {SLURM_ELASTIC_TAG: "true"}
    stopped = {**_vm("llm-h100-e2", **elastic), "status": "TERMINATED"}  # stopped: still holds its NIC
    compute = FakeCompute(
        [
            _vm("llm-h100-e1", **elastic),
            stopped,
            _vm("llm-l4-e1", group="l4", **elastic),
            _vm("llm-h100-e3", stack="dev", **elastic),  # another stack's
            _vm("rag-h100-e1", blueprint="rag", **elastic),  # another blueprint's
            _vm("llm-h100-s1"),  # a static node of the MIG
        ],
        page=1,
        deleting=2,
    )
    fleet = GceFleet(compute, project="p", zone="us-central1-b", blueprint="llm", stack="prod")
    looks: list[float] = []

    deleted = delete_elastic(fleet, group_filter("h100", {"h100", "l4"}), sleep=looks.append)

    assert deleted == ["llm-h100-e1", "llm-h100-e2"]
    assert sorted(compute.instances) == ["llm-h100-e3", "llm-h100-s1", "llm-l4-e1", "rag-h100-e1"]
    deletes = [path for method, path in compute.calls if method == "compute.instances.delete"]
    assert deletes == [
        "projects/p/zones/us-central1-b/instances/llm-h100-e1",
        "projects/p/zones/us-central1-b/instances/llm-h100-e2",
    ]
    assert looks == [15.0, 15.0, 15.0]  # asked, then listed STOPPING twice, then gone


def test_gce_lists_with_the_clusters_and_the_elastic_labels() -> None:
    compute = FakeCompute([])
    urls: list[str] = []

    def recording(method: str, url: str, body: Any = None) -> Any:
        urls.append(url)
        return compute(method, url, body)

    GceFleet(recording, project="p", zone="z", blueprint="llm", stack="prod").elastic()
    query = urllib.parse.parse_qs(urllib.parse.urlparse(urls[0]).query)
    assert query == {
        "filter": [
            '(labels.clusterfab-blueprint = "llm") (labels.clusterfab-stack = "prod") '
            '(labels.clusterfab-slurm-elastic = "true")'
        ]
    }


def _no_sleep(_seconds: float) -> None:
    return


class _Response:
    def __init__(self, status_code: int, payload: Any) -> None:
        self.status_code, self._payload = status_code, payload
        self.text = str(payload)

    def json(self) -> Any:
        return self._payload


class _Session:
    def __init__(self, response: _Response) -> None:
        self.response = response
        self.requests: list[tuple[str, str, Any]] = []

    def request(self, method: str, url: str, json: Any = None, timeout: float = 0) -> _Response:
        self.requests.append((method, url, json))
        return self.response


class _OneVm:
    """The fleet with one elastic VM listed (the listing itself is tested above)."""

    def __init__(self, fleet: GceFleet) -> None:
        self._fleet = fleet

    def elastic(self) -> list[ElasticInstance]:
        return [ElasticInstance("llm-h100-e1", "h100")]

    def terminate(self, ids: Any) -> None:
        self._fleet.terminate(ids)

    def requests(self) -> list[Any]:
        return []

    def withdraw(self, mig: str) -> None:
        raise AssertionError(f"nothing to withdraw: {mig}")


def test_a_compute_error_is_a_teardown_error_with_googles_message() -> None:
    from clusterfab.scheduler.slurm.teardown_gcp import _SessionHttp

    session = _Session(_Response(403, {"error": {"message": "Required 'compute.instances.delete'"}}))
    fleet = GceFleet(_SessionHttp(session), project="p", zone="z", blueprint="llm", stack="prod")
    with pytest.raises(TeardownError) as raised:
        delete_elastic(_OneVm(fleet), lambda _: True, sleep=lambda _: None)
    assert str(raised.value) == (
        "deleting the instances Slurm created failed: TeardownError: "
        f"DELETE {COMPUTE_API}/projects/p/zones/z/instances/llm-h100-e1: HTTP 403: "
        "{'error': {'message': \"Required 'compute.instances.delete'\"}}"
    )
    ok = _SessionHttp(_Session(_Response(200, {"items": []})))
    assert ok("GET", f"{COMPUTE_API}/projects/p/zones/z/instances") == {"items": []}
