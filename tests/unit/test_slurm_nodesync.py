"""The controller's node sync: instances get node names, Slurm learns their addresses, lost nodes go DOWN.
The decision is tested as data; the EC2 side against moto's EC2, the Slurm side against a recording
scontrol."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from typing import Any

import boto3
import pytest
from moto import mock_aws

from clusterfab.core.vocab import BLUEPRINT_TAG, NODE_GROUP_TAG, STACK_TAG
from clusterfab.scheduler.slurm.nodes import __main__ as nodes_main
from clusterfab.scheduler.slurm.nodes import fleet as nodes_fleet
from clusterfab.scheduler.slurm.nodes.actions import MarkDown, NameInstance, SetAddress
from clusterfab.scheduler.slurm.nodes.aws import Ec2Fleet, Ec2Group
from clusterfab.scheduler.slurm.nodes.fleet import CloudError, Instance
from clusterfab.scheduler.slurm.nodes.gcp import COMPUTE_API, GceFleet, GceGroup, faulty_host_reportable
from clusterfab.scheduler.slurm.nodes.groups import node_names
from clusterfab.scheduler.slurm.nodes.nodesync import sync
from clusterfab.scheduler.slurm.nodes.reconcile import GONE_REASON, plan_actions
from clusterfab.scheduler.slurm.nodes.scontrol import Scontrol, SlurmNode

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

    assert (nodes_fleet.GROUP_TAG, nodes_fleet.BLUEPRINT_TAG, nodes_fleet.STACK_TAG) == (
        vocab.NODE_GROUP_TAG,
        vocab.BLUEPRINT_TAG,
        vocab.STACK_TAG,
    )
    assert nodes_fleet.NODE_TAG == vocab.SLURM_NODE_TAG


@pytest.mark.parametrize("state", [["DOWN"], ["DOWN", "NOT_RESPONDING"], "DOWN"])
def test_down_is_read_from_any_state_shape(state: Any) -> None:
    run = RecordingScontrol([{"name": "h100-0", "address": "10.0.0.5", "state": state}])
    assert Scontrol(run=run).nodes()["h100-0"].down


MIG_LINK = "projects/1234/zones/us-central1-b/instanceGroupManagers"
"""How Compute Engine names a MIG in its VMs' `created-by` metadata (project number, zone)."""


