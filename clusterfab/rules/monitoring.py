"""Monitoring rules: who gets the alerts, how they are sent (the SMTP password's secret), the monitoring
node's machine and disk."""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab.core.findings import Finding
from clusterfab.core.hints import did_you_mean
from clusterfab.rules.context import RuleContext

_SETTINGS = ("retention_days", "alert_emails", "smtp", "machine_type", "disk_gib")
"""The fields that only mean something when monitoring is on."""


def check_monitoring(ctx: RuleContext) -> Iterator[Finding]:
    spec = ctx.blueprint.monitoring
    if spec is None:
        return
    if spec.kind == "none":
        for name in _SETTINGS:
            if ctx.written(("monitoring", name)):
                yield ctx.finding(
                    "BP152",
                    ("monitoring", name),
                    f"monitoring.{name} has no effect with monitoring.kind none",
                    hint="set monitoring.kind: prometheus, or remove the setting",
                    at_key=True,
                )
        return
    monitoring = ctx.spec.monitoring
    if monitoring is None:
        return
    if not monitoring.alert_emails:
        yield ctx.finding(
            "BP150",
            ("monitoring", "alert_emails"),
            "no one gets the alerts: neither monitoring.alert_emails nor budget.alert_emails names an "
            "address",
            hint="add monitoring.alert_emails: [you@example.com]",
            anchor=("monitoring", "kind"),
        )
    elif monitoring.smtp is None:
        yield ctx.finding(
            "BP151",
            ("monitoring", "smtp"),
            f"alerts for {', '.join(monitoring.alert_emails)} are not e-mailed: monitoring.smtp "
            f"names no mail relay",
            hint="add monitoring.smtp: {smarthost: HOST:587, sender: alerts@example.com, username: ..., "
            "password_secret: SECRET}; until then alerts show in Grafana and Alertmanager only",
            anchor=("monitoring", "kind"),
        )
    if spec.disk_gib is not None and spec.disk_gib < monitoring.needed_disk_gib:
        yield ctx.finding(
            "BP153",
            ("monitoring", "disk_gib"),
            f"{spec.disk_gib} GiB holds less than the {monitoring.retention_days} days of samples "
            f"the cluster "
            f"produces at full size (about {monitoring.needed_disk_gib} GiB)",
            hint=f"raise disk_gib to {monitoring.needed_disk_gib}, lower retention_days, or leave "
            f"disk_gib out "
            "to size it automatically",
        )


def check_monitoring_machine(ctx: RuleContext) -> Iterator[Finding]:
    """The monitoring node's machine: one the catalog knows for the cloud (BP250), on a cloud where it has
    any (BP251). A cluster whose scheduler controller hosts the stack needs no monitoring node."""
    spec, monitoring = ctx.blueprint.monitoring, ctx.spec.monitoring
    cloud = ctx.blueprint.cloud
    own_node = monitoring is None or monitoring.host == "node"
    if (
        spec is not None
        and spec.kind != "none"
        and own_node
        and ctx.catalog.monitoring.machine(cloud) is None
    ):
        clouds = sorted({m.cloud for m in ctx.catalog.monitoring.machines})
        yield ctx.finding(
            "BP251",
            ("monitoring",),
            f"clusterfab builds no monitoring node of its own on {cloud} yet (the catalog has no monitoring "
            "machine for it), and the cluster has no scheduler controller to host monitoring",
            hint=f"add scheduler: {{kind: slurm}} (its controller hosts monitoring), remove monitoring, or "
            f"monitor a cluster on {' or '.join(clouds)}",
            at_key=True,
        )
        return
    if spec is None or monitoring is None or spec.machine_type is None or monitoring.host != "node":
        return
    if monitoring.machine is None:
        known = [m.name for m in ctx.catalog.monitoring.machines if m.cloud == ctx.blueprint.cloud]
        yield ctx.finding(
            "BP250",
            ("monitoring", "machine_type"),
            f"'{spec.machine_type}' is not a monitoring machine type the catalog knows for "
            f"{ctx.blueprint.cloud}",
            hint=did_you_mean(spec.machine_type, known, what="monitoring machine types")
            or f"known: {', '.join(known)}; or leave machine_type out for the default",
        )


def check_smtp_secret(ctx: RuleContext) -> Iterator[Finding]:
    """The SMTP password's secret names one secret of the cloud's store, as its profile writes it: the
    monitoring host's role may read exactly that secret (components/aws/monitoring.py builds its ARN with
    the deployment's account and region), so a name that is not one would read nothing or many."""
    spec = ctx.blueprint.monitoring
    if spec is None or spec.smtp is None or spec.smtp.password_secret is None:
        return
    blueprint = ctx.blueprint
    path = ("monitoring", "smtp", "password_secret")
    for problem in ctx.cloud.secret_problems(
        spec.smtp.password_secret, region=blueprint.region, project=blueprint.project
    ):
        yield ctx.finding("BP154", (*path, *problem.path), problem.message, hint=problem.hint)
