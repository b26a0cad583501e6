"""A group of identical GCP GPU nodes: instance template with one NIC per fabric network, a zonal MIG,
compact placement through a workload policy, and spot / flex-start / reservation capacity.

The template's NICs follow the machine's fabric: the general gVNIC NICs first (the system network is
nic0), then one NIC per GPU VPC (TCPX / TCPXO, gVNIC) or per RDMA subnet (RoCE, MRDMA). No NIC has an access
config, so nodes have no external IP. GPUs cannot live-migrate, so host maintenance terminates the VM.
Nodes boot with vTPM and integrity monitoring (Secure Boot off: the driver's DKMS modules are
unsigned), from the machine's boot disk type, with OS Login, guest attributes (where they record their
health) and a startup script that runs the node-software playbook from the cluster's bucket.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_gcp as gcp

from clusterfab.core import vocab as tagging
from clusterfab.core.naming import physical
from components._errors import check_inputs
from components._hooks import delete_hooks
from components._naming import child, gcp_name, gcp_name_prefix
from components.gcp.identity import CLOUD_PLATFORM_SCOPE, node_service_account

TYPE = "clusterfab:compute:GcpGpuNodeGroup"

RESERVATION_KEY = "compute.googleapis.com/reservation-name"
BASE_INSTANCE_NAME_MAX = 58
"""A zonal MIG appends `-xxxx` to its base instance name; VM names stay within 63 characters."""

Provisioning = Literal["STANDARD", "SPOT", "FLEX_START"]
WORKLOAD_POLICY = "HIGH_THROUGHPUT"
"""The workload policy type of a MIG's compact placement (S-GCP-PP)."""
NicType = Literal["GVNIC", "VIRTIO_NET", "MRDMA"]


@dataclass(frozen=True)
class Nic:
    """One NIC of the template: which network's subnet it attaches to, and its type."""

    network: Literal["general", "fabric"]
    index: int
    """Which general network, or which entry of the fabric's NIC subnets."""
    nic_type: NicType


@dataclass(frozen=True, kw_only=True)
class GcpGpuNodeGroupArgs:
    """Inputs of GcpGpuNodeGroup. Sizes default to one fixed node; capacity to on-demand (STANDARD)."""

    node_group: str
    """The group's name: the `clusterfab-node-group` label that inventories select nodes by."""
    project: str
    region: str
    zone: str
    machine_type: str
    image: str
    """An image or image family path, e.g. projects/P/global/images/family/F."""
    service_account_id: str
    """The nodes' service account id (6-30 characters, unique in the project)."""
    general_subnetworks: Sequence[pulumi.Input[str]]
    """Subnets of the general networks, general network i at index i."""
    bucket_name: pulumi.Input[str]
    """The cluster bucket the nodes may read (their bootstrap bundle)."""
    fabric_subnetworks: Sequence[pulumi.Input[str]] = ()
    """The fabric's NIC subnets in NIC order (empty without a fabric)."""
    nics: Sequence[Nic] = (Nic("general", 0, "GVNIC"),)
    """The template's NICs, nic0 first (the system network)."""
    boot_disk_type: str = "pd-balanced"
    boot_disk_gib: int = 200
    boot_disk_kms_key: str | None = None
    """A Cloud KMS key (in the group's region, or global) for the boot disks; default Google's own keys.
    The Compute Engine service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter on it."""
    min_size: int = 1
    max_size: int = 1
    autoscaled: bool = False
    """Something else owns the group's size between min_size and max_size (a scheduler resizing it for
    queued jobs, or an operator); later updates leave the target size alone. No GCE autoscaler is
    created: GPU utilization, its only GPU signal, needs a running node and says nothing about queued
    work, so a group at 0 would never grow (real-cloud audit item 17)."""
    provisioning_model: Provisioning = "STANDARD"
    max_run_duration_seconds: int | None = None
    """FLEX_START: how long the VMs may run before GCP deletes them."""
    reservation: str | None = None
    """A specific reservation to consume (STANDARD only)."""
    compact_placement: bool = False
    """Place the group's VMs close together with a workload policy."""
    max_topology_distance: Literal["SUBBLOCK", "BLOCK", "CLUSTER"] | None = None
    accelerator_topology: str | None = None
    """A workload-policy accelerator topology (A4X: 1x72) instead of a max distance."""
    elastic_placement_policies: Sequence[str] = ()
    """Names of compact placement policies to create for the group's VMs made outside its MIG (a Slurm
    cluster's elastic nodes, bulk-inserted by its controller): a workload policy places a MIG's VMs only,
    a standalone VM is placed by the placement policy it names. Each is COLLOCATED (with
    `accelerator_topology` as its GPU topology); the MIG depends on them, so a destroy deletes them only
    after the MIG's before-delete hooks have removed those VMs."""
    startup_script: pulumi.Input[str] = ""
    """What the VMs run at every boot, as the startup-script."""
    base_instance_name: str = ""
    """Prefix of the VMs' names (at most 58 characters); default derived from the component's name."""
    description: str = ""
    """What the group is, in its resources' descriptions (e.g. `cluster/group`); default the name."""
    service_account_description: str = ""
    """Default `clusterfab nodes of <description>`."""
    labels: Mapping[str, str] = field(default_factory=dict)
    before_delete: Sequence[pulumi.ResourceHook] = ()
    """Hooks the engine runs before it deletes the managed instance group (Pulumi's `hooks` resource
    option): the group depends on the instance template and through it on the subnetworks, so a destroy
    deletes it before them, and what a hook removes here no longer holds them. A Slurm cluster binds the
    teardown of the VMs Slurm created. Delete hooks make `pulumi destroy` need `--run-program`."""


