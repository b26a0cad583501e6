"""An EKS control plane for GPU node groups: private endpoint, access entries, encrypted secrets, logs.

The control plane's network interfaces sit in two subnets of their own in two zones (EKS requires two),
carved from the cluster's VPC; the node groups stay in the node subnet of the blueprint's zone. The
endpoint is always reachable from inside the VPC; it is public only for the listed ranges. Kubernetes
Secrets are encrypted with a KMS key (one the component creates, with rotation, unless a key is given),
the control plane's logs go to a log group of bounded retention created before the cluster (EKS writes to
`/aws/eks/<cluster>/cluster` and would otherwise create it without a retention), and authentication is by
access entries only (no aws-auth ConfigMap). The node role carries the three policies EKS documents for
nodes and nothing else: pods get AWS credentials through Pod Identity, never from the node.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components._errors import check_inputs
from components._naming import child
from components.aws._iam import ec2_trust_policy, service_trust_policy
from components.aws.network import LOG_RETENTION_DAYS

TYPE = "clusterfab:kubernetes:AwsEksCluster"

CONTROL_PLANE_LOGS = ("api", "audit", "authenticator", "controllerManager", "scheduler")
"""Every control plane log type EKS has (botocore eks LogType)."""
CLUSTER_POLICIES = ("AmazonEKSClusterPolicy",)
"""The cluster role's managed policy (EKS User Guide, "Amazon EKS cluster IAM role")."""
NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly", "AmazonEKS_CNI_Policy")
"""The node role's managed policies (EKS User Guide, "Amazon EKS node IAM role"): join the cluster, pull
images, and let the VPC CNI (which runs on the host network with the node's credentials) manage ENIs."""
SECRETS_KEY_ACTIONS = ("kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey")
"""What the cluster role does with the secrets key, on that key only (the grant terraform-aws-eks gives its
cluster role for envelope encryption)."""


@dataclass(frozen=True, kw_only=True)
class AwsEksClusterArgs:
    """Inputs of AwsEksCluster."""

    name: str
    """The EKS cluster's name (unique per account and region; the log group is named for it)."""
    version: str
    """The control plane's Kubernetes minor version, e.g. 1.35."""
    vpc_id: pulumi.Input[str]
    control_plane_subnet_cidrs: tuple[str, str]
    """Two ranges of the VPC for the control plane's subnets: the first in `availability_zone`, the second
    in another zone of the region."""
    availability_zone: pulumi.Input[str]
    """The node subnet's zone name."""
    api_access_cidrs: Sequence[str] = ()
    """Ranges that may reach the public endpoint; none: the endpoint is private only."""
    kms_key_arn: str | None = None
    """A customer-managed key for Secrets; default a key the component creates, with rotation on."""
    log_retention_days: int = 90
    """How long the control plane's logs are kept (one of CloudWatch Logs' retention periods)."""
    protect: bool = False
    """Protect the cluster and its secrets key from deletion and replacement."""
    tags: Mapping[str, str] = field(default_factory=dict)


def _problems(args: AwsEksClusterArgs) -> list[tuple[str, str]]:
    problems = []
    if args.log_retention_days not in LOG_RETENTION_DAYS:
        problems.append(("log_retention_days", "not one of CloudWatch Logs' retention periods"))
    if len(set(args.control_plane_subnet_cidrs)) != 2:
        problems.append(("control_plane_subnet_cidrs", "EKS needs two subnets, in two zones"))
    return problems


def secrets_key_policy(key_arn: str) -> str:
    statement = {
        "Sid": "EncryptClusterSecrets",
        "Effect": "Allow",
        "Action": list(SECRETS_KEY_ACTIONS),
        "Resource": key_arn,
    }
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def managed_policy_arn(partition: str, name: str) -> str:
    return f"arn:{partition}:iam::aws:policy/{name}"


