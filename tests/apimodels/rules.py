"""Cross-field rules the clouds' API documentation states, checked on a whole plan.

Each rule yields one message per violation (`<resource>: <what is wrong>`); its docstring quotes the
rule and names where it is stated. Model documentation quoted here is checked to still be there by
`test_api_models.py::test_rule_quotes_are_in_the_models`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from clusterfab.plan.engine import PlannedResource
from clusterfab.plan.project import Plan

LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
SG_RULES = (
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
)
TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
NETWORK = "gcp:compute/network:Network"
SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"
FILESTORE = "gcp:filestore/instance:Instance"


@dataclass(frozen=True)
class ModelQuote:
    """Text a rule rests on that is in an API model field's own documentation."""

    api: str
    path: str
    quote: str


Check = Callable[[Plan], Iterator[str]]
_EC2_NIC = "LaunchTemplateInstanceNetworkInterfaceSpecificationRequest"


@dataclass(frozen=True)
class Rule:
    name: str
    check: Check
    quotes: tuple[ModelQuote, ...] = ()

    @property
    def source(self) -> str:
        return (self.check.__doc__ or "").strip()


RULES: list[Rule] = []


def rule(*quotes: ModelQuote) -> Callable[[Check], Check]:
    """Register a rule (in definition order) with the model documentation it quotes."""

    def register(check: Check) -> Check:
        RULES.append(Rule(check.__name__, check, quotes))
        return check

    return register


def _of(plan: Plan, type_: str) -> list[PlannedResource]:
    return [r for r in plan.resources if r.type == type_]


def _true(value: Any) -> bool:
    return value is True or value == "true"


def _referenced(plan: Plan, reference: str) -> PlannedResource | None:
    """The resource a mock id, name or self link points to (`<name>-id`, `https://mock.googleapis.com/<name>`)."""
    name = reference.removeprefix("https://mock.googleapis.com/").split("?")[0].removesuffix("-id")
    return next((r for r in plan.resources if r.custom and r.name == name), None)


# --- AWS ------------------------------------------------------------------------------------------


@rule(
    ModelQuote(
        "ec2",
        "InstanceNetworkInterfaceSpecification.AssociatePublicIpAddress",
        "You cannot specify more than one network interface in the request.",
    )
)
def aws_no_public_ip_flag_with_several_interfaces(plan: Plan) -> Iterator[str]:
    """A launch with more than one network interface must not carry AssociatePublicIpAddress at all,
    not even false. botocore ec2 InstanceNetworkInterfaceSpecification.AssociatePublicIpAddress:
    "You cannot specify more than one network interface in the request."; EC2 answers
    "The associatePublicIPAddress parameter cannot be specified when launching with multiple network
    interfaces" (terraform-provider-aws #6777, fixed by PR #10157 sending the field only when set)."""
    for lt in _of(plan, LT):
        nics = lt.inputs.get("networkInterfaces", [])
        flagged = [n for n in nics if "associatePublicIpAddress" in n]
        if len(nics) > 1 and flagged:
            yield f"{lt.name}: associatePublicIpAddress on {len(flagged)} of {len(nics)} network interfaces"


