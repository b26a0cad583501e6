"""GKE's credential plugin: gke-gcloud-auth-plugin mints a token from the caller's gcloud credentials
(GKE's own kubeconfig entry since Kubernetes 1.26 removed the in-tree gcp auth provider)."""

from __future__ import annotations

from clusterfab.clouds.kubernetes import ExecCredential


def CREDENTIALS(*, cluster: str, location: str, project: str | None) -> ExecCredential:  # noqa: N802
    return ExecCredential(
        command="gke-gcloud-auth-plugin",
        args=(),
        install_hint=(
            "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin "
            "(https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl)"
        ),
    )


TOPOLOGY_LEVELS = (
    "cloud.google.com/gce-topology-block",
    "cloud.google.com/gce-topology-subblock",
    "cloud.google.com/gce-topology-host",
    "kubernetes.io/hostname",
)
"""The node labels of GKE's compact placement hierarchy, coarse to fine: the levels of a Kueue Topology
(Cluster Toolkit's examples/gke-a3-megagpu/kueue-configuration.yaml.tftpl, Topology `gke-default`)."""
