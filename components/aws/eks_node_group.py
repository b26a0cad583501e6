"""An EKS managed node group on a launch template with the machine's full EFA layout.

The launch template carries what a managed node group leaves to it: the network interfaces (the same EFA
layout as the auto scaling groups' templates, in the node security group, which lets EFA traffic flow
within itself, and the cluster's security group, which EKS no longer adds once a template names security
groups), IMDSv2 only with a hop limit of 1 (pods take AWS credentials from Pod Identity, never from the
node's role), an encrypted root volume, a cluster placement group, and for a capacity block the market
type and the reservation EKS requires. It names no image, subnet or instance profile: the node group
chooses the EKS AMI by its AMI type, places nodes in its subnet and makes the instance profile of the node
role (EKS refuses templates that set SubnetId or IamInstanceProfile). Spot is the node group's capacity
type, never the template's market (EKS refuses RequestSpotInstances in a template).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_aws as aws

from clusterfab.core import vocab as tagging
from components._errors import check_inputs
from components._naming import child
from components.aws.node_group import PRIMARY_ONLY, NetworkInterface, template_interfaces

TYPE = "clusterfab:kubernetes:AwsEksNodeGroup"

CapacityType = Literal["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"]
TaintEffect = Literal["NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"]

ROOT_DEVICE = "/dev/xvda"
"""The root device of the EKS AL2023 AMIs (awslabs/amazon-eks-ami templates/al2023/template.json:
ami_block_device_mappings device_name)."""


@dataclass(frozen=True)
class Taint:
    key: str
    effect: TaintEffect
    value: str | None = None


@dataclass(frozen=True, kw_only=True)
class AwsEksNodeGroupArgs:
    """Inputs of AwsEksNodeGroup."""

    cluster_name: pulumi.Input[str]
    node_group: str
    """The blueprint's node group (its label and tag)."""
    version: str
    """The Kubernetes minor version of the nodes (the control plane's)."""
    node_role_arn: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    security_group_ids: Sequence[pulumi.Input[str]]
    instance_type: str
    ami_type: str
    """An EKS AMI type: AL2023_x86_64_NVIDIA for GPU nodes, AL2023_x86_64_STANDARD for the system nodes."""
    capacity_type: CapacityType = "ON_DEMAND"
    capacity_reservation_id: str | None = None
    """A capacity block (with CAPACITY_BLOCK) or an On-Demand Capacity Reservation to launch into."""
    network_interfaces: Sequence[NetworkInterface] = PRIMARY_ONLY
    placement_group: bool = False
    """Launch into a new cluster placement group."""
    min_size: int = 1
    max_size: int = 1
    desired_size: int | None = None
    """Default `min_size`."""
    autoscaled: bool = False
    discoverable: bool = True
    """Whether its instances carry the node group tag the monitoring host's service discovery finds GPU
    nodes by (the system node group's do not: it runs no GPU exporters)."""
    auto_repair: bool = True
    """EKS node auto repair: nodes the node monitoring agent reports unhealthy (a GPU's XID errors and
    failed DCGM diagnostics set AcceleratedHardwareReady false) are rebooted or replaced after 10 minutes
    (Amazon EKS UG, "Automatically repair nodes in EKS clusters")."""
    """The group's size belongs to an autoscaler: later updates leave the desired size alone."""
    root_volume_gib: int = 200
    root_volume_type: str = "gp3"
    kms_key_arn: str | None = None
    """A customer-managed key for the root volumes; default the account's EBS default key."""
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Taint] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    after: Sequence[pulumi.Resource] = ()
    """What the node group waits for: the add-ons nodes need to become ready (the CNI)."""


