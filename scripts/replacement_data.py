"""Which input changes make the cloud providers replace a resource, read from the providers' own code.

pulumi-aws and pulumi-gcp bridge Terraform providers: a change to an attribute the Terraform schema marks
`ForceNew: true` (SDKv2) or `RequiresReplace()` (plugin framework) makes Pulumi replace the resource, and
a few `CustomizeDiff` functions force a replacement only for some changes (a file system that shrinks).
This script reads those schemas from git checkouts of the upstream providers, maps the Terraform
attribute names to the Pulumi property names exactly as the installed Python SDKs name them, and writes
`clusterfab/catalog/data/replacements.yaml` for every resource type the example blueprints plan
(`tests/golden/plans/*.json`). It runs offline against checkouts fetched beforehand:

    uv run python scripts/replacement_data.py \\
        --aws <git dir of terraform-provider-aws or lonegunmanb/terraform-provider-aws-index> v6.58.0 \\
        --gcp <git dir of hashicorp/terraform-provider-google-beta> v7.45.0

`--type TOKEN` (repeatable) adds a type the plans and components do not create yet (pass it to `--check`
too until they do). `--check` compares instead of writing (exit 1 when the file differs). The AWS side
accepts either the upstream repository or the index repository, which keeps each upstream release's
functions verbatim (`index/internal/service/<package>/func.<name>.goindex`), tagged with the upstream
version.

What the code cannot read on its own (conditional replacements in CustomizeDiff functions) is in
CONDITIONS below, one line per case, and the script fails when the source forces a replacement that
CONDITIONS does not explain, or explains one the source no longer has.

pulumi-azure-native decides replacements itself, from metadata generated out of Azure's REST API
specifications; its rules are the pinned table of scripts/replacement_azure.py (read by hand, each with
the files it came from), which this script checks against the installed SDK's inputs and writes out.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replacement_azure  # the pinned azure-native table beside this script

REPO = Path(__file__).resolve().parents[1]
# The catalog source ids (sources.yaml) of what is read, and the date it was read.
SOURCES = {
    "aws": "S-TF-AWS-SCHEMA",
    "gcp": "S-TF-GOOGLE-BETA-SCHEMA",
    "clusterfab": "S-CLUSTERFAB-CODE",
    "kubernetes": "S-PULUMI-K8S-DIFF",
    "azure-native": "S-AZ-NATIVE-DIFF",
}
# pulumi-azure-native's rules come from its own code and from the Azure REST API specifications.
AZURE_SOURCES = ["S-AZ-NATIVE-DIFF", "S-AZ-REST-SPECS"]
AS_OF = datetime.date(2026, 11, 23)
AS_OF_AZURE = datetime.date(2026, 11, 29)
OUT = REPO / "clusterfab" / "catalog" / "data" / "replacements.yaml"
PLANS = REPO / "tests" / "golden" / "plans"


@dataclass(frozen=True)
class Piece:
    """Where (part of) a resource's Terraform schema is defined: a function or a package variable."""

    package: str
    """Directory of the Go package, relative to the provider's package root (`ec2`, `compute`)."""
    name: str
    kind: str = "func"
    """`func` (returns a *schema.Resource), `var` (a map of *schema.Schema), or `framework` (the
    `Schema` method of a plugin-framework resource type)."""


@dataclass(frozen=True)
class Upstream:
    terraform_type: str
    pieces: tuple[Piece, ...]


def _p(terraform_type: str, package: str, name: str, kind: str = "func") -> Upstream:
    return Upstream(terraform_type, (Piece(package, name, kind),))


AWS: dict[str, Upstream] = {
    "aws:autoscaling/group:Group": _p("aws_autoscaling_group", "autoscaling", "resourceGroup"),
    "aws:budgets/budget:Budget": _p("aws_budgets_budget", "budgets", "resourceBudget"),
    "aws:dlm/lifecyclePolicy:LifecyclePolicy": _p(
        "aws_dlm_lifecycle_policy", "dlm", "resourceLifecyclePolicy"
    ),
    "aws:ebs/volume:Volume": _p("aws_ebs_volume", "ec2", "resourceEBSVolume"),
    "aws:cloudwatch/logGroup:LogGroup": _p("aws_cloudwatch_log_group", "logs", "resourceGroup"),
    "aws:costexplorer/costAllocationTag:CostAllocationTag": _p(
        "aws_ce_cost_allocation_tag", "ce", "resourceCostAllocationTag"
    ),
    "aws:ec2/eip:Eip": _p("aws_eip", "ec2", "resourceEIP"),
    "aws:eks/addon:Addon": _p("aws_eks_addon", "eks", "resourceAddon"),
    "aws:eks/cluster:Cluster": _p("aws_eks_cluster", "eks", "resourceCluster"),
    "aws:eks/nodeGroup:NodeGroup": _p("aws_eks_node_group", "eks", "resourceNodeGroup"),
    "aws:kms/key:Key": _p("aws_kms_key", "kms", "resourceKey"),
    "aws:ec2/flowLog:FlowLog": _p("aws_flow_log", "ec2", "resourceFlowLog"),
    "aws:ec2/instance:Instance": _p("aws_instance", "ec2", "resourceInstance"),
    "aws:ec2/internetGateway:InternetGateway": _p("aws_internet_gateway", "ec2", "resourceInternetGateway"),
    "aws:ec2/launchTemplate:LaunchTemplate": _p("aws_launch_template", "ec2", "resourceLaunchTemplate"),
    "aws:ec2/natGateway:NatGateway": _p("aws_nat_gateway", "ec2", "resourceNATGateway"),
    "aws:ec2/placementGroup:PlacementGroup": _p("aws_placement_group", "ec2", "resourcePlacementGroup"),
    "aws:ec2/routeTable:RouteTable": _p("aws_route_table", "ec2", "resourceRouteTable"),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": _p(
        "aws_route_table_association", "ec2", "resourceRouteTableAssociation"
    ),
    "aws:ec2/securityGroup:SecurityGroup": _p("aws_security_group", "ec2", "resourceSecurityGroup"),
    "aws:ec2/subnet:Subnet": _p("aws_subnet", "ec2", "resourceSubnet"),
    "aws:ec2/volumeAttachment:VolumeAttachment": _p(
        "aws_volume_attachment", "ec2", "resourceVolumeAttachment"
    ),
    "aws:ec2/vpc:Vpc": _p("aws_vpc", "ec2", "resourceVPC"),
    "aws:ec2/vpcEndpoint:VpcEndpoint": _p("aws_vpc_endpoint", "ec2", "resourceVPCEndpoint"),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": _p(
        "aws_fsx_data_repository_association", "fsx", "resourceDataRepositoryAssociation"
    ),
    "aws:fsx/lustreFileSystem:LustreFileSystem": _p(
        "aws_fsx_lustre_file_system", "fsx", "resourceLustreFileSystem"
    ),
    "aws:iam/instanceProfile:InstanceProfile": _p(
        "aws_iam_instance_profile", "iam", "resourceInstanceProfile"
    ),
    "aws:iam/role:Role": _p("aws_iam_role", "iam", "resourceRole"),
    "aws:iam/rolePolicy:RolePolicy": _p("aws_iam_role_policy", "iam", "resourceRolePolicy"),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": _p(
        "aws_iam_role_policy_attachment", "iam", "resourceRolePolicyAttachment"
    ),
    "aws:rds/instance:Instance": _p("aws_db_instance", "rds", "resourceInstance"),
    "aws:rds/parameterGroup:ParameterGroup": _p("aws_db_parameter_group", "rds", "resourceParameterGroup"),
    "aws:rds/subnetGroup:SubnetGroup": _p("aws_db_subnet_group", "rds", "resourceSubnetGroup"),
    "aws:s3/bucket:Bucket": _p("aws_s3_bucket", "s3", "resourceBucket"),
    "aws:s3/bucketObjectv2:BucketObjectv2": _p("aws_s3_object", "s3", "resourceObject"),
    "aws:s3/bucketPolicy:BucketPolicy": _p("aws_s3_bucket_policy", "s3", "resourceBucketPolicy"),
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": _p(
        "aws_s3_bucket_ownership_controls", "s3", "resourceBucketOwnershipControls"
    ),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": _p(
        "aws_s3_bucket_public_access_block", "s3", "resourceBucketPublicAccessBlock"
    ),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": _p(
        "aws_s3_bucket_server_side_encryption_configuration",
        "s3",
        "resourceBucketServerSideEncryptionConfiguration",
    ),
    "aws:s3/bucketVersioning:BucketVersioning": _p(
        "aws_s3_bucket_versioning", "s3", "resourceBucketVersioning"
    ),
    "aws:secretsmanager/secret:Secret": _p("aws_secretsmanager_secret", "secretsmanager", "resourceSecret"),
    "aws:secretsmanager/secretPolicy:SecretPolicy": _p(
        "aws_secretsmanager_secret_policy", "secretsmanager", "resourceSecretPolicy"
    ),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": _p(
        "aws_vpc_security_group_egress_rule", "ec2", "securityGroupRuleResource", "framework"
    ),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": _p(
        "aws_vpc_security_group_ingress_rule", "ec2", "securityGroupRuleResource", "framework"
    ),
}

