"""Catalog rules for GPU node groups: machine type, region and zone, fabric, compact placement."""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab import addressing
from clusterfab.catalog.models import AwsMachineType, GcpMachineType
from clusterfab.core.findings import Finding, Severity
from clusterfab.core.hints import closest, did_you_mean, listing
from clusterfab.core.vocab import Cloud
from clusterfab.resolve import fabric_of, max_size, placement_of
from clusterfab.rules.context import RuleContext


def check_region_and_zone(ctx: RuleContext) -> Iterator[Finding]:
    bp, catalog = ctx.blueprint, ctx.catalog
    regions = catalog.regions(bp.cloud)
    if bp.region not in regions:
        yield ctx.finding(
            "BP203",
            ("region",),
            f"no {bp.cloud.upper()} region '{bp.region}' in the catalog",
            hint=did_you_mean(bp.region, sorted(regions), what="known regions"),
        )
        return
    zone_region = catalog.region_of_zone(bp.cloud, bp.zone)
    if zone_region is None:
        example = "use1-az6 (a zone id) or us-east-1a" if bp.cloud == "aws" else "us-central1-a"
        yield ctx.finding("BP203", ("zone",), f"'{bp.zone}' is not a zone name", hint=f"e.g. {example}")
    elif zone_region != bp.region:
        yield ctx.finding(
            "BP203",
            ("zone",),
            f"zone {bp.zone} is in {zone_region}, not in region {bp.region}",
            hint=f"use a zone of {bp.region}, or set region: {zone_region}",
        )


def check_machine_types(ctx: RuleContext) -> Iterator[Finding]:
    bp, catalog = ctx.blueprint, ctx.catalog
    other: Cloud = "gcp" if bp.cloud == "aws" else "aws"
    names = sorted(catalog.machine_types(bp.cloud))
    for index, group in enumerate(bp.node_groups):
        if catalog.machine_type(bp.cloud, group.machine_type) is not None:
            continue
        if catalog.machine_type(other, group.machine_type) is not None:
            hint = f"{group.machine_type} is a {other.upper()} machine type; this blueprint is for {bp.cloud}"
            near = None
        else:
            near = closest(group.machine_type, names)
            hint = f"did you mean '{near}'?" if near else f"{bp.cloud} machine types: {listing(names, 10)}"
        yield ctx.finding(
            "BP201",
            ("node_groups", index, "machine_type"),
            f"no {bp.cloud.upper()} machine type '{group.machine_type}' in the catalog",
            hint=hint,
        )


def check_offered_in_zone(ctx: RuleContext) -> Iterator[Finding]:
    bp, catalog = ctx.blueprint, ctx.catalog
    if catalog.region_of_zone(bp.cloud, bp.zone) != bp.region:
        return  # check_region_and_zone reports it
    for index, group in enumerate(bp.node_groups):
        machine = catalog.machine_type(bp.cloud, group.machine_type)
        path = ("node_groups", index, "machine_type")
        if isinstance(machine, AwsMachineType):
            yield from _aws_offering(ctx, machine, path)
        elif isinstance(machine, GcpMachineType):
            yield from zone_offering(
                ctx,
                "BP202",
                what=machine.name,
                zones=machine.zones,
                note=machine.unconfirmed.get("zones"),
                path=path,
            )


def _aws_offering(
    ctx: RuleContext, machine: AwsMachineType, path: tuple[str | int, ...]
) -> Iterator[Finding]:
    bp = ctx.blueprint
    zones = machine.locations.get(bp.region)
    note = machine.unconfirmed.get("locations")
    if zones is None:
        offered = sorted(machine.locations)
        yield ctx.finding(
            "BP202",
            path,
            f"{machine.name} is not offered in {bp.region}",
            hint=f"regions offering it: {listing(offered)}" + (f" ({note})" if note else ""),
        )
        return
    if ctx.catalog.is_aws_zone_id(bp.zone):
        if bp.zone not in zones:
            yield ctx.finding(
                "BP202",
                path,
                f"{machine.name} is not offered in zone {bp.zone}",
                hint=f"zones of {bp.region} that offer it: {listing(zones)}",
            )
    else:
        # Zone names map to AZ ids differently in each account, so only the region can be checked.
        yield ctx.finding(
            "BP202",
            path,
            f"cannot check zone {bp.zone} exactly: AWS zone names differ per account",
            hint=f"use the zone id instead; {machine.name} is offered in {listing(zones)} "
            "(`aws ec2 describe-availability-zones` maps names to ids)",
            anchor=("zone",),
            severity=Severity.INFO,
        )