@rule(
    ModelQuote(
        "ec2",
        f"{_EC2_NIC}.NetworkCardIndex",
        "The primary network interface must be assigned to network card index 0.",
    ),
    ModelQuote("ec2", f"{_EC2_NIC}.DeviceIndex", "The primary network interface has a device index of 0."),
    ModelQuote(
        "ec2", f"{_EC2_NIC}.InterfaceType", "EFA-only network interfaces do not support IP addresses."
    ),
)
def aws_primary_interface_has_an_address(plan: Plan) -> Iterator[str]:
    """One primary interface (card 0, device 0) that is not efa-only, and no (card, device) slot twice.
    botocore ec2 LaunchTemplateInstanceNetworkInterfaceSpecificationRequest: NetworkCardIndex "The primary
    network interface must be assigned to network card index 0."; DeviceIndex "The primary network
    interface has a device index of 0."; InterfaceType "EFA-only network interfaces do not support IP
    addresses." (the primary interface carries the instance's address)."""
    for lt in _of(plan, LT):
        nics = lt.inputs.get("networkInterfaces", [])
        if not nics:
            continue
        slots = [(int(n.get("networkCardIndex", 0)), int(n.get("deviceIndex", 0))) for n in nics]
        if len(set(slots)) != len(slots):
            yield f"{lt.name}: a (network card, device) slot is used twice"
        primary = [n for n, slot in zip(nics, slots, strict=True) if slot == (0, 0)]
        if len(primary) != 1:
            yield f"{lt.name}: no primary interface at network card 0, device 0"
        elif primary[0].get("interfaceType") == "efa-only":
            yield f"{lt.name}: the primary interface is efa-only, which has no IP address"


@rule()
def aws_capacity_block_targets_its_reservation(plan: Plan) -> Iterator[str]:
    """Market type capacity-block needs the block's reservation as the capacity reservation target.
    EC2 User Guide, Launch instances using Capacity Blocks: "To use your Capacity Block, you must
    specify the Capacity Block reservation ID when launching instances."
    (docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html)"""
    for lt in _of(plan, LT):
        if lt.inputs.get("instanceMarketOptions", {}).get("marketType") != "capacity-block":
            continue
        target = lt.inputs.get("capacityReservationSpecification", {}).get("capacityReservationTarget", {})
        if not target.get("capacityReservationId"):
            yield f"{lt.name}: capacity-block market without a capacity reservation id"


@rule(
    ModelQuote(
        "ec2",
        "SpotMarketOptions.SpotInstanceType",
        "persistent Spot Instance requests are only supported when the instance interruption behavior is either hibernate or stop",
    )
)
def aws_spot_options_fit_the_market(plan: Plan) -> Iterator[str]:
    """Spot options only with the spot market, and a persistent request never terminates on interruption.
    botocore ec2 SpotMarketOptions.SpotInstanceType: "For RunInstances , persistent Spot Instance
    requests are only supported when the instance interruption behavior is either hibernate or stop ."
    """
    for lt in _of(plan, LT):
        market = lt.inputs.get("instanceMarketOptions", {})
        spot = market.get("spotOptions")
        if spot and market.get("marketType") != "spot":
            yield f"{lt.name}: spot options with market type {market.get('marketType')!r}"
        persistent = spot is not None and spot.get("spotInstanceType") == "persistent"
        if persistent and spot.get("instanceInterruptionBehavior", "terminate") == "terminate":
            yield f"{lt.name}: a persistent spot request must stop or hibernate, not terminate"


_EBS_SIZES = {
    "gp2": (1, 16384),
    "gp3": (1, 65536),
    "io1": (4, 16384),
    "io2": (4, 65536),
    "st1": (125, 16384),
    "sc1": (125, 16384),
    "standard": (1, 1024),
}


@rule(
    ModelQuote(
        "ec2",
        "LaunchTemplateEbsBlockDeviceRequest.VolumeSize",
        "gp2 : 1 - 16,384 GiB gp3 : 1 - 65,536 GiB io1 : 4 - 16,384 GiB io2 : 4 - 65,536 GiB st1 and sc1 : 125 - 16,384 GiB standard : 1 - 1024 GiB",
    )
)
def aws_ebs_size_fits_the_volume_type(plan: Plan) -> Iterator[str]:
    """botocore ec2 LaunchTemplateEbsBlockDeviceRequest.VolumeSize: "gp2 : 1 - 16,384 GiB gp3 : 1 -
    65,536 GiB io1 : 4 - 16,384 GiB io2 : 4 - 65,536 GiB st1 and sc1 : 125 - 16,384 GiB standard : 1 -
    1024 GiB" (gp2 is the default volume type)."""
    for lt in _of(plan, LT):
        for mapping in lt.inputs.get("blockDeviceMappings", []):
            ebs = mapping.get("ebs", {})
            if "volumeSize" not in ebs:
                continue
            low, high = _EBS_SIZES.get(ebs.get("volumeType", "gp2"), (0, 0))
            if not low <= ebs["volumeSize"] <= high:
                yield f"{lt.name}: {ebs.get('volumeType')} volume of {ebs['volumeSize']} GiB, not {low}-{high}"


