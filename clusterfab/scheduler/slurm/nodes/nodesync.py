"""Keep the cloud's GPU instances and Slurm's nodes in step: the controller's node sync, run every 30 s by
a systemd timer (`python3 -m clusterfab_slurm_nodes sync`).

slurm.conf names a group's nodes `<group>-0` .. `<group>-(max-1)`: the first `static` are always up (the
group's auto scaling group / managed instance group runs that many instances of its template, all alike),
the rest are elastic (State=CLOUD: the resume program in `power.py` creates their instances when a job
needs them, the suspend program deletes them). This program is the one writer that pairs them:

- a static instance without a name gets the lowest free static name, as the tag `clusterfab-slurm-node`
  (the node's boot reads its own tags from the instance metadata service and starts `slurmd -N <name>`);
  two instances claiming one name keep the earlier launched one; a static node's address in Slurm follows
  its instance (`scontrol update NodeAddr=... NodeHostname=...`); a static name no instance holds any more
  is marked DOWN, so Slurm requeues its jobs instead of waiting for a node that will not come back;
- a static node drained by the health check (reason `clusterfab-health: ...`) is replaced: its group
  replaces its instance (EC2: the instance is terminated and the auto scaling group launches another; GCE:
  the MIG recreates the VM, `recreateInstances`), the new one takes the freed name; the node is set DOWN
  and kept drained until the instance holding its name has started (ReturnToService=2 would return a DOWN
  node as soon as the old machine's slurmd answers a ping), then undrained, and its new slurmd brings it
  back; a static node its spot watcher set aside on an interruption notice (DOWN and drained) is replaced
  the same way at once: the group launches the replacement now, not when the cloud has taken the old one;
- where Compute Engine takes a faulty-host report for the VM (`FAULTY_HOST_MACHINE_TYPES`, reservation-bound
  only) and the health check's category is a hardware one (`FAULT_BEHAVIORS`), the VM's host is reported
  faulty instead (`reportHostAsFaulty`): Compute Engine repairs or migrates the host and restarts the same
  VM, whose slurmd returns the node (DOWN with a `clusterfab-repair:` reason meanwhile, static or elastic).
  A VM still running `REPORT_WAIT` later (the report failed or was refused) takes today's path; an elastic
  node whose VM stopped for the repair is powered down then, so Slurm may create it elsewhere;
- an elastic node that Slurm believes up but whose instance is gone (a spot interruption, a deletion by
  hand) is marked DOWN, which requeues its jobs, and then powered down, so Slurm creates it again when a job
  needs it; an elastic node its spot watcher set DOWN on an interruption notice is powered down at once (the
  suspend program deletes the instance before the cloud takes it, and the node is clean and power-saved,
  ready to be created again on new capacity); an elastic node drained by the health check is powered down
  (its instance deleted); an elastic node that failed to resume (DOWN with a `clusterfab:` reason) is
  powered down after `RETRY_AFTER`, never left DOWN;
- an elastic instance whose node is powered down, or that never got its name (a resume that died half
  way), is terminated after `GRACE`: no instance runs, and bills, without a Slurm node;
- flex-start elastic nodes (GCE) are asked for per job through a MIG of the resume program's with one
  resize request; when capacity arrives (maybe hours later) their VMs are named for the nodes they were
  asked for; a request that FAILED sets its waiting nodes DOWN with its error code (then powered down as
  any refused resume) and its MIG is deleted; a MIG that holds no VM and asks for none, or that no node
  waits for any more, is deleted after `GRACE`, and one whose job went while it waited (its nodes still
  powering up, allocated to no job) is deleted and its nodes powered down. Their VMs are deleted through
  their MIG, never behind it. A node whose VM has an end is reserved (maintenance) from `END_MARGIN`
  before it, so that no job starts there that would outlive the machine;
- the instances of a group on an EC2 capacity block end when EC2 begins terminating them before the block's
  end (the config's `ends`): their nodes are reserved the same way.

On GCP the name is the instance metadata key of that name instead of a tag (a VM reads its metadata, not
its labels, from the metadata server). On Azure no program names a VM: each claims a free node of its scale
set's fabric unit itself (its NodeHostname), and the sync's `claims` rules (reconcile.py) release the
claims of VMs that are gone, replace failed VMs (deleted from their scale set) and, through the fleet's
`keep_sizes`, raise each scale set back to its unit's size (azure.py).

`reconcile.plan_actions` is the pure decision, the same on every cloud; the cloud's `Fleet` (fleet.py;
aws.py's `Ec2Fleet`, gcp.py's `GceFleet`, the one the settings name chosen by clouds.py) and `Scontrol`
(scontrol.py) read and change the world; `sync` here is one round of both. The program runs with the
controller's identity (AWS: describe the cluster's instances, tag the node name on them, launch and
terminate elastic ones; GCP: custom roles to list the zone's VMs, read and set the metadata of the
cluster's node VMs, have the node groups' MIGs recreate their VMs, report hosts faulty where that applies,
and create and delete its elastic VMs, each conditioned on the resources' names: components/gcp/slurm.py)
and as root for scontrol. Every action is logged and counted.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .actions import Action, NameInstance, Recreate, ReportFaulty, Reserve, Terminate, Unreserve, Withdraw
from .fleet import Fleet
from .reconcile import RETRY_AFTER, plan_actions
from .scontrol import Scontrol

log = logging.getLogger("clusterfab-slurm-nodes")


@dataclass
class Counts:
    """What a run did, by kind of action: written to the counts file the Slurm exporter reads."""

    done: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)


def sync(
    names: Mapping[str, Sequence[str]],
    fleet: Fleet,
    slurm: Scontrol,
    *,
    elastic: Mapping[str, Sequence[str]] | None = None,
    now: dt.datetime | None = None,
    retry_after: dt.timedelta = RETRY_AFTER,
    counts: Counts | None = None,
    ending: bool = False,
    claims: bool = False,
) -> list[Action]:
    """One round: read both sides, act, and return what was done (each action is logged). One failed
    action is logged and counted, and does not stop the others. With `ending` (machines that end: flex-
    start groups, groups on a capacity block) our reservations before their ends are kept in step too.
    With `claims` (the machines claim their nodes themselves) slurmctld is read before the cloud: a claim
    it shows was made by a machine that existed then, so the cloud's later list has it unless it is gone.
    Last, the fleet brings its groups back to their sizes where the cloud does not (`keep_sizes`)."""
    now = now or dt.datetime.now(dt.UTC)
    nodes = slurm.nodes() if claims else None
    instances = fleet.instances()
    actions = plan_actions(
        names,
        instances,
        nodes if nodes is not None else slurm.nodes(),
        elastic=elastic,
        requests=fleet.requests(),
        reservations=slurm.reservations() if ending else None,
        now=now,
        retry_after=retry_after,
        claims=claims,
    )
    counts = counts if counts is not None else Counts()
    for action in actions:
        kind = type(action).__name__
        log.info("%s", action)
        try:
            if isinstance(action, NameInstance):
                fleet.name(action.instance_id, action.name)
            elif isinstance(action, Terminate):
                fleet.terminate([action.instance_id])
            elif isinstance(action, Recreate):
                fleet.recreate(action.group, action.instance_id)
            elif isinstance(action, ReportFaulty):
                fleet.report_faulty(action.instance_id, action.behavior, action.description)
            elif isinstance(action, Withdraw):
                fleet.withdraw(action.mig)
            elif isinstance(action, Reserve):
                slurm.reserve(action, now)
            elif isinstance(action, Unreserve):
                slurm.unreserve(action)
            else:
                slurm.apply(action)
        except Exception:
            log.exception("failed: %s", action)
            counts.failed[kind] += 1
        else:
            counts.done[kind] += 1
    _keep_sizes(fleet, counts)
    return actions


def _keep_sizes(fleet: Fleet, counts: Counts) -> None:
    try:
        for change in fleet.keep_sizes():
            log.info("%s", change)
            counts.done["KeepSize"] += 1
    except Exception:
        log.exception("failed: keeping the groups at their sizes")
        counts.failed["KeepSize"] += 1