class AwsEksCluster(pulumi.ComponentResource):
    """Control plane subnets, cluster and node roles, secrets key, log group and the EKS cluster."""

    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    """The API server's URL."""
    certificate_authority: pulumi.Output[str]
    """The API server's CA certificate (base64 PEM)."""
    cluster_security_group_id: pulumi.Output[str]
    """The security group EKS creates for the control plane and its nodes (all traffic among members)."""
    node_role_arn: pulumi.Output[str]
    arn: pulumi.Output[str]

    def __init__(
        self, name: str, args: AwsEksClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        self._own = pulumi.ResourceOptions(parent=self)
        identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        partition = identity.arn.apply(lambda arn: arn.split(":")[1])
        subnets = self._subnets()
        cluster_role = self._role("cluster-role", service_trust_policy("eks.amazonaws.com"), partition)
        key_arn = self._secrets_key(cluster_role)
        logs = aws.cloudwatch.LogGroup(
            child(name, "logs"),
            # The name EKS writes the control plane's logs to (EKS User Guide, "Send control plane logs
            # to CloudWatch Logs").
            name=f"/aws/eks/{args.name}/cluster",
            retention_in_days=args.log_retention_days,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        cluster = self._cluster(cluster_role, subnets, key_arn, logs)
        node_role = self._role("node-role", ec2_trust_policy(), partition, NODE_POLICIES)
        self.cluster_name = cluster.name
        self.endpoint = cluster.endpoint
        self.certificate_authority = cluster.certificate_authority.apply(lambda ca: ca.data or "")
        self.cluster_security_group_id = cluster.vpc_config.apply(lambda v: v.cluster_security_group_id or "")
        self.node_role_arn = node_role.arn
        self.arn = cluster.arn
        self.register_outputs({"cluster_name": cluster.name, "endpoint": cluster.endpoint})

    def _subnets(self) -> list[aws.ec2.Subnet]:
        """One control plane subnet in the nodes' zone, one in the first other zone of the account."""
        name, args = self._name, self._args
        others = aws.get_availability_zones_output(
            state="available",
            # The account's own zones (names map to zones per account), not Local or Wavelength Zones.
            filters=[
                aws.GetAvailabilityZonesFilterArgs(name="opt-in-status", values=["opt-in-not-required"])
            ],
            exclude_names=pulumi.Output.from_input(args.availability_zone).apply(lambda zone: [zone]),
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        zones = [pulumi.Output.from_input(args.availability_zone), others.names.apply(_second_zone)]
        return [
            aws.ec2.Subnet(
                child(name, f"control-plane-{index}"),
                vpc_id=args.vpc_id,
                cidr_block=cidr,
                availability_zone=zone,
                map_public_ip_on_launch=False,
                tags={**args.tags, "Name": child(name, f"control-plane-{index}")},
                opts=self._own,
            )
            for index, (cidr, zone) in enumerate(zip(args.control_plane_subnet_cidrs, zones, strict=True))
        ]

    def _role(
        self, role: str, trust: str, partition: pulumi.Output[str], policies: Sequence[str] = CLUSTER_POLICIES
    ) -> aws.iam.Role:
        name, args = self._name, self._args
        made = aws.iam.Role(
            child(name, role),
            assume_role_policy=trust,
            description=f"clusterfab EKS {role.removesuffix('-role')} of {args.name}",
            tags=args.tags,
            opts=self._own,
        )
        for policy in policies:
            aws.iam.RolePolicyAttachment(
                child(name, f"{role}-{policy}"),
                role=made.name,
                policy_arn=partition.apply(_policy_arn(policy)),
                opts=self._own,
            )
        return made

    def _secrets_key(self, cluster_role: aws.iam.Role) -> pulumi.Output[str]:
        """The given key, or a new one with rotation; the cluster role may use it for envelope encryption."""
        name, args = self._name, self._args
        if args.kms_key_arn is not None:
            key_arn: pulumi.Output[str] = pulumi.Output.from_input(args.kms_key_arn)
        else:
            key = aws.kms.Key(
                child(name, "secrets-key"),
                description=f"clusterfab: Kubernetes Secrets of EKS cluster {args.name}",
                enable_key_rotation=True,
                deletion_window_in_days=30,
                tags=args.tags,
                opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
            )
            key_arn = key.arn
        aws.iam.RolePolicy(
            child(name, "secrets-key-use"),
            role=cluster_role.id,
            policy=key_arn.apply(secrets_key_policy),
            opts=self._own,
        )
        return key_arn

    def _cluster(
        self,
        role: aws.iam.Role,
        subnets: list[aws.ec2.Subnet],
        key_arn: pulumi.Output[str],
        logs: aws.cloudwatch.LogGroup,
    ) -> aws.eks.Cluster:
        args = self._args
        public = list(args.api_access_cidrs)
        return aws.eks.Cluster(
            child(self._name, "cluster"),
            name=args.name,
            version=args.version,
            role_arn=role.arn,
            vpc_config=aws.eks.ClusterVpcConfigArgs(
                subnet_ids=[subnet.id for subnet in subnets],
                endpoint_private_access=True,
                endpoint_public_access=bool(public),
                public_access_cidrs=public or None,
            ),
            access_config=aws.eks.ClusterAccessConfigArgs(
                authentication_mode="API",
                # The principal that deploys the cluster administers it through an access entry EKS
                # creates, as eksctl and the console do: `up` applies the cluster's own objects with it.
                bootstrap_cluster_creator_admin_permissions=True,
            ),
            encryption_config=aws.eks.ClusterEncryptionConfigArgs(
                resources=["secrets"], provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key_arn)
            ),
            enabled_cluster_log_types=list(CONTROL_PLANE_LOGS),
            # The managed add-ons (AwsEksAddons) replace the self-managed CNI, kube-proxy and CoreDNS.
            bootstrap_self_managed_addons=False,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[logs], protect=args.protect),
        )


def _policy_arn(name: str) -> Callable[[str], str]:
    return lambda partition: managed_policy_arn(partition, name)


def _second_zone(others: Sequence[str]) -> str:
    """The first of the region's other available zones (get_availability_zones lists them in name order)."""
    if not others:
        raise ValueError("the region has no available zone besides the cluster's: EKS needs two")
    return others[0]