_IAM_MEMBER = Piece("../tpgiamresource", "IamMemberBaseSchema", "var")

GCP: dict[str, Upstream] = {
    "gcp:billing/budget:Budget": _p(
        "google_billing_budget", "billingbudgets", "ResourceBillingBudgetsBudget"
    ),
    "gcp:compute/instance:Instance": _p("google_compute_instance", "compute", "ResourceComputeInstance"),
    "gcp:monitoring/notificationChannel:NotificationChannel": _p(
        "google_monitoring_notification_channel", "monitoring", "ResourceMonitoringNotificationChannel"
    ),
    "gcp:projects/iAMCustomRole:IAMCustomRole": _p(
        "google_project_iam_custom_role", "resourcemanager", "ResourceGoogleProjectIamCustomRole"
    ),
    "gcp:secretmanager/secretIamMember:SecretIamMember": Upstream(
        "google_secret_manager_secret_iam_member",
        (_IAM_MEMBER, Piece("secretmanager", "SecretManagerSecretIamSchema", "var")),
    ),
    "gcp:compute/firewall:Firewall": _p("google_compute_firewall", "compute", "ResourceComputeFirewall"),
    "gcp:compute/address:Address": _p("google_compute_address", "compute", "ResourceComputeAddress"),
    "gcp:compute/disk:Disk": _p("google_compute_disk", "compute", "ResourceComputeDisk"),
    "gcp:secretmanager/secret:Secret": _p(
        "google_secret_manager_secret", "secretmanager", "ResourceSecretManagerSecret"
    ),
    "gcp:compute/globalAddress:GlobalAddress": _p(
        "google_compute_global_address", "compute", "ResourceComputeGlobalAddress"
    ),
    "gcp:compute/instanceGroupManager:InstanceGroupManager": _p(
        "google_compute_instance_group_manager", "compute", "ResourceComputeInstanceGroupManager"
    ),
    "gcp:compute/instanceTemplate:InstanceTemplate": _p(
        "google_compute_instance_template", "compute", "ResourceComputeInstanceTemplate"
    ),
    "gcp:compute/network:Network": _p("google_compute_network", "compute", "ResourceComputeNetwork"),
    "gcp:compute/diskResourcePolicyAttachment:DiskResourcePolicyAttachment": _p(
        "google_compute_disk_resource_policy_attachment",
        "compute",
        "ResourceComputeDiskResourcePolicyAttachment",
    ),
    "gcp:compute/resourcePolicy:ResourcePolicy": _p(
        "google_compute_resource_policy", "compute", "ResourceComputeResourcePolicy"
    ),
    "gcp:compute/router:Router": _p("google_compute_router", "compute", "ResourceComputeRouter"),
    "gcp:compute/routerNat:RouterNat": _p("google_compute_router_nat", "compute", "ResourceComputeRouterNat"),
    "gcp:compute/subnetwork:Subnetwork": _p(
        "google_compute_subnetwork", "compute", "ResourceComputeSubnetwork"
    ),
    "gcp:container/cluster:Cluster": _p("google_container_cluster", "container", "ResourceContainerCluster"),
    "gcp:container/nodePool:NodePool": Upstream(
        "google_container_node_pool",
        (
            Piece("container", "ResourceContainerNodePool"),
            Piece("container", "schemaNodePool", "var"),
        ),
    ),
    "gcp:filestore/instance:Instance": _p(
        "google_filestore_instance", "filestore", "ResourceFilestoreInstance"
    ),
    "gcp:lustre/instance:Instance": _p("google_lustre_instance", "lustre", "ResourceLustreInstance"),
    "gcp:projects/iAMMember:IAMMember": Upstream(
        "google_project_iam_member", (_IAM_MEMBER, Piece("resourcemanager", "IamProjectSchema", "var"))
    ),
    "gcp:sql/database:Database": _p("google_sql_database", "sql", "ResourceSQLDatabase"),
    "gcp:sql/databaseInstance:DatabaseInstance": _p(
        "google_sql_database_instance", "sql", "ResourceSqlDatabaseInstance"
    ),
    "gcp:serviceaccount/account:Account": _p(
        "google_service_account", "resourcemanager", "ResourceGoogleServiceAccount"
    ),
    "gcp:serviceaccount/iAMMember:IAMMember": Upstream(
        "google_service_account_iam_member",
        (_IAM_MEMBER, Piece("resourcemanager", "IamServiceAccountSchema", "var")),
    ),
    "gcp:servicenetworking/connection:Connection": _p(
        "google_service_networking_connection", "servicenetworking", "ResourceServiceNetworkingConnection"
    ),
    "gcp:storage/bucket:Bucket": _p("google_storage_bucket", "storage", "ResourceStorageBucket"),
    "gcp:storage/bucketIAMMember:BucketIAMMember": Upstream(
        "google_storage_bucket_iam_member", (_IAM_MEMBER, Piece("storage", "StorageBucketIamSchema", "var"))
    ),
    "gcp:storage/bucketObject:BucketObject": _p(
        "google_storage_bucket_object", "storage", "ResourceStorageBucketObject"
    ),
    "gcp:tpu/v2Vm:V2Vm": _p("google_tpu_v2_vm", "tpuv2", "ResourceTpuV2Vm"),
}