@rule(ModelQuote("ec2", "RequestLaunchTemplateData.UserData", "User data is limited to 16 KB."))
def aws_user_data_within_16_kib(plan: Plan) -> Iterator[str]:
    """botocore ec2 RequestLaunchTemplateData.UserData: "User data is limited to 16 KB." (the raw data,
    before base64: EC2 User Guide, user-data.html: "limited to 16 KB, in raw form, before it is base64-encoded")."""
    launched = [(lt, "userData") for lt in _of(plan, LT)]
    launched += [(i, "userDataBase64") for i in _of(plan, "aws:ec2/instance:Instance")]
    for resource, key in launched:
        encoded = resource.inputs.get(key)
        if isinstance(encoded, str) and len(base64.b64decode(encoded)) > 16 * 1024:
            yield f"{resource.name}: user data of {len(base64.b64decode(encoded))} bytes, over 16 KB"


@rule(
    ModelQuote(
        "autoscaling",
        "CreateAutoScalingGroupType.DesiredCapacity",
        "This number must be greater than or equal to the minimum size of the group and less than or equal to the maximum size of the group.",
    )
)
def aws_desired_capacity_within_min_and_max(plan: Plan) -> Iterator[str]:
    """botocore autoscaling CreateAutoScalingGroupType.DesiredCapacity: "This number must be greater than
    or equal to the minimum size of the group and less than or equal to the maximum size of the group."
    """
    for asg in _of(plan, ASG):
        low, high = asg.inputs.get("minSize", 0), asg.inputs.get("maxSize", 0)
        desired = asg.inputs.get("desiredCapacity", low)
        if not low <= desired <= high:
            yield f"{asg.name}: desired capacity {desired} outside {low}-{high}"


_FSX_THROUGHPUTS = {
    ("PERSISTENT_1", "SSD"): {50, 100, 200},
    ("PERSISTENT_1", "HDD"): {12, 40},
    ("PERSISTENT_2", "SSD"): {125, 250, 500, 1000},
}


@rule(
    ModelQuote(
        "fsx",
        "CreateFileSystemLustreConfiguration.PerUnitStorageThroughput",
        "For PERSISTENT_1 SSD storage: 50, 100, 200 MB/s/TiB. For PERSISTENT_1 HDD storage: 12, 40 MB/s/TiB. For PERSISTENT_2 SSD storage: 125, 250, 500, 1000 MB/s/TiB.",
    )
)
def aws_fsx_throughput_fits_deployment(plan: Plan) -> Iterator[str]:
    """botocore fsx CreateFileSystemLustreConfiguration.PerUnitStorageThroughput: "Required with
    PERSISTENT_1 and PERSISTENT_2 deployment types using an SSD or HDD storage class ... Valid values: For
    PERSISTENT_1 SSD storage: 50, 100, 200 MB/s/TiB. For PERSISTENT_1 HDD storage: 12, 40 MB/s/TiB. For
    PERSISTENT_2 SSD storage: 125, 250, 500, 1000 MB/s/TiB." """
    for fs in _of(plan, FSX):
        key = (fs.inputs.get("deploymentType", "SCRATCH_1"), fs.inputs.get("storageType", "SSD"))
        throughput = fs.inputs.get("perUnitStorageThroughput")
        allowed = _FSX_THROUGHPUTS.get(key)
        if allowed is not None and throughput not in allowed:
            yield f"{fs.name}: {key[0]} {key[1]} throughput {throughput}, not one of {sorted(allowed)}"
        if allowed is None and key[0].startswith("SCRATCH") and throughput is not None:
            yield f"{fs.name}: {key[0]} takes no per-unit throughput"


