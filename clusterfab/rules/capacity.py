"""Capacity rules: reservations, capacity blocks, flex-start, spot, and what each type is sold as."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from clusterfab.blueprint.models import UTC_EXAMPLE, CapacitySpec
from clusterfab.core.dates import start_of, utc_stamp
from clusterfab.core.findings import FieldPath, Finding
from clusterfab.core.hints import listing
from clusterfab.cost.estimate import CostEstimate, estimate_cost
from clusterfab.cost.render import usd
from clusterfab.rules.context import RuleContext
from clusterfab.rules.scheduler import scheduled_groups
from clusterfab.spec import ClusterSpec
from clusterfab.spec.capacity import END_MARGIN, CapacityBlock

ENDING_SOON_DAYS = 14
"""A capacity block ending within this many days is a warning (BP161). AWS's own notice is an EventBridge
event 40 minutes before EC2 begins terminating the block's instances; an extension is not guaranteed (it
needs free capacity) and is bought from 56 days until an hour before the end: two weeks leaves time to buy
one, or to move the work, before the end takes the nodes."""


def _items(ctx: RuleContext) -> Iterator[tuple[FieldPath, CapacitySpec, bool, bool]]:
    """(path of the item, its capacity, whether it is autoscaled, whether the scheduler schedules on it) for
    node groups and TPU slices."""
    scheduled = scheduled_groups(ctx)
    for index, group in enumerate(ctx.blueprint.node_groups):
        yield ("node_groups", index), group.capacity, group.autoscaling is not None, group.name in scheduled
    for index, tpu in enumerate(ctx.blueprint.tpu_slices):
        yield ("tpu_slices", index), tpu.capacity, False, False


def check_capacity_fields(ctx: RuleContext) -> Iterator[Finding]:
    for base, capacity, autoscaled, scheduled in _items(ctx):
        yield from _reservation_fields(ctx, (*base, "capacity"), capacity)
        yield from _shape_fields(ctx, base, capacity, autoscaled=autoscaled, scheduled=scheduled)


def _reservation_fields(ctx: RuleContext, path: FieldPath, capacity: CapacitySpec) -> Iterator[Finding]:
    """The reservation: there when the kind consumes one, absent otherwise, and in the cloud's format."""
    cloud = ctx.cloud
    needs_reservation = capacity.kind in {"reservation", "capacity_block"}
    if needs_reservation and capacity.reservation is None:
        example = cloud.reservation_example
        yield ctx.finding(
            "BP105",
            (*path, "reservation"),
            f"capacity kind {capacity.kind} needs the id of the reservation to use",
            hint=f"add `reservation: {example}` under capacity",
            anchor=(*path, "kind"),
        )
    if capacity.kind == "flex_start" and capacity.reservation is not None:
        yield ctx.finding(
            "BP107",
            (*path, "reservation"),
            "flex_start cannot consume a reservation",
            hint="remove `reservation`, or use kind: reservation to consume it",
        )
    elif not needs_reservation and capacity.reservation is not None:
        yield ctx.finding(
            "BP119",
            (*path, "reservation"),
            f"a reservation is only used with kind reservation or capacity_block, not {capacity.kind}",
            hint="remove `reservation`, or set kind: reservation",
        )
    if capacity.reservation is not None and not cloud.reservation_valid(capacity.reservation):
        yield ctx.finding(
            "BP115",
            (*path, "reservation"),
            f"'{capacity.reservation}' is not a {cloud.title} reservation id",
            hint=f"expected {cloud.reservation_format}",
        )


def _shape_fields(
    ctx: RuleContext, base: FieldPath, capacity: CapacitySpec, *, autoscaled: bool, scheduled: bool
) -> Iterator[Finding]:
    """What the kind allows of the group's size and of how long its instances run."""
    path = (*base, "capacity")
    if capacity.kind == "capacity_block" and autoscaled:
        yield ctx.finding(
            "BP106",
            (*base, "autoscaling"),
            "a capacity block has a fixed number of instances",
            hint="replace autoscaling with `count:` equal to the block's instance count",
            at_key=True,
        )
    if capacity.kind == "flex_start" and autoscaled and not scheduled:
        # Under Slurm each job's nodes are one request of their own (elastic nodes); a MIG alone has
        # no queue to size flex-start requests by.
        yield ctx.finding(
            "BP120",
            (*base, "autoscaling"),
            "flex-start capacity arrives all at once in a fixed-size group; only Slurm grows one per job",
            hint="replace autoscaling with `count:`, or schedule the group with Slurm",
            at_key=True,
        )
    if capacity.kind == "flex_start" and capacity.max_run_duration_hours is None:
        yield ctx.finding(
            "BP109",
            (*path, "max_run_duration_hours"),
            "flex_start needs a maximum run duration",
            hint="add `max_run_duration_hours:` (1-168) under capacity",
            anchor=(*path, "kind"),
        )
    if capacity.kind != "flex_start" and capacity.max_run_duration_hours is not None:
        yield ctx.finding(
            "BP109",
            (*path, "max_run_duration_hours"),
            f"max_run_duration_hours applies to flex_start, not {capacity.kind}",
            hint="remove it",
            at_key=True,
        )


