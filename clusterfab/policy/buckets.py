"""The bucket rules: nothing public, S3 buckets encrypted by default and behind a public access block.

- Encryption: every S3 bucket has a default-encryption configuration (`unencrypted_buckets`).
- Public access block: every S3 bucket has one (`unblocked_buckets`), and every block blocks all four
  ways S3 can make a bucket public (`public_buckets`).
- Nothing public (`public_buckets`): no bucket policy that allows anyone (Principal `*`) without a
  condition that fixes who (S3's own test of a public policy), no public canned ACL or grant to
  everyone on a bucket or object; GCS buckets enforce public access prevention, and no IAM binding,
  IAM policy or ACL names allUsers or allAuthenticatedUsers.

The first two are stack-level: a bucket is compliant when the stack also holds its configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from clusterfab.core import exposure
from clusterfab.policy.checks import short
from clusterfab.policy.resources import Resource, block, document, items, known, strings, truthy

S3_BUCKETS = {"aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"}
SSE_CONFIGURATION = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
_BLOCK_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")

_PUBLIC_CANNED_ACLS = {"public-read", "public-read-write", "authenticated-read"}
"""S3's canned ACLs that grant to everyone or every AWS account (botocore s3 model, BucketCannedACL)."""
_PUBLIC_GRANTEES = {
    "http://acs.amazonaws.com/groups/global/AllUsers",
    "http://acs.amazonaws.com/groups/global/AuthenticatedUsers",
}
"""The S3 ACL groups that are everyone and every AWS account (S3 User Guide, "Access control list (ACL)
overview", Amazon S3 predefined groups)."""

_FIXING_CONDITION_KEYS = {
    "aws:sourceip",
    "aws:sourcearn",
    "aws:sourcevpc",
    "aws:sourcevpce",
    "aws:sourceowner",
    "aws:sourceaccount",
    "s3:x-amz-server-side-encryption-aws-kms-key-id",
    "aws:userid",
}
"""The condition keys that, set to fixed values, make a policy granting to `*` non-public: S3's own
definition (API reference, PublicAccessBlockConfiguration: "Amazon S3 considers a bucket policy public
unless at least one of the following conditions is true"; https://docs.aws.amazon.com/sdkfornet/v3/
apidocs/items/S3/TPublicAccessBlockConfiguration.html)."""

GCS_EVERYONE = {"allUsers", "allAuthenticatedUsers"}
"""Anyone on the internet, and anyone with a Google account (storage.v1 discovery document, Policy
bindings members and BucketAccessControl.entity)."""
_GCS_PUBLIC_PREDEFINED = {"publicRead", "publicReadWrite", "authenticatedRead"}
"""GCS predefined ACLs that grant to allUsers or allAuthenticatedUsers (storage.v1, buckets.insert
predefinedAcl)."""


# --- stack rules: a configuration per bucket ----------------------------------------------------------


def _uncovered(resources: Sequence[Resource], config_type: str) -> list[Resource]:
    """S3 buckets without a `config_type` resource in the same stack.

    A configuration belongs to a bucket when its `bucket` property depends on the bucket (CrossGuard
    knows the dependencies), names it (its id or physical name), or, when neither is known (a plan, a
    preview of new resources), when the two are the only bucket and configuration of one component.
    """
    buckets = [r for r in resources if r.type in S3_BUCKETS]
    configs = [r for r in resources if r.type == config_type]
    found = []
    for bucket in buckets:
        names = {known(bucket.props, "bucket"), known(bucket.props, "id")} - {None}
        covered = any(
            bucket.urn in config.dependencies.get("bucket", ()) or known(config.props, "bucket") in names
            for config in configs
        )
        if not covered and bucket.parent is not None:
            siblings = [c for c in configs if c.parent == bucket.parent]
            others = [b for b in buckets if b.parent == bucket.parent]
            covered = len(siblings) == 1 and len(others) == 1
        if not covered:
            found.append(bucket)
    return found


def unencrypted_buckets(resources: Sequence[Resource]) -> list[tuple[Resource, str]]:
    """S3 buckets without a default-encryption configuration in the same stack (stack-level)."""
    return [
        (
            bucket,
            f"S3 bucket {bucket.name} has no default encryption configuration: add an "
            "aws.s3.BucketServerSideEncryptionConfiguration (aws:kms) for it",
        )
        for bucket in _uncovered(resources, SSE_CONFIGURATION)
    ]


def unblocked_buckets(resources: Sequence[Resource]) -> list[tuple[Resource, str]]:
    """S3 buckets without a public access block in the same stack (stack-level): without one, only the
    account's settings stand between a later policy or ACL and the internet."""
    return [
        (
            bucket,
            f"S3 bucket {bucket.name} has no public access block: add an aws.s3.BucketPublicAccessBlock "
            f"for it with {', '.join(_BLOCK_FLAGS)} all true",
        )
        for bucket in _uncovered(resources, PUBLIC_ACCESS_BLOCK)
    ]


# --- resource rules: nothing public -------------------------------------------------------------------


def _access_block(resource: Resource) -> list[str]:
    open_flags = [flag for flag in _BLOCK_FLAGS if not truthy(resource.props.get(flag))]
    if open_flags:
        return [
            f"public access block {resource.name} leaves {', '.join(open_flags)} off: set all four to true"
        ]
    return []


_MATCHING_OPERATORS = {
    "stringequals",
    "stringequalsignorecase",
    "stringlike",
    "arnequals",
    "arnlike",
    "ipaddress",
}
"""The condition operators that hold a key to given values. Not the `...IfExists` forms or
`ForAllValues:`, which pass a request without the key (anyone's, from the internet), nor `Null` and
the negations, which fix nothing (IAM User Guide, condition operators)."""


