"""A group of identical AWS GPU nodes: launch template with the full EFA layout, placement, capacity.

The launch template's network interfaces are the machine type's EFA layout (p5.48xlarge: an ENA
primary on card 0, efa-only on card 0 device 1 and on cards 1-31), which is what gives NCCL the
machine's full fabric bandwidth. Nodes get IMDSv2 only, an encrypted root volume, no public IP,
and an instance role that can use Session Manager, read the cluster bucket and tag itself with its
health, nothing more.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_aws as aws

from clusterfab.core import vocab as tagging
from components._errors import check_inputs
from components._hooks import delete_hooks
from components._naming import child
from components.aws._iam import SESSION_MANAGER_STATEMENT, ec2_trust_policy, read_bucket_statements

TYPE = "clusterfab:compute:AwsGpuNodeGroup"

InterfaceType = Literal["interface", "efa", "efa-only"]
Market = Literal["on-demand", "spot", "capacity-block"]


@dataclass(frozen=True)
class NetworkInterface:
    """One launch-template network interface: where it sits and what kind it is."""

    network_card_index: int
    device_index: int
    interface_type: InterfaceType


PRIMARY_ONLY = (NetworkInterface(0, 0, "interface"),)
"""A single ENA interface: nodes without a fabric."""


@dataclass(frozen=True, kw_only=True)
class AwsGpuNodeGroupArgs:
    """Inputs of AwsGpuNodeGroup. Sizes default to one fixed node; capacity to on-demand."""

    node_group: str
    """The group's name: the `clusterfab-node-group` tag that inventories and health records use."""
    instance_type: str
    image_id: str
    """An AMI id, or `resolve:ssm:<parameter>` to take the parameter's AMI at each launch."""
    subnet_id: pulumi.Input[str]
    security_group_id: pulumi.Input[str]
    """Applied to every interface (the EFA group must allow all traffic within itself)."""
    bucket_arn: pulumi.Input[str]
    """The cluster bucket nodes read their bootstrap bundle from (the only bucket they may read)."""
    bucket_kms_key_arn: str | None = None
    """The bucket's customer-managed key, which nodes then may decrypt with through S3."""
    boot_script: pulumi.Input[str] = ""
    """What nodes run at boot, as plain text; it is base64-encoded into the user-data."""
    network_interfaces: Sequence[NetworkInterface] = PRIMARY_ONLY
    """The machine's EFA layout (see the module docstring); default a single ENA interface."""
    min_size: int = 1
    max_size: int = 1
    desired_size: int | None = None
    """Default `min_size`."""
    autoscaled: bool = False
    """The group's size belongs to an autoscaler: later updates leave the desired capacity alone."""
    market: Market = "on-demand"
    capacity_reservation_id: str | None = None
    """A capacity reservation (or capacity block, with market capacity-block) to launch into."""
    placement_group: bool = False
    """Launch into a new cluster placement group (not with a reservation: it can strand capacity)."""
    root_device_name: str = "/dev/sda1"
    """The image's root device (Ubuntu AMIs: /dev/sda1)."""
    root_volume_gib: int = 200
    root_volume_type: str = "gp3"
    kms_key_arn: str | None = None
    """A customer-managed KMS key (its ARN) for the root volumes; default the account's EBS default key.
    Its key policy must let the Auto Scaling service-linked role use it, or instances fail to launch."""
    metadata_hop_limit: int = 1
    """IMDSv2 response hop limit: 1 keeps the instance role out of reach of containers on a bridge
    network (Checkov CKV_AWS_341); host-network containers (enroot / pyxis) still reach it. The policy
    pack (clusterfab-imds-hop-limit) refuses any other value."""
    tags: Mapping[str, str] = field(default_factory=dict)
    before_delete: Sequence[pulumi.ResourceHook] = ()
    """Hooks the engine runs before it deletes the auto scaling group (Pulumi's `hooks` resource option):
    the group depends on the launch template (and through it the placement group, instance profile and
    security group) and on the subnet, so a destroy deletes it before all of them, and what a hook
    removes here no longer holds them. A Slurm cluster binds the teardown of the instances Slurm
    created. Delete hooks make `pulumi destroy` need `--run-program`."""