# Replacements a CustomizeDiff / ModifyPlan function forces only for some changes. Keyed by (Pulumi type,
# Terraform attribute path); `when` is how clusterfab/plan/diff.py decides:
#   decrease       replace when the new value is lower (numbers, or dotted versions)
#   cidr_shrinks   replace unless the new range contains the old one (a subnet may only grow in place)
#   kind_changes   replace when the attribute appears or disappears (a rule's source switches kind)
#   flag           replace when the input named third is true (`user_data_replace_on_change`)
#   absent         the attribute is deprecated upstream and gone from the installed SDK: nothing to record
#   always         replace on any change (the source forces it under conditions we cannot evaluate)
CONDITIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("gcp:container/cluster:Cluster", "enable_l4_ilb_subsetting"): (
        "always",
        "ResourceContainerCluster CustomizeDiff: ForceNewIfChange enable_l4_ilb_subsetting isBeenEnabled (it "
        "may be turned on in place, not off)",
    ),
    ("gcp:container/cluster:Cluster", "enable_fqdn_network_policy"): (
        "always",
        "ResourceContainerCluster CustomizeDiff: ForceNewIfChange enable_fqdn_network_policy isBeenEnabled "
        "(it may be turned on in place, not off)",
    ),
    ("gcp:container/cluster:Cluster", "dns_config.0.additive_vpc_scope_dns_domain"): (
        "always",
        "containerClusterAutopilotCustomizeDiff: ForceNew on a change of an Autopilot cluster's "
        "dns_config.additive_vpc_scope_dns_domain",
    ),
    ("aws:ec2/instance:Instance", "launch_template.0.version"): (
        "always",
        "resourceInstance CustomizeDiff: ForceNew when the launch template version the instance uses changes",
    ),
    ("aws:ec2/instance:Instance", "user_data"): (
        "flag",
        "resourceInstance CustomizeDiff: ForceNewIf user_data when user_data_replace_on_change is true",
        "user_data_replace_on_change",
    ),
    ("aws:ec2/instance:Instance", "user_data_base64"): (
        "flag",
        "resourceInstance CustomizeDiff: ForceNewIf user_data_base64 when user_data_replace_on_change "
        "is true",
        "user_data_replace_on_change",
    ),
    ("aws:ec2/instance:Instance", "enable_primary_ipv6"): (
        "decrease",
        "resourceInstance CustomizeDiff: ForceNewIf enable_primary_ipv6 goes from true to false",
    ),
    ("aws:ec2/instance:Instance", "ipv6_addresses"): (
        "always",
        "resourceInstance CustomizeDiff: ForceNewIf ipv6_addresses changes and ipv6_address_count does not",
    ),
    ("aws:ec2/subnet:Subnet", "ipv6_cidr_block"): (
        "flag",
        "resourceSubnet CustomizeDiff: ForceNewIf ipv6_cidr_block changes on a subnet created with "
        "assign_ipv6_address_on_creation true",
        "assign_ipv6_address_on_creation",
    ),
    ("aws:ec2/vpcEndpoint:VpcEndpoint", "private_dns_enabled"): (
        "always",
        "resourceVPCEndpoint CustomizeDiff: ForceNew on a private_dns_enabled change of a non-Interface "
        "endpoint",
    ),
    ("aws:ec2/instance:Instance", "instance_type"): (
        "always",
        "resourceInstance CustomizeDiff: ForceNewIf the new instance type shares no CPU architecture with "
        "the old one (read from EC2 at plan time; offline every type change is taken as a replacement)",
    ),
    ("aws:fsx/lustreFileSystem:LustreFileSystem", "storage_capacity"): (
        "decrease",
        "resourceLustreFileSystemStorageCapacityCustomizeDiff: ForceNew when the new capacity is lower "
        "(or on any change of a SCRATCH_1 file system)",
    ),
    ("aws:fsx/lustreFileSystem:LustreFileSystem", "metadata_configuration.0.iops"): (
        "decrease",
        "resourceLustreFileSystemMetadataConfigCustomizeDiff: ForceNew when USER_PROVISIONED metadata "
        "IOPS decrease",
    ),
    ("aws:fsx/lustreFileSystem:LustreFileSystem", "file_system_type_version"): (
        "decrease",
        "resourceLustreFileSystemTypeVersionCustomizeDiff: in-place upgrades, ForceNew on a downgrade",
    ),
    ("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", "*source*"): (
        "kind_changes",
        "securityGroupRuleResource.ModifyPlan: RequiresReplace when the rule's source attribute changes kind",
    ),
    ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "*source*"): (
        "kind_changes",
        "securityGroupRuleResource.ModifyPlan: RequiresReplace when the rule's source attribute changes kind",
    ),
    ("aws:ec2/natGateway:NatGateway", "secondary_private_ip_address_count"): (
        "always",
        "resourceNATGatewayCustomizeDiff: ForceNew on a change of a private NAT gateway's count",
    ),
    ("aws:eks/cluster:Cluster", "encryption_config"): (
        "kind_changes",
        "resourceCluster CustomizeDiff: ForceNewIfChange encryption_config when it is removed (envelope "
        "encryption cannot be turned off; adding it is in place, which kind_changes also replaces)",
    ),
    ("aws:eks/cluster:Cluster", "compute_config.0.node_role_arn"): (
        "always",
        "validateAutoModeComputeConfigCustomizeDiff: ForceNew when Auto Mode's existing node role changes "
        "(not when one is added, nor when Auto Mode is turned off without one)",
    ),
    ("aws:eks/cluster:Cluster", "vpc_config.0.control_plane_egress_mode"): (
        "always",
        "resourceCluster CustomizeDiff: ForceNewIfChange control_plane_egress_mode from CUSTOMER_ROUTED back "
        "to AWS_MANAGED",
    ),
    ("aws:ec2/vpc:Vpc", "instance_tenancy"): (
        "always",
        "resourceVPCCustomizeDiff: ForceNew on any tenancy change except dedicated -> default",
    ),
    ("gcp:compute/instance:Instance", "metadata_startup_script"): (
        "always",
        "ResourceComputeInstance CustomizeDiff: ForceNewIf isGracefulMetadataStartupSwitch, i.e. on any "
        "change except moving an identical script from metadata.startup-script",
    ),
    ("gcp:secretmanager/secret:Secret", "replication.0.automatic"): (
        "absent",
        "secretManagerSecretAutoCustomizeDiff: ForceNew on a change of replication.automatic, except "
        "replacing it by replication.auto",
    ),
    ("gcp:secretmanager/secret:Secret", "replication.0.auto"): (
        "always",
        "secretManagerSecretAutoCustomizeDiff: ForceNew on a change of replication.auto, except "
        "replacing replication.automatic by it",
    ),
    ("gcp:sql/databaseInstance:DatabaseInstance", "master_instance_name"): (
        "always",
        "ResourceSqlDatabaseInstance CustomizeDiff: ForceNewIf master_instance_name changes, unless the "
        "change is a switchover seen from the old primary",
    ),
    ("gcp:sql/databaseInstance:DatabaseInstance", "replica_configuration.0.cascadable_replica"): (
        "always",
        "ResourceSqlDatabaseInstance CustomizeDiff: ForceNewIf replica_configuration.cascadable_replica "
        "changes, unless the change is a switchover seen from the old primary",
    ),
    ("gcp:sql/databaseInstance:DatabaseInstance", "settings.0.ip_configuration.0.private_network"): (
        "kind_changes",
        "privateNetworkCustomizeDiff: ForceNew when private_network goes from set to unset",
    ),
    ("gcp:sql/databaseInstance:DatabaseInstance", "settings.0.auto_upgrade_enabled"): (
        "always",
        "autoUpgradeEnabledCustomizeDiff: ForceNew when auto_upgrade_enabled goes from true to false",
    ),
    ("gcp:compute/disk:Disk", "size"): (
        "decrease",
        "customdiff.ForceNewIfChange(size, IsDiskShrinkage): a disk only grows in place",
    ),
    ("gcp:compute/subnetwork:Subnetwork", "ip_cidr_range"): (
        "cidr_shrinks",
        "customdiff.ForceNewIfChange(ip_cidr_range, IsShrinkageIpCidr): only an expansion is in place",
    ),
    ("gcp:compute/instanceGroupManager:InstanceGroupManager", "resource_policies.0.workload_policy"): (
        "always",
        "customdiff.ForceNewIfChange(resource_policies.0.workload_policy, "
        "ForceNewResourcePoliciesWorkloadPolicyIfNewIsEmpty)",
    ),
    ("gcp:storage/bucket:Bucket", "retention_policy.0.is_locked"): (
        "always",
        "customdiff.ForceNewIfChange(retention_policy.0.is_locked, isPolicyLocked)",
    ),
}

