"""What a Kubernetes cluster adds to the bill beside its GPU node pools: the managed control plane's fee
per cluster hour and the system node pool."""

from __future__ import annotations

from clusterfab.core import dates
from clusterfab.cost.estimate import CostLine
from clusterfab.scheduler.kubernetes.facts import kubernetes_facts
from clusterfab.scheduler.kubernetes.section import Kubernetes

CONTROL_PLANE_ITEM = "control-plane"
SYSTEM_NODES_ITEM = "system-nodes"


def control_plane_sku(cloud: str, section: Kubernetes) -> str | None:
    """The fee the control plane is billed at today: the extended support fee once the version's standard
    support has ended (EKS), else the standard one."""
    plane = kubernetes_facts().control_plane(cloud)
    if plane is None:
        return None
    support = plane.version(section.version)
    extended = support is not None and support.standard_support_ends <= dates.today()
    if extended and plane.extended_fee_sku is not None:
        return plane.extended_fee_sku
    return plane.fee_sku


def host_lines(cloud: str, section: Kubernetes) -> list[CostLine]:
    lines = []
    sku = control_plane_sku(cloud, section)
    if sku is not None:
        lines.append(
            CostLine(
                name=CONTROL_PLANE_ITEM,
                kind="controller",
                path=("scheduler",),
                sku=sku,
                capacity="on_demand",
                quantity=1,
                min_quantity=None,
                unit="hour",
            )
        )
    lines.append(
        CostLine(
            name=SYSTEM_NODES_ITEM,
            kind="controller",
            path=("scheduler", "system_nodes"),
            sku=section.system_machine,
            capacity="on_demand",
            quantity=section.system_count,
            min_quantity=None,
            unit="hour",
        )
    )
    return lines