@rule(
    ModelQuote(
        "fsx",
        "CreateFileSystemRequest.StorageCapacity",
        "For SCRATCH_2 , PERSISTENT_2 , and PERSISTENT_1 deployment types using SSD storage type, the valid values are 1200 GiB, 2400 GiB, and increments of 2400 GiB.",
    )
)
def aws_fsx_capacity_fits_deployment(plan: Plan) -> Iterator[str]:
    """botocore fsx CreateFileSystemRequest.StorageCapacity: "For SCRATCH_2 , PERSISTENT_2 , and
    PERSISTENT_1 deployment types using SSD storage type, the valid values are 1200 GiB, 2400 GiB, and
    increments of 2400 GiB." """
    for fs in _of(plan, FSX):
        deployment = fs.inputs.get("deploymentType", "SCRATCH_1")
        if deployment == "SCRATCH_1" or fs.inputs.get("storageType", "SSD") != "SSD":
            continue
        capacity = fs.inputs.get("storageCapacity", 0)
        if capacity != 1200 and (capacity <= 0 or capacity % 2400):
            yield f"{fs.name}: {deployment} SSD capacity {capacity} GiB is not 1200 or a multiple of 2400"


@rule(
    ModelQuote(
        "fsx",
        "CreateFileSystemRequest.FileSystemTypeVersion",
        "2.12 is supported by all Lustre deployment types, except for PERSISTENT_2 with a metadata configuration mode.",
    )
)
def aws_fsx_lustre_version_fits_deployment(plan: Plan) -> Iterator[str]:
    """botocore fsx CreateFileSystemRequest.FileSystemTypeVersion: "2.10 is supported by the Scratch and
    Persistent_1 Lustre deployment types. 2.12 is supported by all Lustre deployment types, except for
    PERSISTENT_2 with a metadata configuration mode." """
    for fs in _of(plan, FSX):
        version, deployment = (
            fs.inputs.get("fileSystemTypeVersion"),
            fs.inputs.get("deploymentType", "SCRATCH_1"),
        )
        if version == "2.10" and deployment == "PERSISTENT_2":
            yield f"{fs.name}: Lustre 2.10 with PERSISTENT_2"
        if version == "2.12" and deployment == "PERSISTENT_2" and "metadataConfiguration" in fs.inputs:
            yield f"{fs.name}: Lustre 2.12 with a PERSISTENT_2 metadata configuration"


@rule(
    ModelQuote(
        "fsx",
        "CreateFileSystemLustreMetadataConfiguration.Iops",
        "If you're using AUTOMATIC mode, you cannot specify a value",
    ),
    ModelQuote(
        "fsx",
        "CreateFileSystemLustreMetadataConfiguration.Mode",
        "In AUTOMATIC mode (supported only on SSD file systems)",
    ),
)
def aws_fsx_metadata_configuration(plan: Plan) -> Iterator[str]:
    """botocore fsx CreateFileSystemLustreConfiguration.MetadataConfiguration: "... using a PERSISTENT_2
    deployment type."; CreateFileSystemLustreMetadataConfiguration.Iops: "(USER_PROVISIONED mode only)
    ... If you're using AUTOMATIC mode, you cannot specify a value"; Mode: "In AUTOMATIC mode (supported
    only on SSD file systems)"."""
    for fs in _of(plan, FSX):
        metadata = fs.inputs.get("metadataConfiguration")
        if metadata is None:
            continue
        if fs.inputs.get("deploymentType") != "PERSISTENT_2":
            yield f"{fs.name}: a metadata configuration needs PERSISTENT_2"
        if metadata.get("mode") == "AUTOMATIC" and "iops" in metadata:
            yield f"{fs.name}: AUTOMATIC metadata mode with iops"
        if metadata.get("mode") == "AUTOMATIC" and fs.inputs.get("storageType", "SSD") != "SSD":
            yield f"{fs.name}: AUTOMATIC metadata mode needs SSD storage"
        if metadata.get("mode") == "USER_PROVISIONED" and "iops" not in metadata:
            yield f"{fs.name}: USER_PROVISIONED metadata mode without iops"