# Marks a `d.ForceNew(key)` whose key is computed: EXTRA must describe it.
COMPUTED_KEY = "*computed key*"

# The attributes that make up a security group rule's source (ModifyPlan compares which one is set).
_RULE_SOURCES = ("cidr_ipv4", "cidr_ipv6", "prefix_list_id", "referenced_security_group_id")

# Not from a Terraform schema: properties whose replacement semantics come from elsewhere, with the source.
EXTRA: dict[str, dict[str, Any]] = {
    "gcp:compute/disk:Disk": {
        "replace_when": [
            {
                "property": "provisionedIops",
                "when": "always",
                "why": "ResourceComputeDisk CustomizeDiff hyperDiskIopsUpdateDiffSuppress: "
                "d.ForceNew(provisioned_iops) on any change when the disk type is not a hyperdisk",
            }
        ]
    },
    "gcp:compute/instance:Instance": {
        "replace_when": [
            {
                "property": "networkInterfaces.networkIp",
                "when": "always",
                "why": "ResourceComputeInstance CustomizeDiff forceNewIfNetworkIPNotUpdatable: "
                "d.ForceNew(network_interface.N.network_ip) when the IP changes within the same (sub)network",
            }
        ]
    },
    "gcp:sql/databaseInstance:DatabaseInstance": {
        "replace_when": [
            {
                "property": "settings.diskSize",
                "when": "decrease",
                "why": "ResourceSqlDatabaseInstance CustomizeDiff diskSizeCutomizeDiff: d.ForceNew("
                "settings.0.disk_size) when the disk shrinks and disk_autoresize is off (with it on, the "
                "smaller size is dropped from the diff: the disk never shrinks)",
            }
        ]
    },
    "gcp:lustre/instance:Instance": {
        "replace_when": [
            {
                "property": "capacityGib",
                "when": "decrease",
                "why": "S-LUSTRE-GCP: capacity can only be increased; the provider updates in place, the "
                "API refuses a decrease, so shrinking means a new instance",
            }
        ]
    },
}

DYNAMIC: dict[str, dict[str, Any]] = {
    "pulumi-python:dynamic/gcp-tpu:QueuedResource": {
        "provider": "clusterfab",
        "replace_on_any": True,
        "why": "components/gcp/_queued_resource.py QueuedResourceProvider.diff: every changed input replaces",
    },
    "pulumi-python:dynamic/clusterfab:HealthSigningKey": {
        "provider": "clusterfab",
        "replace_on": [],
        "why": "components/health_signing.py SigningKeyProvider.diff: no change, the key is made once",
    },
    "pulumi-python:dynamic/clusterfab:AzureAdminSshKey": {
        "provider": "clusterfab",
        "replace_on": [],
        "why": "components/azure/admin_key.py AdminKeyProvider.diff: no change, the key is made once",
    },
}

# pulumi-kubernetes (provider/pkg/provider/diff.go, forceNewProperties; read at 94977969, 2026-07-01): an
# object is replaced when its name or namespace changes, and some kinds on more (a RoleBinding's roleRef,
# which the API server refuses to change, a DaemonSet's or Deployment's selector, a ConfigMap's data); its
# provider (provider.go DiffConfig) when the kubeconfig's active cluster changes, and every object it
# applied with it.
_K8S_METADATA = ["metadata.name", "metadata.namespace"]
KUBERNETES: dict[str, dict[str, Any]] = {
    "kubernetes:core/v1:Namespace": {"replace_on": _K8S_METADATA},
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": {"replace_on": [*_K8S_METADATA, "roleRef"]},
    "kubernetes:core/v1:Service": {"replace_on": [*_K8S_METADATA, "spec.clusterIP", "spec.type"]},
    "kubernetes:apps/v1:DaemonSet": {"replace_on": [*_K8S_METADATA, "spec.selector"]},
    "kubernetes:apps/v1:Deployment": {"replace_on": [*_K8S_METADATA, "spec.selector"]},
    "kubernetes:core/v1:ServiceAccount": {"replace_on": _K8S_METADATA},
    # ConfigMaps are immutable to the provider unless it is configured otherwise (enableConfigMapMutable).
    "kubernetes:core/v1:ConfigMap": {"replace_on": [*_K8S_METADATA, "binaryData", "data"]},
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole": {"replace_on": _K8S_METADATA},
    "kubernetes:rbac.authorization.k8s.io/v1:Role": {"replace_on": _K8S_METADATA},
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": {"replace_on": [*_K8S_METADATA, "roleRef"]},
    "kubernetes:scheduling.k8s.io/v1:PriorityClass": {"replace_on": _K8S_METADATA},
    "kubernetes:networking.gke.io/v1:GKENetworkParamSet": {"replace_on": _K8S_METADATA},
    "kubernetes:networking.gke.io/v1:Network": {"replace_on": _K8S_METADATA},
    "kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck": {"replace_on": _K8S_METADATA},
    "kubernetes:kueue.x-k8s.io/v1beta2:Topology": {"replace_on": _K8S_METADATA},
    "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": {"replace_on": _K8S_METADATA},
    "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass": {"replace_on": _K8S_METADATA},
    "kubernetes:kueue.x-k8s.io/v1beta2:Cohort": {"replace_on": _K8S_METADATA},
    "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue": {"replace_on": _K8S_METADATA},
    "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue": {"replace_on": _K8S_METADATA},
    "kubernetes:kueue.x-k8s.io/v1beta2:ProvisioningRequestConfig": {"replace_on": _K8S_METADATA},
    "kubernetes:helm.sh/v3:Release": {
        "replace_on": ["name", "namespace"],
        "why": "helm_release.go Diff: forceNewFields .name and .namespace; another chart, version or values "
        "upgrades the release in place",
    },
    "pulumi:providers:kubernetes": {
        "replace_on": ["clusterIdentifier"],
        "why": "DiffConfig: with clusterIdentifier set (as the program always sets it) the provider is "
        "replaced only when it changes; every other change of its configuration is an update",
    },
}


