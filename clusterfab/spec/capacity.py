"""How capacity is bought, as one typed value per kind.

The blueprint writes `capacity: {kind, reservation, max_run_duration_hours}` with fields that only
some kinds use; resolution turns it into exactly one of these, so the code that maps capacity to a
cloud's market options matches on the type and cannot forget a kind (mypy checks `assert_never`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from clusterfab.blueprint.models import CapacitySpec


@dataclass(frozen=True, slots=True)
class OnDemand:
    kind: Literal["on_demand"] = "on_demand"


@dataclass(frozen=True, slots=True)
class Spot:
    kind: Literal["spot"] = "spot"


@dataclass(frozen=True, slots=True)
class Reservation:
    """Consume an existing reservation: an AWS capacity reservation id, a GCP reservation name or path."""

    reservation: str
    """Empty only in a blueprint validation rejects (BP105)."""
    kind: Literal["reservation"] = "reservation"


@dataclass(frozen=True, slots=True)
class CapacityBlock:
    """AWS Capacity Blocks for ML: a reservation of fixed size and time."""

    reservation: str
    """Empty only in a blueprint validation rejects (BP105)."""
    kind: Literal["capacity_block"] = "capacity_block"


@dataclass(frozen=True, slots=True)
class FlexStart:
    """GCP Dynamic Workload Scheduler flex-start: all VMs at once, for at most `max_run_hours`."""

    max_run_hours: int | None
    """None only in a blueprint validation rejects (BP109)."""
    kind: Literal["flex_start"] = "flex_start"


Capacity = OnDemand | Spot | Reservation | CapacityBlock | FlexStart


def capacity_of(spec: CapacitySpec) -> Capacity:
    """The typed capacity a blueprint's `capacity` block asks for."""
    match spec.kind:
        case "on_demand":
            return OnDemand()
        case "spot":
            return Spot()
        case "reservation":
            return Reservation(spec.reservation or "")
        case "capacity_block":
            return CapacityBlock(spec.reservation or "")
        case "flex_start":
            return FlexStart(spec.max_run_duration_hours)
