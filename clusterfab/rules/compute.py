"""Catalog rules for GPU node groups: machine type, region and zone, fabric, compact placement."""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab.clouds import profiles
from clusterfab.clouds.base import FieldProblem, zone_problems, zone_region
from clusterfab.core.findings import FieldPath, Finding
from clusterfab.core.hints import closest, did_you_mean, listing
from clusterfab.rules.context import RuleContext
from clusterfab.spec.resolve import RESERVED_KINDS


def check_region_and_zone(ctx: RuleContext) -> Iterator[Finding]:
    bp, cloud = ctx.blueprint, ctx.cloud
    regions = cloud.regions(ctx.catalog)
    if bp.region not in regions:
        yield ctx.finding(
            "BP203",
            ("region",),
            f"no {cloud.title} region '{bp.region}' in the catalog",
            hint=did_you_mean(bp.region, sorted(regions), what="known regions"),
        )
        return
    found = zone_region(cloud, ctx.catalog, region=bp.region, zone=bp.zone)
    if found is None:
        yield ctx.finding(
            "BP203", ("zone",), f"'{bp.zone}' is not a zone name", hint=f"e.g. {cloud.zone_example}"
        )
    elif found != bp.region and ctx.from_overlay(("region",)) and not ctx.from_overlay(("zone",)):
        # The overlay moved the region and kept the base's zone: the overlay is what to edit.
        yield ctx.finding(
            "BP203",
            ("region",),
            f"region {bp.region} has no zone {bp.zone} (the base's zone, in {found})",
            hint=f"set a zone of {bp.region} in environments.{ctx.environment} too",
        )
    elif found != bp.region:
        yield ctx.finding(
            "BP203",
            ("zone",),
            f"zone {bp.zone} is in {found}, not in region {bp.region}",
            hint=f"use a zone of {bp.region}, or set region: {found}",
        )


def check_machine_types(ctx: RuleContext) -> Iterator[Finding]:
    bp, cloud, catalog = ctx.blueprint, ctx.cloud, ctx.catalog
    known = cloud.machine_types(catalog)
    names = sorted(known)
    for index, group in enumerate(bp.node_groups):
        if group.machine_type in known:
            continue
        other = next((p for p in profiles() if group.machine_type in p.machine_types(catalog)), None)
        if other is not None:
            hint = f"{group.machine_type} is a {other.title} machine type; this blueprint is for {bp.cloud}"
        else:
            near = closest(group.machine_type, names)
            hint = f"did you mean '{near}'?" if near else f"{bp.cloud} machine types: {listing(names, 10)}"
        yield ctx.finding(
            "BP201",
            ("node_groups", index, "machine_type"),
            f"no {cloud.title} machine type '{group.machine_type}' in the catalog",
            hint=hint,
        )


def check_offered_in_zone(ctx: RuleContext) -> Iterator[Finding]:
    bp = ctx.blueprint
    if zone_region(ctx.cloud, ctx.catalog, region=bp.region, zone=bp.zone) != bp.region:
        return  # check_region_and_zone reports it
    for group in ctx.spec.node_groups:
        path = (*group.path, "machine_type")
        for problem in ctx.cloud.offering_problems(group.machine, region=bp.region, zone=bp.zone):
            yield _finding(ctx, "BP202", path, problem)


def zone_offering(
    ctx: RuleContext, code: str, *, what: str, zones: list[str], note: str | None, path: tuple[str | int, ...]
) -> Iterator[Finding]:
    """Findings (under `code`) when the blueprint's zone is not among `zones` offering `what`."""
    bp = ctx.blueprint
    for problem in zone_problems(what, zones, note, region=bp.region, zone=bp.zone):
        yield _finding(ctx, code, path, problem)


