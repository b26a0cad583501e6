"""The controller's node sync: instances get node names, Slurm learns their addresses, lost nodes go DOWN.
The decision is tested as data; the EC2 side against moto's EC2, the Slurm side against a recording
scontrol."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from typing import Any

import boto3
import pytest
from moto import mock_aws

from clusterfab.core.vocab import BLUEPRINT_TAG, NODE_GROUP_TAG, STACK_TAG
from clusterfab.scheduler.slurm.nodes import __main__ as nodes_main
from clusterfab.scheduler.slurm.nodes import nodesync
from clusterfab.scheduler.slurm.nodes.nodesync import (
    GONE_REASON,
    Ec2Fleet,
    Instance,
    MarkDown,
    NameInstance,
    Scontrol,
    SetAddress,
    SlurmNode,
    node_names,
    plan_actions,
    sync,
)

T0 = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
NAMES = node_names({"h100": 3})


def instance(i: int, name: str | None = None, *, minutes: int = 0, group: str = "h100") -> Instance:
    return Instance(f"i-{i}", group, f"10.0.0.{i}", T0 + dt.timedelta(minutes=minutes), name)


def fresh(*names: str) -> dict[str, SlurmNode]:
    """Nodes as slurmctld has them before anyone set an address (NodeAddr = the node name)."""
    return {n: SlurmNode(n, n, down=False) for n in names}


def test_node_names_follow_slurm_conf() -> None:
    assert node_names({"h100": 3, "b200": 1}) == {"h100": ["h100-0", "h100-1", "h100-2"], "b200": ["b200-0"]}


def test_new_instances_take_the_lowest_free_names_in_launch_order() -> None:
    actions = plan_actions(NAMES, [instance(7, minutes=2), instance(5, minutes=1)], fresh(*NAMES["h100"]))
    assert actions == [
        NameInstance("i-5", "h100-0"),
        NameInstance("i-7", "h100-1"),
        SetAddress("h100-0", "10.0.0.5"),
        SetAddress("h100-1", "10.0.0.7"),
        MarkDown("h100-2", GONE_REASON),
    ]


def test_a_settled_cluster_needs_nothing() -> None:
    nodes = {
        "h100-0": SlurmNode("h100-0", "10.0.0.5", False),
        "h100-1": SlurmNode("h100-1", "10.0.0.7", False),
    }
    nodes["h100-2"] = SlurmNode("h100-2", "h100-2", down=True)
    assert plan_actions(NAMES, [instance(5, "h100-0"), instance(7, "h100-1")], nodes) == []


def test_a_replaced_instance_takes_the_name_its_predecessor_left() -> None:
    # i-5 (h100-0) was terminated; i-9 replaces it. Slurm still has h100-0 at i-5's address.
    nodes = {
        "h100-0": SlurmNode("h100-0", "10.0.0.5", False),
        "h100-1": SlurmNode("h100-1", "10.0.0.7", False),
    }
    nodes["h100-2"] = SlurmNode("h100-2", "10.0.0.8", False)
    actions = plan_actions(
        NAMES, [instance(7, "h100-1"), instance(8, "h100-2"), instance(9, minutes=5)], nodes
    )
    assert actions == [NameInstance("i-9", "h100-0"), SetAddress("h100-0", "10.0.0.9")]


def test_a_lost_instance_marks_its_node_down_once() -> None:
    nodes = {
        "h100-0": SlurmNode("h100-0", "10.0.0.5", False),
        "h100-1": SlurmNode("h100-1", "10.0.0.7", False),
    }
    nodes["h100-2"] = SlurmNode("h100-2", "10.0.0.8", down=True)
    assert plan_actions(NAMES, [instance(5, "h100-0")], nodes) == [MarkDown("h100-1", GONE_REASON)]


def test_two_instances_claiming_one_name_keep_the_earlier() -> None:
    # A copied tag (an AMI made from a node, a manual launch): the later instance gets a free name.
    actions = plan_actions(
        NAMES, [instance(5, "h100-0"), instance(6, "h100-0", minutes=3)], fresh(*NAMES["h100"])
    )
    assert NameInstance("i-6", "h100-1") in actions
    assert SetAddress("h100-0", "10.0.0.5") in actions
    assert not any(a == NameInstance("i-5", "h100-1") for a in actions)


def test_more_instances_than_nodes_leaves_the_extra_unnamed() -> None:
    instances = [instance(i, minutes=i) for i in range(1, 5)]
    named = [a for a in plan_actions(NAMES, instances, fresh(*NAMES["h100"])) if isinstance(a, NameInstance)]
    assert named == [
        NameInstance("i-1", "h100-0"),
        NameInstance("i-2", "h100-1"),
        NameInstance("i-3", "h100-2"),
    ]


def test_instances_of_other_groups_are_left_alone() -> None:
    assert plan_actions(NAMES, [instance(1, group="b200")], {}) == []


class RecordingScontrol:
    """A stand-in for scontrol: `show nodes --json` from a fixture, updates recorded."""

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.nodes = nodes
        self.updates: list[list[str]] = []

    def __call__(self, command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        if command[:3] == ["scontrol", "show", "nodes"]:
            return subprocess.CompletedProcess(command, 0, json.dumps({"nodes": self.nodes}), "")
        self.updates.append(command)
        return subprocess.CompletedProcess(command, 0, "", "")


@mock_aws
def test_one_round_against_ec2_and_scontrol() -> None:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    tags = {BLUEPRINT_TAG: "llm", STACK_TAG: "prod", NODE_GROUP_TAG: "h100"}
    tag_spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    launched = ec2.run_instances(ImageId=image, MinCount=2, MaxCount=2, TagSpecifications=tag_spec)[
        "Instances"
    ]
    other_stack = [
        {
            "ResourceType": "instance",
            "Tags": [{"Key": k, "Value": v} for k, v in {**tags, STACK_TAG: "dev"}.items()],
        }
    ]
    ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, TagSpecifications=other_stack)
    # slurmctld 24.11's `scontrol show nodes --json`: state is a list of flags.
    scontrol = RecordingScontrol(
        [
            {"name": f"h100-{i}", "address": f"h100-{i}", "state": ["UNKNOWN", "NOT_RESPONDING"]}
            for i in range(3)
        ]
    )
    fleet = Ec2Fleet(ec2, blueprint="llm", stack="prod")
    done = sync(NAMES, fleet, Scontrol(run=scontrol))

    ids = sorted(i["InstanceId"] for i in launched)
    named = {a.instance_id: a.name for a in done if isinstance(a, NameInstance)}
    assert sorted(named.values()) == ["h100-0", "h100-1"]
    assert sorted(named) == ids
    for found in fleet.instances():
        assert found.name == named[found.id]  # the tag landed on the instance
    addresses = {i["InstanceId"]: i["PrivateIpAddress"] for i in launched}
    assert sorted(scontrol.updates) == sorted(
        [
            [
                "scontrol",
                "update",
                f"NodeName={named[i]}",
                f"NodeAddr={addresses[i]}",
                f"NodeHostname={addresses[i]}",
            ]
            for i in ids
        ]
        + [["scontrol", "update", "NodeName=h100-2", "State=DOWN", f"Reason={GONE_REASON}"]]
    )


def test_the_tag_names_agree_with_the_vocabulary() -> None:
    from clusterfab.core import vocab

    assert (nodesync.GROUP_TAG, nodesync.BLUEPRINT_TAG, nodesync.STACK_TAG) == (
        vocab.NODE_GROUP_TAG,
        vocab.BLUEPRINT_TAG,
        vocab.STACK_TAG,
    )
    assert nodesync.NODE_TAG == vocab.SLURM_NODE_TAG


@pytest.mark.parametrize("state", [["DOWN"], ["DOWN", "NOT_RESPONDING"], "DOWN"])
def test_down_is_read_from_any_state_shape(state: Any) -> None:
    run = RecordingScontrol([{"name": "h100-0", "address": "10.0.0.5", "state": state}])
    assert Scontrol(run=run).nodes()["h100-0"].down


class FakeCompute:
    """Compute Engine's instances API as GceFleet calls it: list (filter on labels, pages of `page`),
    get, setMetadata (refused on a stale fingerprint, as the API answers 412), delete (the VM is listed,
    STOPPING, for `deleting` more lists, then gone). Every request's method, path and query parameters
    are checked against the compute.v1 discovery document google-api-python-client ships."""

    def __init__(self, instances: list[dict[str, Any]], page: int = 1, deleting: int = 1) -> None:
        self.instances = {i["name"]: i for i in instances}
        self.page = page
        self.deleting = deleting
        self.going: dict[str, int] = {}
        self.calls: list[tuple[str, str]] = []
        self._methods = _discovery_methods()

    def __call__(self, method: str, url: str, body: Any = None) -> Any:
        import re
        import urllib.parse

        parsed = urllib.parse.urlparse(url)
        assert url.startswith(nodesync.COMPUTE_API + "/")
        path = parsed.path.removeprefix("/compute/v1/")
        known = [m for m in self._methods if m[0] == method and re.fullmatch(m[1], path)]
        assert known, f"{method} {path} is no compute.v1 instances method"
        self.calls.append((known[0][2], path))
        query = urllib.parse.parse_qs(parsed.query)
        assert set(query) <= known[0][3], f"{known[0][2]} has no parameter {set(query) - known[0][3]}"
        if known[0][2] == "compute.instances.list":
            if "pageToken" not in query:  # a new listing, not its next page
                self._progress_deletes()
            wanted = dict(re.findall(r'labels\.([\w-]+) = "([^"]*)"', query["filter"][0]))
            found = [
                i for i in self.instances.values() if all(i["labels"].get(k) == v for k, v in wanted.items())
            ]
            start = int(query.get("pageToken", ["0"])[0])
            page: dict[str, Any] = {"items": found[start : start + self.page]}
            if start + self.page < len(found):
                page["nextPageToken"] = str(start + self.page)
            return page
        name = path.split("/")[5]
        if known[0][2] == "compute.instances.delete":
            assert name not in self.going, f"{name} is already being deleted"
            self.instances[name]["status"] = "STOPPING"
            self.going[name] = self.deleting
            return {"kind": "compute#operation", "operationType": "delete"}
        if known[0][2] == "compute.instances.get":
            return json.loads(json.dumps(self.instances[name]))
        metadata = self.instances[name]["metadata"]
        if body["fingerprint"] != metadata["fingerprint"]:
            raise RuntimeError("412 conditionNotMet: the fingerprint is stale")
        metadata["items"] = body["items"]
        metadata["fingerprint"] += "+"
        return {"kind": "compute#operation"}

    def _progress_deletes(self) -> None:
        for name in list(self.going):
            self.going[name] -= 1
            if self.going[name] < 0:
                del self.going[name], self.instances[name]


def _discovery_methods() -> list[tuple[str, str, str, set[str]]]:
    """(HTTP method, path pattern, method id, query parameters) of compute.v1's instances list / get /
    setMetadata / delete."""
    import re
    from pathlib import Path

    import googleapiclient

    document = json.loads(
        (Path(googleapiclient.__file__).parent / "discovery_cache/documents/compute.v1.json").read_text()
    )
    methods = document["resources"]["instances"]["methods"]
    found = []
    for name in ("list", "get", "setMetadata", "delete"):
        method = methods[name]
        pattern = re.sub(
            r"\{[^}]+\}", "[^/]+", method["flatPath"] if "flatPath" in method else method["path"]
        )
        in_path = set(method.get("parameterOrder", []))
        query = {key for key in method["parameters"] if key not in in_path}
        found.append((method["httpMethod"], pattern, method["id"], query))
    return found


def _vm(name: str, group: str, stack: str, address: str | None, minute: int, node: str | None = None) -> Any:
    items = [{"key": "startup-script", "value": "#!/bin/bash"}]
    if node:
        items.append({"key": nodesync.NODE_TAG, "value": node})
    vm: dict[str, Any] = {
        "name": name,
        "status": "RUNNING",
        "creationTimestamp": f"2026-11-25T12:{minute:02d}:00.000-08:00",
        "labels": {BLUEPRINT_TAG: "llm", STACK_TAG: stack, NODE_GROUP_TAG: group},
        "metadata": {"fingerprint": f"fp-{name}", "items": items},
        "networkInterfaces": [{"networkIP": address}] if address else [{}],
    }
    return vm


def test_one_round_against_compute_engine_and_scontrol() -> None:
    compute = FakeCompute(
        [
            _vm("llm-h100-b", "h100", "prod", "10.50.0.21", 2),
            _vm("llm-h100-a", "h100", "prod", "10.50.0.20", 1),
            _vm("llm-h100-c", "h100", "prod", None, 3),  # no address yet: next round
            _vm("llm-h100-d", "h100", "dev", "10.50.0.40", 0),  # another stack
        ],
        page=1,
    )
    fleet = nodesync.GceFleet(compute, project="p", zone="us-central1-b", blueprint="llm", stack="prod")
    scontrol = RecordingScontrol(
        [{"name": f"h100-{i}", "address": f"h100-{i}", "state": ["UNKNOWN"]} for i in range(3)]
    )
    done = sync(NAMES, fleet, Scontrol(run=scontrol))
    assert [a for a in done if isinstance(a, NameInstance)] == [
        NameInstance("llm-h100-a", "h100-0"),  # launched first
        NameInstance("llm-h100-b", "h100-1"),
    ]
    for name, node in (("llm-h100-a", "h100-0"), ("llm-h100-b", "h100-1")):
        items = compute.instances[name]["metadata"]["items"]
        # setMetadata replaces the whole list: the startup script must survive the naming.
        assert items == [
            {"key": "startup-script", "value": "#!/bin/bash"},
            {"key": nodesync.NODE_TAG, "value": node},
        ]
    assert "llm-h100-d" not in {a.instance_id for a in done if isinstance(a, NameInstance)}
    lists = [path for method, path in compute.calls if method == "compute.instances.list"]
    assert len(lists) == 3  # one page per VM of this stack (page size 1): the pages were followed
    assert {found.name for found in fleet.instances() if found.name} == {"h100-0", "h100-1"}


def test_a_stale_fingerprint_is_an_error_not_a_silent_overwrite() -> None:
    compute = FakeCompute([_vm("llm-h100-a", "h100", "prod", "10.50.0.20", 1)])
    original = compute.__call__

    def racing(method: str, url: str, body: Any = None) -> Any:
        answer = original(method, url, body)
        if url.endswith("/llm-h100-a") and method == "GET":
            compute.instances["llm-h100-a"]["metadata"]["fingerprint"] = "changed-meanwhile"
        return answer

    with pytest.raises(RuntimeError, match="412"):
        nodesync.GceFleet(racing, project="p", zone="z", blueprint="llm", stack="prod").name(
            "llm-h100-a", "h100-0"
        )
    assert compute.instances["llm-h100-a"]["metadata"]["items"][-1]["key"] == "startup-script"


def test_the_gcp_settings_need_project_and_zone(tmp_path: Any) -> None:
    config = tmp_path / "nodesync.json"
    config.write_text(
        json.dumps({"cloud": "gcp", "groups": {"h100": 2}, "blueprint": "llm", "stack": "prod"})
    )
    with pytest.raises(SystemExit):
        nodes_main.main(["sync", "--config", str(config)])
