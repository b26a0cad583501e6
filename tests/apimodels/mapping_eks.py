"""Which botocore field each input of an EKS cluster's resources becomes (pulumi-aws's eks resources, the
secrets key, the log group's fixed name), and why the Kubernetes objects applied to the cluster have none.

The API paths start at the request shape the provider sends (terraform-provider-aws): a cluster's inputs
become `CreateClusterRequest`, a node group's `CreateNodegroupRequest`, an add-on's `CreateAddonRequest`.
"""

from __future__ import annotations

from tests.apimodels.check import Api, Free, Target
from tests.apimodels.mapping_aws import AWS

NODE_GROUP_LABEL = "clusterfab.dev/node-group"
MANAGED_BY = "app.kubernetes.io/managed-by"
CLUSTER_LABEL = "clusterfab.dev/cluster"
TEAM_LABEL = "clusterfab.dev/team"
PRIORITY_LABEL = "clusterfab.dev/priority"

_EKS_TAGS = Api("eks", "TagMap{}", key="TagMap{key}")
_KMS_TAGS = Api("kms", "Tag.TagValue", key="Tag.TagKey")
_IN_CLUSTER = Free(
    "a field of a Kubernetes object the cluster's API server takes, not an AWS API request: its shape is the "
    "Kubernetes API's (the pinned OpenAPI schema), not botocore's"
)

