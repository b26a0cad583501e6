"""A group of identical GCP GPU nodes: instance template with one NIC per fabric network, a zonal MIG,
compact placement through a workload policy, and spot / flex-start / reservation capacity.

The template's NICs follow the catalog: the general gVNIC NICs first (the system network is nic0),
then one NIC per GPU VPC (TCPX / TCPXO, gVNIC) or per RDMA subnet (RoCE, MRDMA). No NIC has an access
config, so nodes have no external IP. GPUs cannot live-migrate, so host maintenance terminates the VM.
Nodes boot with vTPM and integrity monitoring (Secure Boot off: the driver's DKMS modules are
unsigned), from the catalog's boot disk type, with OS Login, guest attributes (where they record their
health) and a startup script that runs the node-software playbook from the cluster's bucket.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_gcp as gcp

from clusterfab.blueprint.models import NodeGroupSpec
from clusterfab.catalog import Catalog
from clusterfab.catalog.models import GcpMachineType
from clusterfab.core import vocab as tagging
from clusterfab.core.vocab import Fabric
from clusterfab.resolve import fabric_of, max_size, min_size, placement_of
from components._naming import child, physical
from components.gcp import GcpPlanError
from components.gcp.identity import CLOUD_PLATFORM_SCOPE, account_id, node_service_account

TYPE = "clusterfab:compute:GcpGpuNodeGroup"

TOPOLOGY_DISTANCE: dict[int, str] = {1: "SUBBLOCK", 2: "BLOCK", 3: "CLUSTER"}
"""Blueprint placement_max_distance -> the workload policy's maxTopologyDistance."""
RESERVATION_KEY = "compute.googleapis.com/reservation-name"
BASE_INSTANCE_NAME_MAX = 58
"""A zonal MIG appends `-xxxx` to its base instance name; VM names stay within 63 characters."""

GPU_UTILIZATION_METRIC = "agent.googleapis.com/gpu/utilization"
"""Per-GPU utilization in percent, reported by the Ops Agent (NVML)."""
GPU_UTILIZATION_TARGET = 60.0
NODE_INIT_SECONDS = 900
"""A GPU node boots, installs its stack and mounts storage before its metrics mean anything."""
SCALE_IN_WINDOW_SECONDS = 1800

Provisioning = Literal["STANDARD", "SPOT", "FLEX_START"]
NicType = Literal["GVNIC", "VIRTIO_NET", "MRDMA"]


@dataclass(frozen=True)
class NicPlan:
    network: Literal["general", "fabric"]
    index: int
    """Which general network, or which entry of the fabric's NIC subnets."""
    nic_type: NicType


@dataclass(frozen=True)
class NodeGroupPlan:
    """Pure decisions for one node group."""

    name: str
    machine_type: str
    image: str
    boot_disk_type: str
    boot_disk_gib: int
    fabric: Fabric | None
    nics: tuple[NicPlan, ...]
    placement: Literal["compact", "none"]
    max_topology_distance: str | None
    accelerator_topology: str | None
    min_size: int
    max_size: int
    target_size: int
    autoscaled: bool
    provisioning_model: Provisioning
    max_run_duration_seconds: int | None
    reservation: str | None

    @property
    def general_nics(self) -> int:
        return sum(1 for n in self.nics if n.network == "general")

    @property
    def gpu_nics(self) -> int:
        return sum(1 for n in self.nics if n.network == "fabric")