# The provider resources: which of their inputs each resource inherits when it does not set the
# property itself, so that changing the provider's value changes (and so may replace) the resource.
PROVIDER_DEFAULTS: dict[str, dict[str, Any]] = {
    "pulumi:providers:aws": {
        "inherited": {"region": "region"},
        "why": "terraform-provider-aws internal/provider/sdkv2 defaultRegion + forceNewIfRegionChanges "
        "(and the framework's resourceForceNewIfRegionChanges): a resource's region defaults to the "
        "provider's, and a changed region forces a new resource",
    },
    "pulumi:providers:gcp": {
        "inherited": {"project": "project", "region": "region", "zone": "zone"},
        "why": "terraform-provider-google-beta tpgresource.DefaultProviderProject / DefaultProviderRegion "
        "/ DefaultProviderZone: unset project, region and zone take the provider's, and they are ForceNew",
    },
}


# --- reading Go ---------------------------------------------------------------------------------


def _skip_string(text: str, i: int) -> int:
    """Index after the string, raw string, rune or comment starting at i (or i when none starts there)."""
    c = text[i]
    if c in "\"'":
        j = i + 1
        while text[j] != c:
            j += 2 if text[j] == "\\" else 1
        return j + 1
    if c == "`":
        return text.index("`", i + 1) + 1
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text.startswith("/*", i):
        return text.index("*/", i + 2) + 2
    return i


def _close(text: str, i: int) -> int:
    """Index of the bracket that closes the one at i."""
    depth = 0
    while i < len(text):
        j = _skip_string(text, i)
        if j != i:
            i = j
            continue
        if text[i] in "{([":
            depth += 1
        elif text[i] in "})]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("unbalanced brackets")


def _split_top(body: str) -> list[str]:
    """Split a composite literal's body on its top-level commas."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(body):
        j = _skip_string(body, i)
        if j != i:
            i = j
            continue
        c = body[i]
        if c in "{([":
            depth += 1
        elif c in "})]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
        i += 1
    parts.append(body[start:])
    return [p.strip() for p in parts if _strip_comments(p).strip()]


def _strip_comments(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        j = _skip_string(text, i)
        if j == i:
            out.append(text[i])
            i += 1
        else:
            if not text.startswith(("//", "/*"), i):
                out.append(text[i:j])
            i = j
    return "".join(out)


def _key_value(entry: str) -> tuple[str, str]:
    """`"name": {...}` -> ("name", "{...}"); the first top-level colon separates them."""
    entry = _strip_comments(entry).strip()
    i = 0
    while i < len(entry):
        j = _skip_string(entry, i)
        if j != i:
            i = j
            continue
        if entry[i] in "{([":
            i = _close(entry, i) + 1
            continue
        if entry[i] == ":":
            return entry[:i].strip(), entry[i + 1 :].strip()
        i += 1
    raise ValueError(f"no key in {entry[:80]!r}")


def _literal_after(text: str, marker: str) -> str | None:
    """The body of the first `marker{ ... }` (or `marker( ... )`) in text; marker ends with the bracket."""
    at = text.find(marker)
    if at < 0:
        return None
    brace = at + len(marker) - 1
    return text[brace + 1 : _close(text, brace)]


_LABEL_MIRRORS = ("effective_labels", "terraform_labels")


@dataclass
class Attribute:
    path: str
    """Terraform path, `.0.` for the single item of a block (`metadata_configuration.0.iops`)."""
    force_new: bool


@dataclass
class Schema:
    attributes: list[Attribute] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    """Entries defined by a helper from another package (tags, timeouts): not read."""
    conditional: list[str] = field(default_factory=list)
    """Attributes a CustomizeDiff / ModifyPlan function forces new under a condition."""
    provider_defaults: list[str] = field(default_factory=list)
    """Attributes a CustomizeDiff sets from the provider's configuration when unset (GCP)."""


class GoTree:
    """Go sources of one provider at one git ref: the upstream layout or the index repository's."""

    def __init__(self, git_dir: Path, ref: str, root: str) -> None:
        self.git_dir, self.ref = git_dir, ref
        self.commit = self._git("rev-parse", f"{ref}^{{commit}}").strip()
        self.index_layout = bool(self._git("ls-tree", "--name-only", ref, "index/internal/service/"))
        self.root = "index/internal/service" if self.index_layout else root
        self._packages: dict[str, dict[str, str]] = {}

    def _git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(self.git_dir), *args], capture_output=True, text=True, check=False
        ).stdout

    def package(self, folder: str) -> dict[str, str]:
        """Path -> text of every Go source file directly in folder (read once, in one git call)."""
        if folder not in self._packages:
            listing = self._git("ls-tree", "--name-only", f"{self.ref}:{folder}").split()
            paths = [f"{folder}/{name}" for name in listing if name.endswith((".go", ".goindex"))]
            batch = subprocess.run(
                ["git", "--git-dir", str(self.git_dir), "cat-file", "--batch"],
                input="".join(f"{self.ref}:{p}\n" for p in paths).encode(),
                capture_output=True,
                check=True,
            ).stdout
            files, at = {}, 0
            for path in paths:
                header_end = batch.index(b"\n", at)
                size = int(batch[at:header_end].split()[2])
                files[path] = batch[header_end + 1 : header_end + 1 + size].decode()
                at = header_end + 1 + size + 1
            self._packages[folder] = files
        return self._packages[folder]

    def locate(self, package: str, name: str, kind: str) -> tuple[str, str]:
        """(source path, text from the definition on) of a function, method or variable."""
        folder = os.path.normpath(f"{self.root}/{package}")
        if kind in ("framework", "modifyplan"):
            method = "Schema" if kind == "framework" else "ModifyPlan"
            pattern = rf"^func \(\w+ \*{name}\) {method}\("
        elif kind == "var":
            pattern = rf"^var {name} = "
        else:
            pattern = rf"^func {name}\("
        for path, text in sorted(self.package(folder).items()):
            found = re.search(pattern, text, re.MULTILINE)
            if found:
                return path, text[found.start() :]
        raise LookupError(f"{kind} {name} not found under {folder} at {self.ref}")

    def function(self, package: str, name: str) -> str | None:
        try:
            _, text = self.locate(package, name, "func")
        except LookupError:
            return None
        return text[: _close(text, text.index("{", text.index(")"))) + 1]