def _finding(ctx: RuleContext, code: str, base: FieldPath, problem: FieldProblem) -> Finding:
    """The finding (under `code`) of a problem the cloud reports about the field `base` or one below it."""
    return ctx.finding(
        code,
        (*base, *problem.path),
        problem.message,
        hint=problem.hint,
        at_key=problem.at_key,
        anchor=problem.anchor,
        severity=problem.severity,
    )


def check_fabric(ctx: RuleContext) -> Iterator[Finding]:
    for resolved in ctx.spec.node_groups:
        group, machine = ctx.blueprint.node_groups[resolved.index], resolved.machine
        if group.fabric in {"auto", "none"} or group.fabric == machine.fabric:
            continue
        if machine.fabric is None:
            yield ctx.finding(
                "BP204",
                (*resolved.path, "fabric"),
                f"{machine.name} has no {group.fabric} fabric; it has no high-speed fabric at all",
                hint="use a machine type with one (on Azure a size with `r`: Standard_ND96isr_H100_v5 for "
                "Standard_ND96is_H100_v5), or fabric: none",
            )
            continue
        yield ctx.finding(
            "BP204",
            (*resolved.path, "fabric"),
            f"{machine.name} has no {group.fabric} fabric; its fabric is {machine.fabric}",
            hint=f"use fabric: auto (= {machine.fabric}) or fabric: none",
        )


def check_placement(ctx: RuleContext) -> Iterator[Finding]:
    for group in ctx.spec.node_groups:
        machine, base = group.machine, group.path
        placement, size = group.placement, group.max_size
        reserved = ctx.cloud.reserved_capacity_is_placed and group.capacity.kind in RESERVED_KINDS
        if placement == "none" and size > 1 and group.fabric is not None and not reserved:
            yield ctx.finding(
                "BP215",
                (*base, "placement"),
                f"{size} nodes on {machine.fabric} without compact placement lose bandwidth",
                hint="remove `placement: none` (compact is the default for fabric groups)",
            )
        if placement == "compact" and reserved:
            # ParallelCluster refuses this combination (PlacementGroupCapacityTypeValidator); eksctl #7949
            # saw 11 of 16 reserved instances usable under a default placement group.
            yield ctx.finding(
                "BP219",
                (*base, "placement"),
                f"a new placement group around {group.capacity.kind} capacity can leave part of it "
                "unusable; the reservation already places the nodes",
                hint="remove `placement: compact` (reserved capacity gets no placement group by default)",
            )
        if group.placement_max_distance is not None and placement != "compact":
            yield ctx.finding(
                "BP205",
                (*base, "placement_max_distance"),
                "placement_max_distance needs compact placement",
                hint="remove it, or set placement: compact",
                at_key=True,
            )
        if placement != "compact":
            continue
        size_field = ("autoscaling", "max") if group.autoscaled else ("count",)
        distance = group.placement_max_distance
        problems = ctx.cloud.compact_placement_problems(
            machine, size=size, max_distance=distance, size_field=size_field
        )
        for problem in problems:
            yield _finding(ctx, "BP205", base, problem)


def check_fabric_addresses(ctx: RuleContext) -> Iterator[Finding]:
    """Fabrics that need subnets of their own (GCP's GPU networks, RDMA subnets) must fit the range."""
    cloud = ctx.cloud
    available = cloud.fabric_subnets_available(ctx.catalog)
    needed: dict[str, int] = {}
    for group in ctx.spec.node_groups:
        subnets = cloud.fabric_subnets(group.machine) if group.fabric is not None else 0
        if group.fabric is None or not subnets:
            continue
        before = sum(needed.values())
        needed[group.fabric] = max(needed.get(group.fabric, 0), subnets)
        if sum(needed.values()) > available >= before:
            yield ctx.finding(
                "BP112",
                (*group.path, "machine_type"),
                f"the fabrics {', '.join(needed)} need {sum(needed.values())} GPU network subnets; the "
                f"cluster range leaves {available} after the general and private services networks",
                hint="put node groups of different fabrics in separate clusters",
            )
