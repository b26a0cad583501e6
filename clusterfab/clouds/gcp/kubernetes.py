"""GKE's credential plugin: gke-gcloud-auth-plugin mints a token from the caller's gcloud credentials
(GKE's own kubeconfig entry since Kubernetes 1.26 removed the in-tree gcp auth provider)."""

from __future__ import annotations

from collections.abc import Mapping

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


TPU_MACHINES: Mapping[tuple[str, int], str] = {
    ("v5p", 4): "ct5p-hightpu-4t",
    ("v5e", 1): "ct5lp-hightpu-1t",
    ("v5e", 4): "ct5lp-hightpu-4t",
    ("v5e", 8): "ct5lp-hightpu-8t",
    ("v6e", 1): "ct6e-standard-1t",
    ("v6e", 4): "ct6e-standard-4t",
    ("v6e", 8): "ct6e-standard-8t",
}
"""GKE's machine type of a TPU VM: (generation, chips per VM) -> machine type. Cluster Toolkit's
pkg/config/hardware.go accelerator table (v5p-4, v5litepod-N, v6e-N), read 2026-11-29 at the snapshot of
2026-06-25."""


def tpu_generation(machine: str) -> str | None:
    """The TPU generation of a GKE TPU machine type (ct5p-hightpu-4t: v5p); None for another machine."""
    return next((generation for (generation, _), name in TPU_MACHINES.items() if name == machine), None)
