"""An AWS cluster network: one VPC, one private node subnet in one zone, egress via NAT.

Nodes never get public addresses. They reach the internet (packages, the EFA installer) through a NAT
gateway that sits alone in a small public subnet, S3 through a gateway endpoint (free, and it keeps
bootstrap and dataset traffic off the NAT), and SSM through the NAT. The node security group lets
all traffic flow to and from itself, which EFA requires in both directions; SSH is open only to
`ssh_ingress_cidrs` (default: nobody). VPC Flow Logs record who talked to whom in the whole VPC (nodes,
file systems, the NAT gateway) into a CloudWatch Logs log group that keeps them for a set time, as GCP's
general subnets do (components.gcp.network).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from components._errors import check_inputs
from components._naming import child

TYPE = "clusterfab:network:AwsNetwork"
LOG_RETENTION_DAYS = (
    *(1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365),
    *(400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653),
)
"""What CloudWatch Logs keeps a log group for (botocore logs PutRetentionPolicy.retentionInDays:
"Possible values are: 1, 3, 5, 7, 14, 30, ... and 3653")."""
FLOW_LOG_AGGREGATION_SECONDS = 600
"""EC2's default and the longer of its two intervals (CreateFlowLogs MaxAggregationInterval: "60 seconds
(1 minute) or 600 seconds (10 minutes) ... Default: 600"): fewer records from the interfaces no instance
owns (the NAT gateway's, the file systems'). Nodes are Nitro instances, whose interfaces aggregate over 60
seconds at most whatever is set ("regardless of the value that you specify")."""
FLOW_LOG_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams")
"""What delivering flow logs into an existing log group takes, on that group only: the grant of AWS CDK's
own VPC flow log construct (aws-cdk-lib aws-ec2 vpc-flow-logs.ts, CloudWatchLogsDestination). The VPC
User Guide's example role ("flow-logs-iam-role") also lists logs:CreateLogGroup and
logs:DescribeLogGroups on every resource, which CDK's construct does without."""


def flow_log_trust_policy(account: str, partition: str, region: str) -> str:
    """VPC Flow Logs may assume the role, for this account's flow logs in this region only (the confused
    deputy conditions the VPC User Guide recommends: aws:SourceAccount and aws:SourceArn)."""
    statement = {
        "Effect": "Allow",
        "Principal": {"Service": "vpc-flow-logs.amazonaws.com"},
        "Action": "sts:AssumeRole",
        "Condition": {
            "StringEquals": {"aws:SourceAccount": account},
            "ArnLike": {"aws:SourceArn": f"arn:{partition}:ec2:{region}:{account}:vpc-flow-log/*"},
        },
    }
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def flow_log_delivery_policy(log_group_arn: str) -> str:
    """Write log streams of the flow logs' log group, and nothing else (log streams are `<group arn>:*`)."""
    statement: dict[str, Any] = {
        "Sid": "DeliverFlowLogs",
        "Effect": "Allow",
        "Action": list(FLOW_LOG_ACTIONS),
        "Resource": [log_group_arn, f"{log_group_arn}:*"],
    }
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


@dataclass(frozen=True, kw_only=True)
class AwsNetworkArgs:
    """Inputs of AwsNetwork; give exactly one of `availability_zone` and `availability_zone_id`."""

    cidr: str
    """The VPC's IPv4 range, e.g. 10.20.0.0/16."""
    node_subnet_cidr: str
    """The private subnet of nodes and file systems (inside `cidr`)."""
    public_subnet_cidr: str
    """A small public subnet that holds only the NAT gateway (inside `cidr`)."""
    region: str
    """The region, for the S3 gateway endpoint's service name."""
    availability_zone: str | None = None
    """A zone name (us-east-1a): what it means differs per account."""
    availability_zone_id: str | None = None
    """A zone id (use1-az6): the same physical zone in every account (preferred)."""
    ssh_ingress_cidrs: Sequence[str] = ()
    """Ranges allowed to reach nodes on port 22; default none (use SSM Session Manager)."""
    flow_logs: bool = True
    """VPC Flow Logs of all traffic (accepted and rejected) of the VPC into a CloudWatch Logs log group.
    CloudWatch Logs charges per GB ingested and stored (vended logs pricing)."""
    flow_logs_retention_days: int = 30
    """How long the flow logs' log group keeps them; one of CloudWatch Logs' retention periods
    (`LOG_RETENTION_DAYS`). Default 30 days, as long as Cloud Logging's _Default bucket keeps GCP's."""
    protect: bool = False
    """Protect the flow logs' log group from deletion and replacement (it holds the VPC's traffic records)."""
    tags: Mapping[str, str] = field(default_factory=dict)