@rule(
    ModelQuote(
        "fsx",
        "CreateFileSystemRequest.KmsKeyId",
        "SCRATCH_1 and SCRATCH_2 types are encrypted using the Amazon FSx service KMS key for your account.",
    )
)
def aws_fsx_customer_key_only_on_persistent(plan: Plan) -> Iterator[str]:
    """botocore fsx CreateFileSystemRequest.KmsKeyId: "Amazon FSx for Lustre PERSISTENT_1 and PERSISTENT_2
    deployment types only. SCRATCH_1 and SCRATCH_2 types are encrypted using the Amazon FSx service KMS key
    for your account." """
    for fs in _of(plan, FSX):
        deployment = fs.inputs.get("deploymentType", "SCRATCH_1")
        if "kmsKeyId" in fs.inputs and not deployment.startswith("PERSISTENT"):
            yield f"{fs.name}: a KMS key on a {deployment} file system"


@rule(
    ModelQuote("ec2", "IpPermission.IpProtocol", "For tcp , udp , and icmp , you must specify a port range.")
)
def aws_ports_for_tcp_udp_icmp(plan: Plan) -> Iterator[str]:
    """botocore ec2 IpPermission.IpProtocol: "For tcp , udp , and icmp , you must specify a port range." """
    for rule in (r for t in SG_RULES for r in _of(plan, t)):
        ranged = "fromPort" in rule.inputs and "toPort" in rule.inputs
        if rule.inputs.get("ipProtocol") in ("tcp", "udp", "icmp") and not ranged:
            yield f"{rule.name}: {rule.inputs['ipProtocol']} without a port range"


# --- Google -----------------------------------------------------------------------------------------


def _scheduling(template: PlannedResource) -> dict[str, Any]:
    scheduling: dict[str, Any] = template.inputs.get("scheduling", {})
    return scheduling


@rule(
    ModelQuote(
        "compute.v1", "Scheduling.onHostMaintenance", "the default and only possible behavior is TERMINATE."
    ),
    ModelQuote(
        "compute.v1",
        "Scheduling.automaticRestart",
        "Preemptible instances cannot be automatically restarted.",
    ),
)
def gcp_spot_and_preemptible_terminate_without_restart(plan: Plan) -> Iterator[str]:
    """compute v1 Scheduling.onHostMaintenance: "For preemptible instances, the default and only possible
    behavior is TERMINATE."; Scheduling.automaticRestart: "Preemptible instances cannot be automatically
    restarted." Spot is the current preemptible model (google-cloud-batch ProvisioningModel: "SPOT VM is
    the preferable model for preemptible VM instances ... has been migrated to use the SPOT model").
    automaticRestart must be set false explicitly: terraform-provider-google's schema defaults it to true
    (its registry docs; the pulumi-gcp docstring does not say, so this part is not re-checked offline)."""
    for template in _of(plan, TEMPLATE):
        scheduling = _scheduling(template)
        if scheduling.get("provisioningModel") == "SPOT" or _true(scheduling.get("preemptible")):
            if scheduling.get("onHostMaintenance") != "TERMINATE":
                yield f"{template.name}: spot/preemptible without onHostMaintenance TERMINATE"
            if scheduling.get("automaticRestart") is not False:
                yield f"{template.name}: spot/preemptible with automatic restart"


_ACCELERATOR_OPTIMIZED = re.compile(r"^(a2|a3|a4|a4x|g2|g4)-")


