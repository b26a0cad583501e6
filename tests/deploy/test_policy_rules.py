"""Each policy of the pack on resources a team could add to the program, declared with the providers'
own SDKs (so the property names are pulumi-aws's and pulumi-gcp's) and checked as CrossGuard checks
them: one violating resource and its exact message, and the compliant way to write it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pulumi_aws as aws
import pulumi_gcp as gcp
import pytest

from clusterfab.policy.names import (
    BUCKET_PUBLIC_ACCESS_BLOCK,
    ENCRYPTION,
    EXACT_SECRETS,
    IMDS_HOP_LIMIT,
    LAUNCH_FROM_TEMPLATES,
    NO_PUBLIC_BUCKETS,
    NO_PUBLIC_IPS,
    NO_SSH_RDP_FROM_INTERNET,
    NO_WILDCARD_IAM,
    TERMINATE_OWN_INSTANCES,
)
from tests.deploy.crossguard import declared, planned, violations

AMI = "ami-0123456789abcdef0"
ENCRYPTED_ROOT = [
    aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
        device_name="/dev/xvda", ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(encrypted="true")
    )
]
IMDS = aws.ec2.LaunchTemplateMetadataOptionsArgs(http_tokens="required", http_put_response_hop_limit=1)


def checked(policy: str, program: Callable[[], None]) -> list[str]:
    """What `policy` reports for the program's resources, sorted."""
    return sorted(violations(policy, declared(program)))


# --- encryption at rest: the root volume -------------------------------------------------------------


def test_a_launch_template_without_block_device_mappings_leaves_the_root_volume_to_the_ami() -> None:
    def program() -> None:
        aws.ec2.LaunchTemplate("bare", image_id=AMI, metadata_options=IMDS)
        aws.ec2.LaunchTemplate(
            "data-only",
            image_id=AMI,
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name="/dev/sdf",
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(encrypted="true"),
                )
            ],
        )
        aws.ec2.LaunchTemplate("good", image_id=AMI, block_device_mappings=ENCRYPTED_ROOT)

    assert checked(ENCRYPTION, program) == [
        f"launch template {name} does not map the root volume (/dev/sda1 or /dev/xvda in "
        "blockDeviceMappings), so instances get the AMI's, unencrypted unless its snapshot is: map the root "
        "device with ebs.encrypted true"
        for name in ("bare", "data-only")
    ]


def test_an_instance_without_a_root_block_device_leaves_it_to_the_ami() -> None:
    def program() -> None:
        aws.ec2.Instance("bastion", ami=AMI, instance_type="t3.micro")
        aws.ec2.Instance(
            "from-template", launch_template=aws.ec2.InstanceLaunchTemplateArgs(id="lt-1", version="1")
        )
        aws.ec2.Instance(
            "good",
            ami=AMI,
            instance_type="t3.micro",
            root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(encrypted=True),
        )

    assert checked(ENCRYPTION, program) == [
        "instance bastion has no rootBlockDevice, so its root volume is the AMI's, unencrypted unless its "
        "snapshot is: set rootBlockDevice with encrypted true"
    ]


# --- IMDS hop limit ----------------------------------------------------------------------------------


def test_instance_metadata_must_stop_at_the_instance() -> None:
    def options(hops: int | None) -> aws.ec2.LaunchTemplateMetadataOptionsArgs:
        return aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_tokens="required", http_put_response_hop_limit=hops
        )

    def program() -> None:
        aws.ec2.LaunchTemplate("two-hops", metadata_options=options(2))
        aws.ec2.LaunchTemplate("unset", metadata_options=options(None))
        aws.ec2.LaunchTemplate("one-hop", metadata_options=options(1))
        aws.ec2.LaunchTemplate(
            "no-imds", metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(http_endpoint="disabled")
        )
        aws.ec2.Instance(
            "box",
            ami=AMI,
            metadata_options=aws.ec2.InstanceMetadataOptionsArgs(
                http_tokens="required", http_put_response_hop_limit=3
            ),
        )

    fix = "so that containers on a bridge network cannot take the instance role's credentials"
    assert checked(IMDS_HOP_LIMIT, program) == [
        "instance box lets instance metadata responses travel further than the instance "
        f"(metadataOptions.httpPutResponseHopLimit is 3): set it to 1 {fix}",
        "launch template two-hops lets instance metadata responses travel further than the instance "
        f"(metadataOptions.httpPutResponseHopLimit is 2): set it to 1 {fix}",
        "launch template unset lets instance metadata responses travel further than the instance "
        "(metadataOptions.httpPutResponseHopLimit is unset, so the account's or AMI's default decides): "
        f"set it to 1 {fix}",
    ]