class FakeCompute:
    """Compute Engine as GceFleet calls it: instances list (filter on labels, pages of `page`), get,
    setMetadata (refused on a stale fingerprint, as the API answers 412), bulkInsert (from a template, all
    or none, done after `waits_needed` zoneOperations.wait calls; `refuse` fails it: an operation error
    code, or an HTTP status with Google's JSON error body), delete (404 for a VM that is gone; a deleted VM is
    listed, STOPPING, for `deleting` more listings, then gone); MIGs listed (all, or by base instance
    name); instance templates. Every request's method, path and query parameters are checked against the
    compute.v1 discovery document google-api-python-client ships, and every request body against the
    method's request schema."""

    def __init__(
        self,
        instances: list[dict[str, Any]],
        page: int = 1,
        *,
        migs: list[dict[str, Any]] | None = None,
        templates: list[dict[str, Any]] | None = None,
        deleting: int = 0,
    ) -> None:
        self.instances = {i["name"]: i for i in instances}
        self.page = page
        self.deleting = deleting
        self.going: dict[str, int] = {}
        self.migs = migs or []
        self.templates = {t["name"]: t for t in templates or []}
        self.calls: list[tuple[str, str]] = []
        self.bodies: dict[str, list[Any]] = {}
        self.refuse: tuple[int | None, str] | None = None
        """(None, operation error code) or (HTTP status, reason) for the next bulkInsert (a resize request:
        its HTTP refusal)."""
        self.refuse_mig: tuple[int, str] | None = None
        """(HTTP status, reason) refusing a new MIG."""
        self.clock = "2026-11-26T04:00:00.000-08:00"
        """The creation time of what is made now."""
        self.waits_needed = 1
        self._operation: dict[str, Any] = {}
        self._methods = _discovery_methods()
        self._document = _discovery_document()

    def __call__(self, method: str, url: str, body: Any = None) -> Any:
        import urllib.parse

        parsed = urllib.parse.urlparse(url)
        assert url.startswith(COMPUTE_API + "/")
        path = parsed.path.removeprefix("/compute/v1/")
        known = [m for m in self._methods if m[0] == method and re.fullmatch(m[1], path)]
        assert known, f"{method} {path} is no compute.v1 method the fleet may call"
        _, _, method_id, request, parameters = known[0]
        self.calls.append((method_id, path))
        assert (body is not None) == (request is not None), f"{method_id} takes a body: {request}"
        if request is not None:
            _check_body(self._document, request, body, method_id)
            self.bodies.setdefault(method_id, []).append(json.loads(json.dumps(body)))
        query = urllib.parse.parse_qs(parsed.query)
        assert set(query) <= parameters, f"{method_id} has no parameter {set(query) - parameters}"
        handlers = {
            "compute.instances.list": self._list,
            "compute.instances.get": self._get,
            "compute.instances.setMetadata": self._set_metadata,
            "compute.instances.delete": self._delete,
            "compute.instances.bulkInsert": self._bulk_insert,
            "compute.zoneOperations.wait": self._wait,
            "compute.instanceGroupManagers.list": self._list_migs,
            "compute.instanceTemplates.get": self._get_template,
            "compute.instanceGroupManagers.recreateInstances": self._operation_of,
            "compute.instances.reportHostAsFaulty": self._operation_of,
            "compute.instanceGroupManagers.insert": self._insert_mig,
            "compute.instanceGroupManagers.delete": self._delete_mig,
            "compute.instanceGroupManagers.deleteInstances": self._delete_mig_instances,
            "compute.instanceGroupManagerResizeRequests.insert": self._insert_request,
            "compute.instanceGroupManagerResizeRequests.list": self._list_requests,
        }
        return handlers[method_id](url, path.split("/"), query, body)

    def _list(self, url: str, _: list[str], query: dict[str, list[str]], __: Any) -> Any:
        if "pageToken" not in query:  # a new listing, not its next page
            self._progress_deletes()
        wanted = dict(re.findall(r'labels\.([\w-]+) = "([^"]*)"', query["filter"][0]))
        found = [
            i for i in self.instances.values() if all(i["labels"].get(k) == v for k, v in wanted.items())
        ]
        return self._page(found, query)

    def _page(self, found: list[dict[str, Any]], query: dict[str, list[str]]) -> Any:
        start = int(query.get("pageToken", ["0"])[0])
        page: dict[str, Any] = {"items": found[start : start + self.page]}
        if start + self.page < len(found):
            page["nextPageToken"] = str(start + self.page)
        return page

    def _get(self, url: str, path: list[str], _: Any, __: Any) -> Any:
        if path[5] not in self.instances:
            raise _http_error(url, 404, "notFound", f"The resource '{path[5]}' was not found")
        return json.loads(json.dumps(self.instances[path[5]]))

    def _set_metadata(self, url: str, path: list[str], _: Any, body: Any) -> Any:
        metadata = self.instances[path[5]]["metadata"]
        if body["fingerprint"] != metadata["fingerprint"]:
            raise RuntimeError("412 conditionNotMet: the fingerprint is stale")
        metadata["items"] = body["items"]
        metadata["fingerprint"] += "+"
        return {"kind": "compute#operation", "status": "RUNNING", "name": "operation-set"}

    def _delete(self, url: str, path: list[str], _: Any, __: Any) -> Any:
        name = path[5]
        if name not in self.instances:
            raise _http_error(url, 404, "notFound", f"The resource '{name}' was not found")
        assert name not in self.going, f"{name} is already being deleted"
        if self.deleting:
            self.instances[name]["status"] = "STOPPING"
            self.going[name] = self.deleting
        else:
            del self.instances[name]
        return {"kind": "compute#operation", "status": "RUNNING", "name": f"operation-delete-{name}"}

    def _progress_deletes(self) -> None:
        for name in list(self.going):
            self.going[name] -= 1
            if self.going[name] < 0:
                del self.going[name], self.instances[name]

    def _bulk_insert(self, url: str, path: list[str], _: Any, body: Any) -> Any:
        if self.refuse is not None and self.refuse[0] is not None:
            status, reason = self.refuse
            raise _http_error(url, status, reason, f"{reason}: refused")
        self._operation = {"kind": "compute#operation", "name": "operation-bulk", "status": "RUNNING"}
        self._operation["operationType"] = "bulkInsert"
        if self.refuse is not None:
            self._operation["error"] = {"errors": [{"code": self.refuse[1], "message": "not now"}]}
            return dict(self._operation)
        template = self.templates[body["sourceInstanceTemplate"].rsplit("/", 1)[-1]]["properties"]
        assert int(body["minCount"]) == int(body["count"]) == len(body["perInstanceProperties"])
        for index, name in enumerate(body["perInstanceProperties"]):
            assert name not in self.instances, f"{name} exists (alreadyExists)"
            self.instances[name] = {
                "name": name,
                "status": "PROVISIONING",
                "creationTimestamp": "2026-11-26T04:00:00.000-08:00",
                # JSON merge patch of the template's properties.
                "labels": {**template["labels"], **body["instanceProperties"]["labels"]},
                "metadata": {"fingerprint": f"fp-{name}", "items": list(template["metadata"]["items"])},
                "networkInterfaces": [{"networkIP": f"10.50.1.{index + 10}"}],
                "resourcePolicies": body["instanceProperties"].get("resourcePolicies", []),
            }
        return dict(self._operation)

    def _wait(self, url: str, path: list[str], _: Any, __: Any) -> Any:
        assert path[5] == self._operation["name"]
        self.waits_needed -= 1
        return {**self._operation, "status": "DONE" if self.waits_needed <= 0 else "RUNNING"}

    def _list_migs(self, url: str, _: Any, query: dict[str, list[str]], __: Any) -> Any:
        """The zone's MIGs, all, or those a `field = "value"` filter names."""
        terms = re.findall(r'^(\w+) = "([^"]*)"$', query["filter"][0]) if "filter" in query else []
        found = [
            {k: v for k, v in m.items() if k != "resizeRequests"}
            for m in self.migs
            if all(m.get(field) == value for field, value in terms)
        ]
        return self._page(found, query)

    def _get_template(self, url: str, path: list[str], _: Any, __: Any) -> Any:
        return json.loads(json.dumps(self.templates[path[4]]))

    def _operation_of(self, url: str, path: list[str], _: Any, __: Any) -> Any:
        """A recreate or report, started (its body was checked against the API's schema on the way in)."""
        return {"kind": "compute#operation", "status": "RUNNING", "name": f"operation-{path[-1]}"}

    # --- flex-start: MIGs of the resume program's, their resize requests, and capacity arriving ---------

    def _started(self, kind: str) -> dict[str, Any]:
        self._operation = {"kind": "compute#operation", "name": f"operation-{kind}", "status": "RUNNING"}
        return dict(self._operation)

    def _insert_mig(self, url: str, path: list[str], _: Any, body: Any) -> Any:
        if self.refuse_mig is not None:
            status, reason = self.refuse_mig
            raise _http_error(url, status, reason, f"{reason}: refused")
        assert all(m["name"] != body["name"] for m in self.migs), f"{body['name']} exists (alreadyExists)"
        assert body["targetSize"] == 0, "a flex-start MIG starts empty: its resize request sizes it"
        self.migs.append(
            {
                **json.loads(json.dumps(body)),
                "creationTimestamp": self.clock,
                "resizeRequests": [],
                "versions": [{"name": "", "instanceTemplate": body["instanceTemplate"]}],
            }
        )
        return self._started("insert-mig")

    def _mig(self, name: str) -> dict[str, Any]:
        [mig] = [m for m in self.migs if m["name"] == name]
        return mig

    def _insert_request(self, url: str, path: list[str], _: Any, body: Any) -> Any:
        mig = self._mig(path[5])
        assert not mig["resizeRequests"], "one resize request per flex-start MIG"
        assert body["instances"]
        assert "resizeBy" not in body
        if self.refuse is not None:
            status, reason = self.refuse
            raise _http_error(url, status or 400, reason, f"{reason}: refused")
        mig["resizeRequests"].append({**json.loads(json.dumps(body)), "state": "ACCEPTED"})
        return self._started("insert-request")

    def _list_requests(self, url: str, path: list[str], _: Any, __: Any) -> Any:
        return {"items": json.loads(json.dumps(self._mig(path[5])["resizeRequests"]))}

    def _delete_mig(self, url: str, path: list[str], _: Any, __: Any) -> Any:
        if not any(m["name"] == path[5] for m in self.migs):
            raise _http_error(url, 404, "notFound", f"The resource '{path[5]}' was not found")
        self.migs = [m for m in self.migs if m["name"] != path[5]]
        link = f"/instanceGroupManagers/{path[5]}"
        for name, vm in list(self.instances.items()):
            if any(i["key"] == "created-by" and i["value"].endswith(link) for i in vm["metadata"]["items"]):
                del self.instances[name]  # the MIG's VMs go with it
        return self._started("delete-mig")

    def _delete_mig_instances(self, url: str, path: list[str], _: Any, body: Any) -> Any:
        mig = self._mig(path[5])
        for link in body["instances"]:
            name = link.rsplit("/", 1)[-1]
            if name in self.instances:
                del self.instances[name]
                mig["targetSize"] -= 1
        return self._started("delete-instances")

    def grant(self, mig_name: str) -> list[str]:
        """Capacity arrives: the MIG creates its request's VMs (the template's labels and metadata, its
        own labels patched on, `created-by`), unnamed; the request SUCCEEDED."""
        mig = self._mig(mig_name)
        [request] = mig["resizeRequests"]
        template = self.templates[mig["instanceTemplate"].rsplit("/", 1)[-1]]["properties"]
        patch = mig.get("allInstancesConfig", {}).get("properties", {})
        created = []
        for index, item in enumerate(request["instances"]):
            self.instances[item["name"]] = {
                "name": item["name"],
                "status": "STAGING",
                "creationTimestamp": self.clock,
                "labels": {**template["labels"], **patch.get("labels", {})},
                "metadata": {
                    "fingerprint": f"fp-{item['name']}",
                    "items": [
                        *template["metadata"]["items"],
                        {
                            "key": "created-by",
                            "value": f"projects/1234/zones/z/instanceGroupManagers/{mig_name}",
                        },
                    ],
                },
                "networkInterfaces": [{"networkIP": f"10.50.2.{index + 10}"}],
            }
            created.append(item["name"])
        mig["targetSize"] = len(created)
        request["state"] = "SUCCEEDED"
        return created

    def fail(self, mig_name: str, code: str) -> None:
        """The request is given up (FAILED, with its error)."""
        [request] = self._mig(mig_name)["resizeRequests"]
        request["state"] = "FAILED"
        request["status"] = {"error": {"errors": [{"code": code, "message": "not within the wait"}]}}