@rule()
def gcp_gpu_machines_terminate_on_host_maintenance(plan: Plan) -> Iterator[str]:
    """cloud.google.com/compute/docs/gpus/gpu-host-maintenance: "VMs with attached GPUs can't be live
    migrated. You must set these VMs to stop for host maintenance events." (A2, A3, A4, A4X, G2 and G4
    are accelerator-optimized: their GPUs come with the machine type)."""
    for template in _of(plan, TEMPLATE):
        machine = str(template.inputs.get("machineType", ""))
        if (
            _ACCELERATOR_OPTIMIZED.match(machine)
            and _scheduling(template).get("onHostMaintenance") != "TERMINATE"
        ):
            yield f"{template.name}: {machine} must terminate on host maintenance"


_SEVEN_DAYS = 7 * 24 * 3600


@rule()
def gcp_flex_start_runs_at_most_seven_days_on_supported_machines(plan: Plan) -> Iterator[str]:
    """cloud.google.com/compute/docs/instances/about-flex-start-vms: "Flex-start VMs start when resources
    are available and run for up to seven days."; "Flex-start VMs support all accelerator-optimized
    machine types (except A4X and G4)"; compute v1 Scheduling.maxRunDuration: "If specified, the instance
    termination action will be performed at the end of the run duration." """
    for template in _of(plan, TEMPLATE):
        scheduling = _scheduling(template)
        if scheduling.get("provisioningModel") != "FLEX_START":
            continue
        seconds = scheduling.get("maxRunDuration", {}).get("seconds")
        if seconds is None or not 0 < float(seconds) <= _SEVEN_DAYS:
            yield f"{template.name}: flex-start needs a max run duration of at most 7 days, got {seconds}"
        machine = str(template.inputs.get("machineType", ""))
        if machine.startswith(("a4x-", "g4-")):
            yield f"{template.name}: flex-start does not support {machine}"


RESERVATION_NAME_KEY = "compute.googleapis.com/reservation-name"


@rule(
    ModelQuote(
        "compute.v1",
        "ReservationAffinity.key",
        "reservation-name as the key and specify the name of your reservation as its value.",
    )
)
def gcp_specific_reservation_is_named(plan: Plan) -> Iterator[str]:
    """compute v1 ReservationAffinity.key: "To target a SPECIFIC_RESERVATION by name, specify
    googleapis.com/reservation-name as the key and specify the name of your reservation as its value."
    The key is `compute.googleapis.com/reservation-name` (cloud.google.com/compute/docs/instances/
    reservations-consume: "--reservation-affinity=specific"; REST "key": "compute.googleapis.com/
    reservation-name")."""
    for template in _of(plan, TEMPLATE):
        affinity = template.inputs.get("reservationAffinity")
        if affinity is None:
            continue
        specific = affinity.get("specificReservation", {})
        if affinity.get("type") == "SPECIFIC_RESERVATION":
            if specific.get("key") != RESERVATION_NAME_KEY or not specific.get("values"):
                yield f"{template.name}: a specific reservation needs key {RESERVATION_NAME_KEY} and a name"
        elif specific:
            yield f"{template.name}: reservation key/values with affinity {affinity.get('type')}"


def _roce_networks(plan: Plan) -> set[str]:
    return {
        n.name for n in _of(plan, NETWORK) if str(n.inputs.get("networkProfile", "")).endswith("-vpc-roce")
    }


@rule()
def gcp_roce_network_has_no_vpc_firewall_rule(plan: Plan) -> Iterator[str]:
    """cloud.google.com/firewall/docs/firewall-for-roce: "RoCE VPC networks only support firewall rules in
    regional network firewall policies. They don't support global network firewall policies,
    hierarchical firewall policies, or VPC firewall rules." (an RoCE VPC network is one created with a
    `<zone>-vpc-roce` network profile; Google's Cluster Toolkit gpu-rdma-vpc sets firewall_rules = [])."""
    roce = _roce_networks(plan)
    for rule in _of(plan, FIREWALL):
        network = _referenced(plan, str(rule.inputs.get("network", "")))
        if network is not None and network.name in roce:
            yield f"{rule.name}: a VPC firewall rule on the RoCE network {network.name}"


