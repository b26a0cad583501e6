"""The secure defaults of a managed Kubernetes cluster (GKE, EKS) as checks over planned or previewed
resources, in the shape of `checks`: each takes a `Resource` and returns its violations (empty: compliant).

- Private API: a GKE cluster's nodes have no public IPs (private nodes), and its control plane's IP
  endpoint is private, off, or open only to authorized networks none of which is wider than a /8; an
  EKS cluster's public endpoint is off or limited to publicAccessCidrs none of which is wider than a /8
  (left out, EKS opens the public endpoint to 0.0.0.0/0).
- Secrets encryption: an EKS cluster envelope-encrypts Kubernetes secrets with a KMS key
  (encryptionConfig.resources holds "secrets"). GKE encrypts etcd at rest on its own.
- Workload identity: a GKE cluster has a Workload Identity pool and each node pool serves pods the GKE
  metadata server (GKE_METADATA), so pods never see the node's service account; legacy ABAC is off, so
  RBAC alone authorizes. (EKS nodes: the launch template's IMDSv2 and hop limit 1, `checks`.)

Input names are the providers' (pulumi_gcp container.Cluster / NodePool, pulumi_aws eks.Cluster).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from clusterfab.policy.resources import Resource, block, items, strings, truthy

GKE_CLUSTER = "gcp:container/cluster:Cluster"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"

WIDEST_PREFIX = 8
"""A range wider than a /8 opens the API server to much of the internet (the blueprint's rule, BP176)."""


def _open_ranges(cidrs: Iterable[str]) -> list[str]:
    """The ranges wider than a /8 (0.0.0.0/0 above all); an unreadable range counts as open."""
    found = []
    for cidr in cidrs:
        try:
            network = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            found.append(cidr)
            continue
        if network.prefixlen < WIDEST_PREFIX:
            found.append(cidr)
    return found


def private_api(resource: Resource) -> list[str]:
    if resource.type == GKE_CLUSTER:
        return _gke_private_nodes(resource) + _gke_endpoint(resource)
    if resource.type == EKS_CLUSTER:
        return _eks_endpoint(resource)
    return []


def _gke_private_nodes(resource: Resource) -> list[str]:
    if truthy(block(resource.props.get("privateClusterConfig")).get("enablePrivateNodes")):
        return []
    return [
        f"GKE cluster {resource.name} gives its nodes public IPs (privateClusterConfig.enablePrivateNodes is "
        "not true): set it to true"
    ]


def _gke_endpoint(resource: Resource) -> list[str]:
    props = resource.props
    ip_endpoint = block(block(props.get("controlPlaneEndpointsConfig")).get("ipEndpointsConfig"))
    if ip_endpoint.get("enabled") is False:
        return []  # no IP endpoint: only the DNS endpoint, which authorizes with IAM
    if truthy(block(props.get("privateClusterConfig")).get("enablePrivateEndpoint")):
        return []
    networks = block(props.get("masterAuthorizedNetworksConfig"))
    cidrs = [c for entry in items(networks.get("cidrBlocks")) for c in strings(entry.get("cidrBlock"))]
    if not cidrs:
        return [
            f"GKE cluster {resource.name} opens its control plane's public IP endpoint to the internet "
            "(no masterAuthorizedNetworksConfig.cidrBlocks): list the networks that may reach it, or set "
            "privateClusterConfig.enablePrivateEndpoint"
        ]
    return [
        f"GKE cluster {resource.name} lets {cidr} reach its control plane "
        "(masterAuthorizedNetworksConfig.cidrBlocks): list narrower ranges"
        for cidr in _open_ranges(cidrs)
    ]


def _eks_endpoint(resource: Resource) -> list[str]:
    vpc = block(resource.props.get("vpcConfig"))
    if vpc.get("endpointPublicAccess") is False:
        return []
    cidrs = strings(vpc.get("publicAccessCidrs"))
    if not cidrs:
        return [
            f"EKS cluster {resource.name} opens its public endpoint to 0.0.0.0/0 (vpcConfig."
            "endpointPublicAccess without publicAccessCidrs): set endpointPublicAccess to false, or list "
            "the ranges that may reach it in publicAccessCidrs"
        ]
    return [
        f"EKS cluster {resource.name} lets {cidr} reach its public endpoint (vpcConfig.publicAccessCidrs): "
        "list narrower ranges, or set endpointPublicAccess to false"
        for cidr in _open_ranges(cidrs)
    ]


def secrets_encryption(resource: Resource) -> list[str]:
    if resource.type != EKS_CLUSTER:
        return []
    # pulumi_aws 7 takes one block; older providers and the EKS API take a list of them.
    if any("secrets" in strings(c.get("resources")) for c in items(resource.props.get("encryptionConfig"))):
        return []
    return [
        f"EKS cluster {resource.name} stores Kubernetes secrets without envelope encryption: set "
        "encryptionConfig with resources ['secrets'] and a KMS key as its provider"
    ]


def workload_identity(resource: Resource) -> list[str]:
    if resource.type == GKE_CLUSTER:
        pool = block(resource.props.get("workloadIdentityConfig")).get("workloadPool")
        if strings(pool):
            return []
        return [
            f"GKE cluster {resource.name} has no Workload Identity (workloadIdentityConfig.workloadPool): "
            "set it to PROJECT.svc.id.goog so that pods get their own identities, not the nodes'"
        ]
    if resource.type == GKE_NODE_POOL:
        config = block(block(resource.props.get("nodeConfig")).get("workloadMetadataConfig"))
        if config.get("mode") == "GKE_METADATA":
            return []
        return [
            f"GKE node pool {resource.name} lets pods read the node's service account from the metadata "
            f"server (nodeConfig.workloadMetadataConfig.mode is {config.get('mode', 'unset')!r}): set it "
            "to 'GKE_METADATA'"
        ]
    return []


def no_legacy_abac(resource: Resource) -> list[str]:
    if resource.type != GKE_CLUSTER or not truthy(resource.props.get("enableLegacyAbac")):
        return []
    return [
        f"GKE cluster {resource.name} authorizes with legacy ABAC (enableLegacyAbac), which grants beyond "
        "RBAC: set it to false"
    ]