# --- public addresses --------------------------------------------------------------------------------

PUBLIC_ADDRESSES: list[Any] = [
    pytest.param(
        lambda: aws.ec2.LaunchTemplate(
            "lt",
            network_interfaces=[
                aws.ec2.LaunchTemplateNetworkInterfaceArgs(device_index=0, ipv6_address_count=1)
            ],
        ),
        "launch template lt gives network interface 0 IPv6 addresses (ipv6AddressCount), which are public: "
        "leave them off",
        id="launch-template-ipv6",
    ),
    pytest.param(
        lambda: aws.ec2.Instance(
            "vm", ami=AMI, associate_public_ip_address=True, ipv6_addresses=["2600:1f18::1"]
        ),
        [
            "instance vm has IPv6 addresses (ipv6Addresses), which are public: leave them off",
            "instance vm has a public IP (associatePublicIpAddress): remove it",
        ],
        id="instance-public-ip",
    ),
    pytest.param(
        lambda: aws.ec2.SpotInstanceRequest("spot", ami=AMI, ipv6_address_count=2),
        "spot instance request spot has IPv6 addresses (ipv6AddressCount), which are public: leave them off",
        id="spot-instance-ipv6",
    ),
    pytest.param(
        lambda: aws.ec2.NetworkInterface("eni", subnet_id="subnet-1", ipv6_address_count=1),
        "network interface eni has IPv6 addresses (ipv6AddressCount), which are public: leave them off",
        id="network-interface-ipv6",
    ),
    pytest.param(
        lambda: aws.ec2.Subnet("sn", vpc_id="vpc-1", assign_ipv6_address_on_creation=True),
        "subnet sn gives every network interface a public IPv6 address (assignIpv6AddressOnCreation): set "
        "it to false",
        id="subnet-ipv6",
    ),
    pytest.param(
        lambda: aws.ec2.EipAssociation("assoc", allocation_id="eipalloc-1", instance_id="i-123"),
        "Elastic IP association assoc gives i-123 a public IP: nodes must not be reachable directly (a NAT "
        "gateway takes its Elastic IP itself, without an association)",
        id="eip-association",
    ),
    pytest.param(
        lambda: gcp.compute.Instance(
            "vm",
            machine_type="a3-highgpu-8g",
            zone="us-central1-a",
            boot_disk=gcp.compute.InstanceBootDiskArgs(),
            network_interfaces=[
                gcp.compute.InstanceNetworkInterfaceArgs(
                    subnetwork="s", access_configs=[gcp.compute.InstanceNetworkInterfaceAccessConfigArgs()]
                )
            ],
        ),
        "Instance vm gives network interface 0 an external IP (accessConfigs): remove it; nodes reach the "
        "internet through Cloud NAT, people through IAP",
        id="gce-instance",
    ),
    pytest.param(
        lambda: gcp.compute.RegionInstanceTemplate(
            "tpl",
            machine_type="a3-highgpu-8g",
            region="us-central1",
            disks=[gcp.compute.RegionInstanceTemplateDiskArgs(source_image="img")],
            network_interfaces=[
                gcp.compute.RegionInstanceTemplateNetworkInterfaceArgs(
                    subnetwork="s",
                    ipv6_access_configs=[
                        gcp.compute.RegionInstanceTemplateNetworkInterfaceIpv6AccessConfigArgs(
                            network_tier="PREMIUM"
                        )
                    ],
                )
            ],
        ),
        "RegionInstanceTemplate tpl gives network interface 0 an external IP (ipv6AccessConfigs): remove it; "
        "nodes reach the internet through Cloud NAT, people through IAP",
        id="gce-region-template-ipv6",
    ),
    pytest.param(
        lambda: gcp.compute.Address("ip", region="us-central1"),
        "address ip reserves an external IP (addressType EXTERNAL, the default): nodes get none; Cloud NAT "
        "allocates its own (AUTO_ONLY)",
        id="gce-address",
    ),
]


