"""The node sync's decision, the same on every cloud: from the instances a `Fleet` lists and the nodes
slurmctld has, what to change (`plan_actions`, pure: the same inputs give the same actions). The rules are
the node sync's (nodesync.py says what each is for); the reasons below are what the nodes show."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Iterable, Mapping, Sequence

from .actions import (
    END_MARGIN,
    END_RESERVATION,
    Action,
    MarkDown,
    NameInstance,
    PowerDown,
    Recreate,
    Release,
    Replace,
    ReportFaulty,
    Reserve,
    Return,
    SetAddress,
    Terminate,
    Unreserve,
    Withdraw,
)
from .fleet import FlexRequest, Instance
from .scontrol import SlurmNode

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
GRACE = dt.timedelta(minutes=3)
"""How long an elastic instance may run without a powered-up node before it counts as orphaned: the time
between the resume program's create call and its naming the instance."""
CLAIM_GRACE = dt.timedelta(hours=1)
"""How long a machine that claims its node itself (Azure) may run without one before it is deleted: a
first boot that installs the driver and reboots takes a good part of it; one still without a node found its
unit full, or was made for an elastic node whose job went before it booted."""
RETRY_AFTER = dt.timedelta(minutes=2)
"""How long a node that failed to resume (no capacity) stays DOWN, with its reason on show, before it is
powered down and may be tried again: a job then retries every couple of minutes, not in a tight loop."""

log = logging.getLogger("clusterfab-slurm-nodes")


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
    claims: bool = False,
) -> list[Action]:
    """What to change so that every instance holds one node name, Slurm knows where each static node is,
    and no elastic node, instance or flex-start request is left half alive. `names` are each group's
    static node names, `elastic` its elastic ones; `reservations` (ours, by name: their start), where
    machines have an end, keep jobs off a node that would outlive its machine. With `claims` the machines
    claim their nodes themselves (Azure): an instance holds the node slurmctld knows by its host name."""
    elastic = elastic or {}
    now = now or dt.datetime.now(dt.UTC)
    if claims:
        instances = _by_claim(instances, nodes)
    actions: list[Action] = []
    static_by_group: dict[str, list[Instance]] = {group: [] for group in names}
    elastic_by_group: dict[str, list[Instance]] = {group: [] for group in elastic}
    claimed_elastic = {name for group_names in elastic.values() for name in group_names} if claims else set()
    for instance in instances:
        # Where machines claim their nodes, a machine is elastic by the node it holds (one that holds none
        # yet waits with the static ones).
        pool = elastic_by_group if instance.elastic or instance.name in claimed_elastic else static_by_group
        if instance.group in pool:
            pool[instance.group].append(instance)
    for group, group_names in names.items():
        ordered = _launch_order(static_by_group[group])
        actions += (
            _claimed_actions(group_names, ordered, nodes, now)
            if claims
            else _static_actions(group_names, ordered, nodes, now)
        )
    for group, group_names in elastic.items():
        actions += _elastic_actions(
            group_names, _launch_order(elastic_by_group[group]), nodes, now, retry_after, claims=claims
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
        elif holder is not None and node is not None and _replaced(node, now):
            actions += _new_machine(holder, node)
        elif holder is not None:
            if node is None or node.address != holder.address:
                actions.append(SetAddress(name, holder.address))
        elif node is not None and not node.down:
            actions.append(MarkDown(name, GONE_REASON))
    return actions


def _by_claim(instances: Iterable[Instance], nodes: Mapping[str, SlurmNode]) -> list[Instance]:
    """Each machine with the name of the node it claimed (the node whose NodeHostname is its host name)."""
    holders = {node.claimed_by: name for name, node in nodes.items() if node.claimed_by}
    return [dataclasses.replace(i, name=holders.get(i.host)) if i.host is not None else i for i in instances]


def _claimed_actions(
    names: Sequence[str], instances: Sequence[Instance], nodes: Mapping[str, SlurmNode], now: dt.datetime
) -> list[Action]:
    """The static rules where machines claim their nodes: no machine is named (one without a node is
    starting, or found its unit full) and no address set (the claim sets it); a node claimed by a machine
    that is gone is released for the next one; a node no machine holds is marked DOWN only while no machine
    of the group is without a node (a restarted slurmctld forgets every claim until they are restored or
    re-asserted, and those nodes still run jobs)."""
    actions: list[Action] = []
    held, unclaimed = _claim(names, instances)
    for instance in unclaimed:
        if now - instance.launched >= CLAIM_GRACE:
            actions.append(Terminate(instance.id, f"it claimed no node in {CLAIM_GRACE} (its unit is full)"))
    for name in names:
        node = nodes.get(name)
        holder = held.get(name)
        if node is None:
            continue
        if holder is not None and _replaced(node, now):
            actions += _new_machine(holder, node)
        elif holder is not None:
            actions += _repair(holder, node)
        elif node.claimed_by is not None:
            actions.append(Release(name, node.claimed_by, GONE_REASON, node.down))
        elif not node.down and not unclaimed:
            actions.append(MarkDown(name, GONE_REASON))
    return actions


def _replaced(node: SlurmNode, now: dt.datetime) -> bool:
    """Its machine must go: drained for its hardware, a faulty-host report that did not take, or set aside
    by its spot watcher (already DOWN and drained, its jobs requeued: replaced like a failed machine)."""
    return _needs_new_machine(node) or _report_failed(node, now) or _interrupted(node)


def _new_machine(holder: Instance, node: SlurmNode) -> list[Action]:
    """The node's machine replaced by its group, the node set aside (DOWN, still drained) meanwhile."""
    return [
        Recreate(holder.id, holder.group, f"{node.name}: {node.reason}"),
        Replace(node.name, _short(f"{REPLACING}{holder.id} ({node.reason})")),
    ]


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
    *,
    claims: bool = False,
) -> list[Action]:
    held, actions = _elastic_claims(names, instances, now)
    for name in names:
        node = nodes.get(name)
        holder = held.get(name)
        if node is None:
            continue
        if claims and holder is None and node.claimed_by is not None:
            # Its machine is gone: the claim goes. A node up until now goes DOWN (its jobs requeued) and
            # is powered down next round; one powered down or powering up keeps its state.
            settled = node.down or node.powered_down or node.powering_up
            actions.append(Release(name, node.claimed_by, LOST_REASON, down=settled))
            if not settled:
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
