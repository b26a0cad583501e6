"""The secure-by-default rules of architecture §7, as checks over planned or previewed resources.

Each check takes a `Resource` and returns its violations as messages that name the resource, the
property and the fix (empty: compliant). They hold for what clusterfab's components create and guard
what teams add to the program. Which types hold data and which stacks protect them come from the same
places the components use: the catalog's `stateful_types` and the blueprint's protected environments.

- IMDSv2: AWS launch templates and instances require session tokens for instance metadata.
- No public IPs: no public address on AWS launch-template NICs, instances or subnets (auto-assign), no
  Elastic IP on an instance; no external access config on GCP instances / templates, no external IPs
  on TPU VMs.
- Encryption at rest: EBS volumes (launch-template block devices, instance disks, volumes) and EFS file
  systems are encrypted, and every S3 bucket has a default-encryption configuration (`unencrypted_buckets`,
  a stack-level check). FSx for Lustre, and every GCP disk, file system and bucket, are always encrypted
  at rest by the provider, so there is nothing to check for them.
- No public buckets: S3 public access blocks block everything; GCS buckets enforce public access
  prevention; no public canned ACLs.
- Protection: stateful resources (file systems, buckets) are protected in protected stacks (prod).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from clusterfab.policy.resources import Resource, block, items, truthy

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_INSTANCE = "aws:ec2/instance:Instance"
_PUBLIC_ACLS = {"public-read", "public-read-write", "authenticated-read"}
_S3_ACL_TYPES = {"aws:s3/bucket:Bucket", "aws:s3/bucketAclV2:BucketAclV2", "aws:s3/bucketAcl:BucketAcl"}


def _short(resource: Resource) -> str:
    """The type's own name: `LaunchTemplate` for `aws:ec2/launchTemplate:LaunchTemplate`."""
    return resource.type.rsplit(":", 1)[-1]


def imdsv2(resource: Resource) -> list[str]:
    if resource.type not in {LAUNCH_TEMPLATE, AWS_INSTANCE}:
        return []
    options = block(resource.props.get("metadataOptions"))
    if str(options.get("httpEndpoint", "enabled")).lower() == "disabled":
        return []  # no metadata service at all
    if options.get("httpTokens") == "required":
        return []
    kind = "launch template" if resource.type == LAUNCH_TEMPLATE else "instance"
    return [
        f"{kind} {resource.name} allows IMDSv1 (metadataOptions.httpTokens is "
        f"{options.get('httpTokens', 'unset')!r}): set it to 'required' so that instance metadata "
        "needs IMDSv2 session tokens"
    ]


def _launch_template_ips(resource: Resource) -> list[str]:
    return [
        f"launch template {resource.name} gives network interface {index} a public IP "
        "(associatePublicIpAddress): nodes are reached through SSM, not from the internet"
        for index, nic in enumerate(items(resource.props.get("networkInterfaces")))
        if truthy(nic.get("associatePublicIpAddress"))
    ]


def _instance_ip(resource: Resource) -> list[str]:
    if truthy(resource.props.get("associatePublicIpAddress")):
        return [f"instance {resource.name} has a public IP (associatePublicIpAddress): remove it"]
    return []


def _subnet_ips(resource: Resource) -> list[str]:
    if truthy(resource.props.get("mapPublicIpOnLaunch")):
        return [
            f"subnet {resource.name} gives every instance a public IP (mapPublicIpOnLaunch): set it to false"
        ]
    return []


def _attached_eip(resource: Resource) -> list[str]:
    if resource.props.get("instance") or resource.props.get("networkInterface"):
        return [
            f"Elastic IP {resource.name} is attached to an instance: nodes must not be reachable directly"
        ]
    return []


