"""What the offline plan engine's mocks answer for AWS resources and calls (`CloudProfile.plan_mocks`).

Deterministic placeholders, derived from the resource's name, for the computed attributes programs wire
between resources: plans and golden files stay stable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusterfab.clouds.base import ComputedOutputs, PlanMocks

_ACCOUNT = "123456789012"

OUTPUTS: dict[str, ComputedOutputs] = {
    # Launch templates' ARNs are EC2's own form: IAM statements name them, and the policy pack reads them.
    "aws:ec2/launchTemplate:": lambda _t, name: {
        "latestVersion": 1,
        "arn": f"arn:aws:ec2:mock:{_ACCOUNT}:launch-template/{name}-id",
    },
    "aws:": lambda typ, name: {"arn": f"arn:aws:mock:::{typ.split(':')[-1].lower()}/{name}"},
    "aws:fsx/lustreFileSystem:": lambda _t, name: {"dnsName": f"{name}.fsx.mock", "mountName": "mockmnt"},
    # A documentation address (RFC 5737): the NAT's public address, which the munge key's policy names.
    "aws:ec2/eip:": lambda _t, _n: {"publicIp": "198.51.100.7"},
    "aws:s3/bucket:": lambda _t, name: {"bucket": f"{name}-mock"},
    # An EKS cluster's API endpoint, CA (base64 of a placeholder, not a certificate) and the security group
    # EKS creates for it: the kubeconfig and the node groups' launch templates name them.
    "aws:eks/cluster:": lambda _t, name: {
        "endpoint": f"https://{name}.mock.eks.amazonaws.com",
        "certificateAuthority": {"data": "bW9jay1jYQ=="},
        "vpcConfig": {"clusterSecurityGroupId": f"{name}-cluster-sg-id"},
    },
    "aws:rds/instance:": lambda _t, name: {
        "address": f"{name}.mock.rds.amazonaws.com",
        "masterUserSecrets": [{"secretArn": f"arn:aws:secretsmanager:mock:{_ACCOUNT}:secret:rds!{name}"}],
    },
}


def call(token: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
    if token == "aws:index/getCallerIdentity:getCallerIdentity":
        return {"accountId": _ACCOUNT, "arn": f"arn:aws:iam::{_ACCOUNT}:user/mock"}
    if token == "aws:iam/getSessionContext:getSessionContext":
        # The mock caller is a user: its session context is the user itself.
        return {"arn": args["arn"], "issuerArn": args["arn"]}
    if token == "aws:index/getAvailabilityZones:getAvailabilityZones":
        return {"names": _other_zones(args.get("excludeNames") or [])}
    return None


def _other_zones(excluded: list[str]) -> list[str]:
    """Zones a, b and c of the excluded zones' region, less those: the account's zones, made up."""
    if not excluded:
        return []
    region = str(excluded[0]).rstrip("abcdefghijklmnopqrstuvwxyz")
    return [f"{region}{letter}" for letter in "abc" if f"{region}{letter}" not in excluded]


PLAN_MOCKS = PlanMocks(outputs=OUTPUTS, call=call)