def _http_error(url: str, status: int, reason: str, message: str) -> Exception:
    """What urllib raises for a Compute Engine error: the status, and Google's JSON error body."""
    import io
    import urllib.error
    from email.message import Message

    body = {"error": {"code": status, "message": message, "errors": [{"reason": reason, "message": message}]}}
    return urllib.error.HTTPError(url, status, reason, Message(), io.BytesIO(json.dumps(body).encode()))


def _discovery_document() -> dict[str, Any]:
    from pathlib import Path

    import googleapiclient

    document: dict[str, Any] = json.loads(
        (Path(googleapiclient.__file__).parent / "discovery_cache/documents/compute.v1.json").read_text()
    )
    return document


FLEET_METHODS = (
    ("instances", "list"),
    ("instances", "get"),
    ("instances", "setMetadata"),
    ("instances", "bulkInsert"),
    ("instances", "delete"),
    ("instanceGroupManagers", "list"),
    ("instanceTemplates", "get"),
    ("zoneOperations", "wait"),
    ("instanceGroupManagers", "recreateInstances"),
    ("instances", "reportHostAsFaulty"),
    ("instanceGroupManagers", "insert"),
    ("instanceGroupManagers", "delete"),
    ("instanceGroupManagers", "deleteInstances"),
    ("instanceGroupManagerResizeRequests", "insert"),
    ("instanceGroupManagerResizeRequests", "list"),
)


