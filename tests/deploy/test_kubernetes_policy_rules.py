"""The Kubernetes policies of the pack (clusterfab.policy.kubernetes) on GKE and EKS clusters, node pools
and launch templates declared with the providers' own SDKs (pulumi-gcp container, pulumi-aws eks), checked
as CrossGuard checks them and as `clusterfab policy` checks an offline plan: each violation's exact
message, and the compliant way to write it. Kubernetes objects (pulumi-kubernetes) trip no policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from clusterfab.policy.names import (
    IMDS_HOP_LIMIT,
    KUBERNETES_NO_LEGACY_ABAC,
    KUBERNETES_PRIVATE_API,
    KUBERNETES_SECRETS_ENCRYPTION,
    KUBERNETES_WORKLOAD_IDENTITY,
)
from clusterfab.policy.offline import check_resources
from tests.deploy.crossguard import declared, violations

PRIVATE_NODES = gcp.container.ClusterPrivateClusterConfigArgs(enable_private_nodes=True)
WORKLOAD_POOL = gcp.container.ClusterWorkloadIdentityConfigArgs(workload_pool="demo.svc.id.goog")
ROLE = "arn:aws:iam::123456789012:role/eks"
SUBNETS = ["subnet-a", "subnet-b"]
KMS = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
SECRETS = aws.eks.ClusterEncryptionConfigArgs(
    provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=KMS), resources=["secrets"]
)


def checked(policy: str, program: Callable[[], None]) -> list[str]:
    """What `policy` reports for the program's resources as CrossGuard calls it, sorted; the offline
    check (`clusterfab policy`) reports the same."""
    resources = declared(program)
    found = sorted(violations(policy, resources))
    offline = check_resources(resources, protected=False, stateful_types=())
    assert sorted(v.message for v in offline if v.policy == policy) == found
    return found


def _gke(name: str, **args: Any) -> None:
    defaults: dict[str, Any] = {
        "location": "us-central1",
        "initial_node_count": 1,
        "private_cluster_config": PRIVATE_NODES,
        "workload_identity_config": WORKLOAD_POOL,
    }
    gcp.container.Cluster(name, **{**defaults, **args})


def test_a_gke_cluster_has_private_nodes_and_no_open_ip_endpoint() -> None:
    def program() -> None:
        _gke("public-nodes", private_cluster_config=None)
        _gke("open")
        _gke(
            "everyone",
            master_authorized_networks_config=gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=[
                    gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                        cidr_block="203.0.113.0/24"
                    ),
                    gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(cidr_block="0.0.0.0/0"),
                ]
            ),
        )
        _gke(
            "private-endpoint",
            private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=True, enable_private_endpoint=True
            ),
        )
        _gke(
            "dns-only",
            control_plane_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigArgs(
                ip_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigIpEndpointsConfigArgs(
                    enabled=False
                )
            ),
        )
        _gke(
            "office",
            master_authorized_networks_config=gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=[
                    gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                        cidr_block="203.0.113.0/24"
                    )
                ]
            ),
        )

    assert checked(KUBERNETES_PRIVATE_API, program) == [
        "GKE cluster everyone lets 0.0.0.0/0 reach its control plane "
        "(masterAuthorizedNetworksConfig.cidrBlocks): list narrower ranges",
        "GKE cluster open opens its control plane's public IP endpoint to the internet (no "
        "masterAuthorizedNetworksConfig.cidrBlocks): list the networks that may reach it, or set "
        "privateClusterConfig.enablePrivateEndpoint",
        "GKE cluster public-nodes gives its nodes public IPs (privateClusterConfig.enablePrivateNodes is not "
        "true): set it to true",
        "GKE cluster public-nodes opens its control plane's public IP endpoint to the internet (no "
        "masterAuthorizedNetworksConfig.cidrBlocks): list the networks that may reach it, or set "
        "privateClusterConfig.enablePrivateEndpoint",
    ]


def test_gke_pods_get_workload_identity_and_rbac_alone() -> None:
    def program() -> None:
        _gke("no-pool", workload_identity_config=None)
        _gke("abac", enable_legacy_abac=True)
        _gke("good", enable_legacy_abac=False)
        gcp.container.NodePool("node-metadata", cluster="good", location="us-central1")
        gcp.container.NodePool(
            "expose",
            cluster="good",
            location="us-central1",
            node_config=gcp.container.NodePoolNodeConfigArgs(
                workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                    mode="GCE_METADATA"
                )
            ),
        )
        gcp.container.NodePool(
            "trainers",
            cluster="good",
            location="us-central1",
            node_config=gcp.container.NodePoolNodeConfigArgs(
                workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
                    mode="GKE_METADATA"
                )
            ),
        )

    assert checked(KUBERNETES_WORKLOAD_IDENTITY, program) == [
        "GKE cluster no-pool has no Workload Identity (workloadIdentityConfig.workloadPool): set it to "
        "PROJECT.svc.id.goog so that pods get their own identities, not the nodes'",
        "GKE node pool expose lets pods read the node's service account from the metadata server "
        "(nodeConfig.workloadMetadataConfig.mode is 'GCE_METADATA'): set it to 'GKE_METADATA'",
        "GKE node pool node-metadata lets pods read the node's service account from the metadata server "
        "(nodeConfig.workloadMetadataConfig.mode is 'unset'): set it to 'GKE_METADATA'",
    ]
    assert checked(KUBERNETES_NO_LEGACY_ABAC, program) == [
        "GKE cluster abac authorizes with legacy ABAC (enableLegacyAbac), which grants beyond RBAC: set it "
        "to false"
    ]


def _eks(name: str, vpc: aws.eks.ClusterVpcConfigArgs, **args: Any) -> None:
    settings: dict[str, Any] = {"encryption_config": SECRETS, **args}
    aws.eks.Cluster(name, role_arn=ROLE, vpc_config=vpc, **settings)


def test_an_eks_cluster_has_no_open_public_endpoint() -> None:
    def program() -> None:
        _eks("default", aws.eks.ClusterVpcConfigArgs(subnet_ids=SUBNETS))
        _eks(
            "everyone",
            aws.eks.ClusterVpcConfigArgs(
                subnet_ids=SUBNETS, endpoint_public_access=True, public_access_cidrs=["0.0.0.0/0"]
            ),
        )
        _eks(
            "private",
            aws.eks.ClusterVpcConfigArgs(
                subnet_ids=SUBNETS, endpoint_public_access=False, endpoint_private_access=True
            ),
        )
        _eks(
            "office",
            aws.eks.ClusterVpcConfigArgs(
                subnet_ids=SUBNETS, endpoint_public_access=True, public_access_cidrs=["203.0.113.0/24"]
            ),
        )

    assert checked(KUBERNETES_PRIVATE_API, program) == [
        "EKS cluster default opens its public endpoint to 0.0.0.0/0 (vpcConfig.endpointPublicAccess without "
        "publicAccessCidrs): set endpointPublicAccess to false, or list the ranges that may reach it in "
        "publicAccessCidrs",
        "EKS cluster everyone lets 0.0.0.0/0 reach its public endpoint (vpcConfig.publicAccessCidrs): list "
        "narrower ranges, or set endpointPublicAccess to false",
    ]


def test_an_eks_cluster_envelope_encrypts_its_secrets() -> None:
    private = aws.eks.ClusterVpcConfigArgs(subnet_ids=SUBNETS, endpoint_public_access=False)

    def program() -> None:
        _eks("plain", private, encryption_config=None)
        _eks("good", private)

    assert checked(KUBERNETES_SECRETS_ENCRYPTION, program) == [
        "EKS cluster plain stores Kubernetes secrets without envelope encryption: set encryptionConfig with "
        "resources ['secrets'] and a KMS key as its provider"
    ]


def test_an_eks_node_groups_launch_template_keeps_the_hop_limit_of_the_other_machines() -> None:
    # EKS managed node groups launch from an aws.ec2.LaunchTemplate: the pack's launch template rules hold.
    def program() -> None:
        template = aws.ec2.LaunchTemplate(
            "trainers-lt",
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_tokens="required", http_put_response_hop_limit=2
            ),
        )
        aws.eks.NodeGroup(
            "trainers",
            cluster_name="llm",
            node_role_arn=ROLE,
            subnet_ids=SUBNETS[:1],
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(desired_size=2, min_size=2, max_size=2),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(id=template.id, version="1"),
        )

    assert checked(IMDS_HOP_LIMIT, program) == [
        "launch template trainers-lt lets instance metadata responses travel further than the instance "
        "(metadataOptions.httpPutResponseHopLimit is 2): set it to 1 so that containers on a bridge network "
        "cannot take the instance role's credentials"
    ]


def test_kubernetes_objects_trip_no_policy() -> None:
    def program() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        opts = pulumi.ResourceOptions(provider=provider)
        k8s.core.v1.Namespace("research", metadata={"name": "research"}, opts=opts)
        k8s.rbac.v1.RoleBinding(
            "research-edit",
            metadata={"name": "edit", "namespace": "research"},
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="edit"
            ),
            subjects=[
                k8s.rbac.v1.SubjectArgs(
                    kind="User", name="alice@example.com", api_group="rbac.authorization.k8s.io"
                )
            ],
            opts=opts,
        )
        k8s.core.v1.Service(
            "dcgm-exporter",
            metadata={"name": "dcgm-exporter", "namespace": "kube-system"},
            spec={"type": "LoadBalancer", "ports": [{"port": 22}]},
            opts=opts,
        )
        k8s.core.v1.Secret("token", metadata={"name": "t"}, string_data={"policy": "*"}, opts=opts)

    resources = declared(program)
    assert sorted({r.type for r in resources}) == [
        "kubernetes:core/v1:Namespace",
        "kubernetes:core/v1:Secret",
        "kubernetes:core/v1:Service",
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        "pulumi:providers:kubernetes",
    ]
    assert check_resources(resources, protected=True, stateful_types=()) == []