EKS: dict[str, dict[str, Target]] = {
    "aws:eks/cluster:Cluster": {
        "name": Api("eks", "CreateClusterRequest.name"),
        "version": Api("eks", "CreateClusterRequest.version"),
        "roleArn": Api("eks", "CreateClusterRequest.roleArn", ref=True),
        "vpcConfig.subnetIds[]": Api(
            "eks",
            "CreateClusterRequest.resourcesVpcConfig.subnetIds[]",
            ref=True,
            note="the provider's vpc_config is the API's resourcesVpcConfig",
        ),
        "vpcConfig.endpointPrivateAccess": Api(
            "eks", "CreateClusterRequest.resourcesVpcConfig.endpointPrivateAccess"
        ),
        "vpcConfig.endpointPublicAccess": Api(
            "eks", "CreateClusterRequest.resourcesVpcConfig.endpointPublicAccess"
        ),
        "vpcConfig.publicAccessCidrs[]": Api(
            "eks", "CreateClusterRequest.resourcesVpcConfig.publicAccessCidrs[]"
        ),
        "accessConfig.authenticationMode": Api("eks", "CreateClusterRequest.accessConfig.authenticationMode"),
        "accessConfig.bootstrapClusterCreatorAdminPermissions": Api(
            "eks", "CreateClusterRequest.accessConfig.bootstrapClusterCreatorAdminPermissions"
        ),
        "bootstrapSelfManagedAddons": Api("eks", "CreateClusterRequest.bootstrapSelfManagedAddons"),
        "enabledClusterLogTypes[]": Api(
            "eks",
            "CreateClusterRequest.logging.clusterLogging[].types[]",
            note="the provider sends the list as one LogSetup with enabled=true",
        ),
        "encryptionConfig.resources[]": Api("eks", "CreateClusterRequest.encryptionConfig[].resources[]"),
        "encryptionConfig.provider.keyArn": Api(
            "eks",
            "CreateClusterRequest.encryptionConfig[].provider.keyArn",
            ref=True,
            note="the provider's single encryption_config block is the API's one-item list",
        ),
        "tags.*": _EKS_TAGS,
    },
    "aws:eks/nodeGroup:NodeGroup": {
        "clusterName": Api("eks", "CreateNodegroupRequest.clusterName", ref=True),
        "version": Api("eks", "CreateNodegroupRequest.version"),
        "nodeRoleArn": Api(
            "eks",
            "CreateNodegroupRequest.nodeRole",
            ref=True,
            note="the provider's node_role_arn is nodeRole",
        ),
        "subnetIds[]": Api(
            "eks", "CreateNodegroupRequest.subnets[]", ref=True, note="the provider's subnet_ids is subnets"
        ),
        "amiType": Api("eks", "CreateNodegroupRequest.amiType"),
        "capacityType": Api("eks", "CreateNodegroupRequest.capacityType"),
        "launchTemplate.id": Api("eks", "CreateNodegroupRequest.launchTemplate.id", ref=True),
        "launchTemplate.version": Api("eks", "CreateNodegroupRequest.launchTemplate.version", ref=True),
        "scalingConfig.minSize": Api("eks", "CreateNodegroupRequest.scalingConfig.minSize"),
        "scalingConfig.maxSize": Api("eks", "CreateNodegroupRequest.scalingConfig.maxSize"),
        "scalingConfig.desiredSize": Api("eks", "CreateNodegroupRequest.scalingConfig.desiredSize"),
        "nodeRepairConfig.enabled": Api("eks", "CreateNodegroupRequest.nodeRepairConfig.enabled"),
        # A label key has dots and a slash: named whole (`*` stands for one segment).
        f"labels.{NODE_GROUP_LABEL}": Api(
            "eks", "CreateNodegroupRequest.labels{}", key="CreateNodegroupRequest.labels{key}"
        ),
        "taints[].key": Api("eks", "CreateNodegroupRequest.taints[].key"),
        "taints[].value": Api("eks", "CreateNodegroupRequest.taints[].value"),
        "taints[].effect": Api("eks", "CreateNodegroupRequest.taints[].effect"),
        "tags.*": _EKS_TAGS,
    },
    "aws:eks/addon:Addon": {
        "clusterName": Api("eks", "CreateAddonRequest.clusterName", ref=True),
        "addonName": Api("eks", "CreateAddonRequest.addonName"),
        "addonVersion": Api("eks", "CreateAddonRequest.addonVersion"),
        "resolveConflictsOnCreate": Api(
            "eks",
            "CreateAddonRequest.resolveConflicts",
            note="the provider sends resolve_conflicts_on_create as CreateAddon's resolveConflicts",
        ),
        "resolveConflictsOnUpdate": Api(
            "eks",
            "UpdateAddonRequest.resolveConflicts",
            note="the provider sends resolve_conflicts_on_update as UpdateAddon's resolveConflicts",
        ),
        "podIdentityAssociations[].roleArn": Api(
            "eks", "CreateAddonRequest.podIdentityAssociations[].roleArn", ref=True
        ),
        "podIdentityAssociations[].serviceAccount": Api(
            "eks", "CreateAddonRequest.podIdentityAssociations[].serviceAccount"
        ),
        "tags.*": _EKS_TAGS,
    },
    "aws:kms/key:Key": {
        "description": Api("kms", "CreateKeyRequest.Description"),
        "enableKeyRotation": Free(
            "the provider calls EnableKeyRotation for true (the request has only the key id and an optional "
            "rotation period); a boolean, nothing to check"
        ),
        "deletionWindowInDays": Api(
            "kms",
            "ScheduleKeyDeletionRequest.PendingWindowInDays",
            note="the provider sends it when the key is deleted",
        ),
        "tags.*": _KMS_TAGS,
    },
    "pulumi:providers:kubernetes": {
        "kubeconfig": Free("the provider's credentials for the cluster's API server: never sent to a cloud"),
        "enableServerSideApply": Free("a provider setting: never sent to a cloud"),
    },
    "kubernetes:core/v1:Namespace": {
        "apiVersion": _IN_CLUSTER,
        "kind": _IN_CLUSTER,
        "metadata.name": _IN_CLUSTER,
        **{
            f"metadata.labels.{label}": _IN_CLUSTER
            for label in (MANAGED_BY, CLUSTER_LABEL, TEAM_LABEL, PRIORITY_LABEL)
        },
    },
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": {
        "apiVersion": _IN_CLUSTER,
        "kind": _IN_CLUSTER,
        "metadata.name": _IN_CLUSTER,
        "metadata.namespace": _IN_CLUSTER,
        **{f"metadata.labels.{label}": _IN_CLUSTER for label in (MANAGED_BY, TEAM_LABEL)},
        "roleRef.*": _IN_CLUSTER,
        "subjects[].*": _IN_CLUSTER,
    },
    # The control plane's log group has the fixed name EKS writes to (not a prefix, as the flow logs').
    "aws:cloudwatch/logGroup:LogGroup": {
        **AWS["aws:cloudwatch/logGroup:LogGroup"],
        "name": Api(
            "logs",
            "CreateLogGroupRequest.logGroupName",
            note="EKS writes a cluster's control plane logs to /aws/eks/<cluster>/cluster",
        ),
    },
}
"""The inputs of the EKS realizer's resources."""
