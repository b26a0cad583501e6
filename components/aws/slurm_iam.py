"""The IAM documents of Slurm on AWS: the munge key's resource policy, and the rights of the controller's
and login nodes' roles (the bucket, Session Manager, the munge key, naming the cluster's GPU instances, and
launching and terminating its elastic nodes, each scoped to this deployment's resources).

Plain functions of ARNs and tags: components.aws.slurm builds the roles and the secret's policy from them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clusterfab.core.vocab import (
    BLUEPRINT_TAG,
    NODE_GROUP_TAG,
    SLURM_ELASTIC_TAG,
    SLURM_NODE_TAG,
    STACK_TAG,
)
from components.aws._iam import SESSION_MANAGER_STATEMENT, read_bucket_statements

MUNGE_KEY_ACTIONS = ("secretsmanager:GetSecretValue", "secretsmanager:PutSecretValue")
"""What reads or writes the munge key's value; its secret's policy keeps them to the controller's role."""


def munge_read_statement(secret_arn: str) -> dict[str, Any]:
    return {
        "Sid": "ReadMungeKey",
        "Effect": "Allow",
        "Action": "secretsmanager:GetSecretValue",
        "Resource": secret_arn,
    }


def munge_secret_policy(secret_arn: str, controller_role_arn: str, egress_ip: str) -> str:
    """The munge key's resource policy: its value is read and written by the controller's role alone, and
    only from the cluster's network (its NAT gateway's address, where the controller's calls to Secrets
    Manager come from). An explicit deny wins over any identity policy: a role of the account that was
    granted secretsmanager:* still cannot read the key (IAM policy evaluation logic)."""
    deny = {"Effect": "Deny", "Principal": "*", "Action": list(MUNGE_KEY_ACTIONS), "Resource": secret_arn}
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "OnlyTheController",
                    **deny,
                    "Condition": {"StringNotEquals": {"aws:PrincipalArn": controller_role_arn}},
                },
                {
                    "Sid": "OnlyFromTheCluster",
                    **deny,
                    "Condition": {"NotIpAddress": {"aws:SourceIp": f"{egress_ip}/32"}},
                },
            ],
        }
    )


@dataclass(frozen=True, kw_only=True)
class NodeScope:
    """What the controller may act on, exactly: the deployment's partition, region and account, and the
    node groups' instance profiles (ARNs). Only a principal that may pass a group's role can put its
    profile on an instance, and the profile's name is unique to the deployment (auto-named), so the
    profile tells the cluster's GPU instances apart from any instance that merely carries its tags, such
    as one of another deployment with the same blueprint and stack names in the same account."""

    partition: str
    region: str
    account: str
    profiles: Sequence[str]
    """The instance profiles of the node groups whose instances the controller names and replaces."""

    def ec2(self, resource: str) -> str:
        """An EC2 ARN of this region and account (`resource`: `instance/*`, `subnet/subnet-1`, ...)."""
        return f"arn:{self.partition}:ec2:{self.region}:{self.account}:{resource}"


# Condition keys are those the service authorization reference for Amazon EC2 ("Actions, resources, and
# condition keys for Amazon EC2") lists for the action and resource type: CreateTags and TerminateInstances
# on `instance` take ec2:InstanceProfile and aws:ResourceTag/${TagKey}; RunInstances takes ec2:LaunchTemplate
# on each of its resource types, ec2:InstanceProfile and ec2:InstanceType on `instance`,
# ec2:AssociatePublicIpAddress and ec2:Subnet on `network-interface`, ec2:Encrypted on `volume`,
# ec2:IsLaunchTemplateResource on `image`, `placement-group` and `capacity-reservation`; CreateTags takes
# ec2:CreateAction. DescribeInstances, DescribeLaunchTemplateVersions and autoscaling:
# DescribeAutoScalingGroups have no resource type there: they take only "*".