def scaling_group_name(name: str) -> str:
    """The logical name of the auto scaling group of the node group component `name` (what a delete
    hook is called with)."""
    return child(name, "asg")


def _problems(args: AwsGpuNodeGroupArgs) -> list[tuple[str, str]]:
    problems = []
    if not 0 <= args.min_size <= args.max_size:
        problems.append(("min_size", f"must be between 0 and max_size ({args.max_size})"))
    if args.market == "capacity-block" and args.capacity_reservation_id is None:
        problems.append(("capacity_reservation_id", "a capacity block is launched into its reservation id"))
    first = args.network_interfaces[0] if args.network_interfaces else None
    if (
        first is None
        or (first.network_card_index, first.device_index) != (0, 0)
        or first.interface_type == "efa-only"
    ):
        # The primary interface carries the node's IP address: efa-only interfaces have none.
        problems.append(("network_interfaces", "the first interface must be card 0, device 0, with an IP"))
    return problems


def template_interfaces(
    interfaces: Sequence[NetworkInterface], security_groups: Sequence[pulumi.Input[str]]
) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
    """A launch template's network interfaces for an EFA layout, each in `security_groups`."""
    return [
        aws.ec2.LaunchTemplateNetworkInterfaceArgs(
            network_card_index=i.network_card_index,
            device_index=i.device_index,
            interface_type=i.interface_type,
            security_groups=list(security_groups),
            delete_on_termination="true",
            # No associate_public_ip_address: EC2 refuses the field on multi-interface launches
            # ("cannot be specified when launching with multiple network interfaces"); the
            # subnet's mapPublicIpOnLaunch=false keeps public addresses off.
        )
        for i in interfaces
    ]


def _node_policy(bucket_arn: str, tags: Mapping[str, str], bucket_kms_key_arn: str | None = None) -> str:
    # A node may set only its health tag, only on itself, and only while it belongs to this stack's
    # node group: `${ec2:SourceInstanceARN}` is the instance whose role credentials sign the call.
    # IAM resolves service-specific keys as policy variables on requests to resources that support
    # them (IAM User Guide, "Policy variables"); if it ever cannot, the statement matches nothing.
    owner = {
        f"aws:ResourceTag/{key}": tags[key]
        for key in (tagging.NODE_GROUP_TAG, tagging.STACK_TAG, tagging.BLUEPRINT_TAG)
        if key in tags
    }
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                *read_bucket_statements(bucket_arn, bucket_kms_key_arn),
                {
                    "Sid": "RecordOwnHealth",
                    "Effect": "Allow",
                    "Action": "ec2:CreateTags",
                    "Resource": "${ec2:SourceInstanceARN}",
                    "Condition": {
                        "StringEquals": owner,
                        "ForAllValues:StringEquals": {"aws:TagKeys": [tagging.HEALTH_TAG]},
                    },
                },
                SESSION_MANAGER_STATEMENT,
            ],
        }
    )


def _market(args: AwsGpuNodeGroupArgs) -> aws.ec2.LaunchTemplateInstanceMarketOptionsArgs | None:
    if args.market == "spot":
        return aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
            market_type="spot",
            spot_options=aws.ec2.LaunchTemplateInstanceMarketOptionsSpotOptionsArgs(
                instance_interruption_behavior="terminate", spot_instance_type="one-time"
            ),
        )
    if args.market == "capacity-block":
        return aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
    return None


def _reservation(
    args: AwsGpuNodeGroupArgs,
) -> aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs | None:
    if args.capacity_reservation_id is None:
        return None
    return aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
        capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
            capacity_reservation_id=args.capacity_reservation_id
        )
    )


