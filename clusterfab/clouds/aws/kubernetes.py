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