def node_naming_statements(tags: Mapping[str, str], scope: NodeScope) -> list[dict[str, Any]]:
    """The node sync's rights: find the cluster's instances, and set one tag, the node name, on them.

    DescribeInstances cannot be scoped to resources; the tag write is limited to this region's and
    account's instances of the node groups' instance profiles that carry this cluster's and stack's
    tags, and to the node-name key.
    """
    return [
        {"Sid": "FindNodes", "Effect": "Allow", "Action": "ec2:DescribeInstances", "Resource": "*"},
        {
            "Sid": "NameNodes",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": scope.ec2("instance/*"),
            "Condition": {
                "StringEquals": _owner(tags),
                "ArnEquals": {"ec2:InstanceProfile": list(scope.profiles)},
                "ForAllValues:StringEquals": {"aws:TagKeys": [SLURM_NODE_TAG]},
            },
        },
    ]


def _owner(tags: Mapping[str, str], condition: str = "aws:ResourceTag") -> dict[str, str]:
    """The cluster's and stack's tags as `condition` keys."""
    return {f"{condition}/{key}": tags[key] for key in (BLUEPRINT_TAG, STACK_TAG) if key in tags}


@dataclass(frozen=True, kw_only=True)
class ElasticNodes:
    """The node groups whose elastic nodes the controller launches, exactly: their launch templates,
    instance types, instance profiles and roles (ARNs), and the subnet and security group they run in."""

    templates: Sequence[str]
    instance_types: Sequence[str]
    profiles: Sequence[str]
    roles: Sequence[str]
    subnet_id: str
    security_group_id: str
    volume_keys: Sequence[str] = ()
    """Customer-managed keys (ARNs) of the groups' boot volumes."""


def _launch_statements(
    tags: Mapping[str, str], scope: NodeScope, nodes: ElasticNodes
) -> list[dict[str, Any]]:
    """RunInstances only from the cluster's launch templates, as the template's instance type and profile,
    tagged as this cluster's elastic node, into the cluster's subnet and security group, with the
    template's image, encrypted volumes, and never a public address."""
    templates = {"ec2:LaunchTemplate": list(nodes.templates)}
    return [
        {
            # Neither action has a resource type (the reference above): they take only "*". A launch
            # template's user data is readable with it; the node groups' carries no secret (the boot script
            # names the bucket, the playbook bundle and the munge key's secret, never a key or password).
            "Sid": "ReadNodeGroups",
            "Effect": "Allow",
            "Action": ["autoscaling:DescribeAutoScalingGroups", "ec2:DescribeLaunchTemplateVersions"],
            "Resource": "*",
        },
        {
            "Sid": "LaunchFromNodeTemplates",
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "Resource": list(nodes.templates),
        },
        {
            "Sid": "LaunchElasticNodes",
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "Resource": scope.ec2("instance/*"),
            "Condition": {
                "ArnEquals": {**templates, "ec2:InstanceProfile": list(nodes.profiles)},
                "StringEquals": {
                    "ec2:InstanceType": list(nodes.instance_types),
                    f"aws:RequestTag/{SLURM_ELASTIC_TAG}": "true",
                    **_owner(tags, "aws:RequestTag"),
                },
            },
        },
        *_launch_resource_statements(scope, nodes),
    ]


def _launch_resource_statements(scope: NodeScope, nodes: ElasticNodes) -> list[dict[str, Any]]:
    """What a launch from the templates may use: the cluster's subnet and security group, private network
    interfaces, encrypted volumes, the template's own image, placement group and reservation."""
    templates = {"ec2:LaunchTemplate": list(nodes.templates)}
    from_template = {"ArnEquals": templates}
    return [
        {
            "Sid": "LaunchIntoClusterNetwork",
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "Resource": [
                scope.ec2(f"subnet/{nodes.subnet_id}"),
                scope.ec2(f"security-group/{nodes.security_group_id}"),
            ],
            "Condition": from_template,
        },
        {
            "Sid": "LaunchPrivateInterfaces",
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "Resource": scope.ec2("network-interface/*"),
            "Condition": {
                "ArnEquals": {**templates, "ec2:Subnet": [scope.ec2(f"subnet/{nodes.subnet_id}")]},
                # Absent when the request names no public address: the subnet's default applies, and the
                # node subnet assigns none (components/aws/network.py).
                "BoolIfExists": {"ec2:AssociatePublicIpAddress": "false"},
            },
        },
        {
            "Sid": "NoPublicAddresses",
            "Effect": "Deny",
            "Action": "ec2:RunInstances",
            "Resource": scope.ec2("network-interface/*"),
            "Condition": {"Bool": {"ec2:AssociatePublicIpAddress": "true"}},
        },
        {
            "Sid": "LaunchEncryptedVolumes",
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "Resource": scope.ec2("volume/*"),
            "Condition": {**from_template, "Bool": {"ec2:Encrypted": "true"}},
        },
        {
            # The template's own image, placement group and reservation: a request cannot name others.
            "Sid": "LaunchWithTemplateResources",
            "Effect": "Allow",
            "Action": "ec2:RunInstances",
            "Resource": [
                f"arn:{scope.partition}:ec2:{scope.region}::image/*",
                scope.ec2("placement-group/*"),
                scope.ec2("capacity-reservation/*"),
            ],
            "Condition": {**from_template, "Bool": {"ec2:IsLaunchTemplateResource": "true"}},
        },
    ]


def elastic_statements(
    tags: Mapping[str, str], scope: NodeScope, nodes: ElasticNodes
) -> list[dict[str, Any]]:
    """The power programs' and node sync's rights over instances (scheduler.md §A2: what ParallelCluster's
    head node may do): read each node group's auto scaling group and launch template; launch instances
    only from this cluster's launch templates, as elastic nodes of this cluster (`_launch_statements`);
    tag only at launch; pass only the elastic groups' own roles, to EC2; terminate only instances of the
    node groups' instance profiles with this cluster's tags (elastic ones when idle, a static one drained
    for a hardware fault, which its group replaces)."""
    statements: list[dict[str, Any]] = [
        *_launch_statements(tags, scope, nodes),
        {
            "Sid": "TagAtLaunch",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": [scope.ec2(f"{kind}/*") for kind in ("instance", "volume", "network-interface")],
            "Condition": {"StringEquals": {"ec2:CreateAction": "RunInstances"}},
        },
        {
            "Sid": "TerminateClusterNodes",
            "Effect": "Allow",
            "Action": "ec2:TerminateInstances",
            "Resource": scope.ec2("instance/*"),
            "Condition": {
                "StringEquals": _owner(tags),
                "ArnEquals": {"ec2:InstanceProfile": list(scope.profiles)},
                "Null": {f"aws:ResourceTag/{NODE_GROUP_TAG}": "false"},
            },
        },
        {
            "Sid": "PassNodeRoles",
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": list(nodes.roles),
            "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
        },
    ]
    if nodes.volume_keys:
        # Launching with a customer-managed key on the boot volumes: EC2 uses the key for the caller.
        statements.append(
            {
                "Sid": "EncryptElasticVolumes",
                "Effect": "Allow",
                "Action": [
                    "kms:CreateGrant",
                    "kms:Decrypt",
                    "kms:DescribeKey",
                    "kms:GenerateDataKeyWithoutPlainText",
                    "kms:ReEncryptFrom",
                    "kms:ReEncryptTo",
                ],
                "Resource": list(nodes.volume_keys),
                "Condition": {"StringLike": {"kms:ViaService": f"ec2.{scope.region}.amazonaws.com"}},
            }
        )
    return statements


def controller_policy(
    bucket_arn: str,
    secret_arn: str,
    naming: Sequence[dict[str, Any]],
    bucket_kms_key_arn: str | None = None,
    *,
    elastic: Sequence[dict[str, Any]] = (),
    database: Sequence[dict[str, Any]] = (),
    follow: Sequence[dict[str, Any]] = (),
) -> str:
    """Read the bucket, use Session Manager, read and (first boot) write the munge key, (`naming`) name the
    cluster's GPU instances, (`elastic`) create and delete the elastic ones, (`database`) find the accounting
    database and read its master secret, and (`follow`) read the digest tag of its boot script; nothing
    else."""
    write = {
        "Sid": "WriteMungeKey",
        "Effect": "Allow",
        "Action": ["secretsmanager:PutSecretValue", "secretsmanager:DescribeSecret"],
        "Resource": secret_arn,
    }
    statements = [
        *read_bucket_statements(bucket_arn, bucket_kms_key_arn),
        SESSION_MANAGER_STATEMENT,
        munge_read_statement(secret_arn),
        write,
        *naming,
        *elastic,
        *database,
        *follow,
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def client_policy(
    bucket_arn: str,
    bucket_kms_key_arn: str | None = None,
    *,
    follow: Sequence[dict[str, Any]] = (),
) -> str:
    """A login node's rights: the bucket, Session Manager, and (`follow`) the digest tag of its boot
    script. No secret: the munge key comes from the controller's key service."""
    statements = [
        *read_bucket_statements(bucket_arn, bucket_kms_key_arn),
        SESSION_MANAGER_STATEMENT,
        *follow,
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": statements})
