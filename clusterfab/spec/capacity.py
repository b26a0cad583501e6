"""How capacity is bought, as one typed value per kind.

The blueprint writes `capacity: {kind, reservation, max_run_duration_hours, ends_at}` with fields that only
some kinds use; resolution turns it into exactly one of these, so the code that maps capacity to a
cloud's market options matches on the type and cannot forget a kind (mypy checks `assert_never`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from clusterfab.blueprint.models import CapacitySpec

END_MARGIN = dt.timedelta(minutes=10)
"""How long before its machine's end a Slurm node takes no job that would still run then (the node sync's
END_MARGIN, kept equal by a test): the epilog's and the job's cleanup."""


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
    ends_at: dt.datetime | None = None
    """When the block ends (aware, UTC); None where the blueprint does not say (BP162 warns)."""
    terminates_at: dt.datetime | None = None
    """When EC2 begins terminating the block's instances: `ends_at` less the catalog's lead."""
    kind: Literal["capacity_block"] = "capacity_block"

    @property
    def drains_at(self) -> dt.datetime | None:
        """From when Slurm starts no job on the block's nodes that would still run at `terminates_at`
        (the node sync's maintenance reservation before a machine's end)."""
        return None if self.terminates_at is None else self.terminates_at - END_MARGIN


@dataclass(frozen=True, slots=True)
class FlexStart:
    """GCP Dynamic Workload Scheduler flex-start: all VMs at once, for at most `max_run_hours`."""

    max_run_hours: int | None
    """None only in a blueprint validation rejects (BP109)."""
    kind: Literal["flex_start"] = "flex_start"


Capacity = OnDemand | Spot | Reservation | CapacityBlock | FlexStart


def capacity_of(spec: CapacitySpec, *, termination_lead: dt.timedelta = dt.timedelta(0)) -> Capacity:
    """The typed capacity a blueprint's `capacity` block asks for; a capacity block's instances are
    terminated `termination_lead` before its end (the catalog's figure)."""
    match spec.kind:
        case "on_demand":
            return OnDemand()
        case "spot":
            return Spot()
        case "reservation":
            return Reservation(spec.reservation or "")
        case "capacity_block":
            ends = spec.ends_at
            terminates = None if ends is None else ends - termination_lead
            return CapacityBlock(spec.reservation or "", ends, terminates)
        case "flex_start":
            return FlexStart(spec.max_run_duration_hours)