def _discovery_methods() -> list[tuple[str, str, str, str | None, set[str]]]:
    """(HTTP method, path pattern, method id, request schema, query parameters) of the compute.v1 methods
    GceFleet calls."""

    resources = _discovery_document()["resources"]
    found = []
    for resource, name in FLEET_METHODS:
        method = resources[resource]["methods"][name]
        pattern = re.sub(
            r"\{[^}]+\}", "[^/]+", method["flatPath"] if "flatPath" in method else method["path"]
        )
        request = method.get("request", {}).get("$ref")
        in_path = set(method.get("parameterOrder", []))
        query = {key for key in method["parameters"] if key not in in_path}
        found.append((method["httpMethod"], pattern, method["id"], request, query))
    return found


def _check_body(document: dict[str, Any], schema: Any, value: Any, where: str) -> None:
    """Every field of a request body is one its discovery schema has, of the schema's type."""
    if isinstance(schema, str):
        schema = {"$ref": schema}
    if "$ref" in schema:
        schema = document["schemas"][schema["$ref"]]
    kind = schema.get("type")
    if kind == "object" and "additionalProperties" in schema:
        assert isinstance(value, dict), where
        for key, item in value.items():
            _check_body(document, schema["additionalProperties"], item, f"{where}.{key}")
    elif kind == "object":
        assert isinstance(value, dict), where
        for key, item in value.items():
            assert key in schema.get("properties", {}), f"{where}.{key} is no field of the API"
            _check_body(document, schema["properties"][key], item, f"{where}.{key}")
    elif kind == "array":
        assert isinstance(value, list), where
        for item in value:
            _check_body(document, schema["items"], item, f"{where}[]")
    else:
        expected = {"string": str, "boolean": bool, "integer": int, "number": (int, float)}[kind]
        assert isinstance(value, expected), f"{where}: {value!r} is no {kind}"
        assert value in schema.get("enum", [value]), f"{where}: {value!r} is none of {schema['enum']}"