@rule()
def gcp_mrdma_nics_only_on_roce_networks(plan: Plan) -> Iterator[str]:
    """cloud.google.com/vpc/docs/rdma-network-profiles: "RoCE VPC networks only support MRDMA network
    interfaces (NICs)"; "All non-MRDMA NICs of a virtual machine (VM) must be attached to" regular VPC
    networks. So a NIC is MRDMA exactly when its subnet is in an RoCE network."""
    roce = _roce_networks(plan)
    for template in _of(plan, TEMPLATE):
        for index, nic in enumerate(template.inputs.get("networkInterfaces", [])):
            subnet = _referenced(plan, str(nic.get("subnetwork", "")))
            network = _referenced(plan, str(subnet.inputs.get("network", ""))) if subnet else None
            on_roce = network is not None and network.name in roce
            if (nic.get("nicType") == "MRDMA") != on_roce:
                where = "an RoCE" if on_roce else "a regular"
                yield f"{template.name}: nic{index} is {nic.get('nicType')} on {where} network"


@rule(ModelQuote("compute.v1", "InstanceGroupManagerUpdatePolicy.maxSurge", "must be greater than 0."))
def gcp_mig_update_policy_can_progress(plan: Plan) -> Iterator[str]:
    """compute v1 InstanceGroupManagerUpdatePolicy.maxSurge: "At least one of either maxSurge or
    maxUnavailable must be greater than 0." """
    for mig in _of(plan, MIG):
        policy = mig.inputs.get("updatePolicy")
        if policy is not None and not (
            policy.get("maxSurgeFixed", 1) > 0 or policy.get("maxUnavailableFixed", 1) > 0
        ):
            yield f"{mig.name}: update policy with neither surge nor unavailable instances"


@rule(ModelQuote("file.v1", "FileShareConfig.name", "Must use 1-16 characters for the basic service tier"))
def gcp_filestore_basic_share_name(plan: Plan) -> Iterator[str]:
    """file v1 FileShareConfig.name: "Must use 1-16 characters for the basic service tier and 1-63
    characters for all other service tiers." """
    for instance in _of(plan, FILESTORE):
        name = str(instance.inputs.get("fileShares", {}).get("name", ""))
        if str(instance.inputs.get("tier", "")).startswith("BASIC") and len(name) > 16:
            yield f"{instance.name}: share name {name!r} is over 16 characters on a basic tier"


@rule(
    ModelQuote(
        "file.v1",
        "NfsExportOptions.anonUid",
        "Anon_uid may only be set with squash_mode of ROOT_SQUASH.",
    ),
    ModelQuote(
        "file.v1",
        "NfsExportOptions.anonGid",
        "Anon_gid may only be set with squash_mode of ROOT_SQUASH.",
    ),
)
def gcp_filestore_anonymous_ids_only_when_root_is_squashed(plan: Plan) -> Iterator[str]:
    """file v1 NfsExportOptions.anonUid / anonGid: "may only be set with squash_mode of ROOT_SQUASH. An
    error will be returned if this field is specified for other squash_mode settings." """
    for instance in _of(plan, FILESTORE):
        for export in instance.inputs.get("fileShares", {}).get("nfsExportOptions", []):
            anonymous = [k for k in ("anonUid", "anonGid") if k in export]
            if anonymous and export.get("squashMode") != "ROOT_SQUASH":
                yield f"{instance.name}: {', '.join(anonymous)} with squash mode {export.get('squashMode')}"


KNOWN_DEFECTS: dict[str, str] = {}
"""Rules that fail on today's code for defects fixed separately: strict xfail, so the fix flips them."""
