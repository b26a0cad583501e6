"""The cluster's VPC: the node subnet in the blueprint's zone, NAT egress and the node security group."""

from __future__ import annotations

import pulumi
from cluster import Cluster

from clusterfab import addressing
from clusterfab.clouds.aws.profile import is_zone_id
from components._naming import child
from components.aws.network import AwsNetwork, AwsNetworkArgs


def network(cluster: Cluster, opts: pulumi.ResourceOptions) -> AwsNetwork:
    spec = cluster.spec
    by_id = is_zone_id(spec.zone)
    return AwsNetwork(
        child(spec.name, "net"),
        AwsNetworkArgs(
            cidr=spec.cidr,
            node_subnet_cidr=str(addressing.aws_node_subnet(spec.cidr)),
            public_subnet_cidr=str(addressing.aws_public_subnet(spec.cidr)),
            region=spec.region,
            availability_zone=None if by_id else spec.zone,
            availability_zone_id=spec.zone if by_id else None,
            ssh_ingress_cidrs=spec.ssh_ingress_cidrs,
            protect=spec.protected,
            tags=cluster.tags("network"),
        ),
        opts,
    )