def _schema_map_body(tree: GoTree, piece: Piece, definition: str) -> str:
    """The body of the resource's top-level schema map (not its identity schema)."""
    if piece.kind == "var":
        return _literal_after(definition, "map[string]*schema.Schema{") or ""
    if piece.kind == "framework":
        return _literal_after(definition, "Attributes: map[string]schema.Attribute{") or ""
    fields = _fields(definition[definition.index("&schema.Resource{") + 1 :])
    value = fields.get("Schema") or fields.get("SchemaFunc") or ""
    # `Schema: helper()` or `SchemaFunc: helper`
    helper = re.fullmatch(r"(\w+)(\(\))?", value)
    if helper:
        value = tree.function(piece.package, helper.group(1)) or ""
    body = _literal_after(value, "map[string]*schema.Schema{")
    if body is None:
        raise ValueError(f"no schema map in {piece.name}")
    return body


def _fields(value: str) -> dict[str, str]:
    """Field name -> value of a `{Type: ..., ForceNew: true, ...}` / `schema.XAttribute{...}` literal."""
    body = value[value.index("{") + 1 : _close(value, value.index("{"))]
    return dict(_key_value(e) for e in _split_top(body) if ":" in _strip_comments(e))


def _read_map(tree: GoTree, package: str, body: str, prefix: str, schema: Schema) -> None:
    for entry in _split_top(body):
        key, value = _key_value(entry)
        name = key.strip('"') if key.startswith('"') else key
        path = f"{prefix}{name}"
        helper = re.fullmatch(r"(\w+)\(\)", value)
        if helper:
            defined = tree.function(package, helper.group(1))
            if defined is None:
                schema.unresolved.append(path)
                continue
            value = defined[defined.index("&schema.Schema{") + len("&schema.Schema") :]
        elif not re.match(r"(&?schema\.\w+)?\{", value):
            schema.unresolved.append(path)
            continue
        fields = _fields(value)
        replaces = fields.get("ForceNew") == "true" or "RequiresReplace()" in fields.get("PlanModifiers", "")
        settable = fields.get("Optional") == "true" or fields.get("Required") == "true"
        if path in _LABEL_MIRRORS and replaces:
            # tpgresource.SetLabelsDiff computes these from `labels`: a label change replaces.
            schema.attributes.append(Attribute("labels", True))
        # Otherwise a computed-only attribute is an output: no input can change it.
        schema.attributes.append(Attribute(path, replaces and settable))
        elem = fields.get("Elem", "")
        nested = _literal_after(elem, "map[string]*schema.Schema{")
        if nested is not None:
            _read_map(tree, package, nested, f"{path}.0.", schema)


def read_schema(tree: GoTree, upstream: Upstream) -> tuple[Schema, list[str]]:
    """The resource's attributes and the source paths read."""
    schema, sources = Schema(), []
    for piece in upstream.pieces:
        path, definition = tree.locate(piece.package, piece.name, piece.kind)
        end = _close(definition, definition.index("{", definition.index("=" if piece.kind == "var" else ")")))
        definition = definition[: end + 1]
        sources.append(f"{path} ({piece.kind} {piece.name})")
        schema.provider_defaults += [
            name.lower()
            for name in re.findall(r"tpgresource\.DefaultProvider(Project|Region|Zone)\b", definition)
        ]
        _read_map(tree, piece.package, _schema_map_body(tree, piece, definition), "", schema)
        schema.conditional += _conditional(tree, piece, definition)
    return schema, sources


def _conditional(tree: GoTree, piece: Piece, definition: str) -> list[str]:
    """Attributes forced new by ForceNewIfChange, the CustomizeDiff functions or a ModifyPlan method."""
    if piece.kind == "framework":
        return ["*source*"] if _modify_plan_replaces(tree, piece) else []
    found = re.findall(r'ForceNewIf(?:Change)?\(\s*"([\w.]+)"', definition)
    found += [_snake(a) for a in re.findall(r"ForceNewIf(?:Change)?\(\s*names\.Attr(\w+)", definition)]
    # Inline CustomizeDiff functions call diff.ForceNew themselves.
    found += re.findall(r'\.ForceNew\("([\w.]+)"\)', definition)
    customize = _literal_after(definition, "CustomizeDiff: customdiff.Sequence(") or ""
    customize += _literal_after(definition, "CustomizeDiff: customdiff.All(") or ""
    single = re.search(r"CustomizeDiff:\s+(\w+),", definition)
    for name in re.findall(r"\b(\w+),", customize) + ([single.group(1)] if single else []):
        body = tree.function(piece.package, name)
        if body is not None:
            found += re.findall(r'\.ForceNew\("([\w.]+)"\)', body)
            found += [_snake(a) for a in re.findall(r"\.ForceNew\(names\.Attr(\w+)\)", body)]
            if re.search(r"\.ForceNew\((?!names\.)[a-zA-Z_]", body):
                found.append(COMPUTED_KEY)
    return found


def _snake(name: str) -> str:
    """`InstanceType` -> `instance_type` (the attribute a `names.AttrX` constant holds)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _modify_plan_replaces(tree: GoTree, piece: Piece) -> bool:
    """Whether the framework resource's ModifyPlan method asks for a replacement."""
    try:
        _, text = tree.locate(piece.package, piece.name, "modifyplan")
    except LookupError:
        return False
    return "RequiresReplace" in text[: _close(text, text.index("{", text.index(")"))) + 1]


# --- Pulumi names -------------------------------------------------------------------------------


@functools.cache
def _classes(source: Path) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in ast.parse(source.read_text()).body if isinstance(n, ast.ClassDef)}


class PulumiNames:
    """Terraform attribute names -> Pulumi property names, as the installed Python SDK names them."""

    def __init__(self, token: str) -> None:
        package, rest = token.split(":", 1)
        module_name, cls_name = rest.split(":")[0].split("/")[0], rest.split(":")[1]
        self.module = importlib.import_module(f"pulumi_{package.replace('-', '_')}.{module_name}")
        resource = getattr(self.module, cls_name)
        self.inputs_source = Path(inspect.getsourcefile(self.module) or "").parent / "_inputs.py"
        source = Path(inspect.getsourcefile(resource) or "")
        # `InitArgs` where `Args` would collide with a type of the module.
        args = (
            f"{cls_name}InitArgs" if f"class {cls_name}InitArgs:" in source.read_text() else f"{cls_name}Args"
        )
        self.top = self._getters(source, args)

    def _getters(self, source: Path, cls: str) -> dict[str, tuple[str, str | None]]:
        """Python name -> (Pulumi name, nested Args class or None) of one Args class."""
        classes = _classes(source)
        if cls not in classes:
            raise LookupError(f"{cls} not in {source}")
        return self._class_getters(classes[cls])

    @staticmethod
    def _class_getters(node: ast.ClassDef) -> dict[str, tuple[str, str | None]]:
        out: dict[str, tuple[str, str | None]] = {}
        for item in node.body:
            if not isinstance(item, ast.FunctionDef):
                continue
            for deco in item.decorator_list:
                call = deco.func if isinstance(deco, ast.Call) else deco
                if ast.unparse(call) == "pulumi.getter":
                    keywords = deco.keywords if isinstance(deco, ast.Call) else []
                    named = [k.value for k in keywords if k.arg == "name"]
                    pulumi_name = ast.literal_eval(named[0]) if named else item.name
                    nested = re.search(r"'(\w+Args)'", ast.unparse(item.returns) if item.returns else "")
                    out[item.name] = (pulumi_name, nested.group(1) if nested else None)
        return out

    def pulumi_path(self, terraform_path: str) -> str | None:
        """`network_interfaces.0.subnet_id` -> `networkInterfaces.subnetId`; None when the SDK lacks it."""
        getters, parts, out = self.top, terraform_path.split(".0."), []
        for index, part in enumerate(parts):
            match = self._match(getters, part)
            if match is None:
                return None
            pulumi_name, nested = match
            out.append(pulumi_name)
            if index + 1 < len(parts):
                if nested is None:
                    return None
                getters = self._getters(self.inputs_source, nested)
        return ".".join(out)

    @staticmethod
    def _match(getters: dict[str, tuple[str, str | None]], name: str) -> tuple[str, str | None] | None:
        """The SDK's property for a Terraform attribute: the same name, or its plural (the bridge names a
        list of blocks in the plural: `initial_lifecycle_hook` -> `initialLifecycleHooks`); a constant of
        the provider's `names` package (`names.AttrVPCID`) is compared without case and underscores."""
        if name in getters:
            return getters[name]
        if name.startswith("names.Attr"):
            wanted = name.removeprefix("names.Attr").lower()
            found = [k for k in getters if k.replace("_", "") in (wanted, wanted + "s", wanted + "es")]
        else:
            plurals = (name + "s", name + "es", name[:-1] + "ies" if name.endswith("y") else name)
            found = [k for k in dict.fromkeys(plurals) if k in getters]
        return getters[found[0]] if len(found) == 1 else None