def zone_offering(
    ctx: RuleContext, code: str, *, what: str, zones: list[str], note: str | None, path: tuple[str | int, ...]
) -> Iterator[Finding]:
    """Findings (under `code`) when the blueprint's zone is not among `zones` offering `what`."""
    bp = ctx.blueprint
    if not zones:
        yield ctx.finding(
            code,
            path,
            f"the catalog lists no zones for {what}",
            hint=note or "check availability before deploying",
            severity=Severity.WARNING,
        )
        return
    if bp.zone not in zones:
        in_region = [z for z in zones if z.startswith(bp.region + "-")]
        hint = (
            f"zones of {bp.region} that offer it: {listing(in_region)}"
            if in_region
            else f"zones that offer it: {listing(zones)}"
        )
        yield ctx.finding(code, path, f"{what} is not offered in zone {bp.zone}", hint=hint)


def check_fabric(ctx: RuleContext) -> Iterator[Finding]:
    bp, catalog = ctx.blueprint, ctx.catalog
    for index, group in enumerate(bp.node_groups):
        machine = catalog.machine_type(bp.cloud, group.machine_type)
        if machine is None or group.fabric in {"auto", "none"} or group.fabric == machine.fabric:
            continue
        yield ctx.finding(
            "BP204",
            ("node_groups", index, "fabric"),
            f"{machine.name} has no {group.fabric} fabric; its fabric is {machine.fabric}",
            hint=f"use fabric: auto (= {machine.fabric}) or fabric: none",
        )


def check_placement(ctx: RuleContext) -> Iterator[Finding]:
    bp, catalog = ctx.blueprint, ctx.catalog
    for index, group in enumerate(bp.node_groups):
        machine = catalog.machine_type(bp.cloud, group.machine_type)
        if machine is None:
            continue
        base = ("node_groups", index)
        placement = placement_of(group, machine)
        size = max_size(group)
        if placement == "none" and size > 1 and fabric_of(group, machine) is not None:
            yield ctx.finding(
                "BP215",
                (*base, "placement"),
                f"{size} nodes on {machine.fabric} without compact placement lose bandwidth",
                hint="remove `placement: none` (compact is the default for fabric groups)",
            )
        if group.placement_max_distance is not None and placement != "compact":
            yield ctx.finding(
                "BP205",
                (*base, "placement_max_distance"),
                "placement_max_distance needs compact placement",
                hint="remove it, or set placement: compact",
                at_key=True,
            )
        if not isinstance(machine, GcpMachineType) or placement != "compact":
            continue
        limits = machine.placement
        distance = group.placement_max_distance
        if distance is not None and (limits.min_max_distance is None or distance < limits.min_max_distance):
            allowed = (
                f"{limits.min_max_distance}-3"
                if limits.min_max_distance is not None
                else "none (it uses an accelerator topology)"
            )
            yield ctx.finding(
                "BP205",
                (*base, "placement_max_distance"),
                f"{machine.name} does not support max distance {distance}",
                hint=f"supported max distances: {allowed}",
            )
            continue
        limit = limits.limit(distance)
        if size > limit:
            where = f" at max distance {distance}" if distance is not None else ""
            size_path = (*base, "autoscaling", "max") if group.autoscaling else (*base, "count")
            yield ctx.finding(
                "BP205",
                size_path,
                f"compact placement holds at most {limit} {machine.name} VMs{where}; "
                f"the group can have {size}",
                hint="split the group, lower its size, or relax placement_max_distance",
            )


def check_gcp_fabric_addresses(ctx: RuleContext) -> Iterator[Finding]:
    """GCP fabrics need one address block per GPU network or RDMA subnet; the cluster range has 16."""
    bp, catalog = ctx.blueprint, ctx.catalog
    if bp.cloud != "gcp":
        return
    general = max(m.network.general_vpcs for m in catalog.gcp_machine_types.values())
    available = addressing.gcp_fabric_slots(general)
    needed: dict[str, int] = {}
    for index, group in enumerate(bp.node_groups):
        machine = catalog.gcp_machine_types.get(group.machine_type)
        fabric = fabric_of(group, machine) if machine is not None else None
        if machine is None or fabric is None:
            continue
        subnets = machine.network.gpu_vpcs + machine.network.rdma_subnets
        before = sum(needed.values())
        needed[fabric] = max(needed.get(fabric, 0), subnets)
        if sum(needed.values()) > available >= before:
            yield ctx.finding(
                "BP112",
                ("node_groups", index, "machine_type"),
                f"the fabrics {', '.join(needed)} need {sum(needed.values())} GPU network subnets; the "
                f"cluster range leaves {available} after the general and private services networks",
                hint="put node groups of different fabrics in separate clusters",
            )
