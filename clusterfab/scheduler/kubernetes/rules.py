"""The rules of a `scheduler` of kind kubernetes: settings that are Slurm's, the cloud's managed service,
the control plane version and the system node pool's machine."""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab.core.findings import Finding, Severity
from clusterfab.core.hints import did_you_mean
from clusterfab.scheduler.base import RuleView
from clusterfab.scheduler.kubernetes import pools
from clusterfab.scheduler.kubernetes.facts import ControlPlane, kubernetes_facts

SLURM_SETTINGS = ("controller", "login", "accounting", "database", "containers", "partitions", "elastic")
"""The section's fields only Slurm reads."""

SUPPORT_NOTICE_DAYS = 30
"""A version whose standard support ends this soon is worth a warning: the service upgrades it (GKE) or
starts charging extended support (EKS) within the month."""


def check(ctx: RuleView) -> Iterator[Finding]:
    yield from _slurm_settings(ctx)
    plane = kubernetes_facts().control_plane(ctx.blueprint.cloud)
    if plane is None:
        yield ctx.finding(
            "BP172",
            ("scheduler", "kind"),
            f"clusterfab has no managed Kubernetes service on {ctx.blueprint.cloud}",
            hint="use cloud gcp (GKE) or aws (EKS), or scheduler kind slurm",
        )
        return
    yield from _version(ctx, plane)
    yield from _system_machine(ctx)
    yield from _api_access(ctx)
    yield from pools.check(ctx)


def _slurm_settings(ctx: RuleView) -> Iterator[Finding]:
    for name in SLURM_SETTINGS:
        if ctx.written(("scheduler", name)):
            yield ctx.finding(
                "BP170",
                ("scheduler", name),
                f"scheduler.{name} is a Slurm setting: a Kubernetes cluster has no such part",
                hint=f"remove scheduler.{name}",
                at_key=True,
            )


def _version(ctx: RuleView, plane: ControlPlane) -> Iterator[Finding]:
    scheduler = ctx.blueprint.scheduler
    written = scheduler.version if scheduler is not None else None
    if written is None:
        return
    offered = [v.minor for v in plane.versions]
    support = plane.version(written)
    if support is None:
        yield ctx.finding(
            "BP173",
            ("scheduler", "version"),
            f"{plane.service} offers no Kubernetes {written} for a new cluster "
            f"(it offers {', '.join(offered)})",
            hint=f"use {plane.default_version}, the catalog's default, or leave scheduler.version out",
        )
        return
    today = ctx.today
    ends = support.standard_support_ends
    if ends <= today:
        extended = plane.release_channel is None
        yield ctx.finding(
            "BP174",
            ("scheduler", "version"),
            (
                f"{plane.service}'s standard support of Kubernetes {written} ended on {ends.isoformat()}: "
                + (
                    "the cluster runs on extended support, at the extended support fee per cluster hour"
                    if extended
                    else f"the {plane.release_channel} channel upgrades such a cluster on its own"
                )
            ),
            hint=f"use {plane.default_version}",
            severity=Severity.WARNING if extended else Severity.ERROR,
        )
    elif (ends - today).days <= SUPPORT_NOTICE_DAYS:
        yield ctx.finding(
            "BP174",
            ("scheduler", "version"),
            f"{plane.service}'s standard support of Kubernetes {written} ends on {ends.isoformat()}, "
            f"in {(ends - today).days} days",
            hint=f"use {plane.default_version}",
            severity=Severity.WARNING,
        )


def _system_machine(ctx: RuleView) -> Iterator[Finding]:
    scheduler = ctx.blueprint.scheduler
    written = scheduler.system_nodes.machine_type if scheduler is not None else None
    if written is None:
        return
    facts = kubernetes_facts()
    if facts.system_machine(ctx.blueprint.cloud, written) is None:
        names = [m.name for m in facts.system_machines if m.cloud == ctx.blueprint.cloud]
        yield ctx.finding(
            "BP175",
            ("scheduler", "system_nodes", "machine_type"),
            f"{written} is not a system node machine the catalog knows on {ctx.blueprint.cloud}",
            hint=did_you_mean(written, names, what="system node machines"),
        )


OPEN_PREFIX = 8
"""An API access range wider than a /8 opens the API server to much of the internet."""


def _api_access(ctx: RuleView) -> Iterator[Finding]:
    scheduler = ctx.blueprint.scheduler
    cidrs = scheduler.api_access_cidrs if scheduler is not None else []
    for index, cidr in enumerate(cidrs):
        if int(cidr.rsplit("/", 1)[1]) < OPEN_PREFIX:
            yield ctx.finding(
                "BP176",
                ("scheduler", "api_access_cidrs", index),
                f"{cidr} opens the Kubernetes API server to much of the internet",
                hint="list your office's or CI's own ranges, or none: the endpoint stays private",
            )
