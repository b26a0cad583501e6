"""Give every GPU instance of a Slurm node group a node name, and keep Slurm's view of where it is true.

slurm.conf names a group's nodes `<group>-0` .. `<group>-(N-1)` (static nodes with the catalog's CPUs,
memory and GPUs); the cloud runs N instances of the group's launch template, which are all alike. This
program, run on the controller every 30 s by a systemd timer, is the one writer that pairs them:

- an instance without a name gets the lowest free one, as the tag `clusterfab-slurm-node` on the
  instance (the node's boot reads its own tags from the instance metadata service and starts
  `slurmd -N <name>`); two instances claiming one name keep the earlier launched one;
- a named node's address in Slurm follows its instance (`scontrol update NodeAddr=... NodeHostname=...`);
- a name no instance holds any more is marked DOWN with a reason, so Slurm requeues its jobs instead of
  waiting for a node that will not come back.

On GCP the name is the instance metadata key of that name instead of a tag (a VM reads its metadata, not
its labels, from the metadata server).

`plan_actions` is the pure decision; `Ec2Fleet` / `GceFleet` and `Scontrol` read and change the world. (The
fleets' `elastic` and `delete` serve the stack's destroy hook, `clusterfab.scheduler.slurm.teardown`, run
with the deploying user's credentials, not this program.) The
program runs with the controller's identity (AWS: ec2:DescribeInstances and ec2:CreateTags of this one tag
on the cluster's instances; GCP: a custom role with compute.instances.list/get/setMetadata, conditioned on
the cluster's instance names) and as root for scontrol. Standard library, plus boto3 on AWS: it is copied
to the controller beside the rendered files and run by Ubuntu's python3 (with python3-boto3).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

NODE_TAG = "clusterfab-slurm-node"
"""The node name an instance holds (kept in step with clusterfab.core.vocab by a test)."""
GROUP_TAG = "clusterfab-node-group"
BLUEPRINT_TAG = "clusterfab-blueprint"
STACK_TAG = "clusterfab-stack"
ELASTIC_TAG = "clusterfab-slurm-elastic"
"""Set (`true`) on the instances Slurm's resume program created; no Pulumi resource owns them."""
GONE_REASON = "clusterfab: no instance holds this node"

log = logging.getLogger("clusterfab-slurm-sync")


@dataclass(frozen=True, slots=True)
class Instance:
    """A running (or starting) instance of a node group."""

    id: str
    group: str
    address: str
    launched: dt.datetime
    name: str | None
    """Its node-name tag, if it has one."""


@dataclass(frozen=True, slots=True)
class SlurmNode:
    name: str
    address: str
    """NodeAddr as slurmctld has it (the node name itself until someone sets it)."""
    down: bool


@dataclass(frozen=True, slots=True)
class NameInstance:
    instance_id: str
    name: str


@dataclass(frozen=True, slots=True)
class SetAddress:
    name: str
    address: str


@dataclass(frozen=True, slots=True)
class MarkDown:
    name: str
    reason: str


Action = NameInstance | SetAddress | MarkDown


@dataclass(frozen=True, slots=True)
class ElasticInstance:
    """An instance Slurm's resume program created that still exists (in any state but gone)."""

    id: str
    """The EC2 instance id; on GCP, the VM's name."""
    group: str
    """Its node group (`clusterfab-node-group`; empty if it has none)."""


def node_names(groups: Mapping[str, int]) -> dict[str, list[str]]:
    """The node names slurm.conf gives each group (`<group>-<i>`), from the groups' sizes."""
    return {group: [f"{group}-{i}" for i in range(size)] for group, size in groups.items()}