@pytest.mark.parametrize(("program", "expected"), PUBLIC_ADDRESSES)
def test_public_addresses_on_any_compute_type(program: Callable[[], None], expected: str | list[str]) -> None:
    assert checked(NO_PUBLIC_IPS, program) == (expected if isinstance(expected, list) else [expected])


def test_private_addresses_pass() -> None:
    def program() -> None:
        aws.ec2.Eip("nat-ip", domain="vpc")
        aws.ec2.Instance("vm", ami=AMI, associate_public_ip_address=False, ipv6_address_count=0)
        gcp.compute.Address("internal", region="us-central1", address_type="INTERNAL", subnetwork="s")

    assert checked(NO_PUBLIC_IPS, program) == []


# --- buckets -----------------------------------------------------------------------------------------


def test_an_s3_bucket_without_a_public_access_block() -> None:
    block = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
    resources = [r for r in planned("aws-p6-b200-capacity-block", "prod") if r.type != block]
    assert violations(BUCKET_PUBLIC_ACCESS_BLOCK, resources) == [
        "S3 bucket b200-finetune-artifacts-bucket has no public access block: add an "
        "aws.s3.BucketPublicAccessBlock for it with blockPublicAcls, blockPublicPolicy, ignorePublicAcls, "
        "restrictPublicBuckets all true"
    ]
    assert violations(BUCKET_PUBLIC_ACCESS_BLOCK, planned("aws-p6-b200-capacity-block", "prod")) == []


def _bucket_policy(name: str, statement: dict[str, Any]) -> None:
    aws.s3.BucketPolicy(
        name,
        bucket="b",
        policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", **statement}],
            }
        ),
    )


def test_bucket_policies_that_allow_anyone() -> None:
    def program() -> None:
        _bucket_policy("open", {"Sid": "Read", "Principal": "*", "Resource": "arn:aws:s3:::b/*"})
        _bucket_policy("open-aws", {"Principal": {"AWS": ["*"]}, "Resource": "arn:aws:s3:::b/*"})
        _bucket_policy(
            "if-exists",
            {"Principal": "*", "Condition": {"StringEqualsIfExists": {"aws:SourceVpce": "vpce-1"}}},
        )
        _bucket_policy(
            "half-internet", {"Principal": "*", "Condition": {"IpAddress": {"aws:SourceIp": "0.0.0.0/1"}}}
        )
        # Compliant: anyone, but only through the cluster's endpoint, or from one office range.
        _bucket_policy(
            "endpoint", {"Principal": "*", "Condition": {"StringEquals": {"aws:SourceVpce": "vpce-1"}}}
        )
        _bucket_policy(
            "office", {"Principal": "*", "Condition": {"IpAddress": {"aws:SourceIp": "203.0.113.0/24"}}}
        )
        _bucket_policy("account", {"Principal": {"AWS": "arn:aws:iam::123456789012:root"}})

    fix = (
        "without a condition that fixes who (aws:SourceVpce, aws:SourceAccount, aws:SourceIp of a narrow "
        "range, ...): name the principals, or add such a condition"
    )
    assert checked(NO_PUBLIC_BUCKETS, program) == [
        f"bucket policy half-internet statement 0 allows anyone (Principal '*') {fix}",
        f"bucket policy if-exists statement 0 allows anyone (Principal '*') {fix}",
        f"bucket policy open statement Read allows anyone (Principal '*') {fix}",
        f"bucket policy open-aws statement 0 allows anyone (Principal '*') {fix}",
    ]


def test_public_acls_and_grants_on_s3() -> None:
    def program() -> None:
        grantee = aws.s3.BucketAclAccessControlPolicyGrantGranteeArgs(
            type="Group", uri="http://acs.amazonaws.com/groups/global/AllUsers"
        )
        aws.s3.BucketAcl(
            "grants",
            bucket="b",
            access_control_policy=aws.s3.BucketAclAccessControlPolicyArgs(
                owner=aws.s3.BucketAclAccessControlPolicyOwnerArgs(id="owner"),
                grants=[aws.s3.BucketAclAccessControlPolicyGrantArgs(grantee=grantee, permission="READ")],
            ),
        )
        aws.s3.BucketObjectv2("object", bucket="b", key="k", content="x", acl="public-read")
        aws.s3.BucketAcl("private", bucket="b", acl="private")

    assert checked(NO_PUBLIC_BUCKETS, program) == [
        "BucketAcl grants grants READ to AllUsers: grant to accounts, not to everyone",
        "BucketObjectv2 object has the public ACL 'public-read': make it private",
    ]


