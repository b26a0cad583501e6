"""The cluster's AWS network: one VPC, one private node subnet in the blueprint's zone, egress via NAT.

Nodes never get public addresses. They reach the internet (packages, the EFA installer) through a NAT
gateway that sits alone in a small public subnet, S3 through a gateway endpoint (free, and it keeps
bootstrap and dataset traffic off the NAT), and SSM through the NAT. The node security group lets
all traffic flow to and from itself, which EFA requires in both directions; SSH is open only to the
blueprint's ssh_ingress_cidrs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from clusterfab import addressing
from components._naming import child

TYPE = "clusterfab:network:AwsNetwork"


@dataclass(frozen=True)
class NetworkPlan:
    """Pure decisions: address ranges and where the subnets go."""

    cidr: str
    node_subnet: str
    public_subnet: str
    zone: str
    zone_is_id: bool
    ssh_ingress_cidrs: tuple[str, ...]


def plan_network(cidr: str, zone: str, zone_is_id: bool, ssh_ingress_cidrs: Sequence[str]) -> NetworkPlan:
    return NetworkPlan(
        cidr=cidr,
        node_subnet=str(addressing.aws_node_subnet(cidr)),
        public_subnet=str(addressing.aws_public_subnet(cidr)),
        zone=zone,
        zone_is_id=zone_is_id,
        ssh_ingress_cidrs=tuple(ssh_ingress_cidrs),
    )


@dataclass(frozen=True)
class AwsNetworkArgs:
    plan: NetworkPlan
    region: str
    tags: Mapping[str, str] = field(default_factory=dict)


class AwsNetwork(pulumi.ComponentResource):
    """VPC, node subnet, NAT egress, S3 endpoint and the node security group (with the EFA rule)."""

    vpc_id: pulumi.Output[str]
    """The VPC."""
    node_subnet_id: pulumi.Output[str]
    """The private subnet all nodes and file systems live in."""
    node_security_group_id: pulumi.Output[str]
    """Security group of the nodes: all traffic within itself (EFA), egress anywhere."""
    zone: str
    """The zone (name or id) the node subnet is in."""

    def __init__(self, name: str, args: AwsNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        plan = args.plan
        tags = dict(args.tags)

        def named(role: str) -> dict[str, str]:
            return {**tags, "Name": child(name, role)}

        own = pulumi.ResourceOptions(parent=self)
        vpc = aws.ec2.Vpc(
            child(name, "vpc"),
            cidr_block=plan.cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags=named("vpc"),
            opts=own,
        )
        zone_id = plan.zone if plan.zone_is_id else None
        zone_name = None if plan.zone_is_id else plan.zone
        nodes = aws.ec2.Subnet(
            child(name, "nodes"),
            vpc_id=vpc.id,
            cidr_block=plan.node_subnet,
            map_public_ip_on_launch=False,
            tags=named("nodes"),
            opts=own,
            availability_zone=zone_name,
            availability_zone_id=zone_id,
        )
        public = aws.ec2.Subnet(
            child(name, "public"),
            vpc_id=vpc.id,
            cidr_block=plan.public_subnet,
            map_public_ip_on_launch=False,
            tags=named("public"),
            opts=own,
            availability_zone=zone_name,
            availability_zone_id=zone_id,
        )
        igw = aws.ec2.InternetGateway(child(name, "igw"), vpc_id=vpc.id, tags=named("igw"), opts=own)
        eip = aws.ec2.Eip(child(name, "nat-ip"), domain="vpc", tags=named("nat-ip"), opts=own)
        nat = aws.ec2.NatGateway(
            child(name, "nat"),
            allocation_id=eip.id,
            subnet_id=public.id,
            tags=named("nat"),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
        )
        public_rt = aws.ec2.RouteTable(
            child(name, "public-rt"),
            vpc_id=vpc.id,
            tags=named("public-rt"),
            opts=own,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
        )
        private_rt = aws.ec2.RouteTable(
            child(name, "private-rt"),
            vpc_id=vpc.id,
            tags=named("private-rt"),
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
            service_name=f"com.amazonaws.{args.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[private_rt.id],
            tags=named("s3"),
            opts=own,
        )

        sg = aws.ec2.SecurityGroup(
            child(name, "nodes-sg"),
            vpc_id=vpc.id,
            tags=named("nodes-sg"),
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
        for cidr in plan.ssh_ingress_cidrs:
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

        self.vpc_id = vpc.id
        self.node_subnet_id = nodes.id
        self.node_security_group_id = sg.id
        self.zone = plan.zone
        self.register_outputs({"vpc_id": vpc.id, "node_subnet_id": nodes.id, "node_security_group_id": sg.id})
