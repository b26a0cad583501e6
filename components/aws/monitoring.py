"""The monitoring host on AWS: what any host running Prometheus needs (AwsMonitoringAccess: discovery
rights, the scrape ports of the nodes' security group, the SMTP password's secret), and the small
monitoring node clusterfab creates when the cluster has no Slurm controller to host the stack
(AwsMonitoringNode).

The node has no public address and no inbound rule: Grafana is reached through SSM Session Manager port
forwarding, which needs only the SSM agent's outbound connection. IMDSv2 with hop limit 1 (nothing on the
host runs in a container), an encrypted root volume that holds the samples, and an instance role that
may describe instances (EC2 service discovery cannot be scoped to resources), read the cluster bucket
and, when alerts are mailed, read one secret.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pulumi_aws as aws

from components._errors import check_inputs
from components._naming import child
from components.aws._boot import FOLLOWED_INPUTS, digest_statements, digest_tag, followed_script, user_data
from components.aws._iam import SESSION_MANAGER_STATEMENT, ec2_trust_policy, read_bucket_statements

ACCESS_TYPE = "clusterfab:monitoring:AwsMonitoringAccess"
NODE_TYPE = "clusterfab:monitoring:AwsMonitoringNode"
SCRAPE_PORTS = (9100, 9400)
"""The node exporter and dcgm-exporter on every GPU node."""


SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
"""A Secrets Manager secret name: 1-512 ASCII letters, digits and /_+=.@- (botocore secretsmanager
CreateSecretRequest.Name)."""
SECRET_ARN = re.compile(
    r"^arn:aws(-[a-z]+)*:secretsmanager:[a-z]{2}(-[a-z]+)+-\d+:\d{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}"
    r"-[A-Za-z0-9]{6}$"
)
"""A secret's full ARN: its name, a hyphen and the six random characters Secrets Manager appends."""


def secret_arn(secret: str, *, partition: str, region: str, account: str) -> str:
    """The one secret `secret` names, as an IAM resource: a full ARN as it is; a name as its ARN in this
    deployment's account and region, with `-??????` for the hyphen and six random characters Secrets
    Manager appends to every secret's ARN (`?` matches one character: the name is never a prefix of
    another secret's, as `-*` would make it)."""
    if secret.startswith("arn:"):
        return secret
    return f"arn:{partition}:secretsmanager:{region}:{account}:secret:{secret}-??????"


def secret_problems(secret: str | None) -> list[tuple[str, str]]:
    """A secret that is not one secret's name or full ARN (a wildcard, a partial ARN) is refused: the host's
    role would read whatever it matches."""
    if secret is None or SECRET_NAME.match(secret) or SECRET_ARN.match(secret):
        return []
    return [("smtp_secret", f"'{secret}' is neither a Secrets Manager secret name nor a full secret ARN")]


