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
its labels, from the metadata server).

`plan_actions` is the pure decision; `Ec2Fleet` / `GceFleet` and `Scontrol` read and change the world. The
program runs with the controller's identity (AWS: describe the cluster's instances, tag the node name on
them, launch and terminate elastic ones; GCP: custom roles to list the zone's VMs, read and set the
metadata of the cluster's node VMs, have the node groups' MIGs recreate their VMs, report hosts faulty
where that applies, and create and delete its elastic VMs, each conditioned on the resources' names:
components/gcp/slurm.py) and as root for scontrol. Every action is logged and counted.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import secrets
import subprocess
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

NODE_TAG = "clusterfab-slurm-node"
"""The node name an instance holds (kept in step with clusterfab.core.vocab by a test)."""
GROUP_TAG = "clusterfab-node-group"
BLUEPRINT_TAG = "clusterfab-blueprint"
STACK_TAG = "clusterfab-stack"
ELASTIC_TAG = "clusterfab-slurm-elastic"
"""On an instance the resume program created (value `true`)."""
FLEX_TAG = "clusterfab-slurm-flex"
"""On a flex-start MIG's VMs (through its allInstancesConfig): the MIG's name. With the cluster's, stack's
and group's labels beside it on the MIG, a flex-start MIG is found by its labels, not by its group's name
prefix, so that a group gone from the blueprint still has its MIGs found and deleted."""
GONE_REASON = "clusterfab: no instance holds this node"
LOST_REASON = "clusterfab: its instance is gone (interrupted or deleted)"
REASON_PREFIX = "clusterfab:"
"""Reasons this package sets on nodes; a node DOWN for one of them is ours to bring back."""
INTERRUPTED_PREFIX = "clusterfab: spot interruption notice"
"""The reason a spot node's own watcher (the slurm_node role's clusterfab-spot-watch) sets it DOWN with when
the cloud gives notice that it takes the machine back (EC2's two-minute instance-action, GCE's preempted):
slurmctld has requeued its jobs; the machine is about to go."""
HEALTH_PREFIX = "clusterfab-health:"
"""Reasons the nodes' health checks drain them with: the hardware failed, replace the machine."""
REPAIR_PREFIX = "clusterfab-repair:"
"""The reason of a node whose host was reported faulty: not `clusterfab:`, so the failed-resume rule leaves
it alone while the report runs."""
REPORT_WAIT = dt.timedelta(minutes=15)
"""How long a reported VM may keep running before the report counts as failed: the report operation
usually takes 10-12 minutes, after which Compute Engine stops the VM for the repair, and Google's guide
says to wait at least 15 minutes before acting on a VM that became unresponsive after the report
(docs.cloud.google.com/ai-hypercomputer/docs/manage/report-faulty-host). Deleting the VM meanwhile fails
the report (same page, Limitations)."""
FAULT_BEHAVIORS = {
    "XID": "UNRECOVERABLE_GPU_ERROR",
    "ECC": "UNRECOVERABLE_GPU_ERROR",
    "NVLINK": "BEHAVIOR_UNSPECIFIED",
    "DCGM": "BEHAVIOR_UNSPECIFIED",
    "PERF": "PERFORMANCE",
}
"""The health check's categories (clusterfab_slurm_health.py CATEGORIES, the deep check's PERF) that mean
the host's hardware, as the faulty-host report's `faultReasons[].behavior` (compute.v1 discovery document,
InstancesReportHostAsFaultyRequestFaultReason; the meanings from the report-faulty-host guide):
UNRECOVERABLE_GPU_ERROR is "an unrecoverable GPU error with an XID", which an uncorrected ECC error is too
(the driver reports it as XID 48); PERFORMANCE is GPUs slower than the cluster's others with no XID (the
deep check's bus-bandwidth floor); an NVLink error counter or a failed DCGM diagnostic names no one of the
guide's patterns: BEHAVIOR_UNSPECIFIED. GPU (nvidia-smi failing or missing GPUs) is not reported: a
broken driver or image fails it as well, and a report stops the VM for days on a healthy host."""
FAULTY_HOST_MACHINE_TYPES = frozenset(
    {"a4x-highgpu-4g", "a4-highgpu-8g", "a3-ultragpu-8g", "a3-megagpu-8g", "a3-highgpu-8g"}
)
"""The machine types whose hosts may be reported faulty (the guide's Limitations: A4X Max, A4X, A4, A3
Ultra, A3 Mega and A3 High with 8 GPUs; A4X Max is not in the catalog), and only for a running VM of the
reservation-bound provisioning model (`scheduling.provisioningModel` RESERVATION_BOUND); others are
refused (INSTANCES_WITHOUT_RESERVATION_NOT_SUPPORTED, the guide's troubleshooting page)."""
GRACE = dt.timedelta(minutes=3)
"""How long an elastic instance may run without a powered-up node before it counts as orphaned: the time
between the resume program's create call and its naming the instance."""
RETRY_AFTER = dt.timedelta(minutes=2)
"""How long a node that failed to resume (no capacity) stays DOWN, with its reason on show, before it is
powered down and may be tried again: a job then retries every couple of minutes, not in a tight loop."""

log = logging.getLogger("clusterfab-slurm-nodes")


@dataclass(frozen=True, slots=True)
class Instance:
    """A running (or starting) instance of a node group."""

    id: str
    group: str
    address: str
    launched: dt.datetime
    name: str | None
    """Its node-name tag, if it has one."""
    elastic: bool = False
    """Created by the resume program (tagged `clusterfab-slurm-elastic=true`), not by the group."""
    reportable: bool = False
    """Its host may be reported faulty (GCE: a machine type and provisioning model the report takes)."""
    started: dt.datetime | None = None
    """When it last started, if that is not `launched` (GCE lastStartTimestamp: a VM restarted after its
    host's repair; EC2's LaunchTime is the last start already)."""
    intended: str | None = None
    """The node its name was asked for, where no one could name it at creation: a flex-start VM, which
    its MIG creates when capacity arrives, long after the resume program asked for it by name."""
    ends: dt.datetime | None = None
    """When the cloud deletes it whatever runs on it (a flex-start VM at the end of its run duration, an
    instance of a capacity block when EC2 begins terminating the block's instances)."""

    @property
    def last_start(self) -> dt.datetime:
        return self.started or self.launched


@dataclass(frozen=True, slots=True)
class ElasticInstance:
    """An instance Slurm's resume program created that still exists (in any state but gone): what the
    stack's destroy hook deletes (clusterfab.scheduler.slurm.teardown)."""

    id: str
    """The EC2 instance id; on GCP, the VM's name."""
    group: str
    """Its node group (`clusterfab-node-group`; empty if it has none)."""
    managed: bool = False
    """Created by a flex-start MIG: it goes with its MIG (`FlexRequest`), never deleted on its own."""


@dataclass(frozen=True, slots=True)
class FlexRequest:
    """A flex-start MIG the resume program made for one job's nodes of a group, with its resize request."""

    mig: str
    group: str
    nodes: tuple[str, ...]
    """The nodes whose VMs its resize request names."""
    state: str
    """The resize request's state (ACCEPTED, CREATING, SUCCEEDED, FAILED, CANCELLED); empty if it has none
    (the resume program failed between the MIG and its request)."""
    error: str
    """The first error code of a FAILED request."""
    created: dt.datetime
    size: int
    """The MIG's target size: the VMs it holds or is creating."""

    @property
    def pending(self) -> bool:
        """Capacity not granted yet: no VM of it exists (flex-start creates them all at once)."""
        return self.state in {"ACCEPTED", "CREATING"}


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