def plan_node_group(spec: NodeGroupSpec, machine: GcpMachineType, catalog: Catalog) -> NodeGroupPlan:
    """Decide NICs, placement, size and capacity for a group; raise GcpPlanError for what GCP cannot do."""
    net = machine.network
    fabric = fabric_of(spec, machine)
    nics: list[NicPlan] = [NicPlan("general", 0, net.general_nic_type)]
    if fabric is not None:
        nics += [NicPlan("general", i, net.general_nic_type) for i in range(1, net.general_vpcs)]
        nics += [NicPlan("fabric", i, net.gpu_nic_type) for i in range(net.gpu_vpcs + net.rdma_subnets)]

    size_max, size_min = max_size(spec), min_size(spec)
    placement = placement_of(spec, machine)
    distance: str | None = None
    accelerator_topology: str | None = None
    if placement == "compact":
        limits = machine.placement
        wanted = spec.placement_max_distance
        if limits.accelerator_topology is not None:
            if wanted is not None:
                raise GcpPlanError(f"{machine.name} places by accelerator topology, not by max distance")
            accelerator_topology = limits.accelerator_topology
        elif wanted is not None:
            if limits.min_max_distance is not None and wanted < limits.min_max_distance:
                raise GcpPlanError(f"{machine.name} does not support placement max distance {wanted}")
            distance = TOPOLOGY_DISTANCE[wanted]
        limit = limits.limit(wanted)
        if size_max > limit:
            raise GcpPlanError(
                f"node group {spec.name}: compact placement holds at most {limit} {machine.name} VMs, "
                f"the group can have {size_max}"
            )

    kind = spec.capacity.kind
    model: Provisioning
    if kind in {"on_demand", "reservation"}:
        model = "STANDARD"
    elif kind == "spot":
        model = "SPOT"
    elif kind == "flex_start":
        model = "FLEX_START"
        if spec.autoscaling is not None:
            raise GcpPlanError(
                f"node group {spec.name}: flex-start VMs arrive all at once in a fixed-size group; "
                "use count instead of autoscaling"
            )
        if spec.capacity.max_run_duration_hours is None:
            raise GcpPlanError(f"node group {spec.name}: flex_start needs capacity.max_run_duration_hours")
    else:
        raise GcpPlanError(f"node group {spec.name}: GCP has no {kind} capacity")
    hours = spec.capacity.max_run_duration_hours if model == "FLEX_START" else None

    return NodeGroupPlan(
        name=spec.name,
        machine_type=machine.name,
        image=spec.image or catalog.default_image("gcp", machine.cpu_architecture).image,
        boot_disk_type=machine.boot_disk_type,
        boot_disk_gib=spec.boot_disk_gib,
        fabric=fabric,
        nics=tuple(nics),
        placement=placement,
        max_topology_distance=distance,
        accelerator_topology=accelerator_topology,
        min_size=size_min,
        max_size=size_max,
        target_size=size_min,
        autoscaled=spec.autoscaling is not None,
        provisioning_model=model,
        max_run_duration_seconds=hours * 3600 if hours is not None else None,
        reservation=spec.capacity.reservation if kind == "reservation" else None,
    )


@dataclass(frozen=True)
class GcpGpuNodeGroupArgs:
    plan: NodeGroupPlan
    cluster: str
    stack: str
    project: str
    region: str
    zone: str
    general_subnetworks: Sequence[pulumi.Input[str]]
    """Subnets of the general networks, general network i at index i."""
    fabric_subnetworks: Sequence[pulumi.Input[str]]
    """The fabric's NIC subnets in NIC order (empty without a fabric)."""
    bucket_name: pulumi.Input[str]
    startup_script: pulumi.Input[str] = ""
    """What the VMs run at every boot (clusterfab.bootstrap renders it), as the startup-script."""
    labels: Mapping[str, str] = field(default_factory=dict)


def _scheduling(plan: NodeGroupPlan) -> gcp.compute.InstanceTemplateSchedulingArgs:
    preemptible = plan.provisioning_model == "SPOT"
    interruptible = plan.provisioning_model in {"SPOT", "FLEX_START"}
    return gcp.compute.InstanceTemplateSchedulingArgs(
        provisioning_model=plan.provisioning_model,
        on_host_maintenance="TERMINATE",
        automatic_restart=not interruptible,
        preemptible=True if preemptible else None,
        # DELETE, not STOP: the MIG recreates deleted VMs when capacity returns, and a stopped spot or
        # flex-start VM would hold its slot in the group while it runs nothing.
        instance_termination_action="DELETE" if interruptible else None,
        max_run_duration=(
            gcp.compute.InstanceTemplateSchedulingMaxRunDurationArgs(seconds=plan.max_run_duration_seconds)
            if plan.max_run_duration_seconds is not None
            else None
        ),
    )