def test_gcs_grants_to_everyone() -> None:
    def program() -> None:
        gcp.storage.BucketIAMMember(
            "member", bucket="b", role="roles/storage.objectViewer", member="allUsers"
        )
        gcp.storage.BucketIAMBinding(
            "binding",
            bucket="b",
            role="roles/storage.objectViewer",
            members=["allAuthenticatedUsers", "user:a@b.c"],
        )
        gcp.storage.BucketIAMPolicy(
            "policy",
            bucket="b",
            policy_data=json.dumps({"bindings": [{"role": "roles/storage.admin", "members": ["allUsers"]}]}),
        )
        gcp.storage.BucketACL("acl", bucket="b", role_entities=["READER:allUsers", "OWNER:user-a@b.c"])
        gcp.storage.ObjectAccessControl(
            "oac", bucket="b", object="o", entity="allAuthenticatedUsers", role="READER"
        )
        gcp.storage.BucketIAMMember(
            "reader",
            bucket="b",
            role="roles/storage.objectViewer",
            member="serviceAccount:sa@p.iam.gserviceaccount.com",
        )

    assert checked(NO_PUBLIC_BUCKETS, program) == [
        "BucketACL acl grants to allUsers: grant to named principals",
        "BucketIAMBinding binding grants to allAuthenticatedUsers: grant to named principals",
        "BucketIAMMember member grants to allUsers: grant to named principals",
        "BucketIAMPolicy policy grants to allUsers: grant to named principals",
        "ObjectAccessControl oac grants to allAuthenticatedUsers: grant to named principals",
    ]


# --- SSH / RDP from the internet ---------------------------------------------------------------------


def test_ssh_and_rdp_open_to_public_ranges() -> None:
    def program() -> None:
        aws.vpc.SecurityGroupIngressRule(
            "ssh-anywhere",
            security_group_id="sg-1",
            ip_protocol="tcp",
            from_port=22,
            to_port=22,
            cidr_ipv4="0.0.0.0/0",
        )
        aws.vpc.SecurityGroupIngressRule(
            "all-v6", security_group_id="sg-1", ip_protocol="-1", cidr_ipv6="::/0"
        )
        aws.ec2.SecurityGroupRule(
            "half",
            type="ingress",
            security_group_id="sg-1",
            protocol="tcp",
            from_port=0,
            to_port=65535,
            cidr_blocks=["128.0.0.0/1"],
        )
        aws.ec2.SecurityGroup(
            "inline",
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp", from_port=3389, to_port=3389, cidr_blocks=["0.0.0.0/0"]
                )
            ],
        )
        gcp.compute.Firewall(
            "fw-ssh",
            network="n",
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["20-30"])],
            source_ranges=["0.0.0.0/0"],
        )
        gcp.compute.Firewall(
            "fw-no-source", network="n", allows=[gcp.compute.FirewallAllowArgs(protocol="tcp")]
        )
        # Compliant: an office range, IAP's forwarders, the cluster's own range, HTTPS, egress.
        aws.vpc.SecurityGroupIngressRule(
            "office",
            security_group_id="sg-1",
            ip_protocol="tcp",
            from_port=22,
            to_port=22,
            cidr_ipv4="203.0.113.0/24",
        )
        aws.ec2.SecurityGroupRule(
            "egress",
            type="egress",
            security_group_id="sg-1",
            protocol="-1",
            from_port=0,
            to_port=0,
            cidr_blocks=["0.0.0.0/0"],
        )
        gcp.compute.Firewall(
            "iap",
            network="n",
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
            source_ranges=["35.235.240.0/20"],
        )
        gcp.compute.Firewall(
            "https",
            network="n",
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["443"])],
            source_ranges=["0.0.0.0/0"],
        )
        gcp.compute.Firewall(
            "internal",
            network="n",
            allows=[gcp.compute.FirewallAllowArgs(protocol="all")],
            source_ranges=["10.0.0.0/8"],
        )

    fix = (
        "reach nodes through SSM Session Manager (AWS) or IAP (GCP), or allow only an office or VPN range (a "
        "/24 or narrower)"
    )
    half = "2,147,483,648 public addresses (128.0.0.0/1)"
    assert checked(NO_SSH_RDP_FROM_INTERNET, program) == [
        f"firewall rule fw-no-source opens RDP (port 3389) to the whole internet: {fix}",
        f"firewall rule fw-no-source opens SSH (port 22) to the whole internet: {fix}",
        f"firewall rule fw-ssh opens SSH (port 22) to the whole internet: {fix}",
        f"security group inline (ingress 0) opens RDP (port 3389) to the whole internet: {fix}",
        f"security group rule all-v6 opens RDP (port 3389) to the whole internet: {fix}",
        f"security group rule all-v6 opens SSH (port 22) to the whole internet: {fix}",
        f"security group rule half opens RDP (port 3389) to {half}: {fix}",
        f"security group rule half opens SSH (port 22) to {half}: {fix}",
        f"security group rule ssh-anywhere opens SSH (port 22) to the whole internet: {fix}",
    ]


