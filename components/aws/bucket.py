"""The cluster bucket: node bootstrap artifacts (playbook bundle, rendered vars), private and encrypted."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pulumi
import pulumi_aws as aws

from components._naming import child
from components._outputs import known_after

TYPE = "clusterfab:storage:AwsClusterBucket"
MIN_TLS_VERSION = "1.2"
GUARDED_WRITES = ("s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion")
"""What writes, replaces (a copy of an old version is a PutObject too) or removes an object under a guarded
prefix."""
"""The oldest TLS the bucket answers: TLS 1.0 and 1.1 are deprecated (RFC 8996)."""


def bucket_policy(bucket_arn: str, guarded: Mapping[str, Sequence[str]] | None = None) -> str:
    """A bucket policy that refuses every request over plain HTTP or TLS older than 1.2, whoever makes it,
    and (`guarded`: key prefix -> principal ARNs) any write under a prefix by anyone but its writers.

    S3 answers HTTP as well as HTTPS unless a bucket policy denies requests whose `aws:SecureTransport` is
    false (S3 User Guide, "Protecting data in transit with encryption"; CIS AWS Foundations 3.1.1, Security
    Hub control S3.5); `s3:TlsVersion` below 1.2 is AWS's own statement for TLS 1.2 or later (AWS re:Post
    knowledge center, "s3-enforce-modern-tls"). Nodes (curl, boto3) and the SSM connection's presigned URLs
    all use HTTPS with TLS 1.2 or later.

    A guarded prefix holds what must come from one identity, such as the health records `promote` trusts
    (only the deploy identity may write them: whoever else may write the bucket, a node's role included,
    cannot forge one). An explicit deny wins over every identity policy (IAM policy evaluation logic);
    aws:PrincipalArn of a role's session is the role's ARN.
    """
    resources = [bucket_arn, f"{bucket_arn}/*"]
    deny: dict[str, object] = {"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": resources}
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "DenyInsecureTransport",
                    **deny,
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                },
                {
                    "Sid": "DenyOutdatedTls",
                    **deny,
                    "Condition": {"NumericLessThan": {"s3:TlsVersion": MIN_TLS_VERSION}},
                },
                *(
                    {
                        "Sid": "OnlyItsWritersWrite"
                        + "".join(w.title() for w in re.findall("[A-Za-z0-9]+", prefix)),
                        "Effect": "Deny",
                        "Principal": "*",
                        "Action": list(GUARDED_WRITES),
                        "Resource": f"{bucket_arn}/{prefix}*",
                        "Condition": {"ArnNotEquals": {"aws:PrincipalArn": list(writers)}},
                    }
                    for prefix, writers in sorted((guarded or {}).items())
                ),
            ],
        }
    )


@dataclass(frozen=True, kw_only=True)
class AwsClusterBucketArgs:
    protect: bool = False
    """Protect the bucket from deletion (stateful: it holds what nodes boot from)."""
    objects: Mapping[str, tuple[str, Path]] = field(default_factory=dict)
    """Files to upload: child role -> (object key, local path), e.g. the playbook bundle."""
    kms_key_arn: str | None = None
    """A customer-managed KMS key (its ARN) to encrypt objects with; default the AWS managed key aws/s3.
    Whoever reads the bucket then needs kms:Decrypt on it (`read_bucket_statements` grants it)."""
    guarded_prefixes: Mapping[str, Sequence[pulumi.Input[str]]] = field(default_factory=dict)
    """Key prefix -> the principals (ARNs) that alone may write under it, e.g. `health/` -> the deploy
    identity."""
    tags: Mapping[str, str] = field(default_factory=dict)


class AwsClusterBucket(pulumi.ComponentResource):
    """An S3 bucket with versioning, default encryption, no public access, owner-enforced objects, and a
    policy that refuses requests not made over TLS 1.2 or later."""

    bucket_name: pulumi.Output[str]
    """The bucket's name."""
    bucket_arn: pulumi.Output[str]
    """The bucket's ARN (node roles may read it, nothing else)."""

    def __init__(
        self, name: str, args: AwsClusterBucketArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        self._own = pulumi.ResourceOptions(parent=self)
        # A deliberate bucket_prefix: the rest of the name is random, so two stacks never collide.
        bucket = aws.s3.Bucket(
            child(name, "bucket"),
            bucket_prefix=f"{name[:36]}-",
            # An unprotected bucket goes with its stack, versions and all (else `destroy` fails on it).
            force_destroy=not args.protect,
            tags={**args.tags, "Name": child(name, "bucket")},
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        self._storage(bucket)
        self._access(bucket)
        uploads = [
            aws.s3.BucketObjectv2(
                child(name, role),
                bucket=bucket.id,
                key=key,
                source=pulumi.FileAsset(str(path)),
                server_side_encryption="aws:kms",
                # Without a key id S3 takes aws/s3 for an object that asks for aws:kms, not the bucket's key
                # (botocore s3 PutObjectRequest.SSEKMSKeyId).
                kms_key_id=args.kms_key_arn,
                tags=dict(args.tags),
                opts=self._own,
            )
            for role, (key, path) in sorted(args.objects.items())
        ]
        self.bucket_name = bucket.bucket
        self.uploaded_name = known_after(bucket.bucket, uploads)
        """The bucket's name once `objects` are uploaded: a boot script that fetches them names it, so the
        hosts that run the script are created, or follow it, only after the uploads."""
        self.bucket_arn = bucket.arn
        self.register_outputs({"bucket_name": bucket.bucket, "bucket_arn": bucket.arn})

    def _storage(self, bucket: aws.s3.Bucket) -> None:
        """Every version kept, every object encrypted with KMS (an S3 Bucket Key saves KMS requests)."""
        name, own = self._name, self._own
        aws.s3.BucketVersioning(
            child(name, "versioning"),
            bucket=bucket.id,
            opts=own,
            versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(status="Enabled"),
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            child(name, "encryption"),
            bucket=bucket.id,
            opts=own,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=(
                        aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                            sse_algorithm="aws:kms", kms_master_key_id=self._args.kms_key_arn
                        )
                    ),
                    bucket_key_enabled=True,
                )
            ],
        )
        aws.s3.BucketOwnershipControls(
            child(name, "ownership"),
            bucket=bucket.id,
            opts=own,
            rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"),
        )

    def _guarded(self) -> pulumi.Output[dict[str, list[str]]]:
        prefixes = sorted(self._args.guarded_prefixes.items())
        return pulumi.Output.all(*(pulumi.Output.all(*writers) for _, writers in prefixes)).apply(
            lambda resolved: {
                prefix: list(found) for (prefix, _), found in zip(prefixes, resolved, strict=True)
            }
        )

    def _access(self, bucket: aws.s3.Bucket) -> None:
        """No public access of any kind, and no request that is not over TLS 1.2 or later."""
        name = self._name
        public_access = aws.s3.BucketPublicAccessBlock(
            child(name, "public-access"),
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=self._own,
        )
        aws.s3.BucketPolicy(
            child(name, "tls-only"),
            bucket=bucket.id,
            policy=pulumi.Output.all(bucket.arn, self._guarded()).apply(lambda v: bucket_policy(v[0], v[1])),
            # S3 refuses a policy change while the public access block is being changed ("A conflicting
            # conditional operation is currently in progress"): one after the other.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[public_access]),
        )
