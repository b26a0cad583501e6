"""The secure-by-default rules of architecture §7 for machines and state, as checks over planned or
previewed resources (buckets: `buckets`; SSH / RDP ingress and IAM grants: `access`).

Each check takes a `Resource` and returns its violations as messages that name the resource, the
property and the fix (empty: compliant). They hold for what clusterfab's components create and guard
what teams add to the program. Which types hold data and which stacks protect them come from the same
places the components use: the catalog's `stateful_types` and the blueprint's protected environments.

- IMDSv2: AWS launch templates and instances require session tokens for instance metadata.
- IMDS hop limit: their metadata responses travel one hop, so containers on a bridge network cannot
  take the instance role's credentials; unset is refused, since then the account's default decides.
- No public IPs: no public IPv4 or IPv6 address on any compute type or its NICs (AWS instances, spot
  requests, launch templates, network interfaces, subnets that auto-assign, Elastic IPs on a node;
  GCP instances and templates with access configs, external addresses, TPU VMs with external IPs).
- Encryption at rest: EBS volumes (launch-template block devices, instance disks, volumes) and EFS file
  systems are encrypted, and a launch template or instance says so for its root volume (left out, the
  AMI decides, unencrypted unless its snapshot is). S3 buckets: `buckets`. FSx for Lustre, and every
  GCP disk, file system and bucket, are always encrypted at rest by the provider.
- Protection: stateful resources (file systems, buckets) are protected in protected stacks.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from clusterfab.policy import azure_checks
from clusterfab.policy.resources import Resource, block, integer, items, strings, truthy

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_INSTANCE = "aws:ec2/instance:Instance"
SPOT_INSTANCE = "aws:ec2/spotInstanceRequest:SpotInstanceRequest"
_MACHINES = {
    LAUNCH_TEMPLATE: "launch template",
    AWS_INSTANCE: "instance",
    SPOT_INSTANCE: "spot instance request",
}
"""The AWS types that launch machines with their own metadata options and disks."""

IMDS_HOP_LIMIT = 1
"""The instance-metadata hop limit every clusterfab machine uses (`AwsGpuNodeGroupArgs.metadata_hop_limit`,
the Slurm and monitoring hosts): containers on a bridge network cannot reach the instance role (Checkov
CKV_AWS_341); host-network containers (enroot / pyxis) still can."""

ROOT_DEVICE_NAMES = ("/dev/sda1", "/dev/xvda")
"""The device names EC2 reserves for the root volume of HVM AMIs (EC2 User Guide, "Device names for
volumes on Amazon EC2 instances": "Differs by AMI: /dev/sda1 or /dev/xvda")."""


def short(resource: Resource) -> str:
    """The type's own name: `LaunchTemplate` for `aws:ec2/launchTemplate:LaunchTemplate`."""
    return resource.type.rsplit(":", 1)[-1]


def _metadata_options(resource: Resource) -> Mapping[str, object] | None:
    """A machine's instance-metadata options; None when it is no machine or has no metadata service."""
    if resource.type not in _MACHINES:
        return None
    options = block(resource.props.get("metadataOptions"))
    return None if str(options.get("httpEndpoint", "enabled")).lower() == "disabled" else options


def imdsv2(resource: Resource) -> list[str]:
    options = _metadata_options(resource)
    if options is None or options.get("httpTokens") == "required":
        return []
    return [
        f"{_MACHINES[resource.type]} {resource.name} allows IMDSv1 (metadataOptions.httpTokens is "
        f"{options.get('httpTokens', 'unset')!r}): set it to 'required' so that instance metadata "
        "needs IMDSv2 session tokens"
    ]


def imds_hop_limit(resource: Resource) -> list[str]:
    options = _metadata_options(resource)
    if options is None:
        return []
    limit = options.get("httpPutResponseHopLimit")
    hops = integer(limit)
    if hops == IMDS_HOP_LIMIT:
        return []
    shown = "unset, so the account's or AMI's default decides" if limit is None else hops or repr(limit)
    return [
        f"{_MACHINES[resource.type]} {resource.name} lets instance metadata responses travel further than "
        f"the instance (metadataOptions.httpPutResponseHopLimit is {shown}): set it to {IMDS_HOP_LIMIT} so "
        "that containers on a bridge network cannot take the instance role's credentials"
    ]


# --- public addresses --------------------------------------------------------------------------------


def _ipv6(nic: Mapping[str, object]) -> list[str]:
    """The settings that give an AWS network interface IPv6 addresses, which the internet can reach."""
    found = [f for f in ("ipv6AddressCount", "ipv6PrefixCount") if (integer(nic.get(f)) or 0) > 0]
    found += [f for f in ("ipv6Addresses", "ipv6AddressLists", "ipv6Prefixes") if strings(nic.get(f))]
    return found + [f for f in ("primaryIpv6", "enablePrimaryIpv6") if truthy(nic.get(f))]


def _ipv6_message(what: str, fields: list[str]) -> list[str]:
    if not fields:
        return []
    return [f"{what} IPv6 addresses ({', '.join(fields)}), which are public: leave them off"]


def _launch_template_ips(resource: Resource) -> list[str]:
    found = []
    for index, nic in enumerate(items(resource.props.get("networkInterfaces"))):
        if truthy(nic.get("associatePublicIpAddress")):
            found.append(
                f"launch template {resource.name} gives network interface {index} a public IP "
                "(associatePublicIpAddress): nodes are reached through SSM, not from the internet"
            )
        found += _ipv6_message(f"launch template {resource.name} gives network interface {index}", _ipv6(nic))
    return found


def _instance_ips(resource: Resource) -> list[str]:
    kind = _MACHINES[resource.type]
    found = []
    if truthy(resource.props.get("associatePublicIpAddress")):
        found.append(f"{kind} {resource.name} has a public IP (associatePublicIpAddress): remove it")
    return found + _ipv6_message(f"{kind} {resource.name} has", _ipv6(resource.props))


def _network_interface_ips(resource: Resource) -> list[str]:
    return _ipv6_message(f"network interface {resource.name} has", _ipv6(resource.props))


def _subnet_ips(resource: Resource) -> list[str]:
    found = []
    if truthy(resource.props.get("mapPublicIpOnLaunch")):
        found.append(
            f"subnet {resource.name} gives every instance a public IP (mapPublicIpOnLaunch): set it to false"
        )
    if truthy(resource.props.get("assignIpv6AddressOnCreation")):
        found.append(
            f"subnet {resource.name} gives every network interface a public IPv6 address "
            "(assignIpv6AddressOnCreation): set it to false"
        )
    return found


def _attached_eip(resource: Resource) -> list[str]:
    # An Elastic IP for the NAT gateway is how private nodes reach the internet; one on a node is not.
    if resource.props.get("instance") or resource.props.get("networkInterface"):
        return [
            f"Elastic IP {resource.name} is attached to an instance: nodes must not be reachable directly"
        ]
    return []


def _eip_association(resource: Resource) -> list[str]:
    target = resource.props.get("instanceId") or resource.props.get("networkInterfaceId") or "?"
    return [
        f"Elastic IP association {resource.name} gives {target} a public IP: nodes must not be reachable "
        "directly (a NAT gateway takes its Elastic IP itself, without an association)"
    ]


def _gce_external_ips(resource: Resource) -> list[str]:
    return [
        f"{short(resource)} {resource.name} gives network interface {index} an external IP "
        f"({field}): remove it; nodes reach the internet through Cloud NAT, people through IAP"
        for index, nic in enumerate(items(resource.props.get("networkInterfaces")))
        for field in ("accessConfigs", "ipv6AccessConfigs")
        if items(nic.get(field))
    ]


def _gce_external_address(resource: Resource) -> list[str]:
    # The API's default is EXTERNAL (compute.v1 discovery document, Address.addressType).
    if str(resource.props.get("addressType") or "EXTERNAL").upper() != "EXTERNAL":
        return []
    return [
        f"address {resource.name} reserves an external IP (addressType EXTERNAL, the default): nodes get "
        "none; Cloud NAT allocates its own (AUTO_ONLY)"
    ]


def _tpu_external_ips(resource: Resource) -> list[str]:
    if truthy(block(resource.props.get("networkConfig")).get("enableExternalIps")):
        return [f"TPU VM {resource.name} has external IPs (networkConfig.enableExternalIps): set it to false"]
    return []


def _queued_tpu_external_ips(resource: Resource) -> list[str]:
    specs = items(block(block(resource.props.get("body")).get("tpu")).get("nodeSpec"))
    return [
        f"TPU queued resource {resource.name} gives its slices external IPs "
        "(node.networkConfig.enableExternalIps): set it to false"
        for spec in specs
        if truthy(block(block(spec.get("node")).get("networkConfig")).get("enableExternalIps"))
    ]


def _rds_public(resource: Resource) -> list[str]:
    # CreateDBInstance's PubliclyAccessible defaults to true without a DB subnet group, or with the
    # `default` one (botocore's rds model): only an explicit false keeps the instance private.
    if _explicitly_false(resource.props.get("publiclyAccessible")):
        return []
    return [
        f"RDS instance {resource.name} may be publicly accessible: set publiclyAccessible to false (the "
        "accounting database is reached from the controller alone)"
    ]


def _cloud_sql_public(resource: Resource) -> list[str]:
    # An instance gets a public IPv4 address unless its IP configuration turns it off (ipv4Enabled).
    ip = block(block(resource.props.get("settings")).get("ipConfiguration"))
    if _explicitly_false(ip.get("ipv4Enabled")):
        return []
    return [
        f"Cloud SQL instance {resource.name} has a public IP address: set "
        "settings.ipConfiguration.ipv4Enabled to false and give it a private network"
    ]


def _explicitly_false(value: object) -> bool:
    """False as given (a boolean, or the string "false" some provider types use), not merely unset."""
    return value is not None and not truthy(value)


_PUBLIC_IP_CHECKS: dict[str, Callable[[Resource], list[str]]] = {
    LAUNCH_TEMPLATE: _launch_template_ips,
    AWS_INSTANCE: _instance_ips,
    SPOT_INSTANCE: _instance_ips,
    "aws:ec2/networkInterface:NetworkInterface": _network_interface_ips,
    "aws:ec2/subnet:Subnet": _subnet_ips,
    "aws:ec2/eip:Eip": _attached_eip,
    "aws:ec2/eipAssociation:EipAssociation": _eip_association,
    "gcp:compute/instanceTemplate:InstanceTemplate": _gce_external_ips,
    "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate": _gce_external_ips,
    "gcp:compute/instance:Instance": _gce_external_ips,
    "gcp:compute/instanceFromTemplate:InstanceFromTemplate": _gce_external_ips,
    "gcp:compute/address:Address": _gce_external_address,
    "gcp:tpu/v2Vm:V2Vm": _tpu_external_ips,
    "pulumi-python:dynamic/gcp-tpu:QueuedResource": _queued_tpu_external_ips,
    "aws:rds/instance:Instance": _rds_public,
    "gcp:sql/databaseInstance:DatabaseInstance": _cloud_sql_public,
    **azure_checks.PUBLIC_IP_CHECKS,
}
"""Per resource type: how it could expose a node (or the accounting database) to the internet."""


def public_ips(resource: Resource) -> list[str]:
    check = _PUBLIC_IP_CHECKS.get(resource.type)
    return check(resource) if check is not None else []


# --- encryption at rest ------------------------------------------------------------------------------


def _launch_template_disks(resource: Resource) -> list[str]:
    name, found, root = resource.name, [], False
    for mapping in items(resource.props.get("blockDeviceMappings")):
        ebs = mapping.get("ebs")
        if not isinstance(ebs, Mapping):
            continue
        root = root or mapping.get("deviceName") in ROOT_DEVICE_NAMES
        if not truthy(ebs.get("encrypted")):
            found.append(
                f"launch template {name} has an unencrypted EBS volume "
                f"({mapping.get('deviceName', '?')}): set ebs.encrypted to true"
            )
    if not root:
        found.append(
            f"launch template {name} does not map the root volume ({' or '.join(ROOT_DEVICE_NAMES)} in "
            "blockDeviceMappings), so instances get the AMI's, unencrypted unless its snapshot is: map "
            "the root device with ebs.encrypted true"
        )
    return found


def _instance_disks(resource: Resource) -> list[str]:
    props, name, kind = resource.props, resource.name, _MACHINES[resource.type]
    found = []
    root = props.get("rootBlockDevice")
    if isinstance(root, Mapping):
        if not truthy(root.get("encrypted")):
            found.append(f"{kind} {name} has an unencrypted root volume: set rootBlockDevice.encrypted")
    elif not props.get("launchTemplate"):  # from a launch template, the template's mappings apply
        found.append(
            f"{kind} {name} has no rootBlockDevice, so its root volume is the AMI's, unencrypted unless "
            "its snapshot is: set rootBlockDevice with encrypted true"
        )
    for device in items(props.get("ebsBlockDevices")):
        if not truthy(device.get("encrypted")):
            found.append(f"{kind} {name} has an unencrypted EBS volume ({device.get('deviceName', '?')})")
    return found


def encryption(resource: Resource) -> list[str]:
    if (check := azure_checks.ENCRYPTION_CHECKS.get(resource.type)) is not None:
        return check(resource)
    if resource.type == LAUNCH_TEMPLATE:
        return _launch_template_disks(resource)
    if resource.type in {AWS_INSTANCE, SPOT_INSTANCE}:
        return _instance_disks(resource)
    if resource.type in {"aws:ebs/volume:Volume", "aws:efs/fileSystem:FileSystem"} and not truthy(
        resource.props.get("encrypted")
    ):
        return [f"{short(resource)} {resource.name} is not encrypted: set encrypted to true"]
    return []


# --- protection --------------------------------------------------------------------------------------


def protection(
    resource: Resource, *, stateful_types: Collection[str], protected_stacks: Collection[str]
) -> list[str]:
    if resource.type not in stateful_types or resource.stack not in protected_stacks or resource.protect:
        return []
    return [
        f"{resource.name} ({resource.type}) holds data but is not protected in stack {resource.stack}: "
        "protect it (storage `protect: true` in the blueprint, or protect=True on the resource) so that no "
        "update or destroy can delete it"
    ]
