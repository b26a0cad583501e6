"""What a Slurm cluster adds to the bill beside its GPU nodes: the controller and the login nodes."""

from __future__ import annotations

from clusterfab.core.items import CONTROLLER_ITEM, LOGIN_ITEM
from clusterfab.cost.estimate import CostLine
from clusterfab.spec.model import Slurm


def host_lines(slurm: Slurm) -> list[CostLine]:
    """The Slurm controller and, when there are any, the login nodes (always on, on demand)."""
    lines = [
        CostLine(
            name=CONTROLLER_ITEM,
            kind="controller",
            path=("scheduler", "controller"),
            sku=slurm.controller.name,
            capacity="on_demand",
            quantity=1,
            min_quantity=None,
            unit="hour",
        )
    ]
    if slurm.login is not None and slurm.login_count:
        lines.append(
            CostLine(
                name=LOGIN_ITEM,
                kind="login",
                path=("scheduler", "login"),
                sku=slurm.login.name,
                capacity="on_demand",
                quantity=slurm.login_count,
                min_quantity=None,
                unit="hour",
            )
        )
    return lines
