"""The node programs on AWS: EC2 as the `Fleet` (`Ec2Fleet`, through Ubuntu's python3-boto3 on the
controller), and what the programs read of the settings there (`CLOUD`, found by `clouds.py`): the region,
the node groups' launch templates and instance profiles (`--fleet`), when EC2 takes a capacity block's
instances (`ends`); managed accounting on RDS (aws_rds.py).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import aws_rds
from .fleet import (
    BLUEPRINT_TAG,
    ELASTIC_TAG,
    GROUP_TAG,
    NODE_TAG,
    STACK_TAG,
    CloudError,
    ElasticInstance,
    FlexRequest,
    Instance,
)

log = logging.getLogger("clusterfab-slurm-nodes")

TERMINATE_BATCH = 1000
"""Most instance ids one TerminateInstances call takes (the EC2 API reference's limit)."""
_INTERFACE_KEYS = ("DeviceIndex", "NetworkCardIndex", "InterfaceType", "Groups", "DeleteOnTermination")


@dataclass(frozen=True, slots=True)
class Ec2Group:
    """What the stack deployed for a node group (the controller's `--fleet` file): its launch template and
    instance profile. Tags are anyone's to set who may tag an instance, and another deployment of the
    same blueprint and stack names in the account carries the same ones; the profile is attached only by
    a principal that may pass the group's role, and is this deployment's alone."""

    template: str
    """The launch template's id (lt-...)."""
    profile: str
    """The instance profile's ARN."""


def ec2_groups_from_config(value: Mapping[str, Any]) -> dict[str, Ec2Group]:
    return {name: Ec2Group(str(g["template"]), str(g["profile"])) for name, g in value.items()}


def ends_from_config(value: Mapping[str, Any]) -> dict[str, dt.datetime]:
    """The config's `ends`: group -> an ISO 8601 time with its offset (when the cloud takes its machines)."""
    return {name: dt.datetime.fromisoformat(str(when)) for name, when in value.items()}


class Ec2Fleet:
    """The cluster's GPU instances in EC2, found by the cluster's tags. Elastic instances are created
    from the node group's own launch template, at the version and in the subnet its auto scaling group
    uses, with the group's tags and instance profile and no public address: they boot exactly like the
    group's static nodes. With `groups` (the node sync and power programs always have them), an instance
    counts as the cluster's only if it carries its group's instance profile: one that merely carries the
    tags is never named, adopted or terminated, and a launch uses only the group's own template."""

    def __init__(
        self,
        client: Any,
        *,
        blueprint: str,
        stack: str,
        autoscaling: Any = None,
        groups: Mapping[str, Ec2Group] | None = None,
        ends: Mapping[str, dt.datetime] | None = None,
    ) -> None:
        self._ec2, self._blueprint, self._stack = client, blueprint, stack
        self._autoscaling = autoscaling
        self._groups = groups
        self._ends = dict(ends or {})
        """Per group, when EC2 takes its instances (a capacity block's, ahead of the block's end)."""
        self._sources: dict[str, dict[str, Any]] = {}

    def _ours(self, item: Mapping[str, Any]) -> bool:
        """Whether a described instance carries its node group's instance profile (always, without
        `groups`: the stack's teardown, which runs as the deploying user)."""
        if self._groups is None:
            return True
        group = self._groups.get(_tags(item).get(GROUP_TAG, ""))
        profile = item.get("IamInstanceProfile", {}).get("Arn")
        if group is not None and profile == group.profile:
            return True
        log.warning(
            "instance %s has the cluster's tags, not its node group's instance profile (%s): left alone",
            item.get("InstanceId"),
            profile or "none",
        )
        return False

    def _owned(self) -> list[dict[str, Any]]:
        return [
            {"Name": f"tag:{BLUEPRINT_TAG}", "Values": [self._blueprint]},
            {"Name": f"tag:{STACK_TAG}", "Values": [self._stack]},
        ]

    def instances(self) -> list[Instance]:
        found = []
        for item in self._described(
            {"Name": "tag-key", "Values": [GROUP_TAG]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ):
            tags = _tags(item)
            if "PrivateIpAddress" not in item or not self._ours(item):
                continue  # no address yet: next round; or not the cluster's
            found.append(
                Instance(
                    id=item["InstanceId"],
                    group=tags[GROUP_TAG],
                    address=item["PrivateIpAddress"],
                    launched=item["LaunchTime"],
                    name=tags.get(NODE_TAG),
                    elastic=tags.get(ELASTIC_TAG) == "true",
                    ends=self._ends.get(tags[GROUP_TAG]),
                )
            )
        return found

    def name(self, instance_id: str, name: str) -> None:
        self._ec2.create_tags(Resources=[instance_id], Tags=[{"Key": NODE_TAG, "Value": name}])

    def create(self, group: str, names: Sequence[str]) -> list[str]:
        """Launch one instance per name, all or none (MinCount = MaxCount), and name each."""
        source = self._source(group)
        request: dict[str, Any] = {
            "LaunchTemplate": {"LaunchTemplateId": source["template"], "Version": source["version"]},
            "MinCount": len(names),
            "MaxCount": len(names),
            **({"IamInstanceProfile": {"Arn": source["profile"]}} if source.get("profile") else {}),
            "TagSpecifications": [
                # Replaces the template's instance tags for this launch: the group's tags, plus ours.
                {"ResourceType": "instance", "Tags": [*source["tags"], {"Key": ELASTIC_TAG, "Value": "true"}]}
            ],
        }
        if source["interfaces"]:
            request["NetworkInterfaces"] = [
                {**interface, "SubnetId": source["subnet"]} for interface in source["interfaces"]
            ]
        else:
            request["SubnetId"] = source["subnet"]
        try:
            launched = self._ec2.run_instances(**request)["Instances"]
        except Exception as error:
            raise _cloud_error(error) from error
        ids = [item["InstanceId"] for item in launched]
        public = [item["InstanceId"] for item in launched if item.get("PublicIpAddress")]
        if public:
            # The subnet or the template changed under the cluster: a node must never face the internet.
            self._ec2.terminate_instances(InstanceIds=ids)
            raise CloudError("PublicAddress", f"{', '.join(public)} got a public address: all terminated")
        for instance_id, name in zip(ids, names, strict=True):
            self.name(instance_id, name)
        return ids

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """Terminate the instances, with `groups` only those that are the cluster's (`_ours`), as EC2 says
        now: an id is checked, never trusted."""
        if self._groups is not None and instance_ids:
            pages = self._ec2.get_paginator("describe_instances").paginate(InstanceIds=list(instance_ids))
            described = [i for page in pages for r in page["Reservations"] for i in r["Instances"]]
            instance_ids = [i["InstanceId"] for i in described if self._ours(i)]
        for start in range(0, len(instance_ids), TERMINATE_BATCH):
            self._ec2.terminate_instances(InstanceIds=list(instance_ids[start : start + TERMINATE_BATCH]))

    def recreate(self, group: str, instance_id: str) -> None:
        """Terminated: the auto scaling group launches its replacement (it keeps its desired capacity)."""
        self.terminate([instance_id])

    def report_faulty(self, instance_id: str, behavior: str, description: str) -> None:
        raise CloudError("NotSupported", "EC2 takes no faulty-host reports (no instance is reportable)")

    def requests(self) -> list[FlexRequest]:
        """None: EC2 answers a launch at once (no capacity is queued for later)."""
        return []

    def withdraw(self, mig: str) -> None:
        raise CloudError("NotSupported", "EC2 has no flex-start MIGs")

    def keep_sizes(self) -> list[str]:
        """Nothing: each group's auto scaling group keeps its desired capacity itself."""
        return []

    def elastic(self) -> list[ElasticInstance]:
        """The cluster's elastic instances that are not terminated yet: one shutting down still holds its
        network interfaces in the subnet and security group."""
        return [
            ElasticInstance(item["InstanceId"], _tags(item).get(GROUP_TAG, ""))
            for item in self._described(
                {"Name": f"tag:{ELASTIC_TAG}", "Values": ["true"]},
                {"Name": "instance-state-name", "Values": list(EC2_NOT_GONE)},
            )
            if self._ours(item)
        ]

    def _described(self, *filters: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Every instance of this cluster (its blueprint's and stack's tags) that also passes `filters`."""
        pages = self._ec2.get_paginator("describe_instances").paginate(Filters=[*self._owned(), *filters])
        for page in pages:
            for reservation in page["Reservations"]:
                yield from reservation["Instances"]

    def _source(self, group: str) -> dict[str, Any]:
        """The group's launch template, version, subnet and tags, read from its auto scaling group."""
        if group in self._sources:
            return self._sources[group]
        if self._autoscaling is None:
            raise CloudError("NoAutoScalingClient", "the fleet was made without an Auto Scaling client")
        filters = [
            {"Name": f"tag:{GROUP_TAG}", "Values": [group]},
            *({"Name": f["Name"], "Values": f["Values"]} for f in self._owned()),
        ]
        found = [
            asg
            for page in self._autoscaling.get_paginator("describe_auto_scaling_groups").paginate(
                Filters=filters
            )
            for asg in page["AutoScalingGroups"]
        ]
        expected = self._groups.get(group) if self._groups is not None else None
        if self._groups is not None:
            if expected is None:
                raise CloudError("NoNodeGroup", f"the stack deployed no node group {group}")
            # Another deployment's group may carry the same tags: only the one of the group's template counts.
            found = [
                a for a in found if a.get("LaunchTemplate", {}).get("LaunchTemplateId") == expected.template
            ]
        if len(found) != 1:
            raise CloudError(
                "NoNodeGroup", f"{len(found)} auto scaling groups carry node group {group}'s tags"
            )
        asg = found[0]
        template = asg["LaunchTemplate"]
        version = self._ec2.describe_launch_template_versions(
            LaunchTemplateId=template["LaunchTemplateId"], Versions=[template["Version"]]
        )["LaunchTemplateVersions"][0]
        interfaces = [
            {key: interface[key] for key in _INTERFACE_KEYS if key in interface}
            for interface in version["LaunchTemplateData"].get("NetworkInterfaces", [])
        ]
        source = {
            "template": template["LaunchTemplateId"],
            "profile": expected.profile if expected is not None else None,
            "version": str(version["VersionNumber"]),
            "subnet": asg["VPCZoneIdentifier"].split(",")[0],
            "interfaces": interfaces,
            "tags": [
                {"Key": t["Key"], "Value": t["Value"]}
                for t in asg.get("Tags", [])
                if not t["Key"].startswith("aws:")
            ],
        }
        self._sources[group] = source
        return source


EC2_NOT_GONE = ("pending", "running", "shutting-down", "stopping", "stopped")
"""Every EC2 instance state but `terminated` (EC2 API reference, InstanceState)."""


def _tags(item: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in item.get("Tags", [])}


def _cloud_error(error: Exception) -> CloudError:
    response = getattr(error, "response", None)
    if isinstance(response, Mapping):
        detail = response.get("Error", {})
        return CloudError(str(detail.get("Code", type(error).__name__)), str(detail.get("Message", error)))
    return CloudError(type(error).__name__, str(error))


class AwsNodes:
    """What the node programs need of the settings on AWS."""

    location = ("region",)
    accounting_settings = aws_rds.REQUIRED
    claims = False
    creates_nodes = True

    def refusal(self, settings: Mapping[str, Any]) -> str | None:
        if not settings.get("fleet"):
            # Tags alone would let any instance tagged like the cluster's be adopted and terminated.
            return "AWS needs --fleet: the node groups' launch templates and instance profiles"
        return None

    def fleet(self, settings: Mapping[str, Any]) -> Ec2Fleet:
        # Ubuntu's python3-boto3 on the controller; only the AWS program needs it.
        import boto3  # noqa: PLC0415
        from botocore.config import Config  # noqa: PLC0415

        # Standard retries back off on throttling (RequestLimitExceeded) and transient errors.
        config = Config(region_name=settings["region"], retries={"mode": "standard", "max_attempts": 8})
        endpoint = settings.get("endpoint_url")  # a test stands in for EC2 here; never set by the stack
        return Ec2Fleet(
            boto3.client("ec2", config=config, endpoint_url=endpoint),
            blueprint=settings["blueprint"],
            stack=settings["stack"],
            autoscaling=boto3.client("autoscaling", config=config, endpoint_url=endpoint),
            groups=ec2_groups_from_config(settings["fleet"]),
            ends=ends_from_config(settings.get("ends", {})),
        )

    def ending(self, settings: Mapping[str, Any]) -> bool:
        """Groups on a capacity block: EC2 takes their instances at the config's `ends`."""
        return bool(settings.get("ends"))

    def accounting(self, settings: Mapping[str, Any], password_file: str) -> dict[str, Any]:
        return aws_rds.prepare_rds(settings, password_file)


CLOUD = AwsNodes()
