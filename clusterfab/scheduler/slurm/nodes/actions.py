"""What the node sync does, as data: each round's decision (`reconcile.plan_actions`) is a list of these
actions, carried out on the cloud's side by a `Fleet` and on Slurm's by `Scontrol`."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

END_RESERVATION = "clusterfab-end-"
"""Our maintenance reservations before a machine's end are `<this><node>`."""
END_MARGIN = dt.timedelta(minutes=10)
"""How long before its machine's end a node takes no job that would still run: the epilog's and the
job's cleanup, as Cluster Toolkit's 10-minute reservation before a flex-start VM's end."""


@dataclass(frozen=True, slots=True)
class NameInstance:
    instance_id: str
    name: str


@dataclass(frozen=True, slots=True)
class SetAddress:
    name: str
    address: str


@dataclass(frozen=True, slots=True)
class MarkDown:
    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class Release:
    """A node claimed by a machine that no longer exists (where machines claim their nodes, Azure): its
    NodeHostname and NodeAddr back to its own name, so that the next machine of its unit may claim it; set
    DOWN with the reason unless it is down already (a replaced node keeps its drain and reason)."""

    name: str
    host: str
    reason: str
    down: bool


@dataclass(frozen=True, slots=True)
class Replace:
    """A drained node whose machine is being replaced (or its host repaired): DOWN with the reason and still
    drained. ReturnToService=2 returns a DOWN node whenever its slurmd answers, and the old machine's slurmd
    answers pings until the machine is gone: DOWN alone would put the node back in service, on the failing
    machine, within one ping (the lab showed it). Return undrains it once its new machine has started."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class Return:
    """A replaced (or repaired) node whose new machine has started: undrained. If it is still DOWN, the new
    slurmd's registration returns it (ReturnToService=2); if it registered already (a DOWN+DRAIN node
    comes back IDLE+DRAIN), undraining it is what puts it in service."""

    name: str
    reason: str
    down: bool


@dataclass(frozen=True, slots=True)
class PowerDown:
    """Hand the node back to power saving: slurmctld runs the suspend program, then it may be resumed."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class Terminate:
    instance_id: str
    why: str


@dataclass(frozen=True, slots=True)
class Recreate:
    """A static node's instance replaced by its group with a new one (EC2: terminated, the auto scaling
    group launches another; GCE: the MIG recreates it, never deleted behind the MIG's back)."""

    instance_id: str
    group: str
    why: str


@dataclass(frozen=True, slots=True)
class Withdraw:
    """A flex-start MIG deleted, with its resize request and any VM it made."""

    mig: str
    why: str


@dataclass(frozen=True, slots=True)
class Reserve:
    """A maintenance reservation on the node from `start` (shortly before its machine's end): Slurm starts
    no job there that would still run then (Cluster Toolkit's mig_flex.py does the same)."""

    name: str
    start: dt.datetime


@dataclass(frozen=True, slots=True)
class Unreserve:
    reservation: str


@dataclass(frozen=True, slots=True)
class ReportFaulty:
    """The instance's host reported faulty (GCE `reportHostAsFaulty`), with one fault reason."""

    instance_id: str
    behavior: str
    """A `faultReasons[].behavior` value (FAULT_BEHAVIORS)."""
    description: str


Action = (
    NameInstance
    | SetAddress
    | MarkDown
    | Release
    | Replace
    | Return
    | PowerDown
    | Terminate
    | Recreate
    | ReportFaulty
    | Withdraw
    | Reserve
    | Unreserve
)
SlurmAction = SetAddress | MarkDown | Release | Replace | Return | PowerDown
