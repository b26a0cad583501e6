"""EKS's credential plugin: `aws eks get-token` signs a token with the caller's AWS credentials (what
`aws eks update-kubeconfig` writes); the access entries of the cluster map the caller to its groups."""

from __future__ import annotations

from clusterfab.clouds.kubernetes import ExecCredential


def CREDENTIALS(*, cluster: str, location: str, project: str | None) -> ExecCredential:  # noqa: N802
    return ExecCredential(
        command="aws",
        args=("--region", location, "eks", "get-token", "--cluster-name", cluster, "--output", "json"),
        install_hint="Install the AWS CLI v2: https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html",
    )


TOPOLOGY_LEVELS = (
    "topology.k8s.aws/network-node-layer-1",
    "topology.k8s.aws/network-node-layer-2",
    "topology.k8s.aws/network-node-layer-3",
    "kubernetes.io/hostname",
)
"""The node labels EKS gives each node from its place in the EC2 network hierarchy, coarse to fine, then
the node itself: the levels of a Kueue Topology (Amazon EKS UG, "Place distributed AI/ML workloads with
network topology labels", https://docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology.html, read
2026-11-29; a fourth layer exists only on some instance types, so it is left out)."""
