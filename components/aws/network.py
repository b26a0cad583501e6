"""An AWS cluster network: one VPC, one private node subnet in one zone, egress via NAT.

Nodes never get public addresses. They reach the internet (packages, the EFA installer) through a NAT
gateway that sits alone in a small public subnet, S3 through a gateway endpoint (free, and it keeps
bootstrap and dataset traffic off the NAT), and SSM through the NAT. The node security group lets
all traffic flow to and from itself, which EFA requires in both directions; SSH is open only to
`ssh_ingress_cidrs` (default: nobody).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components._errors import check_inputs
from components._naming import child

TYPE = "clusterfab:network:AwsNetwork"


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
    tags: Mapping[str, str] = field(default_factory=dict)


class AwsNetwork(pulumi.ComponentResource):
    """VPC, node subnet, NAT egress, S3 endpoint and the node security group (with the EFA rule)."""

    vpc_id: pulumi.Output[str]
    """The VPC."""
    node_subnet_id: pulumi.Output[str]
    """The private subnet all nodes and file systems live in."""
    node_security_group_id: pulumi.Output[str]
    """Security group of the nodes: all traffic within itself (EFA), egress anywhere."""
    node_subnet_zone: pulumi.Output[str]
    """The node subnet's availability zone name (a volume for an instance there must be in it)."""

    def __init__(self, name: str, args: AwsNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        if (args.availability_zone is None) == (args.availability_zone_id is None):
            check_inputs(TYPE, [("availability_zone", "give exactly one of it and availability_zone_id")])
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
        self._routes(vpc, nodes, public)
        sg = self._security_group(vpc)
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

    def _routes(self, vpc: aws.ec2.Vpc, nodes: aws.ec2.Subnet, public: aws.ec2.Subnet) -> None:
        """Nodes reach the internet through a NAT gateway in the public subnet, S3 through an endpoint."""
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