def instance_group_name(name: str) -> str:
    """The logical name of the managed instance group of the node group component `name` (what a delete
    hook is called with)."""
    return child(name, "mig")


def _problems(args: GcpGpuNodeGroupArgs) -> list[tuple[str, str]]:
    problems = []
    if not 0 <= args.min_size <= args.max_size:
        problems.append(("min_size", f"must be between 0 and max_size ({args.max_size})"))
    for network, available in (("general", args.general_subnetworks), ("fabric", args.fabric_subnetworks)):
        wanted = sum(1 for n in args.nics if n.network == network)
        if wanted > len(available):
            problems.append(
                (f"{network}_subnetworks", f"{wanted} {network} NICs but {len(available)} subnets")
            )
    if args.provisioning_model == "FLEX_START" and args.max_run_duration_seconds is None:
        problems.append(("max_run_duration_seconds", "FLEX_START VMs need a maximum run duration"))
    if args.provisioning_model == "FLEX_START" and args.autoscaled:
        problems.append(("autoscaled", "flex-start VMs arrive all at once in a fixed-size group"))
    return problems


def _scheduling(plan: GcpGpuNodeGroupArgs) -> gcp.compute.InstanceTemplateSchedulingArgs:
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


def _reservation_affinity(
    plan: GcpGpuNodeGroupArgs,
) -> gcp.compute.InstanceTemplateReservationAffinityArgs | None:
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


