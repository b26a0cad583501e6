"""Resolve the blueprint's `monitoring` into the spec's Monitoring: where the stack runs, on what, with
how much disk, and who gets the alerts.

The stack runs on the scheduler's controller when the cluster has one (`host_for`), else on a small monitoring
node of its own. The monitoring disk is sized with Prometheus' own rule (retention x samples per second
x bytes per sample) for the cluster at its largest, with headroom.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from clusterfab.blueprint.models import Blueprint, MonitoringSpec
from clusterfab.catalog import Catalog
from clusterfab.catalog.models import StorageSizing
from clusterfab.spec.model import Monitoring, MonitoringHost, NodeGroup, Smtp

SCRAPE_INTERVAL_SECONDS = 30
"""How often Prometheus scrapes the exporters (dcgm-exporter collects every 30 s by default)."""
DISK_HEADROOM = 1.5
"""Compaction and the write-ahead log need room beyond the blocks themselves."""
GIB = 1024**3


def host_for(has_controller: bool) -> MonitoringHost:
    """Where the stack runs: the scheduler's controller when there is one, else its own monitoring node."""
    return "controller" if has_controller else "node"


def series_at_full_size(groups: Sequence[NodeGroup], sizing: StorageSizing) -> int:
    """The series the exporters of every node group expose at the groups' largest size."""
    total = 0
    for group in groups:
        per_node = group.gpus_per_node * sizing.dcgm_series_per_gpu
        per_node += (
            sizing.node_exporter_series_base + sizing.node_exporter_series_per_vcpu * group.machine.vcpus
        )
        total += per_node * group.max_size
    return total


def needed_disk_gib(series: int, retention_days: int, interval_seconds: int, sizing: StorageSizing) -> int:
    """Prometheus' sizing rule (retention x samples/s x bytes/sample) with headroom, at least the minimum."""
    samples = series / interval_seconds * retention_days * 86400
    return max(sizing.min_disk_gib, math.ceil(samples * sizing.bytes_per_sample * DISK_HEADROOM / GIB))


def resolve_monitoring(
    blueprint: Blueprint,
    catalog: Catalog,
    groups: Sequence[NodeGroup],
    *,
    controller_of: str | None = None,
) -> tuple[Monitoring | None, bool]:
    """The spec's Monitoring (None for kind none), and whether its machine type is one the catalog knows.
    `controller_of`: the kind of the scheduler whose controller hosts the stack; None: there is none."""
    spec = blueprint.monitoring
    if spec is None or spec.kind == "none":
        return None, True
    host = host_for(controller_of is not None)
    facts = catalog.monitoring
    machine = facts.machine(blueprint.cloud, spec.machine_type) if host == "node" else None
    needed = needed_disk_gib(
        series_at_full_size(groups, facts.storage),
        spec.retention_days,
        SCRAPE_INTERVAL_SECONDS,
        facts.storage,
    )
    monitoring = Monitoring(
        retention_days=spec.retention_days,
        alert_emails=_recipients(blueprint, spec),
        smtp=_smtp(spec),
        host=host,
        machine=machine,
        disk_gib=spec.disk_gib or needed,
        needed_disk_gib=needed,
        scrape_interval_seconds=SCRAPE_INTERVAL_SECONDS,
        slurm=controller_of == "slurm",
    )
    return monitoring, host == "controller" or machine is not None


def _recipients(blueprint: Blueprint, spec: MonitoringSpec) -> tuple[str, ...]:
    if spec.alert_emails is not None:
        return tuple(spec.alert_emails)
    return tuple(blueprint.budget.alert_emails) if blueprint.budget else ()


def _smtp(spec: MonitoringSpec) -> Smtp | None:
    if spec.smtp is None:
        return None
    return Smtp(spec.smtp.smarthost, spec.smtp.sender, spec.smtp.username, spec.smtp.password_secret)
