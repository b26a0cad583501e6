"""How the budget policy reads AWS resources: the types that cost money and what each says.

Autoscaling groups (max size; a capacity block's end from its `clusterfab-capacity-ends-at` tag) with the
launch template of the same component (instance type; spot / capacity-block market, capacity
reservation), single instances, FSx for Lustre (capacity, deployment type, throughput per TiB), EKS
clusters (the control plane's fee) and managed node groups (scaling config, capacity type, launch
template); subnets say where the cluster is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from clusterfab.clouds.aws.profile import AUTOSCALING_GROUP
from clusterfab.core.dates import parse_utc_iso
from clusterfab.core.vocab import CAPACITY_ENDS_TAG, COMPONENT_TAG, CapacityKind
from clusterfab.policy.pricing import CloudPricing, Reader
from clusterfab.policy.resources import Resource, integer, items
from clusterfab.scheduler.kubernetes.costs import (
    SYSTEM_NODES_ITEM,
    control_plane_line,
    fee_sku,
    system_nodes_line,
)

ASG = AUTOSCALING_GROUP
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
FSX_LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
EKS_CAPACITY: dict[str, CapacityKind] = {"SPOT": "spot", "CAPACITY_BLOCK": "capacity_block"}
"""A managed node group's capacityType, where it says more than its launch template (ON_DEMAND, the
default, may still target a capacity reservation there)."""
SUBNET = "aws:ec2/subnet:Subnet"


def _asg(reader: Reader, asg: Resource) -> None:
    template = reader.sibling(asg, LAUNCH_TEMPLATE, "launchTemplate")
    low, high = integer(asg.props.get("minSize")), integer(asg.props.get("maxSize"))
    machine = template.props.get("instanceType") if template is not None else None
    if template is None or not isinstance(machine, str) or high is None:
        reader.skip(f"{asg.name}: no launch template with an instance type, or no max size")
        return
    capacity = _capacity(template.props)
    ends_at = _capacity_end(asg) if capacity == "capacity_block" else None
    reader.group(asg, machine, low if low is not None else high, high, capacity, ends_at=ends_at)


def _capacity_end(asg: Resource) -> dt.datetime | None:
    """When the group's capacity block ends, from the tag the stack puts on it; None without the tag or
    with a value that is no UTC time (then the group is priced as running all month, the higher figure)."""
    value = asg.tags().get(CAPACITY_ENDS_TAG)
    try:
        return parse_utc_iso(value or "")
    except ValueError:
        return None


def _eks_node_group(reader: Reader, group: Resource) -> None:
    """A managed node group: its scaling config's sizes, the instance type of its launch template (or its
    own instanceTypes), its capacity type."""
    scaling = next(iter(items(group.props.get("scalingConfig"))), {})
    low, high = integer(scaling.get("minSize")), integer(scaling.get("maxSize"))
    template = reader.sibling(group, LAUNCH_TEMPLATE, "launchTemplate")
    types = group.props.get("instanceTypes")
    machine = types[0] if isinstance(types, list) and types else None
    if machine is None and template is not None:
        machine = template.props.get("instanceType")
    if not isinstance(machine, str) or high is None:
        reader.skip(f"{group.name}: no instance type or no max size")
        return
    capacity = EKS_CAPACITY.get(str(group.props.get("capacityType")), "on_demand")
    if capacity == "on_demand" and template is not None:
        capacity = _capacity(template.props)
    if group.tags().get(COMPONENT_TAG) == SYSTEM_NODES_ITEM:
        reader.lines.append(system_nodes_line(machine, high))
        return
    ends_at = _capacity_end(group) if capacity == "capacity_block" else None
    reader.group(group, machine, low if low is not None else high, high, capacity, ends_at=ends_at)


def _eks_cluster(reader: Reader, cluster: Resource) -> None:
    """The control plane's fee per cluster hour (extended support's once the version's standard support
    has ended)."""
    version = cluster.props.get("version")
    sku = fee_sku("aws", version, reader.today) if isinstance(version, str) else None
    if sku is None:
        reader.skip(f"{cluster.name}: no Kubernetes version")
        return
    reader.lines.append(control_plane_line(sku))


def _instance(reader: Reader, instance: Resource) -> None:
    reader.instance(instance, instance.props.get("instanceType"), _capacity(instance.props))


def _fsx(reader: Reader, resource: Resource) -> None:
    props = resource.props
    capacity = integer(props.get("storageCapacity"))
    throughput = integer(props.get("perUnitStorageThroughput"))
    reader.storage(resource, "lustre", str(props.get("deploymentType", "")), capacity, throughput)


def _capacity(props: Mapping[str, Any]) -> CapacityKind:
    """How a launch template or an instance is bought."""
    market = next(iter(items(props.get("instanceMarketOptions"))), {}).get("marketType")
    reservation = next(iter(items(props.get("capacityReservationSpecification"))), {})
    target = next(iter(items(reservation.get("capacityReservationTarget"))), {})
    if market == "spot":
        return "spot"
    if market == "capacity-block":
        return "capacity_block"
    if target.get("capacityReservationId"):
        return "reservation"
    return "on_demand"


PRICING = CloudPricing(
    readers={
        ASG: _asg,
        INSTANCE: _instance,
        FSX_LUSTRE: _fsx,
        EKS_CLUSTER: _eks_cluster,
        EKS_NODE_GROUP: _eks_node_group,
    },
    zones={SUBNET: lambda props: props.get("availabilityZoneId") or props.get("availabilityZone")},
)