def access_policy(*, partition: str = "aws", region: str, account: str, smtp_secret: str | None) -> str:
    """What Prometheus and Alertmanager need from AWS: EC2 discovery and the SMTP password, nothing else."""
    statements: list[dict[str, Any]] = [
        # EC2 service discovery calls DescribeInstances, which IAM cannot scope to resources.
        {"Sid": "DiscoverNodes", "Effect": "Allow", "Action": "ec2:DescribeInstances", "Resource": "*"},
    ]
    if smtp_secret is not None:
        statements.append(
            {
                "Sid": "ReadSmtpPassword",
                "Effect": "Allow",
                "Action": "secretsmanager:GetSecretValue",
                "Resource": secret_arn(smtp_secret, partition=partition, region=region, account=account),
            }
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


@dataclass(frozen=True, kw_only=True)
class AwsMonitoringAccessArgs:
    """What lets a host (the monitoring node, or a Slurm controller) run the cluster's monitoring."""

    role_name: pulumi.Input[str]
    """The host's instance role."""
    host_security_group_id: pulumi.Input[str]
    """The host's security group: the nodes accept scrapes from it."""
    node_security_group_id: pulumi.Input[str]
    """The GPU nodes' security group."""
    region: str
    smtp_secret: str | None = None
    """The Secrets Manager secret holding the SMTP password, by name (in `region` of the deployment's
    account) or full ARN, never a wildcard; None: no mail login."""
    scrape_ports: Sequence[int] = SCRAPE_PORTS


class AwsMonitoringAccess(pulumi.ComponentResource):
    """An inline policy on the host's role, and one ingress rule per scrape port on the nodes' group."""

    def __init__(
        self, name: str, args: AwsMonitoringAccessArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(ACCESS_TYPE, secret_problems(args.smtp_secret))
        super().__init__(ACCESS_TYPE, name, None, opts)
        own = pulumi.ResourceOptions(parent=self)
        # The secret's ARN names the deployment's own account: a name never matches another account's secret.
        identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        aws.iam.RolePolicy(
            child(name, "policy"),
            role=args.role_name,
            policy=identity.apply(
                lambda me: access_policy(
                    partition=me.arn.split(":")[1],
                    region=args.region,
                    account=me.account_id,
                    smtp_secret=args.smtp_secret,
                )
            ),
            opts=own,
        )
        for port in args.scrape_ports:
            aws.vpc.SecurityGroupIngressRule(
                child(name, f"scrape-{port}"),
                security_group_id=args.node_security_group_id,
                referenced_security_group_id=args.host_security_group_id,
                ip_protocol="tcp",
                from_port=port,
                to_port=port,
                description=f"Prometheus on the monitoring host scrapes port {port}",
                opts=own,
            )
        self.register_outputs({})


@dataclass(frozen=True, kw_only=True)
class AwsMonitoringNodeArgs:
    """Inputs of AwsMonitoringNode; defaults: the catalog's m7i.large with a 50 GiB gp3 volume."""

    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    node_security_group_id: pulumi.Input[str]
    bucket_name: pulumi.Input[str]
    bucket_arn: pulumi.Input[str]
    image_id: str
    region: str
    bucket_kms_key_arn: str | None = None
    """The bucket's customer-managed key: the monitoring files are encrypted with it, and the host may
    decrypt with it through S3."""
    instance_type: str = "m7i.large"
    volume_gib: int = 50
    volume_type: str = "gp3"
    boot_script: pulumi.Input[str] = ""
    boot_script_key: str | None = None
    """Where the bucket keeps the host's current boot script, for a script that follows the stack
    (`components.aws._boot`): an update rewrites the object, never the instance's user data (which would
    stop and start it). None: the user data follows the script."""
    files: tuple[str, Path] | None = None
    """(object key, local path) of the rendered monitoring files the host's boot fetches."""
    smtp_secret: str | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    scrape_ports: Sequence[int] = SCRAPE_PORTS
    """The ports Prometheus scrapes the nodes on: the GPU nodes' exporters, and a scheduler's own (the
    queue agent of a Kubernetes cluster, on its system nodes)."""


def _problems(args: AwsMonitoringNodeArgs) -> list[tuple[str, str]]:
    problems = []
    if args.volume_gib < 20:
        problems.append(("volume_gib", "the samples need at least 20 GiB"))
    return problems + secret_problems(args.smtp_secret)


def _host_policy(
    bucket_arn: str, bucket_kms_key_arn: str | None = None, *, follow: Sequence[dict[str, Any]] = ()
) -> str:
    statements = [*read_bucket_statements(bucket_arn, bucket_kms_key_arn), SESSION_MANAGER_STATEMENT, *follow]
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


class AwsMonitoringNode(pulumi.ComponentResource):
    """Role, security group, the rendered files in the bucket, the instance, and its monitoring access."""

    instance_id: pulumi.Output[str]
    """What `aws ssm start-session --target` takes."""
    role_arn: pulumi.Output[str]
    security_group_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: AwsMonitoringNodeArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(NODE_TYPE, _problems(args))
        super().__init__(NODE_TYPE, name, None, opts)
        self._name, self._args = name, args
        self._own = pulumi.ResourceOptions(parent=self)
        role, profile = self._identity()
        group = aws.ec2.SecurityGroup(
            child(name, "sg"),
            vpc_id=args.vpc_id,
            description="clusterfab monitoring host: no inbound traffic (Grafana through SSM)",
            egress=[
                aws.ec2.SecurityGroupEgressArgs(
                    protocol="-1", from_port=0, to_port=0, cidr_blocks=["0.0.0.0/0"]
                )
            ],
            tags={**args.tags, "Name": child(name, "sg")},
            opts=self._own,
        )
        depends: list[pulumi.Resource] = []
        if args.files is not None:
            key, path = args.files
            depends.append(
                aws.s3.BucketObjectv2(
                    child(name, "files"),
                    bucket=args.bucket_name,
                    key=key,
                    source=pulumi.FileAsset(str(path)),
                    server_side_encryption="aws:kms",
                    kms_key_id=args.bucket_kms_key_arn,
                    tags=dict(args.tags),
                    opts=self._own,
                )
            )
        instance = self._instance(profile, group, depends)
        AwsMonitoringAccess(
            child(name, "access"),
            AwsMonitoringAccessArgs(
                role_name=role.name,
                host_security_group_id=group.id,
                node_security_group_id=args.node_security_group_id,
                scrape_ports=args.scrape_ports,
                region=args.region,
                smtp_secret=args.smtp_secret,
            ),
            self._own,
        )
        self.instance_id = instance.id
        self.role_arn = role.arn
        self.security_group_id = group.id
        self.register_outputs(
            {"instance_id": instance.id, "role_arn": role.arn, "security_group_id": group.id}
        )

    def _identity(self) -> tuple[aws.iam.Role, aws.iam.InstanceProfile]:
        name, args, own = self._name, self._args, self._own
        role = aws.iam.Role(
            child(name, "role"),
            assume_role_policy=ec2_trust_policy(),
            description=f"clusterfab monitoring host {name}",
            tags=dict(args.tags),
            opts=own,
        )
        aws.iam.RolePolicy(
            child(name, "bucket"),
            role=role.id,
            policy=pulumi.Output.from_input(args.bucket_arn).apply(
                lambda arn: _host_policy(
                    arn, args.bucket_kms_key_arn, follow=digest_statements(args.boot_script_key)
                )
            ),
            opts=own,
        )
        profile = aws.iam.InstanceProfile(
            child(name, "profile"), role=role.name, tags=dict(args.tags), opts=own
        )
        return role, profile

    def _instance(
        self, profile: aws.iam.InstanceProfile, group: aws.ec2.SecurityGroup, depends: list[pulumi.Resource]
    ) -> aws.ec2.Instance:
        name, args = self._name, self._args
        followed = followed_script(
            child(name, "boot"),
            script=args.boot_script,
            key=args.boot_script_key,
            bucket_name=args.bucket_name,
            kms_key_arn=args.bucket_kms_key_arn,
            tags=args.tags,
            parent=self,
            after=depends,
        )
        return aws.ec2.Instance(
            child(name, "instance"),
            ami=args.image_id,
            instance_type=args.instance_type,
            subnet_id=args.subnet_id,
            vpc_security_group_ids=[group.id],
            associate_public_ip_address=False,
            iam_instance_profile=profile.name,
            metadata_options=aws.ec2.InstanceMetadataOptionsArgs(
                http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1
            ),
            root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(
                volume_size=args.volume_gib,
                volume_type=args.volume_type,
                encrypted=True,
                delete_on_termination=True,
                tags={**args.tags, "Name": child(name, "volume")},
            ),
            user_data_base64=user_data(args.boot_script),
            user_data_replace_on_change=False,
            ebs_optimized=True,
            tags={
                **args.tags,
                "Name": name,
                **digest_tag(args.boot_script, args.boot_script_key),
            },
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*depends, *followed],
                ignore_changes=FOLLOWED_INPUTS if followed else None,
            ),
        )