def _vm(name: str, group: str, stack: str, address: str | None, minute: int, node: str | None = None) -> Any:
    items = [{"key": "startup-script", "value": "#!/bin/bash"}]
    if node:
        items.append({"key": nodes_fleet.NODE_TAG, "value": node})
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
    fleet = GceFleet(compute, project="p", zone="us-central1-b", blueprint="llm", stack="prod")
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
            {"key": nodes_fleet.NODE_TAG, "value": node},
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
        GceFleet(racing, project="p", zone="z", blueprint="llm", stack="prod").name("llm-h100-a", "h100-0")
    assert compute.instances["llm-h100-a"]["metadata"]["items"][-1]["key"] == "startup-script"


def test_the_gcp_settings_need_project_and_zone(tmp_path: Any) -> None:
    config = tmp_path / "nodesync.json"
    config.write_text(
        json.dumps({"cloud": "gcp", "groups": {"h100": 2}, "blueprint": "llm", "stack": "prod"})
    )
    with pytest.raises(SystemExit):
        nodes_main.main(["sync", "--config", str(config)])


DRAINED_XID = "clusterfab-health: XID: 79 on GPU 0000:53:00.0"


def _drained_round(vm: dict[str, Any]) -> tuple[FakeCompute, RecordingScontrol, list[Any]]:
    """One sync round in which the static node h100-0, held by `vm`, was drained for an XID."""
    migs = [
        {"name": "llm-prod-h100-mig-7f3a9c1", "baseInstanceName": "llm-prod-h100"},
        {"name": "llm-dev-h100-mig-0c2e4d8", "baseInstanceName": "llm-dev-h100"},  # another stack's
    ]
    compute = FakeCompute([vm], migs=migs)
    fleet = GceFleet(
        compute,
        project="p",
        zone="us-central1-b",
        blueprint="llm",
        stack="prod",
        groups={"h100": GceGroup("llm-prod-h100")},
    )
    drained = {"name": "h100-0", "address": "10.50.0.20", "state": ["IDLE", "DRAIN"], "reason": DRAINED_XID}
    scontrol = RecordingScontrol([drained])
    done = sync({"h100": ["h100-0"]}, fleet, Scontrol(run=scontrol))
    return compute, scontrol, done


