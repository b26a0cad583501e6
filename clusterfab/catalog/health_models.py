"""The catalog's health check floors: what a healthy node or node pair of a machine type shows."""

from __future__ import annotations

from pydantic import Field

from clusterfab.catalog.models import Sourced


class HealthcheckThresholds(Sourced):
    per_accelerator: dict[str, float]


class GdrLoopbackFloors(Sourced):
    """The node health check's floor on `ib_write_bw` GPUDirect loopback bandwidth per HCA (Gbps), per
    machine type; a type without a floor has the bandwidth measured and reported, never judged."""

    message_size_bytes: int = Field(gt=0)
    per_machine_type: dict[str, float]


class PairBandwidthFloors(Sourced):
    """`clusterfab health`'s floor on two-node all_reduce_perf bus bandwidth (GB/s), per machine type:
    a reference result of the machine type less `tolerance` (no vendor publishes an acceptance figure).
    A machine type without a reference has no floor: its bandwidth is measured and reported only."""

    tolerance: float = Field(gt=0, lt=1)
    reference: dict[str, float]

    def floor(self, machine_type: str) -> float | None:
        reference = self.reference.get(machine_type)
        return None if reference is None else round(reference * (1 - self.tolerance), 1)