def check_capacity_offered(ctx: RuleContext) -> Iterator[Finding]:
    bp, catalog = ctx.blueprint, ctx.catalog
    limit = catalog.capacity_blocks.max_instances
    for group in ctx.spec.node_groups:
        machine, kind = group.machine, group.capacity.kind
        if kind not in machine.purchase_options:
            yield ctx.finding(
                "BP206",
                (*group.path, "capacity", "kind"),
                f"{machine.name} is not sold as {kind}",
                hint=machine.not_sold_as.get(kind)
                or f"{machine.name} is sold as: {listing(machine.purchase_options)}",
            )
        if kind == "capacity_block" and not group.autoscaled and group.max_size > limit:
            yield ctx.finding(
                "BP216",
                (*group.path, "count"),
                f"a capacity block holds at most {limit} instances",
                hint="split the group across several capacity blocks (one group each)",
            )
    for index, tpu in enumerate(bp.tpu_slices):
        generation = catalog.tpu_generations.get(tpu.generation)
        if generation is None:
            continue
        if tpu.capacity.kind not in generation.purchase_options:
            yield ctx.finding(
                "BP206",
                ("tpu_slices", index, "capacity", "kind"),
                f"TPU {tpu.generation} is not sold as {tpu.capacity.kind}",
                hint=f"TPU {tpu.generation} is sold as: {listing(generation.purchase_options)}",
            )


def _days(days: int) -> str:
    return "today" if days == 0 else "tomorrow" if days == 1 else f"in {days} days"


def check_capacity_end(ctx: RuleContext) -> Iterator[Finding]:
    """A capacity block's end: set, only on a block, not past, and said when it is near."""
    now = start_of(ctx.today)
    estimate: CostEstimate | None = None
    for base, capacity, _, scheduled in _items(ctx):
        path = (*base, "capacity")
        ends_path = (*path, "ends_at")
        if capacity.kind != "capacity_block":
            if capacity.ends_at is not None:
                yield ctx.finding(
                    "BP163",
                    ends_path,
                    f"ends_at applies to capacity_block, not {capacity.kind}",
                    hint="remove it",
                    at_key=True,
                )
            continue
        block = capacity.reservation or ctx.cloud.reservation_example
        if capacity.ends_at is None:
            yield ctx.finding(
                "BP162",
                ends_path,
                "the capacity block has no end: `cost` prices it as running every month, and Slurm starts "
                "jobs on its nodes that the block's end will kill",
                hint=f"add the block's end under capacity, e.g. `ends_at: {UTC_EXAMPLE}` (aws ec2 "
                f"describe-capacity-reservations --capacity-reservation-ids {block} shows it as EndDate)",
                anchor=(*path, "kind"),
            )
            continue
        end = capacity.ends_at
        if end <= now:
            yield ctx.finding(
                "BP160",
                ends_path,
                f"capacity block {block} ended {utc_stamp(end)}: EC2 has terminated its instances and "
                "launches no more into it",
                hint="buy a new block and set its `reservation` and `ends_at`, or move the group to other "
                "capacity (kind: on_demand, spot or reservation)",
            )
            continue
        if (end.date() - ctx.today).days <= ENDING_SOON_DAYS:
            estimate = estimate or estimate_cost(ctx.spec, ctx.catalog, today=ctx.today)
            yield _ending_soon(ctx, base, block, end, estimate, scheduled=scheduled)


def _ending_soon(
    ctx: RuleContext,
    base: FieldPath,
    block: str,
    end: dt.datetime,
    estimate: CostEstimate,
    *,
    scheduled: bool,
) -> Finding:
    """BP161: when the block's instances go, what it has cost by then, and how to keep them."""
    times = ctx.catalog.capacity_block_times
    days = (end.date() - ctx.today).days
    terminates = end - dt.timedelta(minutes=times.termination_lead_minutes)
    drain = terminates - END_MARGIN
    message = (
        f"capacity block {block} ends {utc_stamp(end)}, {_days(days)}{_term(estimate, base)}: EC2 "
        f"terminates its instances from {terminates:%H:%M} UTC"
    )
    if scheduled:
        message += (
            f"; Slurm starts no job on its nodes that would still run at {drain:%H:%M} UTC "
            "(the node sync reserves them from then)"
        )
    return ctx.finding(
        "BP161",
        (*base, "capacity", "ends_at"),
        message,
        hint=f"extend the block (extensions are bought from {times.extension_window_days} days until "
        "an hour before its end, while capacity is free) and set `ends_at` to its new end, or "
        "plan the work to finish before then",
    )


