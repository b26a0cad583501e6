"""What the stack exports of a Kubernetes cluster beyond the common scheduler fields."""

from __future__ import annotations

from clusterfab.outputs import SchedulerOutput


class KubernetesOutput(SchedulerOutput):
    """The cluster as the cloud's API names it: `controller` is the cluster's name, `controller_address`
    its API server's endpoint, `login` empty. What `clusterfab kubeconfig` writes a kubeconfig from."""

    service: str
    """GKE or EKS."""
    location: str
    """Where the cluster is: GKE's location (region or zone), EKS's region."""
    version: str
    """The control plane's minor version."""
    certificate_authority: str
    """The API server's CA certificate (base64 PEM, as both services return it)."""