def _fixes_who(condition: Mapping[str, Any]) -> bool:
    """Whether a statement's condition limits it to fixed values of a key S3 accepts as non-public."""
    for operator, clauses in condition.items():
        if str(operator).lower().removeprefix("foranyvalue:") not in _MATCHING_OPERATORS:
            continue
        for key, value in block(clauses).items():
            values = strings(value)
            if not values or any("*" in v or "?" in v for v in values):
                continue
            if str(key).lower() != "aws:sourceip":
                if str(key).lower() in _FIXING_CONDITION_KEYS:
                    return True
                continue
            networks = [exposure.network(v) for v in values]
            if all(n is not None and not exposure.too_public(n) for n in networks):
                return True
    return False


def _to_anyone(statement: Mapping[str, Any]) -> bool:
    if statement.get("NotPrincipal") is not None:
        return True  # everyone but the few named
    principal = statement.get("Principal")
    if isinstance(principal, Mapping):
        return any("*" in strings(v) for v in principal.values())
    return "*" in strings(principal)


def _bucket_policy(resource: Resource) -> list[str]:
    found = []
    for index, statement in enumerate(items(document(resource.props.get("policy")).get("Statement"))):
        if str(statement.get("Effect", "")).lower() != "allow" or not _to_anyone(statement):
            continue
        if _fixes_who(block(statement.get("Condition"))):
            continue
        sid = statement.get("Sid") or index
        found.append(
            f"bucket policy {resource.name} statement {sid} allows anyone (Principal '*') without a "
            "condition that fixes who (aws:SourceVpce, aws:SourceAccount, aws:SourceIp of a narrow range, "
            "...): name the principals, or add such a condition"
        )
    return found


def _s3_acl(resource: Resource) -> list[str]:
    acl = resource.props.get("acl")
    found = []
    if acl in _PUBLIC_CANNED_ACLS:
        found.append(f"{short(resource)} {resource.name} has the public ACL {acl!r}: make it private")
    grants = items(block(resource.props.get("accessControlPolicy")).get("grants"))
    found += [
        f"{short(resource)} {resource.name} grants {grant.get('permission', '?')} to "
        f"{str(grantee).rsplit('/', 1)[-1]}: grant to accounts, not to everyone"
        for grant in grants
        if (grantee := block(grant.get("grantee")).get("uri")) in _PUBLIC_GRANTEES
    ]
    return found


def _gcs_bucket(resource: Resource) -> list[str]:
    if resource.props.get("publicAccessPrevention") != "enforced":
        return [
            f"bucket {resource.name} does not enforce public access prevention: "
            "set publicAccessPrevention to 'enforced'"
        ]
    return []


def _gcs_members(resource: Resource) -> list[str]:
    props = resource.props
    members = strings(props.get("member")) + strings(props.get("members"))
    for binding in items(document(props.get("policyData")).get("bindings")):
        members += strings(binding.get("members"))
    public = sorted(set(members) & GCS_EVERYONE)
    if public:
        return [f"{short(resource)} {resource.name} grants to {', '.join(public)}: grant to named principals"]
    return []


def _gcs_acl(resource: Resource) -> list[str]:
    props = resource.props
    entities = strings(props.get("entity")) + [
        e.split(":", 1)[-1] for e in strings(props.get("roleEntities"))
    ]
    predefined = {props.get("predefinedAcl"), props.get("defaultAcl")} & _GCS_PUBLIC_PREDEFINED
    public = sorted(set(entities) & GCS_EVERYONE) + sorted(str(p) for p in predefined)
    if public:
        return [f"{short(resource)} {resource.name} grants to {', '.join(public)}: grant to named principals"]
    return []


_PUBLIC_BUCKET_CHECKS: dict[str, Callable[[Resource], list[str]]] = {
    PUBLIC_ACCESS_BLOCK: _access_block,
    "aws:s3/bucketPolicy:BucketPolicy": _bucket_policy,
    "aws:s3/bucket:Bucket": _s3_acl,
    "aws:s3/bucketV2:BucketV2": _s3_acl,
    "aws:s3/bucketAcl:BucketAcl": _s3_acl,
    "aws:s3/bucketAclV2:BucketAclV2": _s3_acl,
    "aws:s3/bucketObject:BucketObject": _s3_acl,
    "aws:s3/bucketObjectv2:BucketObjectv2": _s3_acl,
    "gcp:storage/bucket:Bucket": _gcs_bucket,
    "gcp:storage/bucketIAMMember:BucketIAMMember": _gcs_members,
    "gcp:storage/bucketIAMBinding:BucketIAMBinding": _gcs_members,
    "gcp:storage/bucketIAMPolicy:BucketIAMPolicy": _gcs_members,
    "gcp:storage/bucketAccessControl:BucketAccessControl": _gcs_acl,
    "gcp:storage/bucketACL:BucketACL": _gcs_acl,
    "gcp:storage/defaultObjectAccessControl:DefaultObjectAccessControl": _gcs_acl,
    "gcp:storage/defaultObjectACL:DefaultObjectACL": _gcs_acl,
    "gcp:storage/objectAccessControl:ObjectAccessControl": _gcs_acl,
    "gcp:storage/objectACL:ObjectACL": _gcs_acl,
}
"""Per resource type: how it could make a bucket or its objects public."""


def public_buckets(resource: Resource) -> list[str]:
    check = _PUBLIC_BUCKET_CHECKS.get(resource.type)
    return check(resource) if check is not None else []
