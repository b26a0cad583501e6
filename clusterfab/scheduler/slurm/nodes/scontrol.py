"""slurmctld's side of the node programs: its nodes and our reservations as `scontrol` shows them, and the
updates that carry out the node sync's Slurm actions."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .actions import (
    END_MARGIN,
    END_RESERVATION,
    MarkDown,
    Release,
    Replace,
    Reserve,
    Return,
    SetAddress,
    SlurmAction,
    Unreserve,
)


@dataclass(frozen=True, slots=True)
class SlurmNode:
    name: str
    address: str
    """NodeAddr as slurmctld has it (the node name itself until someone sets it)."""
    down: bool
    states: frozenset[str] = frozenset()
    """slurmctld's state and flags (`IDLE`, `DRAIN`, `POWERED_DOWN`, `POWERING_UP`, ...)."""
    reason: str = ""
    reason_at: dt.datetime | None = None
    hostname: str = ""
    """NodeHostname as slurmctld has it: where machines claim their nodes (Azure), the claiming machine's
    host name; the node's own name when no one holds it."""

    @property
    def claimed_by(self) -> str | None:
        """The host that claimed the node (NodeHostname other than its own name), if any."""
        return self.hostname if self.hostname and self.hostname != self.name else None

    @property
    def powered_down(self) -> bool:
        """Suspended, or on its way there: no instance should exist for it."""
        return bool(self.states & {"POWERED_DOWN", "POWERING_DOWN"}) and not self.powering_up

    @property
    def powering_up(self) -> bool:
        return "POWERING_UP" in self.states

    @property
    def busy(self) -> bool:
        return bool(self.states & {"ALLOCATED", "MIXED", "COMPLETING"})


class Scontrol:
    """slurmctld's nodes, through scontrol."""

    def __init__(self, run: Any = subprocess.run) -> None:
        self._run = run

    def nodes(self) -> dict[str, SlurmNode]:
        out = self._run(
            ["scontrol", "show", "nodes", "--json"], capture_output=True, text=True, check=True
        ).stdout
        nodes = {}
        for node in json.loads(out).get("nodes", []):
            state = node.get("state", [])
            states = frozenset(state if isinstance(state, list) else str(state).split("+"))
            nodes[node["name"]] = SlurmNode(
                name=node["name"],
                address=node.get("address", node["name"]),
                down="DOWN" in states,
                states=states,
                reason=node.get("reason", "") or "",
                reason_at=_time(node.get("reason_changed_at")),
                hostname=node.get("hostname", "") or "",
            )
        return nodes

    def reservations(self) -> dict[str, dt.datetime]:
        """Our reservations before machines' ends: name -> start."""
        out = self._run(
            ["scontrol", "show", "reservation", "--json"], capture_output=True, text=True, check=True
        ).stdout
        found = {}
        for item in json.loads(out).get("reservations", []):
            start = _time(item.get("start_time"))
            if str(item.get("name", "")).startswith(END_RESERVATION) and start is not None:
                found[item["name"]] = start
        return found

    def reserve(self, action: Reserve, now: dt.datetime) -> None:
        # Relative to slurmctld's clock (`now+Ns`): no time zone to agree on. A start already past is now.
        seconds = max(0, int((action.start - now).total_seconds()))
        self._run(
            [
                "scontrol",
                "create",
                "reservation",
                f"ReservationName={END_RESERVATION}{action.name}",
                f"StartTime=now+{seconds}seconds",
                f"Duration={int(END_MARGIN.total_seconds() // 60) + 5}",
                f"Nodes={action.name}",
                "Users=root",
                "Flags=MAINT,IGNORE_JOBS",
            ],
            check=True,
        )

    def unreserve(self, action: Unreserve) -> None:
        self._run(["scontrol", "delete", f"ReservationName={action.reservation}"], check=True)

    def hostnames(self, expression: str) -> list[str]:
        """Slurm's own expansion of a hostlist expression (`h100-[2-5]`)."""
        out = self._run(
            ["scontrol", "show", "hostnames", expression], capture_output=True, text=True, check=True
        ).stdout
        return [str(name) for name in out.split()]

    def apply(self, action: SlurmAction) -> None:
        self.update([action.name], action)

    def update(self, names: Sequence[str], action: SlurmAction) -> None:
        """One `scontrol update` for every named node (their new state, or address)."""
        nodes = f"NodeName={','.join(names)}"
        if isinstance(action, SetAddress):
            fields = [f"NodeAddr={action.address}", f"NodeHostname={action.address}"]
        elif isinstance(action, Release):
            # Back to slurm.conf's own: the node is free for the next machine's claim.
            fields = [f"NodeAddr={action.name}", f"NodeHostname={action.name}"]
            if not action.down:
                fields += ["State=DOWN", f"Reason={action.reason}"]
        elif isinstance(action, Return):
            self._run(["scontrol", "update", nodes, "State=UNDRAIN"], check=True)
            if not action.down:
                return
            # UNDRAIN clears the reason too: set it again, on the node that is DOWN (never schedulable).
            fields = ["State=DOWN", f"Reason={action.reason}"]
        elif isinstance(action, MarkDown | Replace):
            fields = ["State=DOWN", f"Reason={action.reason}"]
        else:
            fields = ["State=POWER_DOWN_FORCE", f"Reason={action.reason}"]
        self._run(["scontrol", "update", nodes, *fields], check=True)


def _time(value: Any) -> dt.datetime | None:
    """A time in `scontrol --json`: seconds since the epoch, bare or as {"set", "number"} (data_parser
    v0.0.40 and later)."""
    if isinstance(value, Mapping):
        value = value.get("number") if value.get("set", True) else None
    if isinstance(value, int | float) and value > 0:
        return dt.datetime.fromtimestamp(value, dt.UTC)
    return None
