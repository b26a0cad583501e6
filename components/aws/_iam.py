"""IAM documents every clusterfab instance role shares: EC2's trust, reading the cluster bucket and
Session Manager, each with nothing more than it needs."""

from __future__ import annotations

import json
from typing import Any

SESSION_MANAGER_ACTIONS = (
    "ssm:UpdateInstanceInformation",
    "ssmmessages:CreateControlChannel",
    "ssmmessages:CreateDataChannel",
    "ssmmessages:OpenControlChannel",
    "ssmmessages:OpenDataChannel",
)
"""What Session Manager needs of an instance role, and nothing more (AWS: "Create a custom IAM role
with minimal Session Manager permissions"). AmazonSSMManagedInstanceCore would also grant
ssm:GetParameter(s) on every parameter of the account."""


def ec2_trust_policy() -> str:
    """The assume-role policy of an instance role."""
    statement = {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def read_bucket_statements(bucket_arn: str) -> list[dict[str, Any]]:
    """Read (never write) the cluster bucket: bundles, rendered files, health records."""
    return [
        {
            "Sid": "ReadClusterBucket",
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:GetObjectVersion"],
            "Resource": f"{bucket_arn}/*",
        },
        {"Sid": "ListClusterBucket", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": bucket_arn},
    ]


SESSION_MANAGER_STATEMENT: dict[str, Any] = {
    "Sid": "SessionManager",
    "Effect": "Allow",
    "Action": list(SESSION_MANAGER_ACTIONS),
    "Resource": "*",
}
