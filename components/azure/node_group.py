"""One InfiniBand fabric unit of Azure GPU nodes: a Uniform virtual machine scale set.

VMs reach each other over InfiniBand only within one scale set (its partition key), and only with a
single placement group: "Large scale (SPG=false) does not support InfiniBand networking", and a single
placement group holds at most 100 VMs by default (learn.microsoft.com/azure/virtual-machines/
setup-infiniband; .../virtual-machine-scale-sets/virtual-machine-scale-sets-placement-groups). A node
group larger than that is several scale sets, one per fabric unit: the caller passes one Args per unit.
GB200 / GB300 racks are the exception Azure makes (SPG false, 18 VMs a rack): the caller says so with
`single_placement_group=False`.

Nodes get no public IP, one accelerated NIC on the node subnet, SSH keys only, encryption at host, the
nodes' user-assigned identity, and their boot script as user data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pulumi
from pulumi_azure_native import compute

from clusterfab.core.vocab import NODE_GROUP_TAG
from components._errors import check_inputs
from components._naming import child
from components.azure._linux import encoded, linux_login, username_problems

TYPE = "clusterfab:compute:AzureGpuScaleSet"

PLACEMENT_GROUP_MAX = 100
"""VMs in a single placement group by default ("capped at 100 VMs"; 300 after a support request) -
setup-infiniband."""
Priority = Literal["Regular", "Spot"]
EvictionPolicy = Literal["Deallocate", "Delete"]
_NOTICE = re.compile(r"PT(\d+)M")
NOTICE_MINUTES = (5, 15)
"""A terminate notice's `notBeforeTimeout`: "any value between 5 and 15 minutes" in ISO 8601
(learn.microsoft.com/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-terminate-notification)."""


@dataclass(frozen=True)
class AzureImage:
    """A marketplace image (e.g. microsoft-dsvm / ubuntu-hpc / 2404 / a pinned version)."""

    publisher: str
    offer: str
    sku: str
    version: str


@dataclass(frozen=True, kw_only=True)
class AzureGpuScaleSetArgs:
    """Inputs of AzureGpuScaleSet: one fabric unit."""

    resource_group_name: pulumi.Input[str]
    location: str
    node_group: str
    """The group's name: the `clusterfab-node-group` tag inventories and health records use."""
    vm_size: str
    """e.g. Standard_ND96isr_H100_v5."""
    capacity: int
    """VMs in this unit (its always-up ones, where it also has elastic nodes)."""
    elastic: bool = False
    """Slurm's resume program grows the set past `capacity` (one VM for each elastic node a job is given)
    and its suspend program deletes those VMs: a deploy leaves the running capacity as it is."""
    subnet_id: pulumi.Input[str]
    """The node subnet (AzureNetwork.node_subnet_id)."""
    identity_id: pulumi.Input[str]
    """The nodes' user-assigned identity (AzureNodeIdentity.identity_id)."""
    image: AzureImage
    ssh_public_key: pulumi.Input[str]
    """The OpenSSH public key admin_username logs in with (password login is off)."""
    admin_username: str = "clusterfab"
    computer_name_prefix: str = ""
    """Host names are the prefix and six base-36 characters of the instance id; default the component's
    name."""
    boot_script: pulumi.Input[str] = ""
    """The nodes' boot script, as plain text: their user data (base64-encoded here), which changes in place
    and the VMs read from the instance metadata service."""
    launcher: str = ""
    """The custom data cloud-init runs at a VM's first boot, as plain text (base64-encoded here): the script
    that runs the user data at every boot. Azure never changes a VM's custom data, so it must not change."""
    single_placement_group: bool = True
    """True for InfiniBand (ND v5 and the like); False only where Azure asks for it (GB200/GB300 racks)."""
    zone: str | None = None
    """The availability zone; None: no zone."""
    os_disk_gib: int = 256
    os_disk_type: str = "Premium_LRS"
    priority: Priority = "Regular"
    eviction_policy: EvictionPolicy | None = None
    """Spot only: what an eviction does to a VM (Deallocate keeps its disks and quota, Delete frees both)."""
    terminate_notice: str = "PT5M"
    """Regular priority only: how long a VM being deleted is told ahead (Scheduled Events' Terminate)."""
    tags: Mapping[str, str] = field(default_factory=dict)