def _term(estimate: CostEstimate, path: FieldPath) -> str:
    """` (347.5 hours left: $315,991.48)`: what is left of the block's term, as `cost` prices it."""
    item = next((i for i in estimate.items if i.path == path), None)
    if item is None or item.term_hours is None:
        return ""
    hours = f"{item.term_hours.normalize():f} hour{'' if item.term_hours == 1 else 's'} left"
    return f" ({hours}: {usd(item.term_usd)})" if item.term_usd is not None else f" ({hours})"


def check_capacity_end_time(ctx: RuleContext) -> Iterator[Finding]:
    """An `ends_at` at another time of day than every capacity block ends at: a time zone slip."""
    times = ctx.catalog.capacity_block_times
    expected = times.end_time_utc
    for base, capacity, _, _ in _items(ctx):
        end = capacity.ends_at
        if capacity.kind != "capacity_block" or end is None or end.timetz().replace(tzinfo=None) == expected:
            continue
        fixed = dt.datetime.combine(end.date(), expected, dt.UTC)
        yield ctx.finding(
            "BP224",
            (*base, "capacity", "ends_at"),
            f"capacity blocks end at {expected:%H:%M} UTC, and this end is {end:%H:%M} UTC",
            hint=f"copy the block's EndDate as it is, in UTC: did you mean {fixed:%Y-%m-%dT%H:%M:%SZ}?",
        )


def check_capacity_block_resize(ctx: RuleContext) -> Iterator[Finding]:
    """An environment that changes a group's count, or its block, but keeps the rest of the base's block:
    a block holds the instances it was bought for, until its own end."""
    if ctx.environment is None:
        return
    document = ctx.source_map.document.data
    written = document.get("node_groups") if isinstance(document, dict) else None
    listed = written if isinstance(written, list) else []
    # The raw document: a name may be any YAML value there (a schema error reported elsewhere).
    base_groups = {g["name"]: g for g in listed if isinstance(g, dict) and isinstance(g.get("name"), str)}
    for index, group in enumerate(ctx.blueprint.node_groups):
        capacity = group.capacity
        if capacity.kind != "capacity_block":
            continue
        item: FieldPath = ("node_groups", index)
        reservation_path = (*item, "capacity", "reservation")
        own_block = ctx.from_overlay(reservation_path)
        base = base_groups.get(group.name, {})
        own_end = ctx.from_overlay((*item, "capacity", "ends_at"))
        if own_block and capacity.ends_at is not None and not own_end:
            yield ctx.finding(
                "BP165",
                reservation_path,
                f"the environment consumes capacity block {capacity.reservation} with the end of the base's "
                f"block ({utc_stamp(capacity.ends_at)})",
                hint=f"add this block's `ends_at:` next to its reservation in environments.{ctx.environment}",
            )
        base_count = base.get("count")
        if (
            own_block
            or group.count is None
            or not ctx.from_overlay((*item, "count"))
            or not _capacity_block(base)
            or not isinstance(base_count, int)
            or base_count == group.count
        ):
            continue
        yield ctx.finding(
            "BP164",
            (*item, "count"),
            f"count {group.count} on capacity block {capacity.reservation}, which the base runs with "
            f"{base_count} instances: a block holds the instances it was bought for",
            hint=f"leave `count` out of environments.{ctx.environment}, or give the environment a block of "
            f"its own (`capacity: {{reservation: ..., ends_at: ...}}` with {group.count} instances)",
        )


def _capacity_block(item: Any) -> bool:
    capacity = item.get("capacity") if isinstance(item, dict) else None
    return isinstance(capacity, dict) and capacity.get("kind") == "capacity_block"


def block_resizes(before: ClusterSpec, ctx: RuleContext) -> Iterator[Finding]:
    """BP164 for a change (`clusterfab diff`): a node group of the new blueprint `ctx` on the same capacity
    block as in `before` with another count."""
    old = {g.name: g for g in before.node_groups}
    for group in ctx.spec.node_groups:
        prior = old.get(group.name)
        if prior is None or group.autoscaled or prior.autoscaled or prior.max_size == group.max_size:
            continue
        block, was = group.capacity, prior.capacity
        if not isinstance(block, CapacityBlock) or not isinstance(was, CapacityBlock):
            continue
        if block.reservation != was.reservation:
            continue
        yield ctx.finding(
            "BP164",
            (*group.path, "count"),
            f"count changes from {prior.max_size} to {group.max_size} on capacity block {block.reservation}, "
            f"which was bought for {prior.max_size} instances",
            hint=f"keep `count: {prior.max_size}`, or buy a block of {group.max_size} instances and set its "
            "`reservation` and `ends_at`",
        )
