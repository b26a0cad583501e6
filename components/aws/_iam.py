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


def service_trust_policy(service: str) -> str:
    """The assume-role policy of a role an AWS service (`ec2.amazonaws.com`, ...) assumes."""
    statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def ec2_trust_policy() -> str:
    """The assume-role policy of an instance role."""
    return service_trust_policy("ec2.amazonaws.com")


def read_bucket_statements(bucket_arn: str, kms_key_arn: str | None = None) -> list[dict[str, Any]]:
    """Read (never write) the cluster bucket: bundles, rendered files, health records; with the bucket's
    customer-managed key, decrypt with it, through S3 only."""
    statements: list[dict[str, Any]] = [
        {
            "Sid": "ReadClusterBucket",
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:GetObjectVersion"],
            "Resource": f"{bucket_arn}/*",
        },
        {"Sid": "ListClusterBucket", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": bucket_arn},
    ]
    if kms_key_arn is not None:
        # S3 decrypts an SSE-KMS object with the reader's own right to the key (an AWS managed key grants
        # it to the whole account; a customer's key does not). kms:ViaService keeps the right to requests
        # S3 makes for the reader (KMS Developer Guide, "kms:ViaService": s3.<region>.amazonaws.com).
        region = kms_key_arn.split(":")[3]
        statements.append(
            {
                "Sid": "DecryptClusterBucket",
                "Effect": "Allow",
                "Action": "kms:Decrypt",
                "Resource": kms_key_arn,
                "Condition": {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
            }
        )
    return statements


SESSION_MANAGER_STATEMENT: dict[str, Any] = {
    "Sid": "SessionManager",
    "Effect": "Allow",
    "Action": list(SESSION_MANAGER_ACTIONS),
    "Resource": "*",
}