# --- the data file ------------------------------------------------------------------------------


def plan_types() -> list[str]:
    """The custom resource types of the golden plans and every cloud resource class components/ creates."""
    found = set()
    for plan in PLANS.glob("*.json"):
        for resource in json.loads(plan.read_text())["resources"]:
            if resource["custom"]:
                found.add(resource["type"])
    return sorted(found | set(component_types()))


_CONSTRUCTED = re.compile(r"\b(aws|gcp)\.(\w+)\.([A-Z]\w*)\(")


# Azure components import the SDK's modules by name (`from pulumi_azure_native import network`) and
# construct `network.VirtualNetwork(...)`.
_AZURE_IMPORT = re.compile(r"^from pulumi_azure_native import ([\w, ]+)$", re.MULTILINE)


def _constructed(text: str) -> list[tuple[str, str, str]]:
    """(SDK package, module, class) of every `module.Class(` call of a component's source."""
    found = [(f"pulumi_{cloud}", module, name) for cloud, module, name in _CONSTRUCTED.findall(text)]
    modules = {m.strip() for line in _AZURE_IMPORT.findall(text) for m in line.split(",")}
    if modules:
        calls = re.findall(rf"\b({'|'.join(sorted(modules))})\.([A-Z]\w*)\(", text)
        found += [("pulumi_azure_native", module, name) for module, name in calls]
    return found


def component_types() -> list[str]:
    """Type tokens of the cloud resources components/ constructs (`aws.ec2.Vpc(...)`,
    `network.VirtualNetwork(...)` from pulumi_azure_native), read from the installed SDKs' sources
    without importing them."""
    tokens = set()
    for source in sorted((REPO / "components").rglob("*.py")):
        for package, module, name in _constructed(source.read_text()):
            spec = importlib.util.find_spec(package)
            assert spec is not None
            assert spec.origin is not None
            folder = Path(spec.origin).parent / module
            for candidate in sorted(folder.glob("*.py")):
                text = candidate.read_text()
                if f"class {name}(pulumi.CustomResource)" in text:
                    found = re.search(rf"super\({name}, __self__\).__init__\(\s*'([^']+)'", text)
                    assert found is not None, candidate
                    tokens.add(found.group(1))
    return sorted(tokens)


def resource_entry(token: str, upstream: Upstream, tree: GoTree, provider: str) -> dict[str, Any]:  # noqa: C901, PLR0912, PLR0915 - one pass over the schema, checks in order
    schema, sources = read_schema(tree, upstream)
    names = PulumiNames(token)
    replace_on: list[str] = []
    unmapped: list[str] = []
    for attribute in schema.attributes:
        if not attribute.force_new:
            continue
        pulumi = names.pulumi_path(attribute.path)
        if pulumi is None:
            unmapped.append(attribute.path)
        else:
            replace_on.append(pulumi)
    if unmapped:
        raise SystemExit(f"{token}: no Pulumi property for the ForceNew attributes {unmapped}")
    read = {a.path for a in schema.attributes} | set(schema.unresolved) | {"region", "tags_all"}
    known = {names.pulumi_path(p) for p in read if ".0." not in p}
    newer = sorted(name for name, _ in names.top.values() if name not in known)
    replace_when = []
    unconditional = {
        re.sub(r"names\.Attr(\w+)", lambda m: _snake(m.group(1)), a.path)
        for a in schema.attributes
        if a.force_new
    }
    for path in dict.fromkeys(p for p in schema.conditional if p not in unconditional):
        if path == COMPUTED_KEY:
            if not EXTRA.get(token, {}).get("replace_when"):
                raise SystemExit(
                    f"{token}: a CustomizeDiff function forces new an attribute it computes the "
                    "name of; read the source and describe it in EXTRA"
                )
            continue
        condition = CONDITIONS.get((token, path))
        if condition is None:
            raise SystemExit(
                f"{token}: the provider forces a replacement on {path} under a condition "
                "CONDITIONS does not explain; read the source and add it"
            )
        when, why, *flag = condition
        if when == "absent":
            continue  # an attribute the installed SDK no longer has: no plan can change it
        properties = (
            [p for p in (names.pulumi_path(s) for s in _RULE_SOURCES) if p]
            if path == "*source*"
            else [names.pulumi_path(path)]
        )
        for prop in properties:
            if prop is None:
                raise SystemExit(f"{token}: no Pulumi property for {path}")
            item = {"property": prop, "when": when, "why": why}
            if flag:
                item["flag"] = names.pulumi_path(flag[0])
            replace_when.append(item)
    for (typ, path), _ in CONDITIONS.items():
        if typ == token and path not in schema.conditional:
            raise SystemExit(f"{token}: CONDITIONS explains {path}, which the source no longer forces")
    if "region" in names.top and provider == "aws":
        # pulumi-aws 7 exposes a resource's Region only where the upstream resource is region-aware, and
        # forceNewIfRegionChanges makes a change of it a replacement.
        replace_on.append("region")
    entry: dict[str, Any] = {
        "type": token,
        "provider": provider,
        "terraform_type": upstream.terraform_type,
        "read": sources,
        "replace_on": sorted(set(replace_on)),
    }
    if newer:
        # The installed SDK has inputs the schema read does not: the SDK bridges a newer upstream.
        entry["not_in_upstream"] = newer
        entry["unconfirmed"] = {
            "replace_on": f"{', '.join(newer)}: in the installed SDK but not in the upstream version read; "
            "whether a change of them replaces is unknown (taken as not)"
        }
    replace_when += EXTRA.get(token, {}).get("replace_when", [])
    if replace_when:
        entry["replace_when"] = replace_when
    if "region" in names.top and provider == "aws":
        # pulumi-aws 7 exposes a resource's Region only where the upstream resource is region-aware.
        entry["inherits"] = {"region": "region"}
    inherited = sorted({k for k in schema.provider_defaults if k in names.top})
    if inherited:
        entry["inherits"] = {k: k for k in inherited}
    return {**entry, **_provenance(provider)}


