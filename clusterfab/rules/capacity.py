"""Capacity rules: reservations, capacity blocks, flex-start, spot, and what each type is sold as."""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab.blueprint.models import CapacitySpec
from clusterfab.core.findings import FieldPath, Finding
from clusterfab.core.hints import listing
from clusterfab.rules.context import RuleContext
from clusterfab.rules.scheduler import slurm_groups


def _items(ctx: RuleContext) -> Iterator[tuple[FieldPath, CapacitySpec, bool, bool]]:
    """(path of the item, its capacity, whether it is autoscaled, whether Slurm schedules on it) for node
    groups and TPU slices."""
    slurm = slurm_groups(ctx)
    for index, group in enumerate(ctx.blueprint.node_groups):
        yield ("node_groups", index), group.capacity, group.autoscaling is not None, group.name in slurm
    for index, tpu in enumerate(ctx.blueprint.tpu_slices):
        yield ("tpu_slices", index), tpu.capacity, False, False


def check_capacity_fields(ctx: RuleContext) -> Iterator[Finding]:
    cloud = ctx.cloud
    for base, capacity, autoscaled, scheduled in _items(ctx):
        path = (*base, "capacity")
        kind_path = (*path, "kind")
        needs_reservation = capacity.kind in {"reservation", "capacity_block"}
        if needs_reservation and capacity.reservation is None:
            example = cloud.reservation_example
            yield ctx.finding(
                "BP105",
                (*path, "reservation"),
                f"capacity kind {capacity.kind} needs the id of the reservation to use",
                hint=f"add `reservation: {example}` under capacity",
                anchor=kind_path,
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
                anchor=kind_path,
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
                hint=f"{machine.name} is sold as: {listing(machine.purchase_options)}",
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
