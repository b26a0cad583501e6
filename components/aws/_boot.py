"""A host's boot script on AWS: the user data it launches with, and the bucket's copy it follows.

Changing an instance's user data needs a stop and start (terraform-provider-aws `aws_instance`: "Updates to
this field will trigger a stop/start of the EC2 instance by default"), and the started instance does not run
it again (EC2 User Guide, "Work with instance user data"). A host that follows the stack (its script's
`--if-changed` timer) reads the current script from an object in the cluster bucket instead: an update
rewrites the object and leaves the instance's user data, and the instance, as they are. The object is
pinned by its sha256 in an instance tag (tags change in place), which the host reads with DescribeTags:
writing the bucket alone does not change what the host runs.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_aws as aws

from clusterfab.core.vocab import BOOT_DIGEST_TAG

FOLLOWED_INPUTS = ["userDataBase64"]
"""What an update of a following host's instance leaves alone: its launch script (the object replaces it)."""
READ_BOOT_DIGEST: dict[str, Any] = {
    "Sid": "ReadBootDigest",
    "Effect": "Allow",
    "Action": "ec2:DescribeTags",
    # DescribeTags cannot be scoped to resources (EC2 service authorization reference); it reads tags only.
    "Resource": "*",
}
"""What a following host's role needs to read the digest tag of its own instance."""


def digest_statements(key: str | None) -> list[dict[str, Any]]:
    """The IAM statements a host's role needs to follow its boot script; none for a host whose user data
    follows its script (`key` None)."""
    return [] if key is None else [READ_BOOT_DIGEST]


def user_data(script: pulumi.Input[str]) -> pulumi.Output[str]:
    """The instance's user data: the script, base64-encoded as RunInstances takes it."""
    return pulumi.Output.from_input(script).apply(lambda text: base64.b64encode(text.encode()).decode())


def digest_tag(script: pulumi.Input[str], key: str | None) -> dict[str, pulumi.Input[str]]:
    """The instance tag that pins a following host's boot script (its sha256); none for a host whose user
    data follows its script (`key` None)."""
    if key is None:
        return {}
    return {
        BOOT_DIGEST_TAG: pulumi.Output.from_input(script).apply(
            lambda t: hashlib.sha256(t.encode()).hexdigest()
        )
    }


def followed_script(
    name: str,
    *,
    script: pulumi.Input[str],
    key: str | None,
    bucket_name: pulumi.Input[str],
    kms_key_arn: str | None,
    tags: Mapping[str, str],
    parent: pulumi.Resource,
    after: Sequence[pulumi.Resource] = (),
) -> list[pulumi.Resource]:
    """The object that holds a host's current boot script at `key`, encrypted like the bucket's other
    files and written `after` the files the script fetches (the host may run it within a minute); none
    for a host whose user data follows its script (`key` None)."""
    if key is None:
        return []
    return [
        aws.s3.BucketObjectv2(
            name,
            bucket=bucket_name,
            key=key,
            content=script,
            content_type="text/x-shellscript",
            server_side_encryption="aws:kms",
            kms_key_id=kms_key_arn,
            tags=dict(tags),
            opts=pulumi.ResourceOptions(parent=parent, depends_on=list(after)),
        )
    ]
