"""A kubeconfig for a GKE or EKS cluster that authenticates through the cloud's own CLI: the program's
Kubernetes provider and `clusterfab kubeconfig` write the same one.

Neither holds a token: the `exec` entry runs the cloud's credential plugin (GKE's gke-gcloud-auth-plugin,
`aws eks get-token`), which mints a short-lived token from the caller's own cloud identity, as `gcloud
container clusters get-credentials` and `aws eks update-kubeconfig` write it. The cloud's part
(clusterfab.clouds.kubernetes) says which command.
"""

from __future__ import annotations

from typing import Any

from clusterfab.clouds.kubernetes import ExecCredential

EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"
"""The exec credential API both plugins speak (kubectl 1.24+ reads it)."""


def kubeconfig(
    *, context: str, endpoint: str, certificate_authority: str, credential: ExecCredential
) -> dict[str, Any]:
    """A kubeconfig with one cluster, user and context named `context`, current. `endpoint` is the API
    server's URL or host (https is added to a bare host, as GKE returns it); `certificate_authority` the
    base64 PEM both services return."""
    server = endpoint if endpoint.startswith("https://") else f"https://{endpoint}"
    user: dict[str, Any] = {
        "apiVersion": EXEC_API_VERSION,
        "command": credential.command,
        "args": list(credential.args),
        "installHint": credential.install_hint,
        "provideClusterInfo": False,
        "interactiveMode": "IfAvailable",
    }
    if credential.env:
        user["env"] = [{"name": name, "value": value} for name, value in credential.env]
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": {"server": server, "certificate-authority-data": certificate_authority},
            }
        ],
        "users": [{"name": context, "user": {"exec": user}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
    }