def test_a_static_vm_is_recreated_by_its_mig_never_deleted() -> None:
    vm = _vm("llm-prod-h100-x1z9", "h100", "prod", "10.50.0.20", 1, node="h100-0")
    compute, scontrol, _ = _drained_round(vm)
    assert compute.calls[1:] == [
        ("compute.instanceGroupManagers.list", "projects/p/zones/us-central1-b/instanceGroupManagers"),
        (
            "compute.instanceGroupManagers.recreateInstances",
            "projects/p/zones/us-central1-b/instanceGroupManagers/llm-prod-h100-mig-7f3a9c1/recreateInstances",
        ),
    ]
    assert compute.bodies["compute.instanceGroupManagers.recreateInstances"] == [
        {"instances": ["zones/us-central1-b/instances/llm-prod-h100-x1z9"]}
    ]
    assert "llm-prod-h100-x1z9" in compute.instances  # the MIG replaces it, not the node sync
    replaced = f"Reason=clusterfab: replacing llm-prod-h100-x1z9 ({DRAINED_XID})"
    assert scontrol.updates == [
        ["scontrol", "update", "NodeName=h100-0", "State=DOWN", replaced],  # still drained: Return undrains
    ]


def test_a_vm_of_no_mig_of_its_group_is_not_recreated() -> None:
    fleet = GceFleet(
        FakeCompute([]),
        project="p",
        zone="z",
        blueprint="llm",
        stack="prod",
        groups={"h100": GceGroup("llm-prod-h100")},
    )
    with pytest.raises(CloudError, match="NotInGroup"):
        fleet.recreate("h100", "llm-dev-h100-x1z9")
    with pytest.raises(CloudError, match="0 managed instance groups named llm-prod-h100"):
        fleet.recreate("h100", "llm-prod-h100-x1z9")


def _reservation_bound(vm: dict[str, Any], machine_type: str = "a3-ultragpu-8g") -> dict[str, Any]:
    return {
        **vm,
        "machineType": f"https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-b/machineTypes/{machine_type}",
        "scheduling": {"provisioningModel": "RESERVATION_BOUND"},
    }


def test_a_reservation_bound_vm_has_its_host_reported_faulty() -> None:
    vm = _reservation_bound(_vm("llm-prod-h100-x1z9", "h100", "prod", "10.50.0.20", 1, node="h100-0"))
    compute, scontrol, done = _drained_round(vm)
    assert compute.calls[1:] == [
        (
            "compute.instances.reportHostAsFaulty",
            "projects/p/zones/us-central1-b/instances/llm-prod-h100-x1z9/reportHostAsFaulty",
        )
    ]
    assert compute.bodies["compute.instances.reportHostAsFaulty"] == [
        {
            "disruptionSchedule": "IMMEDIATE",
            "faultReasons": [{"behavior": "UNRECOVERABLE_GPU_ERROR", "description": DRAINED_XID}],
        }
    ]
    repair = f"Reason=clusterfab-repair: host of llm-prod-h100-x1z9 reported faulty ({DRAINED_XID})"
    assert scontrol.updates == [
        ["scontrol", "update", "NodeName=h100-0", "State=DOWN", repair],  # drained until the VM restarts
    ]
    assert [type(action).__name__ for action in done] == ["ReportFaulty", "Replace"]


