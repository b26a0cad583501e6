"""The catalog's health check floors: what a healthy node or node pair of a machine type shows."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from clusterfab.catalog.models import MachineType, Sourced


class HealthcheckThresholds(Sourced):
    per_accelerator: dict[str, float]


class GdrLoopbackFloors(Sourced):
    """The node health check's floor on `ib_write_bw` GPUDirect loopback bandwidth per HCA (Gbps), per
    machine type; a type without a floor has the bandwidth measured and reported, never judged."""

    message_size_bytes: int = Field(gt=0)
    per_machine_type: dict[str, float]


class IbPairFloors(Sourced):
    """`clusterfab health`'s `ib_write_bw` between the two nodes of a pair on an InfiniBand machine type:
    how it is run (AzNHC's GPUDirect flags and message size, HCA i with GPU i on out-of-band port
    `first_port` + i) and its floor per HCA in Gbps per machine type. A type without a floor has every
    HCA's bandwidth measured and reported, never judged."""

    message_size_bytes: int = Field(gt=0)
    first_port: int = Field(gt=0, lt=65536)
    per_machine_type: dict[str, float]

    def settings(self, machine: MachineType) -> dict[str, Any]:
        """The deep check's settings of a node group of `machine` (healthcheck.json's `ib_write_bw`);
        empty for a type without InfiniBand, which the step leaves out."""
        ports = machine.infiniband_ports()
        if ports is None:
            return {}
        floor = self.per_machine_type.get(machine.name)
        return {
            "ib_write_bw": {
                "hcas": ports.hcas,
                "message_size_bytes": self.message_size_bytes,
                "first_port": self.first_port,
                "min_gbps": floor,
                "floor_source": ",".join(self.source) if floor is not None else None,
            }
        }


class PairBandwidthFloors(Sourced):
    """`clusterfab health`'s floor on two-node all_reduce_perf bus bandwidth (GB/s), per machine type:
    a reference result of the machine type less `tolerance` (no vendor publishes an acceptance figure).
    A machine type without a reference has no floor: its bandwidth is measured and reported only.
    `ib_write_bw`: the same pairs' InfiniBand step, with its own source."""

    tolerance: float = Field(gt=0, lt=1)
    reference: dict[str, float]
    ib_write_bw: IbPairFloors

    def floor(self, machine_type: str) -> float | None:
        reference = self.reference.get(machine_type)
        return None if reference is None else round(reference * (1 - self.tolerance), 1)