def plan_actions(
    names: Mapping[str, Sequence[str]], instances: Iterable[Instance], nodes: Mapping[str, SlurmNode]
) -> list[Action]:
    """What to change so that every instance holds one node name and Slurm knows where each node is."""
    actions: list[Action] = []
    by_group: dict[str, list[Instance]] = {group: [] for group in names}
    for instance in instances:
        if instance.group in by_group:
            by_group[instance.group].append(instance)
    for group, group_names in names.items():
        actions += _group_actions(
            group_names, sorted(by_group[group], key=lambda i: (i.launched, i.id)), nodes
        )
    return actions


def _group_actions(
    names: Sequence[str], instances: Sequence[Instance], nodes: Mapping[str, SlurmNode]
) -> list[Action]:
    actions: list[Action] = []
    held: dict[str, Instance] = {}
    waiting: list[Instance] = []
    for instance in instances:  # earliest launched first: it keeps a contested name
        if instance.name is not None and instance.name in names and instance.name not in held:
            held[instance.name] = instance
        else:
            waiting.append(instance)
    free = [name for name in names if name not in held]
    for instance in waiting:
        if not free:
            log.warning(
                "instance %s of %s: no free node name (more instances than nodes)",
                instance.id,
                instance.group,
            )
            continue
        name = free.pop(0)
        held[name] = instance
        actions.append(NameInstance(instance.id, name))
    for name in names:
        node = nodes.get(name)
        holder = held.get(name)
        if holder is not None:
            if node is None or node.address != holder.address:
                actions.append(SetAddress(name, holder.address))
        elif node is not None and not node.down:
            actions.append(MarkDown(name, GONE_REASON))
    return actions


# --- the world --------------------------------------------------------------------------------------


class Fleet(Protocol):
    def instances(self) -> list[Instance]: ...
    def name(self, instance_id: str, name: str) -> None: ...