def test_only_the_documented_machine_types_of_reservation_bound_vms_are_reportable() -> None:
    vm = _vm("llm-prod-h100-x1z9", "h100", "prod", "10.50.0.20", 1)
    assert faulty_host_reportable(_reservation_bound(vm))
    assert faulty_host_reportable(_reservation_bound(vm, "a4-highgpu-8g"))
    assert not faulty_host_reportable(_reservation_bound(vm, "a3-highgpu-4g"))  # 8 GPUs only
    assert not faulty_host_reportable(_reservation_bound(vm, "a2-ultragpu-8g"))
    standard = {**_reservation_bound(vm), "scheduling": {"provisioningModel": "STANDARD"}}
    assert not faulty_host_reportable(standard)  # even on a specific reservation
    assert not faulty_host_reportable(vm)
    models = compute_schema("Scheduling")["properties"]["provisioningModel"]["enum"]
    assert "RESERVATION_BOUND" in models


def compute_schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = _discovery_document()["schemas"][name]
    return schema


@mock_aws
def test_an_instance_with_the_clusters_tags_but_not_its_profile_is_never_adopted_or_terminated() -> None:
    """Anyone who may tag an instance can give it the cluster's tags, and a second deployment of the same
    blueprint and stack names in the account carries them too: only the node group's instance profile
    (attached only by who may pass its role, and this deployment's alone) makes an instance the cluster's."""
    ec2 = boto3.client("ec2", region_name="us-east-1")
    iam = boto3.client("iam", region_name="us-east-1")
    profiles = {
        name: iam.create_instance_profile(InstanceProfileName=name)["InstanceProfile"]["Arn"]
        for name in ("llm-h100-profile-1a2b3c4", "llm-h100-profile-9f8e7d6", "someone-elses")
    }
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    tags = {BLUEPRINT_TAG: "llm", STACK_TAG: "prod", NODE_GROUP_TAG: "h100"}

    def launch(profile: str) -> str:
        return str(
            ec2.run_instances(
                ImageId=image,
                MinCount=1,
                MaxCount=1,
                IamInstanceProfile={"Arn": profiles[profile]},
                TagSpecifications=[
                    {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
                ],
            )["Instances"][0]["InstanceId"]
        )

    ours = launch("llm-h100-profile-1a2b3c4")
    twin = launch("llm-h100-profile-9f8e7d6")  # the same-named deployment's node
    tagged = launch("someone-elses")  # an instance someone tagged like ours
    groups = {"h100": Ec2Group("lt-0abc", profiles["llm-h100-profile-1a2b3c4"])}
    fleet = Ec2Fleet(ec2, blueprint="llm", stack="prod", groups=groups)
    assert [i.id for i in fleet.instances()] == [ours]
    scontrol = RecordingScontrol(
        [{"name": f"h100-{i}", "address": f"h100-{i}", "state": ["UNKNOWN"]} for i in range(3)]
    )
    done = sync(NAMES, fleet, Scontrol(run=scontrol))
    assert [a for a in done if isinstance(a, NameInstance)] == [NameInstance(ours, "h100-0")]
    # Asked to terminate all three (a stale id, a forged one), it terminates only its own.
    fleet.terminate([ours, twin, tagged])
    states = {
        i["InstanceId"]: (i["State"]["Name"], {t["Key"] for t in i.get("Tags", [])} & {nodes_fleet.NODE_TAG})
        for r in ec2.describe_instances(InstanceIds=[ours, twin, tagged])["Reservations"]
        for i in r["Instances"]
    }
    assert states == {
        ours: ("terminated", {nodes_fleet.NODE_TAG}),
        twin: ("running", set()),
        tagged: ("running", set()),
    }