def _gce_external_ips(resource: Resource) -> list[str]:
    return [
        f"{_short(resource)} {resource.name} gives network interface {index} an external IP "
        "(accessConfigs): remove it; nodes reach the internet through Cloud NAT, people through IAP"
        for index, nic in enumerate(items(resource.props.get("networkInterfaces")))
        if items(nic.get("accessConfigs")) or items(nic.get("ipv6AccessConfigs"))
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


_PUBLIC_IP_CHECKS = {
    LAUNCH_TEMPLATE: _launch_template_ips,
    AWS_INSTANCE: _instance_ip,
    "aws:ec2/subnet:Subnet": _subnet_ips,
    "aws:ec2/eip:Eip": _attached_eip,
    "gcp:compute/instanceTemplate:InstanceTemplate": _gce_external_ips,
    "gcp:compute/instance:Instance": _gce_external_ips,
    "gcp:tpu/v2Vm:V2Vm": _tpu_external_ips,
    "pulumi-python:dynamic/gcp-tpu:QueuedResource": _queued_tpu_external_ips,
}
"""Per resource type: how it could expose a node to the internet."""


def public_ips(resource: Resource) -> list[str]:
    check = _PUBLIC_IP_CHECKS.get(resource.type)
    return check(resource) if check is not None else []


def encryption(resource: Resource) -> list[str]:
    props, name = resource.props, resource.name
    found: list[str] = []
    if resource.type == LAUNCH_TEMPLATE:
        for mapping in items(props.get("blockDeviceMappings")):
            ebs = mapping.get("ebs")
            if isinstance(ebs, Mapping) and not truthy(ebs.get("encrypted")):
                found.append(
                    f"launch template {name} has an unencrypted EBS volume "
                    f"({mapping.get('deviceName', '?')}): set ebs.encrypted to true"
                )
    elif resource.type == AWS_INSTANCE:
        root = props.get("rootBlockDevice")
        if isinstance(root, Mapping) and not truthy(root.get("encrypted")):
            found.append(f"instance {name} has an unencrypted root volume: set rootBlockDevice.encrypted")
        for device in items(props.get("ebsBlockDevices")):
            if not truthy(device.get("encrypted")):
                found.append(
                    f"instance {name} has an unencrypted EBS volume ({device.get('deviceName', '?')})"
                )
    elif resource.type in {"aws:ebs/volume:Volume", "aws:efs/fileSystem:FileSystem"} and not truthy(
        props.get("encrypted")
    ):
        found.append(f"{_short(resource)} {name} is not encrypted: set encrypted to true")
    return found


def unencrypted_buckets(resources: Sequence[Resource]) -> list[tuple[Resource, str]]:
    """S3 buckets without a default-encryption configuration in the same stack (stack-level).

    A configuration belongs to a bucket when its `bucket` property depends on the bucket (CrossGuard
    knows the dependencies), names it (its id or physical name), or, when neither is known (a plan, a
    preview of new resources), when the two are the only bucket and configuration of one component.
    """
    buckets = [r for r in resources if r.type == "aws:s3/bucket:Bucket"]
    configs = [
        r
        for r in resources
        if r.type == "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    ]
    found = []
    for bucket in buckets:
        names = {bucket.props.get("bucket"), bucket.props.get("id")} - {None}
        covered = any(
            bucket.urn in config.dependencies.get("bucket", ()) or config.props.get("bucket") in names
            for config in configs
        )
        if not covered and bucket.parent is not None:
            siblings = [c for c in configs if c.parent == bucket.parent]
            others = [b for b in buckets if b.parent == bucket.parent]
            covered = len(siblings) == 1 and len(others) == 1
        if not covered:
            found.append(
                (
                    bucket,
                    f"S3 bucket {bucket.name} has no default encryption configuration: add an "
                    "aws.s3.BucketServerSideEncryptionConfiguration (aws:kms) for it",
                )
            )
    return found


def public_buckets(resource: Resource) -> list[str]:
    props, name = resource.props, resource.name
    if resource.type == "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock":
        flags = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
        open_flags = [flag for flag in flags if not truthy(props.get(flag))]
        if open_flags:
            return [f"public access block {name} leaves {', '.join(open_flags)} off: set all four to true"]
        return []
    if resource.type in _S3_ACL_TYPES and props.get("acl") in _PUBLIC_ACLS:
        return [f"{_short(resource)} {name} has the public ACL {props.get('acl')!r}: make it private"]
    if resource.type == "gcp:storage/bucket:Bucket" and props.get("publicAccessPrevention") != "enforced":
        return [
            f"bucket {name} does not enforce public access prevention: "
            "set publicAccessPrevention to 'enforced'"
        ]
    return []


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