class GcpGpuNodeGroup(pulumi.ComponentResource):
    """Service account, workload policy, instance template (NICs per fabric), zonal MIG."""

    instance_group_manager_name: pulumi.Output[str]
    """The managed instance group that owns the nodes."""
    instance_template: pulumi.Output[str]
    """The unique self link of the template the nodes boot from."""
    service_account_email: pulumi.Output[str]
    """The nodes' service account."""

    def __init__(
        self, name: str, args: GcpGpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        self._own = pulumi.ResourceOptions(parent=self)
        self._labels = {**args.labels, tagging.NODE_GROUP_TAG: tagging.label_value(args.node_group)}
        if args.autoscaled:
            self._labels[tagging.MAX_NODES_LABEL] = str(args.max_size)
        sa = node_service_account(
            self,
            name,
            project=args.project,
            account=args.service_account_id,
            description=args.service_account_description or f"clusterfab nodes of {self._what}",
            bucket_name=args.bucket_name,
        )
        policy = self._workload_policy()
        placements = self._elastic_placement_policies()
        template = self._template(sa)
        mig = self._group(template, policy, placements)
        self.instance_group_manager_name = mig.name
        self.instance_template = template.self_link_unique
        self.service_account_email = sa.email
        self.workload_policy: pulumi.Output[str] | None = policy.name if policy is not None else None
        """The workload policy's name (compact placement): other MIGs of the group's VMs may use it."""
        self.register_outputs(
            {
                "instance_group_manager_name": mig.name,
                "instance_template": template.self_link_unique,
                "service_account_email": sa.email,
            }
        )

    @property
    def _what(self) -> str:
        return self._args.description or self._name

    def _workload_policy(self) -> gcp.compute.ResourcePolicy | None:
        args = self._args
        if not args.compact_placement:
            return None
        # Workload policies are GCP's placement form for MIGs (compact placement policies are for
        # standalone or bulk VMs; S-GCP-PP). Without a max distance GCP still places the group as
        # close as it can; with one it refuses capacity that is further apart.
        return gcp.compute.ResourcePolicy(
            child(self._name, "placement"),
            # A change of the workload policy is a new resource policy (the provider's replace_on).
            name=gcp_name(
                child(self._name, "placement"),
                replaced_on=(WORKLOAD_POLICY, args.max_topology_distance, args.accelerator_topology),
            ),
            project=args.project,
            region=args.region,
            description=f"compact placement of {self._what}",
            workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                type=WORKLOAD_POLICY,
                max_topology_distance=args.max_topology_distance,
                accelerator_topology=args.accelerator_topology,
            ),
            opts=self._own,
        )

    def _elastic_placement_policies(self) -> list[gcp.compute.ResourcePolicy]:
        args = self._args
        # compute.v1 has no maxDistance for group placement policies (a beta field): GCP places the VMs
        # as close as it can, as the workload policy does without a max distance.
        return [
            gcp.compute.ResourcePolicy(
                child(self._name, f"elastic-placement-{index}"),
                name=policy,
                project=args.project,
                region=args.region,
                description=f"compact placement of {self._what}'s elastic nodes",
                group_placement_policy=gcp.compute.ResourcePolicyGroupPlacementPolicyArgs(
                    collocation="COLLOCATED", gpu_topology=args.accelerator_topology
                ),
                opts=self._own,
            )
            for index, policy in enumerate(args.elastic_placement_policies)
        ]

    def _template(self, sa: gcp.serviceaccount.Account) -> gcp.compute.InstanceTemplate:
        args = self._args
        subnet_of = {"general": args.general_subnetworks, "fabric": args.fabric_subnetworks}
        # A global template: only it exposes self_link_unique, which pins the MIG to this exact
        # template generation. Templates are immutable, so every change is a new template (created
        # before the old one is deleted) that the MIG rolls out only as nodes are recreated.
        return gcp.compute.InstanceTemplate(
            child(self._name, "template"),
            name_prefix=gcp_name_prefix(child(self._name, "template")),
            project=args.project,
            description=f"clusterfab {self._what}: {args.machine_type}",
            machine_type=args.machine_type,
            disks=[
                gcp.compute.InstanceTemplateDiskArgs(
                    boot=True,
                    auto_delete=True,
                    source_image=args.image,
                    disk_type=args.boot_disk_type,
                    disk_size_gb=args.boot_disk_gib,
                    disk_encryption_key=(
                        gcp.compute.InstanceTemplateDiskDiskEncryptionKeyArgs(
                            kms_key_self_link=args.boot_disk_kms_key
                        )
                        if args.boot_disk_kms_key is not None
                        else None
                    ),
                    labels=self._labels,
                )
            ],
            network_interfaces=[
                gcp.compute.InstanceTemplateNetworkInterfaceArgs(
                    subnetwork=subnet_of[nic.network][nic.index], nic_type=nic.nic_type
                )
                for nic in args.nics
            ],
            scheduling=_scheduling(args),
            reservation_affinity=_reservation_affinity(args),
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
                "startup-script": args.startup_script,
                "enable-oslogin": "TRUE",
                "enable-guest-attributes": "TRUE",
            },
            labels=self._labels,
            opts=self._own,
        )

    def _group(
        self,
        template: gcp.compute.InstanceTemplate,
        policy: gcp.compute.ResourcePolicy | None,
        placements: Sequence[gcp.compute.ResourcePolicy],
    ) -> gcp.compute.InstanceGroupManager:
        args = self._args
        return gcp.compute.InstanceGroupManager(
            instance_group_name(self._name),
            name=gcp_name(instance_group_name(self._name)),
            project=args.project,
            zone=args.zone,
            description=f"clusterfab {self._what}",
            base_instance_name=args.base_instance_name
            or physical(self._name, max_length=BASE_INSTANCE_NAME_MAX),
            versions=[
                gcp.compute.InstanceGroupManagerVersionArgs(
                    name="primary", instance_template=template.self_link_unique
                )
            ],
            target_size=args.min_size,
            # Flex-start capacity is only useful all at once: bulk mode creates every VM or none.
            target_size_policies=(
                [gcp.compute.InstanceGroupManagerTargetSizePolicyArgs(mode="BULK")]
                if args.provisioning_model == "FLEX_START"
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
                gcp.compute.InstanceGroupManagerResourcePoliciesArgs(workload_policy=policy.self_link)
                if policy is not None
                else None
            ),
            wait_for_instances=False,
            opts=pulumi.ResourceOptions(
                parent=self,
                # An autoscaled group's size belongs to whoever resizes it (a scheduler, an operator).
                ignore_changes=["targetSize"] if args.autoscaled else None,
                hooks=delete_hooks(args.before_delete),
                # Deleted after the MIG, whose hooks delete the elastic VMs that use them.
                depends_on=list(placements) or None,
            ),
        )
