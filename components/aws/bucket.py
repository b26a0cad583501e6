"""The cluster bucket: node bootstrap artifacts (playbook bundle, rendered vars), private and encrypted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pulumi
import pulumi_aws as aws

from components._naming import child

TYPE = "clusterfab:storage:AwsClusterBucket"


@dataclass(frozen=True, kw_only=True)
class AwsClusterBucketArgs:
    protect: bool = False
    """Protect the bucket from deletion (stateful: it holds what nodes boot from)."""
    objects: Mapping[str, tuple[str, Path]] = field(default_factory=dict)
    """Files to upload: child role -> (object key, local path), e.g. the playbook bundle."""
    tags: Mapping[str, str] = field(default_factory=dict)


class AwsClusterBucket(pulumi.ComponentResource):
    """An S3 bucket with versioning, default encryption, no public access and owner-enforced objects."""

    bucket_name: pulumi.Output[str]
    """The bucket's name."""
    bucket_arn: pulumi.Output[str]
    """The bucket's ARN (node roles may read it, nothing else)."""

    def __init__(
        self, name: str, args: AwsClusterBucketArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(TYPE, name, None, opts)
        own = pulumi.ResourceOptions(parent=self)
        # A deliberate bucket_prefix: the rest of the name is random, so two stacks never collide.
        bucket = aws.s3.Bucket(
            child(name, "bucket"),
            bucket_prefix=f"{name[:36]}-",
            # An unprotected bucket goes with its stack, versions and all (else `destroy` fails on it).
            force_destroy=not args.protect,
            tags={**args.tags, "Name": child(name, "bucket")},
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
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
                            sse_algorithm="aws:kms"
                        )
                    ),
                    bucket_key_enabled=True,
                )
            ],
        )
        aws.s3.BucketPublicAccessBlock(
            child(name, "public-access"),
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=own,
        )
        aws.s3.BucketOwnershipControls(
            child(name, "ownership"),
            bucket=bucket.id,
            opts=own,
            rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"),
        )
        for role, (key, path) in sorted(args.objects.items()):
            aws.s3.BucketObjectv2(
                child(name, role),
                bucket=bucket.id,
                key=key,
                source=pulumi.FileAsset(str(path)),
                server_side_encryption="aws:kms",
                tags=dict(args.tags),
                opts=own,
            )
        self.bucket_name = bucket.bucket
        self.bucket_arn = bucket.arn
        self.register_outputs({"bucket_name": bucket.bucket, "bucket_arn": bucket.arn})