@dataclass(frozen=True, slots=True)
class Group:
    """A node group as slurm.conf has it: `static` always-up nodes, then elastic ones up to `size`."""

    name: str
    static: int
    size: int

    @property
    def static_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.static)]

    @property
    def elastic_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.static, self.size)]


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
SlurmAction = SetAddress | MarkDown | Replace | Return | PowerDown


def node_names(groups: Mapping[str, int]) -> dict[str, list[str]]:
    """The node names slurm.conf gives each group (`<group>-<i>`), from the groups' sizes."""
    return {group: [f"{group}-{i}" for i in range(size)] for group, size in groups.items()}


def groups_from_config(value: Mapping[str, Any]) -> dict[str, Group]:
    """The config's `groups`: name -> {"static": n, "size": m}, or name -> n for a group of n static nodes."""
    groups = {}
    for name, item in value.items():
        if isinstance(item, int):
            groups[name] = Group(name, item, item)
        else:
            groups[name] = Group(name, int(item["static"]), int(item["size"]))
    return groups


def plan_actions(
    names: Mapping[str, Sequence[str]],
    instances: Iterable[Instance],
    nodes: Mapping[str, SlurmNode],
    *,
    elastic: Mapping[str, Sequence[str]] | None = None,
    requests: Sequence[FlexRequest] = (),
    reservations: Mapping[str, dt.datetime] | None = None,
    now: dt.datetime | None = None,
    retry_after: dt.timedelta = RETRY_AFTER,
) -> list[Action]:
    """What to change so that every instance holds one node name, Slurm knows where each static node is,
    and no elastic node, instance or flex-start request is left half alive. `names` are each group's
    static node names, `elastic` its elastic ones; `reservations` (ours, by name: their start), where
    machines have an end, keep jobs off a node that would outlive its machine."""
    elastic = elastic or {}
    now = now or dt.datetime.now(dt.UTC)
    actions: list[Action] = []
    static_by_group: dict[str, list[Instance]] = {group: [] for group in names}
    elastic_by_group: dict[str, list[Instance]] = {group: [] for group in elastic}
    for instance in instances:
        pool = elastic_by_group if instance.elastic else static_by_group
        if instance.group in pool:
            pool[instance.group].append(instance)
    for group, group_names in names.items():
        actions += _static_actions(group_names, _launch_order(static_by_group[group]), nodes, now)
    for group, group_names in elastic.items():
        actions += _elastic_actions(
            group_names, _launch_order(elastic_by_group[group]), nodes, now, retry_after
        )
    for request in requests:
        actions += _flex_actions(request, nodes, now)
    if reservations is not None:
        actions += _end_reservations([*static_by_group.values(), *elastic_by_group.values()], reservations)
    return actions


def elastic_holders(instances: Iterable[Instance], names: Iterable[str]) -> dict[str, str]:
    """The elastic instances (pending or running) holding these node names: name -> instance id."""
    wanted = set(names)
    return {
        i.name: i.id
        for i in _launch_order(instances)
        if i.elastic and i.name is not None and i.name in wanted
    }


def _launch_order(instances: Iterable[Instance]) -> list[Instance]:
    return sorted(instances, key=lambda i: (i.launched, i.id))


def _claim(names: Sequence[str], instances: Sequence[Instance]) -> tuple[dict[str, Instance], list[Instance]]:
    """Which instance holds each name (the earliest launched keeps a contested one), and the rest."""
    held: dict[str, Instance] = {}
    rest: list[Instance] = []
    for instance in instances:
        if instance.name is not None and instance.name in names and instance.name not in held:
            held[instance.name] = instance
        else:
            rest.append(instance)
    return held, rest


def _static_actions(
    names: Sequence[str], instances: Sequence[Instance], nodes: Mapping[str, SlurmNode], now: dt.datetime
) -> list[Action]:
    actions: list[Action] = []
    held, waiting = _claim(names, instances)
    free = [name for name in names if name not in held]
    for instance in waiting:
        if not free:
            log.warning(
                "instance %s of %s: no free node name (more instances than nodes)",
                instance.id,
                instance.group,
            )
            continue
        name = free.pop(0)
        held[name] = instance
        actions.append(NameInstance(instance.id, name))
    for name in names:
        node = nodes.get(name)
        holder = held.get(name)
        repair = _repair(holder, node)
        if repair:
            if holder is not None and node is not None and node.address != holder.address:
                # First: a returned node's pings must reach its new machine, not the old one.
                actions.append(SetAddress(name, holder.address))
            actions += repair
        elif (
            holder is not None
            and node is not None
            and (_needs_new_machine(node) or _report_failed(node, now))
        ):
            actions += [
                Recreate(holder.id, holder.group, f"{name}: {node.reason}"),
                Replace(name, _short(f"{REPLACING}{holder.id} ({node.reason})")),
            ]
        elif holder is not None and node is not None and _interrupted(node):
            # Already DOWN and drained by its watcher (its jobs requeued): replaced like a failed machine.
            actions += [
                Recreate(holder.id, holder.group, f"{name}: {node.reason}"),
                Replace(name, _short(f"{REPLACING}{holder.id} ({node.reason})")),
            ]
        elif holder is not None:
            if node is None or node.address != holder.address:
                actions.append(SetAddress(name, holder.address))
        elif node is not None and not node.down:
            actions.append(MarkDown(name, GONE_REASON))
    return actions


def _needs_new_machine(node: SlurmNode) -> bool:
    """Drained by the health check for a hardware fault, and no job left on it."""
    return "DRAIN" in node.states and node.reason.startswith(HEALTH_PREFIX) and not node.busy


def fault_behavior(reason: str) -> str | None:
    """The faulty-host report's behavior for a health check's drain reason (`clusterfab-health: XID: ...`);
    None where its category is not the host's hardware (FAULT_BEHAVIORS)."""
    if not reason.startswith(HEALTH_PREFIX):
        return None
    category = reason.removeprefix(HEALTH_PREFIX).strip().partition(":")[0]
    return FAULT_BEHAVIORS.get(category)


def _report(holder: Instance | None, node: SlurmNode | None) -> list[Action] | None:
    """Report the host of a node drained for its hardware, where the instance's host can be reported: the
    node waits DOWN, not drained, for the same VM to come back on a good host (ReturnToService=2)."""
    if holder is None or node is None or not holder.reportable or not _needs_new_machine(node):
        return None
    behavior = fault_behavior(node.reason)
    if behavior is None:
        return None
    reason = _short(f"{REPAIR_PREFIX} host of {holder.id} reported faulty ({node.reason})")
    return [ReportFaulty(holder.id, behavior, node.reason), Replace(node.name, reason)]


def _repair(holder: Instance | None, node: SlurmNode | None) -> list[Action]:
    """A host to report faulty, or a node whose new (or repaired) machine has started: what to do."""
    report = _report(holder, node)
    if report is not None:
        return report
    back = _returned(holder, node)
    return [back] if back is not None else []


REPLACING = "clusterfab: replacing "
"""The reason of a node whose machine is being replaced (Replace)."""


