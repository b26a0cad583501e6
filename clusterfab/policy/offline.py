"""The policy pack's rules on an offline plan: what `clusterfab policy` runs in a pull request.

`preview`, `up` and `promote` run the CrossGuard pack (policy/) through the Pulumi CLI, which needs the
stack and cloud credentials; a pull-request job has neither (and must not: it runs the PR's code). The
rules are the same functions (`checks`, `buckets`, `access`), applied here to the resources the mock
engine plans, so a PR that adds a public IP or an unprotected file system fails its check before anyone
deploys it. The budget policy is not repeated: `validate` already prices the blueprint against its
budget.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clusterfab.policy import access, buckets, checks, kubernetes
from clusterfab.policy.names import (
    BUCKET_ENCRYPTION,
    BUCKET_PUBLIC_ACCESS_BLOCK,
    ENCRYPTION,
    EXACT_SECRETS,
    IMDS_HOP_LIMIT,
    IMDSV2,
    KUBERNETES_NO_LEGACY_ABAC,
    KUBERNETES_PRIVATE_API,
    KUBERNETES_SECRETS_ENCRYPTION,
    KUBERNETES_WORKLOAD_IDENTITY,
    LAUNCH_FROM_TEMPLATES,
    NO_PUBLIC_BUCKETS,
    NO_PUBLIC_IPS,
    NO_SSH_RDP_FROM_INTERNET,
    NO_WILDCARD_IAM,
    PROTECT_STATEFUL,
    TERMINATE_OWN_INSTANCES,
)
from clusterfab.policy.resources import Resource, from_planned

if TYPE_CHECKING:
    from clusterfab.plan.engine import PlannedResource


@dataclass(frozen=True)
class Violation:
    policy: str
    resource: str
    type: str
    message: str


RESOURCE_CHECKS: tuple[tuple[str, Callable[[Resource], list[str]]], ...] = (
    (NO_PUBLIC_IPS, checks.public_ips),
    (IMDSV2, checks.imdsv2),
    (IMDS_HOP_LIMIT, checks.imds_hop_limit),
    (ENCRYPTION, checks.encryption),
    (NO_PUBLIC_BUCKETS, buckets.public_buckets),
    (NO_SSH_RDP_FROM_INTERNET, access.admin_ports_from_internet),
    (NO_WILDCARD_IAM, access.wildcard_iam),
    (EXACT_SECRETS, access.wildcard_secrets),
    (LAUNCH_FROM_TEMPLATES, access.unscoped_launches),
    (TERMINATE_OWN_INSTANCES, access.unscoped_terminations),
    (KUBERNETES_PRIVATE_API, kubernetes.private_api),
    (KUBERNETES_SECRETS_ENCRYPTION, kubernetes.secrets_encryption),
    (KUBERNETES_WORKLOAD_IDENTITY, kubernetes.workload_identity),
    (KUBERNETES_NO_LEGACY_ABAC, kubernetes.no_legacy_abac),
)
"""The pack's resource rules that need no config (protection needs the environment: below)."""
STACK_CHECKS: tuple[tuple[str, Callable[[Sequence[Resource]], list[tuple[Resource, str]]]], ...] = (
    (BUCKET_ENCRYPTION, buckets.unencrypted_buckets),
    (BUCKET_PUBLIC_ACCESS_BLOCK, buckets.unblocked_buckets),
)
POLICIES = frozenset(
    [name for name, _ in RESOURCE_CHECKS] + [name for name, _ in STACK_CHECKS] + [PROTECT_STATEFUL]
)
"""Every policy `clusterfab policy` runs: the pack's, but the budget."""


def check_resources(
    planned: Sequence[PlannedResource], *, protected: bool, stateful_types: Collection[str]
) -> list[Violation]:
    """Every violation of the pack's resource and stack rules among `planned` (one stack's resources)."""
    resources = [from_planned(r) for r in planned]

    def protection(resource: Resource) -> list[str]:
        stacks = {resource.stack} if protected else set()
        return checks.protection(resource, stateful_types=stateful_types, protected_stacks=stacks)

    per_resource = (*RESOURCE_CHECKS, (PROTECT_STATEFUL, protection))
    found = [
        Violation(policy, resource.name, resource.type, message)
        for resource in resources
        for policy, check in per_resource
        for message in check(resource)
    ]
    found += [
        Violation(policy, bucket.name, bucket.type, message)
        for policy, check in STACK_CHECKS
        for bucket, message in check(resources)
    ]
    return found
