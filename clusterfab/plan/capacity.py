"""The accelerators a change gives up: node groups and TPU slices whose capacity resource is replaced.

A resource that holds a group's GPUs or a slice's chips (the cloud profile's `capacity_types`: an
instance group, a node pool, a TPU queued resource or VM) releases them when the change replaces it,
or deletes it and creates it again under another name. Whether they come back is the capacity's
question: a reservation or capacity block keeps them for the new nodes; on-demand and spot capacity
is not held for anyone; a queued request (a TPU queued resource, flex-start) waits in the queue again.
Templates are no such resource: a new launch template version or instance template changes no
running node (the instance groups apply them as nodes are recreated), so they give up nothing.

The resources are matched to the blueprint's items by the component that owns them, which the
realizers name `<cluster>-<item>` (`<cluster>-<slice>-<i>` for a GKE multislice's pool per slice).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from clusterfab.clouds import profile
from clusterfab.core.findings import FieldPath, Finding, render_path
from clusterfab.plan.diff import PlanDiff
from clusterfab.plan.engine import PlannedResource
from clusterfab.plan.project import Plan
from clusterfab.rules.context import RuleContext
from clusterfab.spec import ClusterSpec, NodeGroup, TpuSlice
from clusterfab.spec.capacity import Capacity, CapacityBlock, FlexStart, OnDemand, Reservation, Spot

Item = NodeGroup | TpuSlice


@dataclass(frozen=True)
class CapacityLoss:
    """One capacity resource replaced (or deleted and created again): what it held and whether it
    comes back."""

    resource: PlannedResource
    item: Item
    """The node group or TPU slice as it was (the base side)."""
    accelerators: int
    """GPUs or TPU chips the resource held (at its max for an autoscaled group)."""
    at_most: bool
    """An autoscaled group (or a flex-start pool) runs up to `accelerators`, not always all of them."""
    capacity: str
    """The capacity kind the new nodes ask for."""
    held: bool
    """A reservation or capacity block keeps the capacity for the new nodes."""
    queued: bool
    """The new request waits in a queue (a TPU queued resource, flex-start)."""
    risk: str
    """Whether the capacity comes back, as a clause."""
    cause: FieldPath | None
    """The blueprint field whose change replaces the resource, when one can be named."""

    @property
    def unit(self) -> str:
        return "gpu" if isinstance(self.item, NodeGroup) else "tpu_chip"

    def what(self) -> str:
        """`node group h100` / `TPU slice pretrain`."""
        return f"{'node group' if isinstance(self.item, NodeGroup) else 'TPU slice'} {self.item.name}"

    def amount(self) -> str:
        """`64 GPUs (8 a3-megagpu-8g)`, `up to 16 GPUs (2 p5.48xlarge at its max)`, `128 TPU v5p chips`."""
        item, upto = self.item, "up to " if self.at_most else ""
        if isinstance(item, NodeGroup):
            at_max = " at its max" if self.at_most else ""
            nodes = self.accelerators // max(item.gpus_per_node, 1)
            return f"{upto}{self.accelerators:,} GPUs ({nodes:,} {item.machine.name}{at_max})"
        slices = self.accelerators // max(item.shape.chips, 1)
        shape = f"{slices} slice{'' if slices == 1 else 's'} of {item.topology}"
        return f"{upto}{self.accelerators:,} TPU {item.generation.name} chips ({shape})"

    def message(self) -> str:
        return f"{self.what()} loses {self.amount()} while {self.resource.name} is replaced: {self.risk}"

    def to_json(self) -> dict[str, Any]:
        return {
            "urn": self.resource.urn,
            "kind": "node_group" if isinstance(self.item, NodeGroup) else "tpu_slice",
            "name": self.item.name,
            "unit": self.unit,
            "count": self.accelerators,
            "at_most": self.at_most,
            "capacity": self.capacity,
            "held": self.held,
            "queued": self.queued,
            "field": None if self.cause is None else render_path(self.cause),
            "message": self.message(),
        }


def _owners(spec: ClusterSpec) -> dict[str, Item]:
    """The blueprint item of each component name the realizers give (see the module docstring)."""
    owners: dict[str, Item] = {f"{spec.name}-{g.name}": g for g in spec.node_groups}
    for tpu in spec.tpu_slices:
        owners[f"{spec.name}-{tpu.name}"] = tpu
        for index in range(tpu.slices):
            owners.setdefault(f"{spec.name}-{tpu.name}-{index}", tpu)
    return owners


def _owner(resource: PlannedResource, owners: Mapping[str, Item]) -> Item | None:
    parent = resource.parent or ""
    return owners.get(parent.rsplit("::", 1)[-1]) if "::" in parent else None


def _total(item: Item) -> tuple[int, bool]:
    """The accelerators of an item and whether that is its most rather than what always runs."""
    if isinstance(item, NodeGroup):
        return item.max_gpus, item.autoscaled
    return item.chips, False


def _same(item: Item, other: Item | None) -> Item | None:
    return other if other is not None and type(other) is type(item) else None


def capacity_losses(
    before: ClusterSpec, after: ClusterSpec, base: Plan, diff: PlanDiff
) -> list[CapacityLoss]:
    """The capacity resources `diff` replaces, or deletes while the new blueprint keeps their item."""
    if before.cloud != after.cloud:
        return []  # a move to another cloud gives up everything, and says so as a whole
    kinds = profile(after.cloud).capacity_types
    owners = _owners(before)
    items: list[Item] = [*after.node_groups, *after.tpu_slices]
    new_items = {i.name: i for i in items}
    holders: dict[str, int] = {}
    for resource in base.resources:
        if resource.type in kinds and (item := _owner(resource, owners)) is not None:
            holders[item.name] = holders.get(item.name, 0) + 1
    gone = [(u.before, u.after) for u in diff.replaced] + [(r, r) for r in diff.delete]
    losses = []
    for old_resource, resource in gone:
        if resource.type not in kinds or (item := _owner(old_resource, owners)) is None:
            continue
        new = _same(item, new_items.get(item.name))
        if new is None:
            continue  # the item is removed: its capacity is given up on purpose
        total, at_most = _total(item)
        queued = kinds[resource.type] or isinstance(new.capacity, FlexStart)
        losses.append(
            CapacityLoss(
                resource=resource,
                item=item,
                accelerators=total // holders.get(item.name, 1),
                at_most=at_most or isinstance(new.capacity, FlexStart),
                capacity=new.capacity.kind,
                held=isinstance(new.capacity, Reservation | CapacityBlock),
                queued=queued,
                risk=_risk(item, new, queued=queued),
                cause=_cause(before, after, item, new),
            )
        )
    return losses


def _machine(item: Item) -> str:
    return item.machine.name if isinstance(item, NodeGroup) else f"TPU {item.generation.name}"


def _risk(old: Item, new: Item, *, queued: bool) -> str:
    """Whether the capacity comes back for the new nodes or slices."""
    who = "nodes" if isinstance(new, NodeGroup) else "slices"
    capacity: Capacity = new.capacity
    if isinstance(capacity, Reservation | CapacityBlock):
        what = "reservation" if isinstance(capacity, Reservation) else "capacity block"
        held = f"{what} {capacity.reservation}"
        if _machine(old) != _machine(new) and old.capacity == capacity:
            # A reservation or block serves the machine type it was made for (AWS Auto Scaling User
            # Guide, "Use Capacity Blocks for machine learning workloads": the launch template names
            # the block's instance type; Compute Engine, "Consume reservations": instances that match
            # the reservation's properties; both read 2026-11-29).
            return f"{held} holds {_machine(old)} capacity: the new {_machine(new)} {who} cannot use it"
        return f"{held} keeps its capacity for the new {who}"
    if queued:
        # The queued resource sets no validity window (components/gcp/_queued_resource.py), nor does a
        # flex-start request here: nothing bounds the wait.
        request = "the queued resource" if isinstance(new, TpuSlice) else "flex-start capacity"
        return f"{request} is asked for again and waits in the queue, with no guarantee of when it is granted"
    kind = "on-demand" if isinstance(capacity, OnDemand) else "spot" if isinstance(capacity, Spot) else "its"
    return f"{kind} capacity is not held for it, so the new {who} may not get it back"


_NODE_GROUP_FIELDS = (
    ("machine_type", lambda g: g.machine.name),
    ("capacity", lambda g: g.capacity),
    ("placement", lambda g: (g.placement, g.placement_max_distance)),
    ("fabric", lambda g: g.fabric),
    ("boot_disk_gib", lambda g: g.boot_disk_gib),
    ("image", lambda g: g.image),
    ("kms_key", lambda g: g.kms_key),
    ("local_scratch", lambda g: g.local_scratch),
    ("attach", lambda g: g.storage),
)
_TPU_FIELDS = (
    ("generation", lambda t: t.generation.name),
    ("topology", lambda t: t.topology),
    ("slices", lambda t: t.slices),
    ("capacity", lambda t: t.capacity),
    ("runtime_version", lambda t: t.runtime_version),
    ("attach", lambda t: t.storage),
)
_CAPACITY_FIELDS = ("kind", "reservation", "max_run_hours")
_CLUSTER_FIELDS = (("zone", lambda s: s.zone), ("region", lambda s: s.region))


def _cause(before: ClusterSpec, after: ClusterSpec, old: Item, new: Item) -> FieldPath | None:
    """The first of the item's own fields that changed (then the cluster's zone or region), as a
    blueprint path; None when the change comes from elsewhere (a replaced dependency)."""
    fields: tuple[tuple[str, Any], ...] = _NODE_GROUP_FIELDS if isinstance(new, NodeGroup) else _TPU_FIELDS
    for name, read in fields:
        if read(old) != read(new):
            return (*new.path, *_capacity_field(old.capacity, new.capacity, name))
    for name, read in _CLUSTER_FIELDS:
        if read(before) != read(after):
            return (name,)
    return None


def _capacity_field(old: Capacity, new: Capacity, name: str) -> Iterator[str]:
    yield name
    if name != "capacity":
        return
    if old.kind != new.kind:
        yield "kind"
        return
    changed = (f for f in _CAPACITY_FIELDS if getattr(old, f, None) != getattr(new, f, None))
    # The spec's `max_run_hours` is the blueprint's `max_run_duration_hours`.
    yield {"max_run_hours": "max_run_duration_hours"}.get(first := next(changed, "kind"), first)


# --- findings: located where the blueprint field that causes them is written ----------------------


def loss_findings(losses: list[CapacityLoss], ctx: RuleContext) -> Iterator[Finding]:
    """BP166 for each loss whose cause is a field of the new blueprint."""
    for loss in losses:
        if loss.cause is None:
            continue
        who = "nodes" if isinstance(loss.item, NodeGroup) else "slices"
        keep = "" if loss.held else f"; to keep the capacity, leave `{render_path(loss.cause)}` as it was"
        yield ctx.finding(
            "BP166",
            loss.cause,
            loss.message(),
            hint=f"apply this when the work on the {who} can stop{keep}",
        )


def held_machine_changes(
    before: ClusterSpec, ctx: RuleContext, losses: list[CapacityLoss]
) -> Iterator[Finding]:
    """BP167: a node group that stays on the same reservation or capacity block with another machine type,
    where its capacity resource is not replaced (its template changes in place): every node the group
    launches from now on is of a type the capacity does not hold (see `_risk` for the sources)."""
    old = {g.name: g for g in before.node_groups}
    replaced = {loss.item.name for loss in losses}
    for group in ctx.spec.node_groups:
        prior = old.get(group.name)
        capacity = group.capacity
        if (
            prior is None
            or group.name in replaced
            or prior.machine.name == group.machine.name
            or prior.capacity != capacity
            or not isinstance(capacity, Reservation | CapacityBlock)
        ):
            continue
        what = "reservation" if isinstance(capacity, Reservation) else "capacity block"
        yield ctx.finding(
            "BP167",
            (*group.path, "machine_type"),
            f"machine type changes from {prior.machine.name} to {group.machine.name} on {what} "
            f"{capacity.reservation}, which holds {prior.machine.name} capacity: the {group.machine.name} "
            "nodes the group launches from now on cannot use it",
            hint=f"keep `machine_type: {prior.machine.name}`, or name a {what} of {group.machine.name} "
            "capacity in `capacity.reservation`",
        )