class Ec2Fleet:
    """The cluster's GPU instances in EC2, found by the cluster's tags."""

    def __init__(self, client: Any, *, blueprint: str, stack: str) -> None:
        self._ec2, self._blueprint, self._stack = client, blueprint, stack

    def instances(self) -> list[Instance]:
        found = []
        for item in self._described(
            {"Name": "tag-key", "Values": [GROUP_TAG]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ):
            tags = _tags(item)
            if "PrivateIpAddress" not in item:
                continue  # no address yet: next round
            found.append(
                Instance(
                    id=item["InstanceId"],
                    group=tags[GROUP_TAG],
                    address=item["PrivateIpAddress"],
                    launched=item["LaunchTime"],
                    name=tags.get(NODE_TAG),
                )
            )
        return found

    def name(self, instance_id: str, name: str) -> None:
        self._ec2.create_tags(Resources=[instance_id], Tags=[{"Key": NODE_TAG, "Value": name}])

    def elastic(self) -> list[ElasticInstance]:
        """The cluster's elastic instances that are not terminated yet: one shutting down still holds its
        network interfaces in the subnet and security group."""
        return [
            ElasticInstance(item["InstanceId"], _tags(item).get(GROUP_TAG, ""))
            for item in self._described(
                {"Name": f"tag:{ELASTIC_TAG}", "Values": ["true"]},
                {"Name": "instance-state-name", "Values": list(EC2_NOT_GONE)},
            )
        ]

    def delete(self, ids: Sequence[str]) -> None:
        """Terminate instances (TerminateInstances takes up to 1000 ids a call: EC2 API reference,
        TerminateInstances, InstanceIds; botocore's ec2 service model quotes it)."""
        for start in range(0, len(ids), TERMINATE_BATCH):
            self._ec2.terminate_instances(InstanceIds=list(ids[start : start + TERMINATE_BATCH]))

    def _described(self, *filters: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Every instance of this cluster (its blueprint's and stack's tags) that also passes `filters`."""
        cluster = [
            {"Name": f"tag:{BLUEPRINT_TAG}", "Values": [self._blueprint]},
            {"Name": f"tag:{STACK_TAG}", "Values": [self._stack]},
        ]
        for page in self._ec2.get_paginator("describe_instances").paginate(Filters=[*cluster, *filters]):
            for reservation in page["Reservations"]:
                yield from reservation["Instances"]


EC2_NOT_GONE = ("pending", "running", "shutting-down", "stopping", "stopped")
"""Every EC2 instance state but `terminated` (EC2 API reference, InstanceState)."""
TERMINATE_BATCH = 1000


def _tags(item: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in item.get("Tags", [])}


COMPUTE_API = "https://compute.googleapis.com/compute/v1"
METADATA = "http://metadata.google.internal/computeMetadata/v1"
LIVE_STATES = ("PROVISIONING", "STAGING", "RUNNING")


class Http(Protocol):
    def __call__(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any: ...


class MetadataTokenHttp:
    """JSON over HTTPS with the VM service account's token from the metadata server (no SDK: Ubuntu's
    python3 alone runs this program)."""

    def __init__(self, metadata: str = METADATA) -> None:
        self._metadata = metadata
        self._token: tuple[str, float] | None = None

    def _bearer(self) -> str:
        import time  # noqa: PLC0415 - only the live program needs it

        if self._token is None or self._token[1] < time.monotonic() + 60:
            request = urllib.request.Request(
                f"{self._metadata}/instance/service-accounts/default/token",
                headers={"Metadata-Flavor": "Google"},
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                answer = json.load(response)
            self._token = (answer["access_token"], time.monotonic() + float(answer["expires_in"]))
        return self._token[0]

    def __call__(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            url,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self._bearer()}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)


class GceFleet:
    """The cluster's GPU VMs in a Compute Engine zone, found by the cluster's labels; a VM's node name is
    its instance metadata key `clusterfab-slurm-node` (labels cannot be read from inside the VM; metadata
    can, which is where the node's slurmd start program reads it)."""

    def __init__(self, http: Http, *, project: str, zone: str, blueprint: str, stack: str) -> None:
        self._http = http
        self._base = f"{COMPUTE_API}/projects/{project}/zones/{zone}/instances"
        self._filter = f'(labels.{BLUEPRINT_TAG} = "{blueprint}") (labels.{STACK_TAG} = "{stack}")'

    def instances(self) -> list[Instance]:
        found = []
        for item in self._listed(self._filter):
            labels = item.get("labels", {})
            interfaces = item.get("networkInterfaces", [])
            if item.get("status") not in LIVE_STATES or GROUP_TAG not in labels:
                continue
            if not interfaces or "networkIP" not in interfaces[0]:
                continue  # no address yet: next round
            found.append(
                Instance(
                    id=item["name"],
                    group=labels[GROUP_TAG],
                    address=interfaces[0]["networkIP"],
                    launched=dt.datetime.fromisoformat(item["creationTimestamp"]),
                    name=_metadata(item).get(NODE_TAG),
                )
            )
        return found

    def elastic(self) -> list[ElasticInstance]:
        """The cluster's elastic VMs that still exist, in any status (a stopped, TERMINATED VM still holds
        its NICs' subnets); a VM being deleted is listed until it is gone."""
        return [
            ElasticInstance(item["name"], item.get("labels", {}).get(GROUP_TAG, ""))
            for item in self._listed(f'{self._filter} (labels.{ELASTIC_TAG} = "true")')
        ]

    def delete(self, ids: Sequence[str]) -> None:
        """Delete VMs (instances.delete, one call each: Compute Engine has no bulk delete)."""
        for name in ids:
            self._http("DELETE", f"{self._base}/{name}")

    def _listed(self, filter_: str) -> Iterator[dict[str, Any]]:
        token = ""
        while True:
            query = {"filter": filter_, **({"pageToken": token} if token else {})}
            page = self._http("GET", f"{self._base}?{urllib.parse.urlencode(query)}")
            yield from page.get("items", [])
            token = page.get("nextPageToken", "")
            if not token:
                return

    def name(self, instance_id: str, name: str) -> None:
        # setMetadata replaces the whole set and must quote the fingerprint read with it.
        item = self._http("GET", f"{self._base}/{instance_id}")
        metadata = item.get("metadata", {})
        items = [i for i in metadata.get("items", []) if i["key"] != NODE_TAG] + [
            {"key": NODE_TAG, "value": name}
        ]
        self._http(
            "POST",
            f"{self._base}/{instance_id}/setMetadata",
            {"fingerprint": metadata.get("fingerprint", ""), "items": items},
        )


def _metadata(item: Mapping[str, Any]) -> dict[str, str]:
    return {i["key"]: i.get("value", "") for i in item.get("metadata", {}).get("items", [])}


class Scontrol:
    """slurmctld's nodes, through scontrol."""

    def __init__(self, run: Any = subprocess.run) -> None:
        self._run = run

    def nodes(self) -> dict[str, SlurmNode]:
        out = self._run(
            ["scontrol", "show", "nodes", "--json"], capture_output=True, text=True, check=True
        ).stdout
        nodes = {}
        for node in json.loads(out).get("nodes", []):
            state = node.get("state", [])
            states = state if isinstance(state, list) else [state]
            nodes[node["name"]] = SlurmNode(
                name=node["name"], address=node.get("address", node["name"]), down="DOWN" in states
            )
        return nodes

    def apply(self, action: SetAddress | MarkDown) -> None:
        if isinstance(action, SetAddress):
            fields = [f"NodeAddr={action.address}", f"NodeHostname={action.address}"]
        else:
            fields = ["State=DOWN", f"Reason={action.reason}"]
        self._run(["scontrol", "update", f"NodeName={action.name}", *fields], check=True)


def sync(names: Mapping[str, Sequence[str]], fleet: Fleet, slurm: Scontrol) -> list[Action]:
    """One round: read both sides, act, and return what was done (each action is logged)."""
    actions = plan_actions(names, fleet.instances(), slurm.nodes())
    for action in actions:
        log.info("%s", action)
        if isinstance(action, NameInstance):
            fleet.name(action.instance_id, action.name)
        else:
            slurm.apply(action)
    return actions


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--config",
        help="JSON file: cloud, groups, blueprint, stack, and region (AWS) or project and zone (GCP)",
    )
    parser.add_argument("--groups", help="JSON object: node group -> number of nodes")
    parser.add_argument("--blueprint")
    parser.add_argument("--stack")
    parser.add_argument("--region")
    args = parser.parse_args(argv)
    settings = _settings(args, parser)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    sync(node_names(settings["groups"]), _fleet(settings), Scontrol())
    return 0


def _fleet(settings: Mapping[str, Any]) -> Fleet:
    if settings.get("cloud", "aws") == "gcp":
        return GceFleet(
            MetadataTokenHttp(),
            project=settings["project"],
            zone=settings["zone"],
            blueprint=settings["blueprint"],
            stack=settings["stack"],
        )
    import boto3  # noqa: PLC0415 - only the AWS program run needs it (Ubuntu's python3-boto3 on the controller)

    return Ec2Fleet(
        boto3.client("ec2", region_name=settings["region"]),
        blueprint=settings["blueprint"],
        stack=settings["stack"],
    )


def _settings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """--config's file, overridden by any option given on the command line."""
    settings: dict[str, Any] = {}
    if args.config:
        with open(args.config, encoding="utf-8") as handle:
            settings.update(json.load(handle))
    if args.groups:
        settings["groups"] = json.loads(args.groups)
    settings.update({k: getattr(args, k) for k in ("blueprint", "stack", "region") if getattr(args, k)})
    where = ("project", "zone") if settings.get("cloud") == "gcp" else ("region",)
    missing = [k for k in ("groups", "blueprint", "stack", *where) if k not in settings]
    if missing:
        parser.error(f"missing {', '.join(missing)} (give --config FILE or the options)")
    return settings


if __name__ == "__main__":
    sys.exit(main())