def _problems(args: AwsNetworkArgs) -> list[tuple[str, str]]:
    problems = []
    if (args.availability_zone is None) == (args.availability_zone_id is None):
        problems.append(("availability_zone", "give exactly one of it and availability_zone_id"))
    if args.flow_logs_retention_days not in LOG_RETENTION_DAYS:
        days = ", ".join(str(d) for d in LOG_RETENTION_DAYS)
        problems.append(("flow_logs_retention_days", f"CloudWatch Logs keeps logs for one of {days} days"))
    return problems


class AwsNetwork(pulumi.ComponentResource):
    """VPC, node subnet, NAT egress, S3 endpoint, the node security group (with the EFA rule) and the VPC's
    flow logs."""

    vpc_id: pulumi.Output[str]
    """The VPC."""
    node_subnet_id: pulumi.Output[str]
    """The private subnet all nodes and file systems live in."""
    node_security_group_id: pulumi.Output[str]
    """Security group of the nodes: all traffic within itself (EFA), egress anywhere."""
    node_subnet_zone: pulumi.Output[str]
    """The node subnet's availability zone name (a volume for an instance there must be in it)."""
    egress_ip: pulumi.Output[str]
    """The NAT gateway's public address: where the nodes' calls to AWS's public endpoints come from."""

    def __init__(self, name: str, args: AwsNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        self._own = pulumi.ResourceOptions(parent=self)
        vpc = aws.ec2.Vpc(
            child(name, "vpc"),
            cidr_block=args.cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags=self._named("vpc"),
            opts=self._own,
        )
        nodes = self._subnet(vpc, "nodes", args.node_subnet_cidr)
        public = self._subnet(vpc, "public", args.public_subnet_cidr)
        self.egress_ip = self._routes(vpc, nodes, public)
        sg = self._security_group(vpc)
        if args.flow_logs:
            self._flow_logs(vpc)
        self.vpc_id = vpc.id
        self.node_subnet_id = nodes.id
        self.node_security_group_id = sg.id
        self.node_subnet_zone = nodes.availability_zone
        self.register_outputs({"vpc_id": vpc.id, "node_subnet_id": nodes.id, "node_security_group_id": sg.id})

    def _named(self, role: str) -> dict[str, str]:
        return {**self._args.tags, "Name": child(self._name, role)}

    def _subnet(self, vpc: aws.ec2.Vpc, role: str, cidr: str) -> aws.ec2.Subnet:
        return aws.ec2.Subnet(
            child(self._name, role),
            vpc_id=vpc.id,
            cidr_block=cidr,
            map_public_ip_on_launch=False,
            tags=self._named(role),
            opts=self._own,
            availability_zone=self._args.availability_zone,
            availability_zone_id=self._args.availability_zone_id,
        )

    def _routes(self, vpc: aws.ec2.Vpc, nodes: aws.ec2.Subnet, public: aws.ec2.Subnet) -> pulumi.Output[str]:
        """Nodes reach the internet through a NAT gateway in the public subnet, S3 through an endpoint;
        the NAT's address."""
        name, own = self._name, self._own
        igw = aws.ec2.InternetGateway(child(name, "igw"), vpc_id=vpc.id, tags=self._named("igw"), opts=own)
        eip = aws.ec2.Eip(child(name, "nat-ip"), domain="vpc", tags=self._named("nat-ip"), opts=own)
        nat = aws.ec2.NatGateway(
            child(name, "nat"),
            allocation_id=eip.id,
            subnet_id=public.id,
            tags=self._named("nat"),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
        )
        public_rt = aws.ec2.RouteTable(
            child(name, "public-rt"),
            vpc_id=vpc.id,
            tags=self._named("public-rt"),
            opts=own,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
        )
        private_rt = aws.ec2.RouteTable(
            child(name, "private-rt"),
            vpc_id=vpc.id,
            tags=self._named("private-rt"),
            opts=own,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
        )
        aws.ec2.RouteTableAssociation(
            child(name, "public-rta"), subnet_id=public.id, route_table_id=public_rt.id, opts=own
        )
        aws.ec2.RouteTableAssociation(
            child(name, "nodes-rta"), subnet_id=nodes.id, route_table_id=private_rt.id, opts=own
        )
        aws.ec2.VpcEndpoint(
            child(name, "s3"),
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{self._args.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[private_rt.id],
            tags=self._named("s3"),
            opts=own,
        )
        return eip.public_ip

    def _security_group(self, vpc: aws.ec2.Vpc) -> aws.ec2.SecurityGroup:
        name, own = self._name, self._own
        sg = aws.ec2.SecurityGroup(
            child(name, "nodes-sg"),
            vpc_id=vpc.id,
            tags=self._named("nodes-sg"),
            description="clusterfab nodes: EFA needs all traffic to and from this group",
            opts=own,
        )
        aws.vpc.SecurityGroupIngressRule(
            child(name, "nodes-from-self"),
            security_group_id=sg.id,
            ip_protocol="-1",
            referenced_security_group_id=sg.id,
            description="all traffic between nodes (EFA, NCCL)",
            opts=own,
        )
        aws.vpc.SecurityGroupEgressRule(
            child(name, "nodes-to-self"),
            security_group_id=sg.id,
            ip_protocol="-1",
            referenced_security_group_id=sg.id,
            description="all traffic between nodes (EFA, NCCL)",
            opts=own,
        )
        aws.vpc.SecurityGroupEgressRule(
            child(name, "nodes-egress"),
            security_group_id=sg.id,
            ip_protocol="-1",
            cidr_ipv4="0.0.0.0/0",
            description="packages, S3, SSM through the NAT gateway",
            opts=own,
        )
        for cidr in self._args.ssh_ingress_cidrs:
            aws.vpc.SecurityGroupIngressRule(
                child(name, f"ssh-{cidr.replace('/', '-')}"),
                security_group_id=sg.id,
                ip_protocol="tcp",
                from_port=22,
                to_port=22,
                cidr_ipv4=cidr,
                description="SSH from the blueprint's ssh_ingress_cidrs",
                opts=own,
            )
        return sg

    def _flow_logs(self, vpc: aws.ec2.Vpc) -> None:
        """All traffic of the VPC to a log group of its own, delivered by a role that may write only there."""
        name, args, own = self._name, self._args, self._own
        group = aws.cloudwatch.LogGroup(
            child(name, "flow-logs"),
            # A path-like prefix groups the cluster's logs; the provider adds a unique suffix.
            name_prefix=f"/clusterfab/{name}/vpc-flow-logs-",
            retention_in_days=args.flow_logs_retention_days,
            tags=self._named("flow-logs"),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        role = aws.iam.Role(
            child(name, "flow-logs-role"),
            assume_role_policy=identity.apply(
                lambda me: flow_log_trust_policy(me.account_id, me.arn.split(":")[1], args.region)
            ),
            description=f"clusterfab VPC flow logs of {name}: write to their log group only",
            tags=self._named("flow-logs-role"),
            opts=own,
        )
        aws.iam.RolePolicy(
            child(name, "flow-logs-policy"),
            role=role.id,
            policy=group.arn.apply(flow_log_delivery_policy),
            opts=own,
        )
        aws.ec2.FlowLog(
            child(name, "flow-log"),
            vpc_id=vpc.id,
            traffic_type="ALL",
            log_destination_type="cloud-watch-logs",
            log_destination=group.arn,
            iam_role_arn=role.arn,
            max_aggregation_interval=FLOW_LOG_AGGREGATION_SECONDS,
            tags=self._named("flow-log"),
            opts=own,
        )