def _reservation_affinity(plan: NodeGroupPlan) -> gcp.compute.InstanceTemplateReservationAffinityArgs | None:
    if plan.reservation is not None:
        return gcp.compute.InstanceTemplateReservationAffinityArgs(
            type="SPECIFIC_RESERVATION",
            specific_reservation=gcp.compute.InstanceTemplateReservationAffinitySpecificReservationArgs(
                key=RESERVATION_KEY, values=[plan.reservation]
            ),
        )
    if plan.provisioning_model == "FLEX_START":
        # Flex-start capacity comes from the Dynamic Workload Scheduler, never from a reservation.
        return gcp.compute.InstanceTemplateReservationAffinityArgs(type="NO_RESERVATION")
    return None


def _autoscaling_policy(plan: NodeGroupPlan) -> gcp.compute.AutoscalerAutoscalingPolicyArgs:
    return gcp.compute.AutoscalerAutoscalingPolicyArgs(
        min_replicas=plan.min_size,
        max_replicas=plan.max_size,
        mode="ON",
        cooldown_period=NODE_INIT_SECONDS,
        # GPU utilization is the signal: CPU load says little about a GPU node's work. The metric has
        # one series per GPU; in data-parallel training every GPU of a node works alike, so GPU 0
        # stands for its node (the autoscaler needs one series per VM).
        metrics=[
            gcp.compute.AutoscalerAutoscalingPolicyMetricArgs(
                name=GPU_UTILIZATION_METRIC,
                filter='resource.type = "gce_instance" AND metric.labels.gpu_number = "0"',
                target=GPU_UTILIZATION_TARGET,
                type="GAUGE",
            )
        ],
        # Scaling in deletes VMs that may hold part of a running job: at most one node per window.
        scale_in_control=gcp.compute.AutoscalerAutoscalingPolicyScaleInControlArgs(
            max_scaled_in_replicas=gcp.compute.AutoscalerAutoscalingPolicyScaleInControlMaxScaledInReplicasArgs(
                fixed=1
            ),
            time_window_sec=SCALE_IN_WINDOW_SECONDS,
        ),
    )


