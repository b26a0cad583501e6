"""clusterfab's checks as CrossGuard policies (pulumi_policy), without starting anything.

`policies()` builds the policy objects; `policy/__main__.py` passes them to `PolicyPack`, which
serves them to the Pulumi engine (`pulumi preview --policy-pack policy`). Each policy's `validate` can
be called directly, which is how the tests run them on the offline plans of the example blueprints.

Config (`--policy-pack-config FILE`, or the Pulumi Cloud policy group):

    {
      "clusterfab-budget": {"maxHourlyUsd": 1000, "maxMonthlyUsd": 700000, "region": "us-east-1"},
      "clusterfab-protect-stateful": {"protectedStacks": ["prod-eu"]}
    }
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from clusterfab.catalog import load_catalog
from clusterfab.core import dates
from clusterfab.cost.render import budget_verdict, usd
from clusterfab.plan.project import find_project
from clusterfab.policy import access, buckets, checks, kubernetes
from clusterfab.policy.names import (
    BUCKET_ENCRYPTION,
    BUCKET_PUBLIC_ACCESS_BLOCK,
    BUDGET,
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
    PACK_NAME,
    PROTECT_STATEFUL,
    TERMINATE_OWN_INSTANCES,
)
from clusterfab.policy.pricing import PricingError, price_resources
from clusterfab.policy.resources import Resource
from clusterfab.stackinput import stack_protected

__all__ = [
    "BUCKET_ENCRYPTION",
    "BUCKET_PUBLIC_ACCESS_BLOCK",
    "BUDGET",
    "ENCRYPTION",
    "EXACT_SECRETS",
    "IMDSV2",
    "IMDS_HOP_LIMIT",
    "KUBERNETES_NO_LEGACY_ABAC",
    "KUBERNETES_PRIVATE_API",
    "KUBERNETES_SECRETS_ENCRYPTION",
    "KUBERNETES_WORKLOAD_IDENTITY",
    "LAUNCH_FROM_TEMPLATES",
    "NO_PUBLIC_BUCKETS",
    "NO_PUBLIC_IPS",
    "NO_SSH_RDP_FROM_INTERNET",
    "NO_WILDCARD_IAM",
    "PACK_NAME",
    "PROTECT_STATEFUL",
    "TERMINATE_OWN_INSTANCES",
    "policies",
]


def resource_from_args(args: ResourceValidationArgs) -> Resource:
    """The resource a resource policy is asked about."""
    return Resource(
        type=args.resource_type,
        name=args.name,
        urn=args.urn,
        props=args.props,
        protect=bool(args.opts.protect),
        parent=args.opts.parent or None,
    )


def resource_from_stack(resource: PolicyResource) -> Resource:
    """A resource of the stack a stack policy is asked about, with what its properties depend on."""
    return Resource(
        type=resource.resource_type,
        name=resource.name,
        urn=resource.urn,
        props=resource.props,
        protect=bool(resource.opts.protect),
        parent=resource.parent.urn if resource.parent is not None else None,
        dependencies={
            prop: tuple(dep.urn for dep in deps)
            for prop, deps in (resource.property_dependencies or {}).items()
        },
    )


def _per_resource(
    name: str, description: str, check: Callable[[Resource, Mapping[str, Any]], list[str]], **extra: Any
) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        for message in check(resource_from_args(args), args.get_config()):
            report(message, None)

    return ResourceValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
        **extra,
    )


def _protection(resource: Resource, config: Mapping[str, Any]) -> list[str]:
    # The blueprint decides (environments.<env>.protected, default true for prod), read through the
    # stack's own file exactly as the program reads it; `protectedStacks` can only add stacks.
    listed = set(config.get("protectedStacks") or ())
    protected = resource.stack in listed or stack_protected(resource.stack, find_project(Path.cwd()).root)
    return checks.protection(
        resource,
        stateful_types=load_catalog().stateful_types.keys(),
        protected_stacks={resource.stack} if protected else set(),
    )


def _per_stack(
    name: str,
    description: str,
    check: Callable[[list[Resource]], list[tuple[Resource, str]]],
) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        for resource, message in check([resource_from_stack(r) for r in args.resources]):
            report(message, resource.urn)

    return StackValidationPolicy(
        name=name, description=description, validate=validate, enforcement_level=EnforcementLevel.MANDATORY
    )


def _validate_budget(args: StackValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    max_hourly, max_monthly = config.get("maxHourlyUsd"), config.get("maxMonthlyUsd")
    if max_hourly is None and max_monthly is None:
        return  # no budget configured for this stack
    resources = [resource_from_stack(r) for r in args.resources]
    try:
        cost = price_resources(
            resources,
            load_catalog(),
            today=dates.today(),
            region=config.get("region"),
            max_hourly_usd=max_hourly,
            max_monthly_usd=max_monthly,
        )
    except PricingError as exc:
        report(f"cannot check the budget: {exc}", None)
        return
    estimate = cost.estimate
    if estimate.budget.ok:
        return
    drivers = sorted(
        (i for i in estimate.items if i.hourly_usd is not None),
        key=lambda i: i.hourly_usd or Decimal(0),
        reverse=True,
    )
    top = ", ".join(
        f"{i.name} {i.sku} x {i.quantity:,} {usd(i.hourly_usd or Decimal(0))}/h" for i in drivers[:3]
    )
    skipped = f"; not priced: {'; '.join(cost.skipped)}" if cost.skipped else ""
    report(
        f"the planned resources are {budget_verdict(estimate)} at catalog {estimate.catalog_version} prices "
        f"(largest: {top}){skipped}: make the cluster smaller or raise the budget in the policy config",
        None,
    )


def policies() -> list[Policy]:
    """Every clusterfab policy, freshly built (constructing them has no side effects)."""
    return [
        *_machine_policies(),
        *_bucket_policies(),
        *_access_policies(),
        *_kubernetes_policies(),
        _protection_policy(),
        _budget_policy(),
    ]


def _machine_policies() -> list[Policy]:
    """The policies on the machines: instance metadata, public addresses, encrypted disks."""
    return [
        _per_resource(
            IMDSV2,
            "AWS launch templates and instances require IMDSv2 (metadataOptions.httpTokens = required).",
            lambda resource, _config: checks.imdsv2(resource),
        ),
        _per_resource(
            IMDS_HOP_LIMIT,
            "AWS launch templates and instances set metadataOptions.httpPutResponseHopLimit to 1, so that "
            "containers on a bridge network cannot take the instance role's credentials.",
            lambda resource, _config: checks.imds_hop_limit(resource),
        ),
        _per_resource(
            NO_PUBLIC_IPS,
            "No public IPv4 or IPv6 address on any compute type (AWS instances, launch-template NICs, "
            "network interfaces, subnets, Elastic IPs; GCP access configs, external addresses, TPUs; "
            "Azure scale sets' and network interfaces' IP configurations), nor on a managed accounting "
            "database (RDS, Cloud SQL, Azure MySQL flexible server).",
            lambda resource, _config: checks.public_ips(resource),
        ),
        _per_resource(
            ENCRYPTION,
            "EBS volumes (launch templates, instances, volumes) and EFS file systems are encrypted at rest; "
            "launch templates and instances map an encrypted root volume; Azure scale sets "
            "and VMs encrypt at host (or name a disk encryption set).",
            lambda resource, _config: checks.encryption(resource),
        ),
    ]


def _bucket_policies() -> list[Policy]:
    """The policies on the buckets: encrypted, and never public."""
    return [
        _per_stack(
            BUCKET_ENCRYPTION,
            "Every S3 bucket has a default server-side encryption configuration.",
            buckets.unencrypted_buckets,
        ),
        _per_stack(
            BUCKET_PUBLIC_ACCESS_BLOCK,
            "Every S3 bucket has a public access block.",
            buckets.unblocked_buckets,
        ),
        _per_resource(
            NO_PUBLIC_BUCKETS,
            "S3 public access blocks block everything; no bucket policy allows anyone without a fixing "
            "condition, no public ACL or grant; GCS buckets enforce public access prevention and grant "
            "nothing to allUsers or allAuthenticatedUsers.",
            lambda resource, _config: buckets.public_buckets(resource),
        ),
    ]


def _access_policies() -> list[Policy]:
    """The policies on who may reach and do what: admin ports, IAM wildcards, secrets, launches."""
    return [
        _per_resource(
            NO_SSH_RDP_FROM_INTERNET,
            "No security group or firewall rule opens SSH (22) or RDP (3389) to a public range wider than a "
            "/24 (IPv6: /48), the Internet service tag or *; IAP's range is accepted.",
            lambda resource, _config: access.admin_ports_from_internet(resource),
        ),
        _per_resource(
            NO_WILDCARD_IAM,
            "No IAM policy allows every action on every resource, or allows with NotAction; no "
            "AdministratorAccess attachment; no Azure role assignment at a "
            "subscription or management group, or of Owner, Contributor or User Access "
            "Administrator; no role definition allowing *.",
            lambda resource, _config: access.wildcard_iam(resource),
        ),
        _per_resource(
            EXACT_SECRETS,
            "No IAM statement allows a Secrets Manager action on a secret ARN with a wildcard in its region, "
            "account or name (a trailing -?????? for the suffix Secrets Manager appends is exact), or on *.",
            lambda resource, _config: access.wildcard_secrets(resource),
        ),
        _per_resource(
            LAUNCH_FROM_TEMPLATES,
            "No IAM statement allows ec2:RunInstances without an ec2:LaunchTemplate condition (or naming "
            "only launch templates), or on network interfaces without denying public addresses.",
            lambda resource, _config: access.unscoped_launches(resource),
        ),
        _per_resource(
            TERMINATE_OWN_INSTANCES,
            "No IAM statement allows ec2:TerminateInstances on * or a wildcard of instances without an "
            "ec2:InstanceProfile condition.",
            lambda resource, _config: access.unscoped_terminations(resource),
        ),
    ]


def _kubernetes_policies() -> list[Policy]:
    """The policies on managed Kubernetes clusters (GKE, EKS): the API's reach, secrets, pod identity."""
    return [
        _per_resource(
            KUBERNETES_PRIVATE_API,
            "GKE clusters have private nodes and a private or authorized-networks-only control plane; EKS "
            "clusters have no public endpoint or one limited to publicAccessCidrs; no range wider than a /8.",
            lambda resource, _config: kubernetes.private_api(resource),
        ),
        _per_resource(
            KUBERNETES_SECRETS_ENCRYPTION,
            "EKS clusters envelope-encrypt Kubernetes secrets with KMS (encryptionConfig resources secrets).",
            lambda resource, _config: kubernetes.secrets_encryption(resource),
        ),
        _per_resource(
            KUBERNETES_WORKLOAD_IDENTITY,
            "GKE clusters have a Workload Identity pool and their node pools the GKE_METADATA workload "
            "metadata mode, so pods never read the node's service account.",
            lambda resource, _config: kubernetes.workload_identity(resource),
        ),
        _per_resource(
            KUBERNETES_NO_LEGACY_ABAC,
            "GKE clusters authorize with RBAC alone (enableLegacyAbac off).",
            lambda resource, _config: kubernetes.no_legacy_abac(resource),
        ),
    ]


def _protection_policy() -> Policy:
    return _per_resource(
        PROTECT_STATEFUL,
        "Stateful resources (file systems, buckets) are protected in protected environments: the "
        "blueprint's environments.<name>.protected, default true for prod (plus protectedStacks).",
        _protection,
        config_schema=PolicyConfigSchema(
            properties={"protectedStacks": {"type": "array", "items": {"type": "string"}}}
        ),
    )


def _budget_policy() -> Policy:
    return StackValidationPolicy(
        name=BUDGET,
        description=(
            "The planned node groups, TPU slices and file systems cost no more than the configured "
            "budget, priced with the clusterfab catalog (as `clusterfab cost`)."
        ),
        validate=_validate_budget,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "maxHourlyUsd": {"type": "number", "exclusiveMinimum": 0},
                "maxMonthlyUsd": {"type": "number", "exclusiveMinimum": 0},
                "region": {"type": "string"},
            }
        ),
    )