def _problems(args: AwsEksNodeGroupArgs) -> list[tuple[str, str]]:
    problems = []
    if not 0 <= args.min_size <= args.max_size or args.max_size < 1:
        problems.append(
            ("min_size", f"must be between 0 and max_size ({args.max_size}), max_size at least 1")
        )
    if args.capacity_type == "CAPACITY_BLOCK" and args.capacity_reservation_id is None:
        problems.append(("capacity_reservation_id", "a capacity block is launched into its reservation id"))
    if args.capacity_type == "SPOT" and args.capacity_reservation_id is not None:
        problems.append(("capacity_reservation_id", "spot capacity launches into no reservation"))
    first = args.network_interfaces[0] if args.network_interfaces else None
    if (
        first is None
        or (first.network_card_index, first.device_index) != (0, 0)
        or first.interface_type == "efa-only"
    ):
        problems.append(("network_interfaces", "the first interface must be card 0, device 0, with an IP"))
    return problems


def _market(args: AwsEksNodeGroupArgs) -> aws.ec2.LaunchTemplateInstanceMarketOptionsArgs | None:
    # EKS User Guide, "Create a managed node group with Capacity Blocks for ML": the template's
    # InstanceMarketOptions MarketType is "capacity-block".
    if args.capacity_type == "CAPACITY_BLOCK":
        return aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
    return None


def _reservation(
    args: AwsEksNodeGroupArgs,
) -> aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs | None:
    if args.capacity_reservation_id is None:
        return None
    return aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
        capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
            capacity_reservation_id=args.capacity_reservation_id
        )
    )


class AwsEksNodeGroup(pulumi.ComponentResource):
    """Launch template, placement group and the managed node group."""

    arn: pulumi.Output[str]
    """The managed node group."""
    launch_template_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: AwsEksNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        found = {tagging.NODE_GROUP_TAG: args.node_group} if args.discoverable else {}
        self._node_tags = {**args.tags, **found, "Name": name}
        template = self._launch_template()
        group = self._node_group(template)
        self.arn = group.arn
        self.launch_template_id = template.id
        self.register_outputs({"arn": group.arn, "launch_template_id": template.id})

    def _launch_template(self) -> aws.ec2.LaunchTemplate:
        name, args = self._name, self._args
        own = pulumi.ResourceOptions(parent=self)
        placement = None
        if args.placement_group:
            group = aws.ec2.PlacementGroup(
                child(name, "placement"), strategy="cluster", tags=args.tags, opts=own
            )
            placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=group.name)
        return aws.ec2.LaunchTemplate(
            child(name, "lt"),
            network_interfaces=template_interfaces(args.network_interfaces, args.security_group_ids),
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                http_put_response_hop_limit=1,
                instance_metadata_tags="enabled",
            ),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=ROOT_DEVICE,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=args.root_volume_gib,
                        volume_type=args.root_volume_type,
                        encrypted="true",
                        kms_key_id=args.kms_key_arn,
                        delete_on_termination="true",
                    ),
                )
            ],
            instance_type=args.instance_type,
            placement=placement,
            instance_market_options=_market(args),
            capacity_reservation_specification=_reservation(args),
            ebs_optimized="true",
            update_default_version=True,
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=self._node_tags)
                for kind in ("instance", "volume", "network-interface")
            ],
            tags=args.tags,
            opts=own,
        )

    def _node_group(self, template: aws.ec2.LaunchTemplate) -> aws.eks.NodeGroup:
        args = self._args
        return aws.eks.NodeGroup(
            child(self._name, "nodes"),
            cluster_name=args.cluster_name,
            version=args.version,
            node_role_arn=args.node_role_arn,
            subnet_ids=[args.subnet_id],
            ami_type=args.ami_type,
            capacity_type=args.capacity_type,
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)
            ),
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=args.min_size,
                max_size=args.max_size,
                desired_size=args.min_size if args.desired_size is None else args.desired_size,
            ),
            labels=dict(args.labels),
            node_repair_config=aws.eks.NodeGroupNodeRepairConfigArgs(enabled=args.auto_repair),
            taints=[
                aws.eks.NodeGroupTaintArgs(key=t.key, value=t.value, effect=t.effect) for t in args.taints
            ]
            or None,
            tags=args.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                # An autoscaled group's size belongs to the autoscaler once it runs.
                ignore_changes=["scalingConfig.desiredSize"] if args.autoscaled else None,
                depends_on=list(args.after),
            ),
        )