# --- IAM ---------------------------------------------------------------------------------------------


def _document(statement: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **statement}]})


def test_iam_grants_of_everything() -> None:
    def program() -> None:
        aws.iam.RolePolicy(
            "admin", role="r", policy=_document({"Sid": "All", "Action": "*", "Resource": "*"})
        )
        aws.iam.Role(
            "role",
            assume_role_policy=_document(
                {"Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
            ),
            inline_policies=[
                aws.iam.RoleInlinePolicyArgs(
                    name="inline", policy=_document({"Action": ["*:*"], "Resource": ["*"]})
                )
            ],
            managed_policy_arns=["arn:aws:iam::aws:policy/AdministratorAccess"],
        )
        aws.iam.Policy(
            "not-action", policy=_document({"NotAction": ["iam:*", "organizations:*"], "Resource": "*"})
        )
        aws.iam.RolePolicyAttachment(
            "attach", role="r", policy_arn="arn:aws:iam::aws:policy/AdministratorAccess"
        )
        # Compliant: every S3 action, but on one bucket; every action denied.
        aws.iam.RolePolicy(
            "bucket", role="r", policy=_document({"Action": "s3:*", "Resource": "arn:aws:s3:::b/*"})
        )
        aws.iam.RolePolicy(
            "deny",
            role="r",
            policy=json.dumps({"Statement": [{"Effect": "Deny", "Action": "*", "Resource": "*"}]}),
        )

    fix = "grant only the actions and resources it needs"
    everything = "allows every action on every resource (Action '*', Resource '*')"
    admin = "arn:aws:iam::aws:policy/AdministratorAccess, which allows every action on every resource"
    assert checked(NO_WILDCARD_IAM, program) == [
        f"Policy not-action statement 0 allows every action but iam:*, organizations:* (NotAction): {fix}",
        f"Role role attaches {admin}: {fix}",
        f"Role role inline policy inline statement 0 {everything}: {fix}",
        f"RolePolicy admin statement All {everything}: {fix}",
        f"RolePolicyAttachment attach attaches {admin}: {fix}",
    ]


# --- Secrets Manager ---------------------------------------------------------------------------------


def test_secret_grants_with_a_wildcard_in_region_account_or_name() -> None:
    read = "secretsmanager:GetSecretValue"
    exact = "arn:aws:secretsmanager:us-east-1:111122223333:secret:team/smtp-??????"

    def program() -> None:
        aws.iam.RolePolicy("all", role="r", policy=_document({"Sid": "All", "Action": read, "Resource": "*"}))
        aws.iam.RolePolicy(
            "any-account",
            role="r",
            policy=_document(
                {"Action": read, "Resource": "arn:aws:secretsmanager:us-east-1:*:secret:team/smtp-*"}
            ),
        )
        aws.iam.RolePolicy(
            "prefix",
            role="r",
            policy=_document(
                {
                    "Action": ["secretsmanager:*"],
                    "Resource": ["arn:aws:secretsmanager:us-east-1:111122223333:secret:team/*", exact],
                }
            ),
        )
        aws.iam.Policy(
            "any-service",
            policy=_document({"Action": "*", "Resource": "arn:aws:*:us-east-1:111122223333:*"}),
        )
        aws.iam.Role(
            "role",
            assume_role_policy=_document(
                {"Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
            ),
            inline_policies=[
                aws.iam.RoleInlinePolicyArgs(
                    name="but", policy=_document({"Action": read, "NotResource": exact})
                )
            ],
        )
        # Compliant: one secret's ARN with the suffix pattern, or its full ARN; actions that take no
        # resource on *; other services' wildcards; a denial.
        aws.iam.RolePolicy("exact", role="r", policy=_document({"Action": read, "Resource": exact}))
        aws.iam.RolePolicy(
            "full",
            role="r",
            policy=_document(
                {
                    "Action": [read, "secretsmanager:DescribeSecret"],
                    "Resource": "arn:aws:secretsmanager:us-east-1:111122223333:secret:team/smtp-AbC123",
                }
            ),
        )
        aws.iam.RolePolicy(
            "list", role="r", policy=_document({"Action": "secretsmanager:ListSecrets", "Resource": "*"})
        )
        aws.iam.RolePolicy(
            "bucket", role="r", policy=_document({"Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"})
        )
        aws.iam.RolePolicy(
            "deny",
            role="r",
            policy=json.dumps({"Statement": [{"Effect": "Deny", "Action": read, "Resource": "*"}]}),
        )

    fix = (
        "name each secret by its ARN, with the account and region and the name (ending in -?????? for the "
        "suffix Secrets Manager appends)"
    )
    assert checked(EXACT_SECRETS, program) == [
        f"Policy any-service statement 0 allows * on arn:aws:*:us-east-1:111122223333:*, the services *, "
        f"Secrets Manager among them: {fix}",
        f"Role role inline policy but statement 0 allows {read} on every secret but those it names "
        f"(NotResource): {fix}",
        f"RolePolicy all statement All allows {read} on *, every secret: {fix}",
        f"RolePolicy any-account statement 0 allows {read} on "
        "arn:aws:secretsmanager:us-east-1:*:secret:team/smtp-*, secrets of any region or account it "
        f"matches: {fix}",
        "RolePolicy prefix statement 0 allows secretsmanager:* on "
        "arn:aws:secretsmanager:us-east-1:111122223333:secret:team/*, every secret whose name it matches: "
        f"{fix}",
    ]


# --- EC2: launching and terminating ------------------------------------------------------------------

OLD_ELASTIC = [
    # What the Slurm controller's role allowed before: tags anyone who may tag can set, any template.
    {
        "Sid": "LaunchElasticNodes",
        "Action": "ec2:RunInstances",
        "Resource": "arn:aws:ec2:*:*:instance/*",
        "Condition": {"StringEquals": {"aws:RequestTag/clusterfab-slurm-elastic": "true"}},
    },
    {
        "Sid": "LaunchInto",
        "Action": "ec2:RunInstances",
        "Resource": ["arn:aws:ec2:*:*:subnet/*", "arn:aws:ec2:*:*:network-interface/*"],
    },
    {
        "Sid": "TerminateClusterNodes",
        "Action": "ec2:TerminateInstances",
        "Resource": "arn:aws:ec2:*:*:instance/*",
        "Condition": {"StringEquals": {"aws:ResourceTag/clusterfab-blueprint": "llm"}},
    },
]
TEMPLATE = "arn:aws:ec2:us-east-1:111122223333:launch-template/lt-0abc"
PROFILE = "arn:aws:iam::111122223333:instance-profile/llm-h100-profile-1a2b3c4"
NEW_ELASTIC = [
    {"Sid": "LaunchFromNodeTemplates", "Action": "ec2:RunInstances", "Resource": [TEMPLATE]},
    {
        "Sid": "LaunchPrivateInterfaces",
        "Action": "ec2:RunInstances",
        "Resource": "arn:aws:ec2:us-east-1:111122223333:network-interface/*",
        "Condition": {
            "ArnEquals": {"ec2:LaunchTemplate": [TEMPLATE]},
            "BoolIfExists": {"ec2:AssociatePublicIpAddress": "false"},
        },
    },
    {
        "Sid": "TerminateClusterNodes",
        "Action": "ec2:TerminateInstances",
        "Resource": "arn:aws:ec2:us-east-1:111122223333:instance/*",
        "Condition": {"ArnEquals": {"ec2:InstanceProfile": [PROFILE]}},
    },
]


def _statements(*statements: dict[str, Any], deny: bool = False) -> str:
    body = [{"Effect": "Allow", **s} for s in statements]
    if deny:
        body.append(
            {
                "Effect": "Deny",
                "Action": "ec2:RunInstances",
                "Resource": "arn:aws:ec2:us-east-1:111122223333:network-interface/*",
                "Condition": {"Bool": {"ec2:AssociatePublicIpAddress": "true"}},
            }
        )
    return json.dumps({"Version": "2012-10-17", "Statement": body})


def test_launches_without_a_launch_template_or_with_public_addresses() -> None:
    def program() -> None:
        aws.iam.RolePolicy("old", role="r", policy=_statements(*OLD_ELASTIC))
        aws.iam.RolePolicy("any", role="r", policy=_document({"Action": "ec2:*", "Resource": "*"}))
        aws.iam.RolePolicy(
            "public",
            role="r",
            policy=_statements(
                {
                    "Sid": "Interfaces",
                    "Action": "ec2:RunInstances",
                    "Resource": "*",
                    "Condition": {"ArnEquals": {"ec2:LaunchTemplate": [TEMPLATE]}},
                }
            ),
        )
        # Compliant: the controller's statements; a public address denied by the document instead.
        aws.iam.RolePolicy("new", role="r", policy=_statements(*NEW_ELASTIC))
        aws.iam.RolePolicy(
            "denied",
            role="r",
            policy=_statements(
                {
                    "Action": "ec2:RunInstances",
                    "Resource": "*",
                    "Condition": {"ArnEquals": {"ec2:LaunchTemplate": [TEMPLATE]}},
                },
                deny=True,
            ),
        )

    fix = (
        "allow RunInstances only with ec2:LaunchTemplate naming your templates, and deny "
        "ec2:AssociatePublicIpAddress true on network-interface"
    )
    template = (
        "without an ec2:LaunchTemplate condition: anything it launches may take any image, type, subnet or "
        "public address the request names"
    )
    public = (
        "network interfaces without denying public addresses (no ec2:AssociatePublicIpAddress false "
        "condition, no Deny of it true)"
    )
    assert checked(LAUNCH_FROM_TEMPLATES, program) == [
        f"RolePolicy any statement 0 allows ec2:RunInstances {public}: {fix}",
        f"RolePolicy any statement 0 allows ec2:RunInstances {template}: {fix}",
        f"RolePolicy old statement LaunchElasticNodes allows ec2:RunInstances {template}: {fix}",
        f"RolePolicy old statement LaunchInto allows ec2:RunInstances {public}: {fix}",
        f"RolePolicy old statement LaunchInto allows ec2:RunInstances {template}: {fix}",
        f"RolePolicy public statement Interfaces allows ec2:RunInstances {public}: {fix}",
    ]


def test_terminations_of_any_instance_that_carries_some_tags() -> None:
    def program() -> None:
        aws.iam.RolePolicy("old", role="r", policy=_statements(*OLD_ELASTIC))
        aws.iam.RolePolicy("all", role="r", policy=_document({"Action": "ec2:Terminate*", "Resource": "*"}))
        # Compliant: the controller's statement; named instances.
        aws.iam.RolePolicy("new", role="r", policy=_statements(*NEW_ELASTIC))
        aws.iam.RolePolicy(
            "named",
            role="r",
            policy=_document(
                {
                    "Action": "ec2:TerminateInstances",
                    "Resource": "arn:aws:ec2:us-east-1:111122223333:instance/i-0123456789abcdef0",
                }
            ),
        )

    fix = (
        "condition it on ec2:InstanceProfile naming your node groups' instance profiles (only who may pass "
        "their roles can attach them), or name the instances"
    )
    why = "without an ec2:InstanceProfile condition: tags alone are set by anyone who may tag an instance"
    assert checked(TERMINATE_OWN_INSTANCES, program) == [
        f"RolePolicy all statement 0 allows ec2:TerminateInstances on * {why}: {fix}",
        "RolePolicy old statement TerminateClusterNodes allows ec2:TerminateInstances on "
        f"arn:aws:ec2:*:*:instance/* {why}: {fix}",
    ]