class GcpGpuNodeGroup(pulumi.ComponentResource):
    """Service account, workload policy, instance template (NICs per fabric), zonal MIG, autoscaler."""

    instance_group_manager_name: pulumi.Output[str]
    """The managed instance group that owns the nodes."""
    instance_template: pulumi.Output[str]
    """The unique self link of the template the nodes boot from."""
    service_account_email: pulumi.Output[str]
    """The nodes' service account."""

    def __init__(
        self, name: str, args: GcpGpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        plan = args.plan
        subnet_of = {"general": args.general_subnetworks, "fabric": args.fabric_subnetworks}
        for network, available in subnet_of.items():
            wanted = sum(1 for n in plan.nics if n.network == network)
            if wanted > len(available):
                raise GcpPlanError(f"{name}: {wanted} {network} NICs but only {len(available)} subnets")
        own = pulumi.ResourceOptions(parent=self)
        node_labels = {**args.labels, tagging.NODE_GROUP_TAG: tagging.label_value(plan.name)}

        sa = node_service_account(
            self,
            name,
            project=args.project,
            account=account_id(args.cluster, args.stack, plan.name),
            description=f"clusterfab nodes of {args.cluster}/{plan.name} ({args.stack})",
            bucket_name=args.bucket_name,
        )

        workload_policy = None
        if plan.placement == "compact":
            # Workload policies are GCP's placement form for MIGs (compact placement policies are for
            # standalone or bulk VMs; S-GCP-PP). Without a max distance GCP still places the group as
            # close as it can; with one it refuses capacity that is further apart.
            workload_policy = gcp.compute.ResourcePolicy(
                child(name, "placement"),
                project=args.project,
                region=args.region,
                description=f"compact placement of {args.cluster}/{plan.name}",
                workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                    type="HIGH_THROUGHPUT",
                    max_topology_distance=plan.max_topology_distance,
                    accelerator_topology=plan.accelerator_topology,
                ),
                opts=own,
            )

        script = args.startup_script

        # A global template: only it exposes self_link_unique, which pins the MIG to this exact
        # template generation. Templates are immutable, so every change is a new template (created
        # before the old one is deleted) that the MIG rolls out only as nodes are recreated.
        template = gcp.compute.InstanceTemplate(
            child(name, "template"),
            project=args.project,
            description=f"clusterfab {args.cluster}/{plan.name}: {plan.machine_type}",
            machine_type=plan.machine_type,
            disks=[
                gcp.compute.InstanceTemplateDiskArgs(
                    boot=True,
                    auto_delete=True,
                    source_image=plan.image,
                    disk_type=plan.boot_disk_type,
                    disk_size_gb=plan.boot_disk_gib,
                    labels=node_labels,
                )
            ],
            network_interfaces=[
                gcp.compute.InstanceTemplateNetworkInterfaceArgs(
                    subnetwork=subnet_of[nic.network][nic.index], nic_type=nic.nic_type
                )
                for nic in plan.nics
            ],
            scheduling=_scheduling(plan),
            reservation_affinity=_reservation_affinity(plan),
            service_account=gcp.compute.InstanceTemplateServiceAccountArgs(
                email=sa.email, scopes=[CLOUD_PLATFORM_SCOPE]
            ),
            # The node software builds kernel modules with DKMS (NVIDIA's open driver, the TCPXO
            # import helper, the Lustre client); Secure Boot would refuse to load them unsigned and
            # leave the GPUs dark. vTPM and integrity monitoring stay on.
            shielded_instance_config=gcp.compute.InstanceTemplateShieldedInstanceConfigArgs(
                enable_secure_boot=False, enable_vtpm=True, enable_integrity_monitoring=True
            ),
            metadata={
                "startup-script": script,
                "enable-oslogin": "TRUE",
                "enable-guest-attributes": "TRUE",
            },
            labels=node_labels,
            opts=own,
        )

        mig = gcp.compute.InstanceGroupManager(
            child(name, "mig"),
            project=args.project,
            zone=args.zone,
            description=f"clusterfab {args.cluster}/{plan.name}",
            base_instance_name=physical(args.cluster, plan.name, max_length=BASE_INSTANCE_NAME_MAX),
            versions=[
                gcp.compute.InstanceGroupManagerVersionArgs(
                    name="primary", instance_template=template.self_link_unique
                )
            ],
            target_size=plan.target_size,
            # Flex-start capacity is only useful all at once: bulk mode creates every VM or none.
            target_size_policies=(
                [gcp.compute.InstanceGroupManagerTargetSizePolicyArgs(mode="BULK")]
                if plan.provisioning_model == "FLEX_START"
                else None
            ),
            # A new template never restarts running training nodes; it applies as nodes are recreated.
            update_policy=gcp.compute.InstanceGroupManagerUpdatePolicyArgs(
                type="OPPORTUNISTIC",
                minimal_action="REPLACE",
                replacement_method="RECREATE",
                max_surge_fixed=0,
                max_unavailable_fixed=1,
            ),
            resource_policies=(
                gcp.compute.InstanceGroupManagerResourcePoliciesArgs(
                    workload_policy=workload_policy.self_link
                )
                if workload_policy is not None
                else None
            ),
            wait_for_instances=False,
            opts=pulumi.ResourceOptions(
                parent=self,
                # An autoscaled group's size belongs to the autoscaler once it runs.
                ignore_changes=["targetSize"] if plan.autoscaled else None,
            ),
        )
        if plan.autoscaled:
            gcp.compute.Autoscaler(
                child(name, "autoscaler"),
                project=args.project,
                zone=args.zone,
                target=mig.self_link,
                autoscaling_policy=_autoscaling_policy(plan),
                description=f"clusterfab {args.cluster}/{plan.name}: {plan.min_size}-{plan.max_size} nodes",
                opts=own,
            )

        self.instance_group_manager_name = mig.name
        self.instance_template = template.self_link_unique
        self.service_account_email = sa.email
        self.register_outputs(
            {
                "instance_group_manager_name": mig.name,
                "instance_template": template.self_link_unique,
                "service_account_email": sa.email,
            }
        )
