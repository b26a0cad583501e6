"""The destroy hook's fleet on AWS (clusterfab.scheduler.slurm.teardown): the cluster's instances in EC2,
with the deploying user's credentials (boto3's default chain in the blueprint's region)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusterfab.scheduler.slurm.nodes.aws import Ec2Fleet, Ec2Group
from clusterfab.scheduler.slurm.nodes.fleet import GROUP_TAG
from clusterfab.scheduler.slurm.teardown import TeardownError


def ec2_fleet(region: str, *, blueprint: str, stack: str, deleted: Mapping[str, Any]) -> Ec2Fleet:
    """The instances in EC2 of the node group whose auto scaling group is being deleted (`deleted`: its
    state), with the deploying user's credentials (boto3's default chain)."""
    import boto3  # noqa: PLC0415 - only a real delete needs it

    client = boto3.client("ec2", region_name=region)
    return Ec2Fleet(client, blueprint=blueprint, stack=stack, groups=ec2_group_of(client, deleted))


def ec2_group_of(client: Any, deleted: Mapping[str, Any]) -> dict[str, Ec2Group]:
    """The node group an auto scaling group served (its node-group tag) with its launch template and that
    template's instance profile, as EC2 has them. Tags alone are anyone's to set who may tag an instance,
    and a second deployment of the same blueprint and stack names carries the same ones: only instances of
    the group's own profile are the group's to delete (as the controller's node sync holds them)."""
    tags = {str(t.get("key")): str(t.get("value")) for t in deleted.get("tags") or []}
    group, template = tags.get(GROUP_TAG), (deleted.get("launchTemplate") or {}).get("id")
    if not group or not template:
        lacking = "node group" if not group else "launch template"
        raise TeardownError(
            f"the auto scaling group being deleted names no {lacking}: its elastic instances cannot be told "
            "apart from another deployment's; delete them by hand"
        )
    try:
        found = client.describe_launch_template_versions(LaunchTemplateId=template, Versions=["$Latest"])
        data = found["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    except Exception as exc:  # botocore's errors, or a template without versions
        raise TeardownError(f"cannot read launch template {template} of node group {group}: {exc}") from None
    profile = data.get("IamInstanceProfile", {}).get("Arn")
    if not profile:
        raise TeardownError(f"launch template {template} of node group {group} names no instance profile ARN")
    return {group: Ec2Group(str(template), str(profile))}