def _returned(holder: Instance | None, node: SlurmNode | None) -> Return | None:
    """Undrain a replaced or repaired node once the machine holding it started after it was set aside."""
    if holder is None or node is None or "DRAIN" not in node.states or node.reason_at is None:
        return None
    # Both times are whole seconds: a replacement launched in the second its node was set aside counts.
    if not node.reason.startswith((REPLACING, REPAIR_PREFIX)) or holder.last_start < node.reason_at:
        return None
    return Return(node.name, _short(f"clusterfab: {holder.id} started for it ({node.reason})"), node.down)


def _report_failed(node: SlurmNode, now: dt.datetime) -> bool:
    """Its host was reported faulty `REPORT_WAIT` ago and its VM still runs: the report did not take."""
    since = node.reason_at or now
    return node.down and node.reason.startswith(REPAIR_PREFIX) and now - since >= REPORT_WAIT


def _interrupted(node: SlurmNode) -> bool:
    """Set DOWN by its spot watcher: the cloud is taking the machine back."""
    return node.down and node.reason.startswith(INTERRUPTED_PREFIX)


def _elastic_actions(
    names: Sequence[str],
    instances: Sequence[Instance],
    nodes: Mapping[str, SlurmNode],
    now: dt.datetime,
    retry_after: dt.timedelta,
) -> list[Action]:
    held, actions = _elastic_claims(names, instances, now)
    for name in names:
        node = nodes.get(name)
        holder = held.get(name)
        if node is None:
            continue
        repair = _repair(holder, node)
        if holder is not None and node.powered_down and now - holder.launched >= GRACE:
            actions.append(Terminate(holder.id, f"{name} is powered down"))
        elif repair:
            actions += repair
        elif holder is not None and _needs_new_machine(node):
            actions.append(PowerDown(name, node.reason))
        elif _report_failed(node, now):
            # The VM still runs (the report failed), or it stopped for its host's repair, which takes days:
            # either way Slurm may create the node afresh once its VM is deleted.
            actions.append(PowerDown(name, node.reason))
        elif holder is None and not (node.powered_down or node.powering_up or node.down):
            actions.append(MarkDown(name, LOST_REASON))
        elif node.down and node.reason.startswith(REASON_PREFIX):
            # Also while POWERING_UP: a failed resume leaves that flag until ResumeTimeout, and only a
            # forced power-down clears it (Cluster Toolkit's fix for nodes stuck after a failed resume).
            # A lost or interrupted node's job is requeued already: no reason to wait. One that failed to
            # resume waits `retry_after`, so that a job retries every couple of minutes, not in a loop.
            since = node.reason_at or now
            if node.reason == LOST_REASON or _interrupted(node) or now - since >= retry_after:
                actions.append(PowerDown(name, node.reason))
    return actions


def _elastic_claims(
    names: Sequence[str], instances: Sequence[Instance], now: dt.datetime
) -> tuple[dict[str, Instance], list[Action]]:
    """Which instance holds each elastic node; a flex-start VM is named for the node it was asked for; an
    instance without a node goes after `GRACE`."""
    actions: list[Action] = []
    held, rest = _claim(names, instances)
    for instance in rest:
        intended = instance.intended
        if instance.name is None and intended is not None and intended in names and intended not in held:
            held[intended] = instance
            actions.append(NameInstance(instance.id, intended))
            continue
        if now - instance.launched < GRACE:
            continue  # a resume in progress names it in a moment
        why = (
            "a second instance for its node" if instance.name in held else "no node name (its resume failed)"
        )
        actions.append(Terminate(instance.id, why))
    return held, actions


def _flex_actions(request: FlexRequest, nodes: Mapping[str, SlurmNode], now: dt.datetime) -> list[Action]:
    """A failed request's nodes are set DOWN with its error (their job is requeued; the elastic rules power
    them down after `retry_after`, and Slurm asks again); a MIG no node waits for any more goes (a job
    cancelled while its request was queued, a resume that died half way, a MIG its suspends emptied)."""
    if request.state == "FAILED":
        reason = _short(f"{REASON_PREFIX} resume failed: {request.error or 'FAILED'}")
        waiting = [n for n in request.nodes if n in nodes and nodes[n].powering_up and not nodes[n].down]
        return [
            *(MarkDown(name, reason) for name in waiting),
            Withdraw(request.mig, f"its resize request failed: {request.error}"),
        ]
    if now - request.created < GRACE:
        return []
    if request.size == 0 and not request.pending:
        return [Withdraw(request.mig, "it holds no VM and asks for none")]
    if all(n not in nodes or nodes[n].powered_down for n in request.nodes):
        if request.size and any(n in nodes and "POWERING_DOWN" in nodes[n].states for n in request.nodes):
            return []  # their suspend program is deleting the VMs through the MIG: not raced; it goes after
        return [Withdraw(request.mig, f"no node waits for it ({', '.join(request.nodes)} powered down)")]
    mine = [nodes[n] for n in request.nodes if n in nodes]
    if request.pending and mine and all(n.powering_up and not n.busy and not n.down for n in mine):
        # The job went while its capacity was queued: its nodes would wait out the partition's long
        # ResumeTimeout, and capacity that came would boot nodes for no one.
        reason = f"{REASON_PREFIX} no job waits for its flex-start request"
        return [Withdraw(request.mig, "no job waits for it"), *(PowerDown(n.name, reason) for n in mine)]
    return []


END_RESERVATION = "clusterfab-end-"
"""Our maintenance reservations before a machine's end are `<this><node>`."""
END_MARGIN = dt.timedelta(minutes=10)
"""How long before its machine's end a node takes no job that would still run: the epilog's and the
job's cleanup, as Cluster Toolkit's 10-minute reservation before a flex-start VM's end."""
RESERVATION_SLACK = dt.timedelta(minutes=2)
"""A reservation starting this close to where it should is left as it is (scontrol takes whole seconds
relative to its own clock)."""


def _end_reservations(
    groups: Iterable[Sequence[Instance]], reservations: Mapping[str, dt.datetime]
) -> list[Action]:
    """A reservation before each ending machine's end on its node; ours for nodes whose machine is gone,
    or whose new machine ends at another time, go."""
    wanted = {
        f"{END_RESERVATION}{node}": instance.ends - END_MARGIN
        for instances in groups
        for instance in instances
        if instance.ends is not None and (node := instance.name or instance.intended) is not None
    }
    actions: list[Action] = []
    for name, start in sorted(reservations.items()):
        if name not in wanted or abs(start - wanted[name]) > RESERVATION_SLACK:
            actions.append(Unreserve(name))
    for name, start in sorted(wanted.items()):
        if name not in reservations or abs(reservations[name] - start) > RESERVATION_SLACK:
            actions.append(Reserve(name.removeprefix(END_RESERVATION), start))
    return actions


def _short(reason: str, limit: int = 200) -> str:
    return reason if len(reason) <= limit else reason[: limit - 3] + "..."


# --- the world --------------------------------------------------------------------------------------