def _problems(args: AzureGpuScaleSetArgs) -> list[tuple[str, str]]:
    problems = []
    if args.capacity < 0:
        problems.append(("capacity", "cannot be negative"))
    if args.single_placement_group and args.capacity > PLACEMENT_GROUP_MAX:
        problems.append(
            ("capacity", f"a single placement group holds at most {PLACEMENT_GROUP_MAX} VMs: split the unit")
        )
    if args.priority == "Spot" and args.eviction_policy is None:
        problems.append(("eviction_policy", "a Spot scale set names its eviction policy"))
    if args.priority == "Regular" and args.eviction_policy is not None:
        problems.append(("eviction_policy", "only Spot VMs are evicted"))
    notice = _NOTICE.fullmatch(args.terminate_notice)
    low, high = NOTICE_MINUTES
    if notice is None or not low <= int(notice[1]) <= high:
        problems.append(("terminate_notice", f"must be PT{low}M to PT{high}M"))
    if isinstance(args.ssh_public_key, str) and not args.ssh_public_key.strip():
        problems.append(("ssh_public_key", "nodes take SSH keys only: give one"))
    problems += username_problems(args.admin_username)
    return problems


class AzureGpuScaleSet(pulumi.ComponentResource):
    """A Uniform scale set with a single placement group (InfiniBand), fixed size, no public IPs."""

    scale_set_id: pulumi.Output[str]
    scale_set_name: pulumi.Output[str]
    """The scale set's name (auto-named: the component's name and a random suffix)."""

    def __init__(
        self, name: str, args: AzureGpuScaleSetArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        spot = args.priority == "Spot"
        scale_set = compute.VirtualMachineScaleSet(
            child(name, "vmss"),
            resource_group_name=args.resource_group_name,
            location=args.location,
            sku=compute.SkuArgs(name=args.vm_size, tier="Standard", capacity=args.capacity),
            zones=[args.zone] if args.zone else None,
            # Uniform: the orchestration mode whose single placement group InfiniBand needs
            # (virtual-machine-scale-sets-placement-groups covers Uniform).
            orchestration_mode="Uniform",
            single_placement_group=args.single_placement_group,
            # One fault domain: what Azure's own HPC tooling sets for IB scale sets (Azure/azurehpc
            # pyazhpc/arm.py), and a Spot scale set "is deployed in a single fault domain" (use-spot).
            platform_fault_domain_count=1,
            # Overprovisioning creates extra VMs and deletes the slowest: a fixed IB unit needs exactly
            # `capacity` (scale sets "overprovision by default" - ...-placement-groups).
            overprovision=False,
            # The model changes (image, boot script) reach running VMs only when an operator reimages
            # them: a training job is never restarted by a deploy.
            upgrade_policy=compute.UpgradePolicyArgs(mode=compute.UpgradeMode.MANUAL),
            identity=compute.VirtualMachineScaleSetIdentityArgs(
                type=compute.ResourceIdentityType.USER_ASSIGNED, user_assigned_identities=[args.identity_id]
            ),
            virtual_machine_profile=self._profile(name, args, spot),
            tags={**args.tags, NODE_GROUP_TAG: args.node_group},
            # An elastic unit's capacity is Slurm's while it runs: a deploy that set it back would delete
            # VMs that run jobs.
            opts=pulumi.ResourceOptions(
                parent=self, ignore_changes=["sku.capacity"] if args.elastic else None
            ),
        )
        self.scale_set_id = scale_set.id
        self.scale_set_name = scale_set.name
        self.register_outputs({"scale_set_id": scale_set.id, "scale_set_name": scale_set.name})

    @staticmethod
    def _profile(
        name: str, args: AzureGpuScaleSetArgs, spot: bool
    ) -> compute.VirtualMachineScaleSetVMProfileArgs:
        return compute.VirtualMachineScaleSetVMProfileArgs(
            os_profile=_os_profile(name, args),
            storage_profile=compute.VirtualMachineScaleSetStorageProfileArgs(
                image_reference=compute.ImageReferenceArgs(
                    publisher=args.image.publisher,
                    offer=args.image.offer,
                    sku=args.image.sku,
                    version=args.image.version,
                ),
                os_disk=compute.VirtualMachineScaleSetOSDiskArgs(
                    create_option="FromImage",
                    caching=compute.CachingTypes.READ_WRITE,
                    disk_size_gb=args.os_disk_gib,
                    managed_disk=compute.VirtualMachineScaleSetManagedDiskParametersArgs(
                        storage_account_type=args.os_disk_type
                    ),
                ),
            ),
            network_profile=compute.VirtualMachineScaleSetNetworkProfileArgs(
                network_interface_configurations=[_nic(args)]
            ),
            # The host encrypts temp disks and OS/data disk caches too (learn.microsoft.com/azure/
            # virtual-machines/disk-encryption#encryption-at-host---end-to-end-encryption-for-your-vm-data);
            # the subscription must have the Microsoft.Compute/EncryptionAtHost feature registered.
            security_profile=compute.SecurityProfileArgs(encryption_at_host=True),
            user_data=pulumi.Output.from_input(args.boot_script).apply(encoded),
            priority=args.priority,
            eviction_policy=args.eviction_policy,
            # -1: never evicted for price, only for capacity (learn.microsoft.com/azure/virtual-machines/
            # spot-vms, "Pricing").
            billing_profile=compute.BillingProfileArgs(max_price=-1) if spot else None,
            # A VM being deleted gets a Terminate Scheduled Event first, so its node drains. "Terminate
            # notifications cannot be enabled on Spot instances" (virtual-machine-scale-sets-terminate-
            # notification): Spot VMs get Scheduled Events' Preempt notice (30 s, spot-vms) instead.
            scheduled_events_profile=(
                None
                if spot
                else compute.ScheduledEventsProfileArgs(
                    terminate_notification_profile=compute.TerminateNotificationProfileArgs(
                        enable=True, not_before_timeout=args.terminate_notice
                    )
                )
            ),
        )


def _os_profile(name: str, args: AzureGpuScaleSetArgs) -> compute.VirtualMachineScaleSetOSProfileArgs:
    """Host names from the prefix; the admin user logs in with its SSH key only."""
    user = args.admin_username
    return compute.VirtualMachineScaleSetOSProfileArgs(
        computer_name_prefix=args.computer_name_prefix or name,
        admin_username=user,
        custom_data=encoded(args.launcher) if args.launcher else None,
        linux_configuration=linux_login(user, args.ssh_public_key),
    )


def _nic(args: AzureGpuScaleSetArgs) -> compute.VirtualMachineScaleSetNetworkConfigurationArgs:
    """The one Ethernet NIC (InfiniBand HCAs are SR-IOV devices, no NIC configuration): accelerated, on the
    node subnet, without a public IP configuration (its NSG is the subnet's)."""
    return compute.VirtualMachineScaleSetNetworkConfigurationArgs(
        name="primary",
        primary=True,
        # ND sizes support accelerated networking (feature tables of the ND v5 size pages).
        enable_accelerated_networking=True,
        ip_configurations=[
            compute.VirtualMachineScaleSetIPConfigurationArgs(
                name="primary",
                primary=True,
                subnet=compute.ApiEntityReferenceArgs(id=args.subnet_id),
            )
        ],
    )
