"""Least-privilege service accounts for nodes: write logs and metrics, read the cluster bucket, nothing else.

One account per node group or TPU slice group, so a node can be traced (and revoked) by its group.
Nodes record their health in guest attributes, which needs no IAM role at all.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components._naming import child

SERVICE_ACCOUNT_ID_MAX = 30
NODE_PROJECT_ROLES = (
    ("log-writer", "roles/logging.logWriter"),
    ("metric-writer", "roles/monitoring.metricWriter"),
)
BUCKET_READER_ROLE = "roles/storage.objectViewer"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
"""With a dedicated account, IAM (not access scopes) limits what nodes can do: Google's recommended form."""


def node_service_account(
    owner: pulumi.Resource,
    name: str,
    *,
    project: str,
    account: str,
    description: str,
    bucket_name: pulumi.Input[str],
) -> gcp.serviceaccount.Account:
    """The account, its two project roles and read access to the cluster bucket, as children of `owner`."""
    own = pulumi.ResourceOptions(parent=owner)
    sa = gcp.serviceaccount.Account(
        child(name, "sa"),
        project=project,
        account_id=account,
        display_name=description,
        description=description,
        opts=own,
    )
    for role_name, role in NODE_PROJECT_ROLES:
        gcp.projects.IAMMember(child(name, role_name), project=project, role=role, member=sa.member, opts=own)
    gcp.storage.BucketIAMMember(
        child(name, "bucket-reader"), bucket=bucket_name, role=BUCKET_READER_ROLE, member=sa.member, opts=own
    )
    return sa