def _provenance(provider: str) -> dict[str, Any]:
    return {"source": [SOURCES[provider]], "as_of": AS_OF, "confidence": "vendor-code"}


def build(aws: GoTree, gcp: GoTree, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    types = sorted(set(plan_types()) | set(extra))
    entries, missing = [], []
    for token in types:
        if token in AWS:
            entries.append(resource_entry(token, AWS[token], aws, "aws"))
        elif token in GCP:
            entries.append(resource_entry(token, GCP[token], gcp, "gcp"))
        elif token in KUBERNETES:
            entries.append(
                {"type": token, "provider": "kubernetes", **KUBERNETES[token], **_provenance("kubernetes")}
            )
        elif token in replacement_azure.AZURE:
            entries.append(azure_entry(token))
        elif token == "pulumi:providers:azure-native":
            entries.append(
                {"type": token, "provider": "azure-native", **replacement_azure.AZURE_PROVIDER, **_azure()}
            )
        elif token in DYNAMIC:
            entries.append({"type": token, **DYNAMIC[token], **_provenance("clusterfab")})
        elif token in PROVIDER_DEFAULTS:
            cloud = token.split(":")[-1]
            entries.append(
                {"type": token, "provider": cloud, **PROVIDER_DEFAULTS[token], **_provenance(cloud)}
            )
        else:
            missing.append(token)
    if missing:
        raise SystemExit(
            f"no upstream schema is named for {missing}: add them to AWS / GCP above, or to "
            "replacement_azure.AZURE"
        )
    return {
        "providers": {
            "aws": _provider("aws", "hashicorp/terraform-provider-aws", aws, entries),
            "azure-native": _azure_provider(),
            "gcp": _provider("gcp", "hashicorp/terraform-provider-google-beta", gcp, entries),
        },
        "types": entries,
    }


def _azure() -> dict[str, Any]:
    return {"source": AZURE_SOURCES, "as_of": AS_OF_AZURE, "confidence": "vendor-code"}


def azure_entry(token: str) -> dict[str, Any]:
    """The pinned rule of an azure-native type, every property it names checked against the SDK's inputs."""
    rule = replacement_azure.AZURE[token]
    inputs = {name for name, _ in PulumiNames(token).top.values()}
    unknown = sorted(p for p in rule["replace_on"] if p.split(".")[0] not in inputs)
    if unknown:
        raise SystemExit(f"{token}: {unknown} are no inputs of the installed SDK; read the source again")
    entry = {"type": token, "provider": "azure-native", "read": rule["read"]}
    entry |= {"replace_on": sorted(rule["replace_on"]), "why": rule["why"], **_azure()}
    if "unconfirmed" in rule:
        entry["unconfirmed"] = rule["unconfirmed"]
    if "replace_when" in rule:
        entry["replace_when"] = rule["replace_when"]
    return entry


def _azure_provider() -> dict[str, Any]:
    version = importlib.metadata.version("pulumi-azure-native")
    return {
        "pulumi_package": "pulumi-azure-native",
        "pulumi_version": version,
        "upstream": "pulumi/pulumi-azure-native",
        "upstream_version": f"v{version}",
        "read_from": replacement_azure.READ_FROM,
        **_azure(),
        "unconfirmed": {
            "upstream_version": "the provider's code was read at the commits the index holds "
            "(per type in `read`), not at the v" + version + " tag; the specifications at the API versions "
            "pulumi-azure-native uses by default (the SDK's docstrings)"
        },
    }


def _provider(cloud: str, upstream: str, tree: GoTree, entries: list[dict[str, Any]]) -> dict[str, Any]:
    package = f"pulumi-{cloud}"
    version = importlib.metadata.version(package)
    read = (
        f"lonegunmanb/terraform-provider-aws-index @ {tree.commit} "
        "(verbatim copies of the release's functions)"
        if tree.index_layout
        else f"{upstream} @ {tree.commit}"
    )
    newer = [
        f"{e['type']} {', '.join(e['not_in_upstream'])}"
        for e in entries
        if e.get("provider") == cloud and e.get("not_in_upstream")
    ]
    if newer:
        note = (
            f"{package} {version} does not name the upstream release it bridges; its SDK has inputs "
            f"{tree.ref} lacks ({'; '.join(newer)}), so it bridges a later release than the one read"
        )
    else:
        note = (
            f"{package} {version} does not name the upstream release it bridges; the SDK's inputs of every "
            f"type here match {tree.ref}'s schemas"
        )
    return {
        "pulumi_package": package,
        "pulumi_version": version,
        "upstream": upstream,
        "upstream_version": tree.ref,
        "read_from": read,
        **_provenance(cloud),
        "unconfirmed": {"upstream_version": note},
    }


HEADER = """\
# Generated by scripts/replacement_data.py from the Terraform providers the Pulumi providers bridge; do not
# edit by hand (see the script for how to regenerate it). Per resource type: the input properties (Pulumi
# names) whose change makes the provider replace the resource (`replace_on`), the changes that replace it
# only under a condition (`replace_when`), and the properties it takes from its provider resource when unset
# (`inherits`; the provider resources list what they hand down as `inherited`), whose change on the provider
# therefore changes the resource too. Paths name the nested properties of blocks with dots and leave out
# list indexes (`networkInterfaces.subnetwork`). `not_in_upstream`: inputs the installed SDK has and the
# upstream release read lacks (the SDK bridges a later release; see `providers`). pulumi-azure-native bridges
# no Terraform provider: its rules are a table pinned by hand in scripts/replacement_azure.py (each type's
# `read` names the provider code and REST specification files, repository @ commit : path), not read by
# the script; `unconfirmed` says where a specification was not read.
"""


def render(data: dict[str, Any]) -> str:
    yaml = YAML()
    yaml.width = 4096
    yaml.representer.ignore_aliases = lambda *_: True
    yaml.indent(mapping=2, sequence=4, offset=2)
    stream = io.StringIO()
    yaml.dump(data, stream)
    return HEADER + stream.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--aws", nargs=2, metavar=("GIT_DIR", "REF"), required=True)
    parser.add_argument("--gcp", nargs=2, metavar=("GIT_DIR", "REF"), required=True)
    parser.add_argument(
        "--check", action="store_true", help="Compare with the committed file instead of writing."
    )
    parser.add_argument("--out", type=Path, default=OUT, help="Where to write (default: the catalog's file).")
    parser.add_argument(
        "--type",
        action="append",
        default=[],
        dest="types",
        metavar="TOKEN",
        help="A resource type to write a rule for besides the plans' and components' types (repeat it); "
        "for a type a plan will create before its golden plan exists.",
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    aws = GoTree(Path(args.aws[0]), args.aws[1], "internal/service")
    gcp = GoTree(Path(args.gcp[0]), args.gcp[1], "google-beta/services")
    text = render(build(aws, gcp, tuple(args.types)))
    if args.check:
        same = out.read_text() == text
        print("up to date" if same else f"{out} differs from what the providers say")
        return 0 if same else 1
    out.write_text(text)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
