"""A group of identical AWS GPU nodes: launch template with the full EFA layout, placement, capacity.

The launch template's network interfaces follow the catalog's layout for the machine type (p5.48xlarge:
an ENA primary on card 0, efa-only on card 0 device 1 and on cards 1-31), which is what gives NCCL
the machine's full fabric bandwidth. Nodes get IMDSv2 only, an encrypted root volume, no public IP,
and an instance role that can use SSM and read the cluster bucket, nothing more.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_aws as aws

from clusterfab.blueprint.models import NodeGroupSpec
from clusterfab.catalog import Catalog
from clusterfab.catalog.models import AwsMachineType
from clusterfab.core import vocab as tagging
from clusterfab.resolve import fabric_of, max_size, min_size, placement_of
from components._naming import child

TYPE = "clusterfab:compute:AwsGpuNodeGroup"


@dataclass(frozen=True)
class InterfacePlan:
    network_card_index: int
    device_index: int
    interface_type: Literal["interface", "efa", "efa-only"]


@dataclass(frozen=True)
class NodeGroupPlan:
    """Pure decisions for one node group."""

    name: str
    machine_type: str
    image: str
    root_device: str
    boot_disk_gib: int
    interfaces: tuple[InterfacePlan, ...]
    fabric: str | None
    placement: Literal["compact", "none"]
    min_size: int
    max_size: int
    desired_size: int
    autoscaled: bool
    market: Literal["spot", "capacity-block"] | None
    reservation_id: str | None


def plan_node_group(spec: NodeGroupSpec, machine: AwsMachineType, catalog: Catalog) -> NodeGroupPlan:
    fabric = fabric_of(spec, machine)
    if fabric is None:
        interfaces: tuple[InterfacePlan, ...] = (InterfacePlan(0, 0, "interface"),)
    else:
        interfaces = tuple(
            InterfacePlan(i.network_card_index, i.device_index, i.interface_type)
            for i in catalog.efa_interfaces(machine)
        )
    image = catalog.default_image("aws", machine.cpu_architecture)
    kind = spec.capacity.kind
    market: Literal["spot", "capacity-block"] | None = None
    if kind == "spot":
        market = "spot"
    elif kind == "capacity_block":
        market = "capacity-block"
    return NodeGroupPlan(
        name=spec.name,
        machine_type=machine.name,
        image=spec.image or image.image,
        root_device=image.root_device or "/dev/sda1",
        boot_disk_gib=spec.boot_disk_gib,
        interfaces=interfaces,
        fabric=fabric,
        placement=placement_of(spec, machine),
        min_size=min_size(spec),
        max_size=max_size(spec),
        desired_size=min_size(spec),
        autoscaled=spec.autoscaling is not None,
        market=market,
        reservation_id=spec.capacity.reservation if kind in {"reservation", "capacity_block"} else None,
    )


@dataclass(frozen=True)
class AwsGpuNodeGroupArgs:
    plan: NodeGroupPlan
    cluster: str
    stack: str
    subnet_id: pulumi.Input[str]
    security_group_id: pulumi.Input[str]
    bucket_arn: pulumi.Input[str]
    boot_script: pulumi.Input[str]
    """What nodes run at every boot (clusterfab.bootstrap renders it); base64-encoded as user-data."""
    tags: Mapping[str, str] = field(default_factory=dict)


def _assume_role_policy() -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
            ],
        }
    )


def _node_policy(bucket_arn: str, node_group_tag: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "ReadClusterBucket",
                    "Effect": "Allow",
                    "Action": ["s3:GetObject", "s3:GetObjectVersion"],
                    "Resource": f"{bucket_arn}/*",
                },
                {
                    "Sid": "ListClusterBucket",
                    "Effect": "Allow",
                    "Action": "s3:ListBucket",
                    "Resource": bucket_arn,
                },
                # A node may only set its health tag, and only on instances of its own node group.
                {
                    "Sid": "RecordHealth",
                    "Effect": "Allow",
                    "Action": "ec2:CreateTags",
                    "Resource": "arn:aws:ec2:*:*:instance/*",
                    "Condition": {
                        "StringEquals": {f"aws:ResourceTag/{tagging.NODE_GROUP_TAG}": node_group_tag},
                        "ForAllValues:StringEquals": {"aws:TagKeys": [tagging.HEALTH_TAG]},
                    },
                },
            ],
        }
    )


class AwsGpuNodeGroup(pulumi.ComponentResource):
    """Launch template (EFA layout, IMDSv2, encrypted disk), placement group, IAM, auto scaling group."""

    auto_scaling_group_name: pulumi.Output[str]
    """The auto scaling group that owns the nodes."""
    launch_template_id: pulumi.Output[str]
    """The launch template the nodes boot from."""
    role_arn: pulumi.Output[str]
    """The nodes' instance role."""

    def __init__(
        self, name: str, args: AwsGpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        plan = args.plan
        own = pulumi.ResourceOptions(parent=self)
        node_tags = {**args.tags, tagging.NODE_GROUP_TAG: plan.name, "Name": name}

        role = aws.iam.Role(
            child(name, "role"),
            assume_role_policy=_assume_role_policy(),
            tags=args.tags,
            description=f"clusterfab nodes of {name}",
            opts=own,
        )
        aws.iam.RolePolicyAttachment(
            child(name, "ssm"),
            role=role.name,
            policy_arn="arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
            opts=own,
        )
        aws.iam.RolePolicy(
            child(name, "node-policy"),
            role=role.id,
            opts=own,
            policy=pulumi.Output.from_input(args.bucket_arn).apply(lambda arn: _node_policy(arn, plan.name)),
        )
        profile = aws.iam.InstanceProfile(child(name, "profile"), role=role.name, tags=args.tags, opts=own)

        placement = None
        if plan.placement == "compact":
            placement_group = aws.ec2.PlacementGroup(
                child(name, "placement"), strategy="cluster", tags=args.tags, opts=own
            )
            placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=placement_group.name)

        interfaces = [
            aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                network_card_index=i.network_card_index,
                device_index=i.device_index,
                interface_type=i.interface_type,
                security_groups=[args.security_group_id],
                delete_on_termination="true",
                associate_public_ip_address="false",
            )
            for i in plan.interfaces
        ]
        market = None
        if plan.market == "spot":
            market = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
                market_type="spot",
                spot_options=aws.ec2.LaunchTemplateInstanceMarketOptionsSpotOptionsArgs(
                    instance_interruption_behavior="terminate", spot_instance_type="one-time"
                ),
            )
        elif plan.market == "capacity-block":
            market = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
        reservation = None
        if plan.reservation_id is not None:
            reservation = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    capacity_reservation_id=plan.reservation_id
                )
            )

        user_data = pulumi.Output.from_input(args.boot_script).apply(
            lambda script: base64.b64encode(script.encode()).decode()
        )

        template = aws.ec2.LaunchTemplate(
            child(name, "lt"),
            image_id=plan.image,
            instance_type=plan.machine_type,
            network_interfaces=interfaces,
            # Containers on the node (training jobs, exporters) need one more hop to reach IMDS.
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                http_put_response_hop_limit=2,
                instance_metadata_tags="enabled",
            ),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=plan.root_device,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=plan.boot_disk_gib,
                        volume_type="gp3",
                        encrypted="true",
                        delete_on_termination="true",
                    ),
                )
            ],
            iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=profile.arn),
            placement=placement,
            instance_market_options=market,
            capacity_reservation_specification=reservation,
            user_data=user_data,
            ebs_optimized="true",
            update_default_version=True,
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=node_tags)
                for kind in ("instance", "volume", "network-interface")
            ],
            tags=args.tags,
            opts=own,
        )

        group = aws.autoscaling.Group(
            child(name, "asg"),
            min_size=plan.min_size,
            max_size=plan.max_size,
            desired_capacity=plan.desired_size,
            vpc_zone_identifiers=[args.subnet_id],
            launch_template=aws.autoscaling.GroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)
            ),
            capacity_rebalance=plan.market == "spot",
            health_check_type="EC2",
            # GPU capacity (and capacity blocks before their start) can take long to arrive; do not
            # make `pulumi up` wait for it.
            wait_for_capacity_timeout="0",
            tags=[
                aws.autoscaling.GroupTagArgs(key=k, value=v, propagate_at_launch=False)
                for k, v in sorted(node_tags.items())
            ],
            opts=pulumi.ResourceOptions(
                parent=self,
                # An autoscaled group's size belongs to the autoscaler once it runs.
                ignore_changes=["desiredCapacity"] if plan.autoscaled else None,
            ),
        )
        self.auto_scaling_group_name = group.name
        self.launch_template_id = template.id
        self.role_arn = role.arn
        self.register_outputs(
            {"auto_scaling_group_name": group.name, "launch_template_id": template.id, "role_arn": role.arn}
        )