class AwsGpuNodeGroup(pulumi.ComponentResource):
    """Launch template (EFA layout, IMDSv2, encrypted disk), placement group, IAM, auto scaling group."""

    auto_scaling_group_name: pulumi.Output[str]
    """The auto scaling group that owns the nodes."""
    launch_template_id: pulumi.Output[str]
    """The launch template the nodes boot from."""
    launch_template_arn: pulumi.Output[str]
    role_arn: pulumi.Output[str]
    """The nodes' instance role."""
    role_name: pulumi.Output[str]
    instance_profile_arn: pulumi.Output[str]
    """The nodes' instance profile: only a principal that may pass the role can launch an instance with it,
    and its name is unique to the deployment (auto-named), so it tells the group's instances apart from
    any other that carries the same tags."""

    def __init__(
        self, name: str, args: AwsGpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        self._own = pulumi.ResourceOptions(parent=self)
        self._node_tags = {**args.tags, tagging.NODE_GROUP_TAG: args.node_group, "Name": name}
        role, profile = self._identity()
        template = self._launch_template(profile)
        group = self._auto_scaling_group(template)
        self.auto_scaling_group_name = group.name
        self.launch_template_id = template.id
        self.launch_template_arn = template.arn
        self.role_arn = role.arn
        self.role_name = role.name
        self.instance_profile_arn = profile.arn
        self.register_outputs(
            {"auto_scaling_group_name": group.name, "launch_template_id": template.id, "role_arn": role.arn}
        )

    def _identity(self) -> tuple[aws.iam.Role, aws.iam.InstanceProfile]:
        name, args, own = self._name, self._args, self._own
        role = aws.iam.Role(
            child(name, "role"),
            assume_role_policy=ec2_trust_policy(),
            tags=args.tags,
            description=f"clusterfab nodes of {name}",
            opts=own,
        )
        aws.iam.RolePolicy(
            child(name, "node-policy"),
            role=role.id,
            opts=own,
            policy=pulumi.Output.from_input(args.bucket_arn).apply(
                lambda arn: _node_policy(arn, self._node_tags, args.bucket_kms_key_arn)
            ),
        )
        profile = aws.iam.InstanceProfile(child(name, "profile"), role=role.name, tags=args.tags, opts=own)
        return role, profile

    def _launch_template(self, profile: aws.iam.InstanceProfile) -> aws.ec2.LaunchTemplate:
        name, args, own = self._name, self._args, self._own
        placement = None
        if args.placement_group:
            placement_group = aws.ec2.PlacementGroup(
                child(name, "placement"), strategy="cluster", tags=args.tags, opts=own
            )
            placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=placement_group.name)
        interfaces = template_interfaces(args.network_interfaces, [args.security_group_id])
        user_data = pulumi.Output.from_input(args.boot_script).apply(
            lambda script: base64.b64encode(script.encode()).decode()
        )
        return aws.ec2.LaunchTemplate(
            child(name, "lt"),
            image_id=args.image_id,
            instance_type=args.instance_type,
            network_interfaces=interfaces,
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                http_put_response_hop_limit=args.metadata_hop_limit,
                instance_metadata_tags="enabled",
            ),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=args.root_device_name,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=args.root_volume_gib,
                        volume_type=args.root_volume_type,
                        encrypted="true",
                        kms_key_id=args.kms_key_arn,
                        delete_on_termination="true",
                    ),
                )
            ],
            iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=profile.arn),
            placement=placement,
            instance_market_options=_market(args),
            capacity_reservation_specification=_reservation(args),
            user_data=user_data,
            ebs_optimized="true",
            update_default_version=True,
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=self._node_tags)
                for kind in ("instance", "volume", "network-interface")
            ],
            tags=args.tags,
            opts=own,
        )

    def _auto_scaling_group(self, template: aws.ec2.LaunchTemplate) -> aws.autoscaling.Group:
        args = self._args
        return aws.autoscaling.Group(
            scaling_group_name(self._name),
            min_size=args.min_size,
            max_size=args.max_size,
            desired_capacity=args.min_size if args.desired_size is None else args.desired_size,
            vpc_zone_identifiers=[args.subnet_id],
            launch_template=aws.autoscaling.GroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)
            ),
            capacity_rebalance=args.market == "spot",
            health_check_type="EC2",
            # GPU capacity (and capacity blocks before their start) can take long to arrive; do not
            # make `pulumi up` wait for it.
            wait_for_capacity_timeout="0",
            tags=[
                aws.autoscaling.GroupTagArgs(key=k, value=v, propagate_at_launch=False)
                for k, v in sorted(self._node_tags.items())
            ],
            opts=pulumi.ResourceOptions(
                parent=self,
                # An autoscaled group's size belongs to the autoscaler once it runs.
                ignore_changes=["desiredCapacity"] if args.autoscaled else None,
                hooks=delete_hooks(args.before_delete),
            ),
        )