class CloudError(Exception):
    """The cloud refused a request: `code` is its error code (InsufficientInstanceCapacity, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


class Fleet(Protocol):
    def instances(self) -> list[Instance]: ...
    def name(self, instance_id: str, name: str) -> None: ...
    def create(self, group: str, names: Sequence[str]) -> list[str]: ...
    def terminate(self, instance_ids: Sequence[str]) -> None: ...
    def recreate(self, group: str, instance_id: str) -> None: ...
    def report_faulty(self, instance_id: str, behavior: str, description: str) -> None: ...
    def requests(self) -> list[FlexRequest]: ...
    def withdraw(self, mig: str) -> None: ...


TERMINATE_BATCH = 1000
"""Most instance ids one TerminateInstances call takes (the EC2 API reference's limit)."""
_INTERFACE_KEYS = ("DeviceIndex", "NetworkCardIndex", "InterfaceType", "Groups", "DeleteOnTermination")


@dataclass(frozen=True, slots=True)
class Ec2Group:
    """What the stack deployed for a node group (the controller's `--fleet` file): its launch template and
    instance profile. Tags are anyone's to set who may tag an instance, and another deployment of the
    same blueprint and stack names in the account carries the same ones; the profile is attached only by
    a principal that may pass the group's role, and is this deployment's alone."""

    template: str
    """The launch template's id (lt-...)."""
    profile: str
    """The instance profile's ARN."""


def ec2_groups_from_config(value: Mapping[str, Any]) -> dict[str, Ec2Group]:
    return {name: Ec2Group(str(g["template"]), str(g["profile"])) for name, g in value.items()}


def ends_from_config(value: Mapping[str, Any]) -> dict[str, dt.datetime]:
    """The config's `ends`: group -> an ISO 8601 time with its offset (when the cloud takes its machines)."""
    return {name: dt.datetime.fromisoformat(str(when)) for name, when in value.items()}


class Ec2Fleet:
    """The cluster's GPU instances in EC2, found by the cluster's tags. Elastic instances are created
    from the node group's own launch template, at the version and in the subnet its auto scaling group
    uses, with the group's tags and instance profile and no public address: they boot exactly like the
    group's static nodes. With `groups` (the node sync and power programs always have them), an instance
    counts as the cluster's only if it carries its group's instance profile: one that merely carries the
    tags is never named, adopted or terminated, and a launch uses only the group's own template."""

    def __init__(
        self,
        client: Any,
        *,
        blueprint: str,
        stack: str,
        autoscaling: Any = None,
        groups: Mapping[str, Ec2Group] | None = None,
        ends: Mapping[str, dt.datetime] | None = None,
    ) -> None:
        self._ec2, self._blueprint, self._stack = client, blueprint, stack
        self._autoscaling = autoscaling
        self._groups = groups
        self._ends = dict(ends or {})
        """Per group, when EC2 takes its instances (a capacity block's, ahead of the block's end)."""
        self._sources: dict[str, dict[str, Any]] = {}

    def _ours(self, item: Mapping[str, Any]) -> bool:
        """Whether a described instance carries its node group's instance profile (always, without
        `groups`: the stack's teardown, which runs as the deploying user)."""
        if self._groups is None:
            return True
        group = self._groups.get(_tags(item).get(GROUP_TAG, ""))
        profile = item.get("IamInstanceProfile", {}).get("Arn")
        if group is not None and profile == group.profile:
            return True
        log.warning(
            "instance %s has the cluster's tags, not its node group's instance profile (%s): left alone",
            item.get("InstanceId"),
            profile or "none",
        )
        return False

    def _owned(self) -> list[dict[str, Any]]:
        return [
            {"Name": f"tag:{BLUEPRINT_TAG}", "Values": [self._blueprint]},
            {"Name": f"tag:{STACK_TAG}", "Values": [self._stack]},
        ]

    def instances(self) -> list[Instance]:
        found = []
        for item in self._described(
            {"Name": "tag-key", "Values": [GROUP_TAG]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ):
            tags = _tags(item)
            if "PrivateIpAddress" not in item or not self._ours(item):
                continue  # no address yet: next round; or not the cluster's
            found.append(
                Instance(
                    id=item["InstanceId"],
                    group=tags[GROUP_TAG],
                    address=item["PrivateIpAddress"],
                    launched=item["LaunchTime"],
                    name=tags.get(NODE_TAG),
                    elastic=tags.get(ELASTIC_TAG) == "true",
                    ends=self._ends.get(tags[GROUP_TAG]),
                )
            )
        return found

    def name(self, instance_id: str, name: str) -> None:
        self._ec2.create_tags(Resources=[instance_id], Tags=[{"Key": NODE_TAG, "Value": name}])

    def create(self, group: str, names: Sequence[str]) -> list[str]:
        """Launch one instance per name, all or none (MinCount = MaxCount), and name each."""
        source = self._source(group)
        request: dict[str, Any] = {
            "LaunchTemplate": {"LaunchTemplateId": source["template"], "Version": source["version"]},
            "MinCount": len(names),
            "MaxCount": len(names),
            **({"IamInstanceProfile": {"Arn": source["profile"]}} if source.get("profile") else {}),
            "TagSpecifications": [
                # Replaces the template's instance tags for this launch: the group's tags, plus ours.
                {"ResourceType": "instance", "Tags": [*source["tags"], {"Key": ELASTIC_TAG, "Value": "true"}]}
            ],
        }
        if source["interfaces"]:
            request["NetworkInterfaces"] = [
                {**interface, "SubnetId": source["subnet"]} for interface in source["interfaces"]
            ]
        else:
            request["SubnetId"] = source["subnet"]
        try:
            launched = self._ec2.run_instances(**request)["Instances"]
        except Exception as error:
            raise _cloud_error(error) from error
        ids = [item["InstanceId"] for item in launched]
        public = [item["InstanceId"] for item in launched if item.get("PublicIpAddress")]
        if public:
            # The subnet or the template changed under the cluster: a node must never face the internet.
            self._ec2.terminate_instances(InstanceIds=ids)
            raise CloudError("PublicAddress", f"{', '.join(public)} got a public address: all terminated")
        for instance_id, name in zip(ids, names, strict=True):
            self.name(instance_id, name)
        return ids

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """Terminate the instances, with `groups` only those that are the cluster's (`_ours`), as EC2 says
        now: an id is checked, never trusted."""
        if self._groups is not None and instance_ids:
            pages = self._ec2.get_paginator("describe_instances").paginate(InstanceIds=list(instance_ids))
            described = [i for page in pages for r in page["Reservations"] for i in r["Instances"]]
            instance_ids = [i["InstanceId"] for i in described if self._ours(i)]
        for start in range(0, len(instance_ids), TERMINATE_BATCH):
            self._ec2.terminate_instances(InstanceIds=list(instance_ids[start : start + TERMINATE_BATCH]))

    def recreate(self, group: str, instance_id: str) -> None:
        """Terminated: the auto scaling group launches its replacement (it keeps its desired capacity)."""
        self.terminate([instance_id])

    def report_faulty(self, instance_id: str, behavior: str, description: str) -> None:
        raise CloudError("NotSupported", "EC2 takes no faulty-host reports (no instance is reportable)")

    def requests(self) -> list[FlexRequest]:
        """None: EC2 answers a launch at once (no capacity is queued for later)."""
        return []

    def withdraw(self, mig: str) -> None:
        raise CloudError("NotSupported", "EC2 has no flex-start MIGs")

    def elastic(self) -> list[ElasticInstance]:
        """The cluster's elastic instances that are not terminated yet: one shutting down still holds its
        network interfaces in the subnet and security group."""
        return [
            ElasticInstance(item["InstanceId"], _tags(item).get(GROUP_TAG, ""))
            for item in self._described(
                {"Name": f"tag:{ELASTIC_TAG}", "Values": ["true"]},
                {"Name": "instance-state-name", "Values": list(EC2_NOT_GONE)},
            )
            if self._ours(item)
        ]

    def _described(self, *filters: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """Every instance of this cluster (its blueprint's and stack's tags) that also passes `filters`."""
        pages = self._ec2.get_paginator("describe_instances").paginate(Filters=[*self._owned(), *filters])
        for page in pages:
            for reservation in page["Reservations"]:
                yield from reservation["Instances"]

    def _source(self, group: str) -> dict[str, Any]:
        """The group's launch template, version, subnet and tags, read from its auto scaling group."""
        if group in self._sources:
            return self._sources[group]
        if self._autoscaling is None:
            raise CloudError("NoAutoScalingClient", "the fleet was made without an Auto Scaling client")
        filters = [
            {"Name": f"tag:{GROUP_TAG}", "Values": [group]},
            *({"Name": f["Name"], "Values": f["Values"]} for f in self._owned()),
        ]
        found = [
            asg
            for page in self._autoscaling.get_paginator("describe_auto_scaling_groups").paginate(
                Filters=filters
            )
            for asg in page["AutoScalingGroups"]
        ]
        expected = self._groups.get(group) if self._groups is not None else None
        if self._groups is not None:
            if expected is None:
                raise CloudError("NoNodeGroup", f"the stack deployed no node group {group}")
            # Another deployment's group may carry the same tags: only the one of the group's template counts.
            found = [
                a for a in found if a.get("LaunchTemplate", {}).get("LaunchTemplateId") == expected.template
            ]
        if len(found) != 1:
            raise CloudError(
                "NoNodeGroup", f"{len(found)} auto scaling groups carry node group {group}'s tags"
            )
        asg = found[0]
        template = asg["LaunchTemplate"]
        version = self._ec2.describe_launch_template_versions(
            LaunchTemplateId=template["LaunchTemplateId"], Versions=[template["Version"]]
        )["LaunchTemplateVersions"][0]
        interfaces = [
            {key: interface[key] for key in _INTERFACE_KEYS if key in interface}
            for interface in version["LaunchTemplateData"].get("NetworkInterfaces", [])
        ]
        source = {
            "template": template["LaunchTemplateId"],
            "profile": expected.profile if expected is not None else None,
            "version": str(version["VersionNumber"]),
            "subnet": asg["VPCZoneIdentifier"].split(",")[0],
            "interfaces": interfaces,
            "tags": [
                {"Key": t["Key"], "Value": t["Value"]}
                for t in asg.get("Tags", [])
                if not t["Key"].startswith("aws:")
            ],
        }
        self._sources[group] = source
        return source


EC2_NOT_GONE = ("pending", "running", "shutting-down", "stopping", "stopped")
"""Every EC2 instance state but `terminated` (EC2 API reference, InstanceState)."""


def _tags(item: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in item.get("Tags", [])}


def _cloud_error(error: Exception) -> CloudError:
    response = getattr(error, "response", None)
    if isinstance(response, Mapping):
        detail = response.get("Error", {})
        return CloudError(str(detail.get("Code", type(error).__name__)), str(detail.get("Message", error)))
    return CloudError(type(error).__name__, str(error))


COMPUTE_API = "https://compute.googleapis.com/compute/v1"
METADATA = "http://metadata.google.internal/computeMetadata/v1"
LIVE_STATES = ("PROVISIONING", "STAGING", "RUNNING")
CREATED_BY = "created-by"
"""The metadata key Compute Engine sets on a MIG's VMs: the MIG's partial URL."""


class Http(Protocol):
    def __call__(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any: ...


class MetadataTokenHttp:
    """JSON over HTTPS with the VM service account's token from the metadata server (no SDK: Ubuntu's
    python3 alone runs this program)."""

    def __init__(self, metadata: str = METADATA) -> None:
        self._metadata = metadata
        self._token: tuple[str, float] | None = None

    def _bearer(self) -> str:
        import time  # noqa: PLC0415 - only the live program needs it

        if self._token is None or self._token[1] < time.monotonic() + 60:
            request = urllib.request.Request(
                f"{self._metadata}/instance/service-accounts/default/token",
                headers={"Metadata-Flavor": "Google"},
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                answer = json.load(response)
            self._token = (answer["access_token"], time.monotonic() + float(answer["expires_in"]))
        return self._token[0]

    def __call__(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            url,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self._bearer()}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)


VM_NAME_MAX = 63
"""Compute Engine resource names: RFC 1035, at most 63 characters."""
OPERATION_WAITS = 5
"""zoneOperations.wait answers when the operation is DONE or after about 2 minutes: one bulkInsert is
waited for at most this many times (about 10 minutes, well inside ResumeTimeout) before the resume gives
up; a VM that still appears later never gets its node name, and the node sync deletes it after GRACE."""
_TEMPLATE_LINK = re.compile(r"projects/([^/]+)/(global|regions/[^/]+)/instanceTemplates/([^/?]+)")


@dataclass(frozen=True, slots=True)
class GceGroup:
    """A Slurm node group's MIG and, with elastic nodes, what their VMs are called: the config's
    `gce_groups`, computed by the stack (stacks/compose_gcp.py), which conditions the controller's rights on
    the same names."""

    base_instance_name: str
    """The group's MIG's base instance name (components/gcp/node_group.py): the MIG, and through it the
    instance template its VMs boot from now, is found by it."""
    vm_prefix: str = ""
    """The elastic node `<group>-<i>` is the VM `<vm_prefix>-<i>`: one name per node, unique per cluster
    and stack, never one a MIG gives (those end in four random characters after the base name). Empty for
    a group without elastic nodes."""
    placement_prefix: str = ""
    """With compact placement, the elastic node `<group>-<i>` is placed by the compact placement policy
    `<placement_prefix>-<i // placement_chunk>` (the stack creates them: `placement_policies`), as a MIG's
    VMs are by its workload policy. Empty: no placement."""
    placement_chunk: int = 0
    """Most VMs one compact placement policy holds (the catalog's limit for the machine type)."""
    flex_prefix: str = ""
    """Flex-start capacity: each resume asks for its nodes' VMs through a MIG of its own, `<flex_prefix>-<8
    hex digits>` with `flex_prefix` as its base instance name (the controller's rights are conditioned on
    it), placed by the group's workload policy; empty for a group of other capacity."""
    run_seconds: int = 0
    """Flex-start: how long the VMs may run (the resize request's requestedRunDuration)."""

    def vm_name(self, node: str) -> str:
        if not self.vm_prefix:
            raise CloudError("NoElasticNodes", f"{self.base_instance_name}'s group has no elastic nodes")
        name = f"{self.vm_prefix}-{node.rpartition('-')[2]}"
        if len(name) > VM_NAME_MAX:
            raise CloudError("InvalidName", f"{name} is longer than {VM_NAME_MAX} characters")
        return name

    def node_number(self, vm: str) -> int | None:
        """The number of the elastic node whose VM this is (`vm_name`'s inverse), else None."""
        prefix, _, number = vm.rpartition("-")
        if not self.vm_prefix or prefix != self.vm_prefix or not number.isdigit():
            return None
        return int(number) if number == str(int(number)) else None

    def placement_policy(self, node: str) -> str | None:
        """The compact placement policy that places the node's VM, or None."""
        if not self.placement_prefix:
            return None
        return f"{self.placement_prefix}-{int(node.rpartition('-')[2]) // self.placement_chunk}"

    def placement_policies(self, static: int, size: int) -> list[str]:
        """Every policy that places a node numbered static..size-1 (the group's elastic nodes)."""
        if not self.placement_prefix or static >= size:
            return []
        chunks = range(static // self.placement_chunk, (size - 1) // self.placement_chunk + 1)
        return [f"{self.placement_prefix}-{chunk}" for chunk in chunks]


def gce_groups_from_config(value: Mapping[str, Any]) -> dict[str, GceGroup]:
    """The config's `gce_groups`: name -> {"base_instance_name": ..., "vm_prefix": ..., "placement_prefix":
    ..., "placement_chunk": ..., "flex_prefix": ..., "run_seconds": ...}."""
    return {
        name: GceGroup(
            str(item["base_instance_name"]),
            str(item.get("vm_prefix", "")),
            str(item.get("placement_prefix", "")),
            int(item.get("placement_chunk", 0)),
            str(item.get("flex_prefix", "")),
            int(item.get("run_seconds", 0)),
        )
        for name, item in value.items()
    }


class GceFleet:
    """The cluster's GPU VMs in a Compute Engine zone, found by the cluster's labels; a VM's node name is
    its instance metadata key `clusterfab-slurm-node` (labels cannot be read from inside the VM; metadata
    can, which is where the node's slurmd start program reads it).

    Elastic VMs are created with one zonal bulkInsert per request from the node group's own instance
    template, the one its MIG uses now (found through the MIG), with the template's labels plus
    `clusterfab-slurm-elastic=true`: they boot exactly like the group's static nodes, with its capacity
    (spot, a reservation's affinity) and service account (scheduler.md §A1: Cluster Toolkit's resume.py
    creates its nodes the same way)."""

    def __init__(
        self,
        http: Http,
        *,
        project: str,
        zone: str,
        blueprint: str,
        stack: str,
        groups: Mapping[str, GceGroup] | None = None,
        api: str = COMPUTE_API,
    ) -> None:
        self._http = http
        self._api = api
        self._zone = zone
        self._zonal = f"{api}/projects/{project}/zones/{zone}"
        self._base = f"{self._zonal}/instances"
        self._owner = {BLUEPRINT_TAG: blueprint, STACK_TAG: stack}
        self._filter = f'(labels.{BLUEPRINT_TAG} = "{blueprint}") (labels.{STACK_TAG} = "{stack}")'
        self._groups = dict(groups or {})
        self._templates: dict[str, dict[str, Any]] = {}
        self._policies: dict[str, str] = {}
        self._managers: dict[str, str] = {}
        """Flex-start VM -> the MIG that made it, from the last listing: such a VM is deleted through its
        MIG (a MIG recreates a VM deleted behind its back)."""

    def instances(self) -> list[Instance]:
        found = []
        for item in self._pages(self._base, self._filter):
            labels = item.get("labels", {})
            interfaces = item.get("networkInterfaces", [])
            if item.get("status") not in LIVE_STATES or GROUP_TAG not in labels:
                continue
            if not interfaces or "networkIP" not in interfaces[0]:
                continue  # no address yet: next round
            name = _metadata(item).get(NODE_TAG)
            elastic = labels.get(ELASTIC_TAG) == "true"
            manager = self._flex_manager(item) if elastic else ""
            group = labels[GROUP_TAG]
            found.append(
                Instance(
                    id=item["name"],
                    group=group,
                    address=interfaces[0]["networkIP"],
                    launched=dt.datetime.fromisoformat(item["creationTimestamp"]),
                    name=name,
                    elastic=elastic,
                    reportable=faulty_host_reportable(item),
                    started=_timestamp(item.get("lastStartTimestamp")),
                    intended=self._node(group, item["name"]) if manager and name is None else None,
                    ends=self._ends(item, group, flex=bool(manager)),
                )
            )
        return found

    def _ends(self, item: Mapping[str, Any], group: str, *, flex: bool) -> dt.datetime | None:
        """When Compute Engine deletes the VM: its terminationTime where the API gives one (any VM), else
        for a flex-start VM its run duration from its creation (the request's requestedRunDuration, which
        starts no earlier)."""
        given = _timestamp(item.get("scheduling", {}).get("terminationTime"))
        source = self._groups.get(group)
        if given is not None or not flex or source is None or not source.run_seconds:
            return given
        return dt.datetime.fromisoformat(item["creationTimestamp"]) + dt.timedelta(seconds=source.run_seconds)

    def _node(self, group: str, vm: str) -> str | None:
        """The elastic node of `group` whose VM this is named for (a flex-start VM: its MIG created it when
        capacity arrived, unnamed), else None."""
        source = self._groups.get(group)
        number = source.node_number(vm) if source is not None else None
        return f"{group}-{number}" if number is not None else None

    def _flex_manager(self, item: Mapping[str, Any]) -> str:
        """The flex-start MIG of ours that created this VM (its `created-by` metadata, which the MIG's
        label on the VM names too), else empty; noted for `terminate`."""
        manager = _metadata(item).get(CREATED_BY, "").rpartition("/instanceGroupManagers/")[2]
        if not manager or item.get("labels", {}).get(FLEX_TAG) != manager:
            return ""
        self._managers[item["name"]] = manager
        return manager

    def name(self, instance_id: str, name: str) -> None:
        # setMetadata replaces the whole set and must quote the fingerprint read with it.
        item = self._http("GET", f"{self._base}/{instance_id}")
        metadata = item.get("metadata", {})
        items = [i for i in metadata.get("items", []) if i["key"] != NODE_TAG] + [
            {"key": NODE_TAG, "value": name}
        ]
        self._http(
            "POST",
            f"{self._base}/{instance_id}/setMetadata",
            {"fingerprint": metadata.get("fingerprint", ""), "items": items},
        )

    def create(self, group: str, names: Sequence[str]) -> list[str]:
        """One VM per node name, all or none (minCount = count), then each named. A VM's metadata cannot
        differ within one bulkInsert (perInstanceProperties holds only names), so the node names are set
        afterwards, as the node sync names static nodes; if that fails, the VMs are deleted again."""
        source = self._groups.get(group)
        if source is None:
            raise CloudError("NoNodeGroup", f"the node sync's config has no gce_groups entry for {group}")
        template = self._template(group, source)
        if source.flex_prefix:
            return self._request(group, source, template, names)
        labels = template.get("properties", {}).get("labels", {})
        # One bulkInsert per placement policy (a request's VMs share their properties); the request
        # stands or falls as a whole: what one insert created is deleted again if a later one fails.
        by_policy: dict[str | None, list[str]] = {}
        for name in names:
            by_policy.setdefault(source.placement_policy(name), []).append(name)
        created: list[str] = []
        try:
            for policy, members in by_policy.items():
                vms = [source.vm_name(name) for name in members]
                # instanceProperties patch the template's (JSON merge patch, the bulkInsert reference):
                # only the labels and the placement policy (by name, as InstanceProperties.resourcePolicies
                # takes it), so the template's scheduling (spot, its termination action) and reservation
                # affinity hold as they are; the full label set, so the VMs carry the group's labels plus
                # ours whether the API merges labels or replaces them.
                properties: dict[str, Any] = {"labels": {**labels, ELASTIC_TAG: "true"}}
                if policy is not None:
                    properties["resourcePolicies"] = [policy]
                body = {
                    "count": str(len(vms)),
                    "minCount": str(len(vms)),
                    "sourceInstanceTemplate": template["selfLink"],
                    "perInstanceProperties": {vm: {} for vm in vms},
                    "instanceProperties": properties,
                }
                self._wait(self._call("POST", f"{self._base}/bulkInsert", body))
                created += vms
                for vm, name in zip(vms, members, strict=True):
                    self.name(vm, name)
        except Exception as error:
            if created:
                log.exception(
                    "creating the VMs of %s failed: deleting %s", ",".join(names), ",".join(created)
                )
                self._delete(created)
            raise _gce_error(error) from error
        return created

    def _request(
        self, group: str, source: GceGroup, template: Mapping[str, Any], names: Sequence[str]
    ) -> list[str]:
        """Flex-start VMs for these nodes: a MIG of their own (target size 0, the group's template and
        workload policy, our label on every VM it makes) and one resize request naming their VMs, which
        Compute Engine fulfils all at once when capacity arrives (Cluster Toolkit's slurm_files
        mig_flex.py does the same per job). Returns the VMs asked for: none exists yet; the node sync names
        them when they appear. If the request cannot be made, the MIG goes again."""
        vms = [source.vm_name(name) for name in names]
        mig = f"{source.flex_prefix}-{secrets.token_hex(4)}"
        body: dict[str, Any] = {
            "name": mig,
            "baseInstanceName": source.flex_prefix,
            "description": f"clusterfab flex-start VMs of node group {group}: {', '.join(names)}",
            "instanceTemplate": template["selfLink"],
            "targetSize": 0,
            # Patched onto the template's labels (the cluster's, stack's and group's again, so that the MIG
            # itself carries them): its VMs are elastic nodes of this MIG, deleted at teardown.
            "allInstancesConfig": {
                "properties": {
                    "labels": {**self._owner, GROUP_TAG: group, ELASTIC_TAG: "true", FLEX_TAG: mig}
                }
            },
        }
        if group in self._policies:
            body["resourcePolicies"] = {"workloadPolicy": self._policies[group]}
        managers = f"{self._zonal}/instanceGroupManagers"
        try:
            self._wait(self._call("POST", managers, body))
        except CloudError:
            self.withdraw(mig)  # a MIG whose creation failed late may exist; never one left behind
            raise
        request = {
            "name": "resume",
            "instances": [{"name": vm} for vm in vms],
            "requestedRunDuration": {"seconds": str(source.run_seconds)},
        }
        try:
            self._wait(self._call("POST", f"{managers}/{mig}/resizeRequests", request))
        except CloudError:
            log.exception("the resize request of %s failed: deleting it", mig)
            self.withdraw(mig)
            raise
        log.info("%s asks for %s (flex-start, up to %d s each)", mig, ",".join(vms), source.run_seconds)
        return vms

    def requests(self) -> list[FlexRequest]:
        """This cluster's and stack's flex-start MIGs, each with its resize request, found by the labels
        they give their VMs (matched here: compute.v1 documents no list filter on them). With node
        groups (the node sync's config), only those of its flex-start groups: a group the blueprint no
        longer has is not the controller's to act on (its rights name the config's groups). Without (the
        destroy hook), every one, those of a group gone from the blueprint too."""
        if self._groups and not any(g.flex_prefix for g in self._groups.values()):
            return []
        found = []
        for mig in self._pages(f"{self._zonal}/instanceGroupManagers"):
            mine = mig.get("allInstancesConfig", {}).get("properties", {}).get("labels", {})
            if mine.get(FLEX_TAG) != mig["name"] or any(mine.get(k) != v for k, v in self._owner.items()):
                continue  # not a MIG this stack's resume program made
            group = str(mine.get(GROUP_TAG, ""))
            if self._groups and group not in self._groups:
                continue
            url = f"{self._zonal}/instanceGroupManagers/{mig['name']}/resizeRequests"
            asked = list(self._call("GET", url).get("items", []))
            vms = [i["name"] for r in asked for i in r.get("instances", [])]
            errors = [e for r in asked for e in r.get("status", {}).get("error", {}).get("errors", [])]
            found.append(
                FlexRequest(
                    mig=mig["name"],
                    group=group,
                    nodes=tuple(node for vm in vms if (node := self._node(group, vm)) is not None),
                    state=str(asked[-1].get("state", "")) if asked else "",
                    error=str(errors[0].get("code", "")) if errors else "",
                    created=dt.datetime.fromisoformat(mig["creationTimestamp"]),
                    size=int(mig.get("targetSize", 0)),
                )
            )
        return found

    def withdraw(self, mig: str) -> None:
        """Delete a flex-start MIG: its resize request and every VM it made go with it (Compute Engine lets
        a request being fulfilled finish first). One already gone is no error."""
        self._gone(f"{self._zonal}/instanceGroupManagers/{mig}")

    def terminate(self, instance_ids: Sequence[str]) -> None:
        by_manager: dict[str, list[str]] = {}
        for vm in instance_ids:
            by_manager.setdefault(self._managers.get(vm, ""), []).append(vm)
        failed = self._delete(by_manager.pop("", []))
        for mig, vms in by_manager.items():
            # Through the MIG, which lowers its target size: deleted alone, the MIG would recreate them.
            try:
                self._call(
                    "POST",
                    f"{self._zonal}/instanceGroupManagers/{mig}/deleteInstances",
                    {
                        "instances": [f"zones/{self._zone}/instances/{vm}" for vm in vms],
                        "skipInstancesOnValidationError": True,
                    },
                )
            except CloudError as error:
                log.exception("deleting %s through %s failed", ",".join(vms), mig)
                failed.append(error)
        if failed:
            raise CloudError(failed[0].code, "; ".join(f"{e.code}: {e.message}" for e in failed))

    def recreate(self, group: str, instance_id: str) -> None:
        """The group's MIG recreates the VM from its current template (instanceGroupManagers
        .recreateInstances): a MIG's VM is never deleted behind its back. Not waited for: the operation is
        done once the MIG has flagged the VM (its reference), and the next rounds see the new VM."""
        source = self._groups.get(group)
        if source is None:
            raise CloudError("NoNodeGroup", f"the node sync's config has no gce_groups entry for {group}")
        if not instance_id.startswith(f"{source.base_instance_name}-"):
            raise CloudError("NotInGroup", f"{instance_id} is no VM of {source.base_instance_name}")
        query = f'baseInstanceName = "{source.base_instance_name}"'
        migs = list(self._pages(f"{self._zonal}/instanceGroupManagers", query))
        if len(migs) != 1:
            raise CloudError(
                "NoNodeGroup", f"{len(migs)} managed instance groups named {source.base_instance_name}"
            )
        self._call(
            "POST",
            f"{self._zonal}/instanceGroupManagers/{migs[0]['name']}/recreateInstances",
            {"instances": [f"zones/{self._zone}/instances/{instance_id}"]},
        )

    def report_faulty(self, instance_id: str, behavior: str, description: str) -> None:
        """instances.reportHostAsFaulty, IMMEDIATE (the one schedule the API allows now), one fault reason.
        Not waited for (10-12 minutes; REPORT_WAIT)."""
        self._call(
            "POST",
            f"{self._base}/{instance_id}/reportHostAsFaulty",
            {
                "disruptionSchedule": "IMMEDIATE",
                "faultReasons": [{"behavior": behavior, "description": description}],
            },
        )

    def elastic(self) -> list[ElasticInstance]:
        """The cluster's elastic VMs that still exist, in any status (a stopped, TERMINATED VM still holds
        its NICs' subnets); a VM being deleted is listed until it is gone."""
        return [
            ElasticInstance(
                item["name"],
                item.get("labels", {}).get(GROUP_TAG, ""),
                managed=bool(self._flex_manager(item)),
            )
            for item in self._pages(self._base, f'{self._filter} (labels.{ELASTIC_TAG} = "true")')
        ]

    def _delete(self, vms: Sequence[str]) -> list[CloudError]:
        """instances.delete for each VM (Compute Engine has no bulk delete of VMs outside a MIG), without
        waiting for the deletions: one already gone is no error, one that fails does not stop the rest."""
        failed = []
        for vm in vms:
            try:
                self._gone(f"{self._base}/{vm}")
            except CloudError as error:
                log.exception("deleting %s failed", vm)
                failed.append(error)
        return failed

    def _gone(self, url: str) -> None:
        """DELETE, not waited for; a resource already gone is no error."""
        try:
            self._http("DELETE", url)
        except Exception as error:
            if getattr(error, "code", None) != HTTP_NOT_FOUND:
                raise _gce_error(error) from error

    def _template(self, group: str, source: GceGroup) -> dict[str, Any]:
        """The instance template the group's MIG creates its VMs from, found through the MIG (the template
        has an auto-generated name, and a new one replaces it whenever the group changes): the zone's MIGs
        with the group's base instance name, of which exactly one has a template with this cluster's,
        stack's and group's labels (another stack of the blueprint may have a MIG of the same base name)."""
        if group in self._templates:
            return self._templates[group]
        wanted = {**self._owner, GROUP_TAG: group}
        found: list[dict[str, Any]] = []
        query = f'baseInstanceName = "{source.base_instance_name}"'
        for mig in self._pages(f"{self._zonal}/instanceGroupManagers", query):
            versions = mig.get("versions") or [{"instanceTemplate": mig.get("instanceTemplate", "")}]
            link = _TEMPLATE_LINK.search(versions[0].get("instanceTemplate", ""))
            if link is None:
                continue
            project, location, name = link.groups()
            template = self._call(
                "GET", f"{self._api}/projects/{project}/{location}/instanceTemplates/{name}"
            )
            labels = template.get("properties", {}).get("labels", {})
            if all(labels.get(key) == value for key, value in wanted.items()):
                found.append(template)
                policy = mig.get("resourcePolicies", {}).get("workloadPolicy")
                if policy:
                    # A flex-start MIG is placed as the group's own: one workload policy may serve many
                    # MIGs (Compute Engine's "About workload policies in MIGs").
                    self._policies[group] = policy
        if len(found) != 1:
            raise CloudError(
                "NoNodeGroup",
                f"{len(found)} managed instance groups named {source.base_instance_name} use a template "
                f"of node group {group} of this cluster and stack",
            )
        self._templates[group] = found[0]
        return found[0]

    def _wait(self, operation: Mapping[str, Any]) -> None:
        """Until the operation is DONE (bounded by OPERATION_WAITS); its first error as a CloudError
        (ZONE_RESOURCE_POOL_EXHAUSTED, QUOTA_EXCEEDED, ...)."""
        waits = 0
        while operation.get("status") != "DONE":
            if waits == OPERATION_WAITS:
                raise CloudError("OperationTimeout", f"{operation.get('name')} not done after {waits} waits")
            operation = self._call("POST", f"{self._zonal}/operations/{operation['name']}/wait")
            waits += 1
        errors = operation.get("error", {}).get("errors", [])
        if errors:
            raise CloudError(
                str(errors[0].get("code", "OperationFailed")),
                "; ".join(str(e.get("message", e.get("code", ""))) for e in errors),
            )

    def _call(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        try:
            return self._http(method, url, body)
        except Exception as error:
            raise _gce_error(error) from error

    def _pages(self, url: str, query: str = "") -> Iterable[dict[str, Any]]:
        """Every item of a list call with this filter (none: all), page after page."""
        token = ""
        while True:
            params = {**({"filter": query} if query else {}), **({"pageToken": token} if token else {})}
            page = self._call("GET", f"{url}?{urllib.parse.urlencode(params)}")
            yield from page.get("items", [])
            token = page.get("nextPageToken", "")
            if not token:
                return


HTTP_NOT_FOUND = 404


def _gce_error(error: Exception) -> CloudError:
    """A Compute Engine refusal as a CloudError: the reason of its JSON error body (quotaExceeded,
    alreadyExists, ...) or its status, else the HTTP status; anything else by its exception type."""
    if isinstance(error, CloudError):
        return error
    status, read = getattr(error, "code", None), getattr(error, "read", None)
    if not isinstance(status, int) or not callable(read):
        return CloudError(type(error).__name__, str(error))
    try:
        detail = json.loads(read() or b"{}").get("error", {})
    except (ValueError, AttributeError):
        detail = {}
    reasons = [e.get("reason") for e in detail.get("errors", []) if e.get("reason")]
    code = reasons[0] if reasons else detail.get("status") or f"HTTP{status}"
    return CloudError(str(code), str(detail.get("message", error)))


def faulty_host_reportable(item: Mapping[str, Any]) -> bool:
    """Whether Compute Engine takes a faulty-host report for this VM (an instances.list item): its machine
    type and provisioning model (FAULTY_HOST_MACHINE_TYPES)."""
    machine_type = str(item.get("machineType", "")).rsplit("/", 1)[-1]
    model = item.get("scheduling", {}).get("provisioningModel")
    return machine_type in FAULTY_HOST_MACHINE_TYPES and model == "RESERVATION_BOUND"


def _metadata(item: Mapping[str, Any]) -> dict[str, str]:
    return {i["key"]: i.get("value", "") for i in item.get("metadata", {}).get("items", [])}


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


def _timestamp(value: Any) -> dt.datetime | None:
    """An RFC 3339 time in Compute Engine's answers (absent: never)."""
    return dt.datetime.fromisoformat(value) if isinstance(value, str) and value else None


def _time(value: Any) -> dt.datetime | None:
    """A time in `scontrol --json`: seconds since the epoch, bare or as {"set", "number"} (data_parser
    v0.0.40 and later)."""
    if isinstance(value, Mapping):
        value = value.get("number") if value.get("set", True) else None
    if isinstance(value, int | float) and value > 0:
        return dt.datetime.fromtimestamp(value, dt.UTC)
    return None


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
) -> list[Action]:
    """One round: read both sides, act, and return what was done (each action is logged). One failed
    action is logged and counted, and does not stop the others. With `ending` (machines that end: flex-
    start groups, groups on a capacity block) our reservations before their ends are kept in step too."""
    now = now or dt.datetime.now(dt.UTC)
    actions = plan_actions(
        names,
        fleet.instances(),
        slurm.nodes(),
        elastic=elastic,
        requests=fleet.requests(),
        reservations=slurm.reservations() if ending else None,
        now=now,
        retry_after=retry_after,
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
    return actions
