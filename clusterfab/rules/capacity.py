"""Capacity rules: reservations, capacity blocks, flex-start, spot, and what each type is sold as."""

from __future__ import annotations

import re
from collections.abc import Iterator

from clusterfab.blueprint.models import CapacitySpec
from clusterfab.core.findings import FieldPath, Finding
from clusterfab.core.hints import listing
from clusterfab.rules.context import RuleContext

_AWS_RESERVATION = re.compile(r"^cr-[0-9a-f]{8}([0-9a-f]{9})?$")
_GCP_RESERVATION = re.compile(
    r"^(projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/reservations/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
    r"(/reservationBlocks/[a-z0-9-]+(/reservationSubBlocks/[a-z0-9-]+)?)?$"
)
CAPACITY_BLOCK_MAX_INSTANCES = 64


def _items(ctx: RuleContext) -> Iterator[tuple[FieldPath, CapacitySpec, bool]]:
    """(path of the item, its capacity, whether it is autoscaled) for node groups and TPU slices."""
    for index, group in enumerate(ctx.blueprint.node_groups):
        yield ("node_groups", index), group.capacity, group.autoscaling is not None
    for index, tpu in enumerate(ctx.blueprint.tpu_slices):
        yield ("tpu_slices", index), tpu.capacity, False


def check_capacity_fields(ctx: RuleContext) -> Iterator[Finding]:
    cloud = ctx.blueprint.cloud
    for base, capacity, autoscaled in _items(ctx):
        path = (*base, "capacity")
        kind_path = (*path, "kind")
        needs_reservation = capacity.kind in {"reservation", "capacity_block"}
        if needs_reservation and capacity.reservation is None:
            example = "cr-0123456789abcdef0" if cloud == "aws" else "my-reservation"
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
        if capacity.reservation is not None:
            pattern = _AWS_RESERVATION if cloud == "aws" else _GCP_RESERVATION
            if not pattern.match(capacity.reservation):
                expected = (
                    "cr- followed by 17 hex digits, e.g. cr-0123456789abcdef0"
                    if cloud == "aws"
                    else "a reservation name or projects/PROJECT/reservations/NAME"
                )
                yield ctx.finding(
                    "BP115",
                    (*path, "reservation"),
                    f"'{capacity.reservation}' is not a {cloud.upper()} reservation id",
                    hint=f"expected {expected}",
                )
        if capacity.kind == "capacity_block" and autoscaled:
            yield ctx.finding(
                "BP106",
                (*base, "autoscaling"),
                "a capacity block has a fixed number of instances",
                hint="replace autoscaling with `count:` equal to the block's instance count",
                at_key=True,
            )
        if capacity.kind == "flex_start" and autoscaled:
            yield ctx.finding(
                "BP120",
                (*base, "autoscaling"),
                "flex-start capacity arrives all at once in a fixed-size group",
                hint="replace autoscaling with `count:`",
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
    for index, group in enumerate(bp.node_groups):
        machine = catalog.machine_type(bp.cloud, group.machine_type)
        if machine is None:
            continue
        kind = group.capacity.kind
        if kind not in machine.purchase_options:
            yield ctx.finding(
                "BP206",
                ("node_groups", index, "capacity", "kind"),
                f"{machine.name} is not sold as {kind}",
                hint=f"{machine.name} is sold as: {listing(machine.purchase_options)}",
            )
        if kind == "capacity_block" and (group.count or 0) > CAPACITY_BLOCK_MAX_INSTANCES:
            yield ctx.finding(
                "BP216",
                ("node_groups", index, "count"),
                f"a capacity block holds at most {CAPACITY_BLOCK_MAX_INSTANCES} instances",
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
