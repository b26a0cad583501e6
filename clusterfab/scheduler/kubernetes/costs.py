"""What a Kubernetes cluster adds to the bill beside its GPU node pools: the managed control plane's fee
per cluster hour and the system node pool."""

from __future__ import annotations

import datetime as dt

from clusterfab.core import dates
from clusterfab.cost.estimate import CostLine
from clusterfab.scheduler.kubernetes.facts import kubernetes_facts
from clusterfab.scheduler.kubernetes.section import Kubernetes

CONTROL_PLANE_ITEM = "control-plane"
SYSTEM_NODES_ITEM = "system-nodes"


def control_plane_sku(cloud: str, section: Kubernetes) -> str | None:
    """The fee the control plane is billed at today (clusterfab.core.dates.today)."""
    return fee_sku(cloud, section.version, dates.today())


def fee_sku(cloud: str, version: str, today: dt.date) -> str | None:
    """The fee a control plane of `version` is billed at on `today`: the extended support fee once the
    version's standard support has ended (EKS), else the standard one; None: no managed service here."""
    plane = kubernetes_facts().control_plane(cloud)
    if plane is None:
        return None
    support = plane.version(version)
    extended = support is not None and support.standard_support_ends <= today
    if extended and plane.extended_fee_sku is not None:
        return plane.extended_fee_sku
    return plane.fee_sku


def control_plane_line(sku: str) -> CostLine:
    """The control plane's fee, one cluster's worth."""
    return CostLine(
        name=CONTROL_PLANE_ITEM,
        kind="controller",
        path=("scheduler",),
        sku=sku,
        capacity="on_demand",
        quantity=1,
        min_quantity=None,
        unit="hour",
    )


def host_lines(cloud: str, section: Kubernetes) -> list[CostLine]:
    sku = control_plane_sku(cloud, section)
    lines = [] if sku is None else [control_plane_line(sku)]
    lines.append(system_nodes_line(section.system_machine, section.system_count))
    return lines


def system_nodes_line(machine: str, count: int) -> CostLine:
    """The system node pool, always on."""
    return CostLine(
        name=SYSTEM_NODES_ITEM,
        kind="controller",
        path=("scheduler", "system_nodes"),
        sku=machine,
        capacity="on_demand",
        quantity=count,
        min_quantity=None,
        unit="hour",
    )
