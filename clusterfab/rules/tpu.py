"""Catalog rules for TPU slices: generation, topology, zone."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping

from clusterfab.catalog.models import TpuTopology
from clusterfab.core.findings import Finding
from clusterfab.core.hints import did_you_mean, listing
from clusterfab.rules.compute import zone_offering
from clusterfab.rules.context import RuleContext


def check_tpu_topology(ctx: RuleContext) -> Iterator[Finding]:
    generations = sorted(ctx.catalog.tpu_generations)
    for index, tpu in enumerate(ctx.blueprint.tpu_slices):
        generation = ctx.catalog.tpu_generations.get(tpu.generation)
        if generation is None:
            yield ctx.finding(
                "BP217",
                ("tpu_slices", index, "generation"),
                f"no TPU generation '{tpu.generation}' in the catalog",
                hint=did_you_mean(tpu.generation, generations, what="TPU generations"),
            )
            continue
        if tpu.topology in generation.topologies:
            continue
        valid = list(generation.topologies)
        dims = sorted(int(d) for d in tpu.topology.split("x"))
        canonical = "x".join(str(d) for d in dims)
        if len(dims) != generation.dimensions:
            hint = (
                f"{tpu.generation} topologies have {generation.dimensions} dimensions, "
                f"e.g. {listing(valid, 6)}"
            )
        elif canonical in generation.topologies:
            hint = f"write it as {canonical} (dimensions in non-decreasing order)"
        else:
            near = nearest_topologies(dims, generation.topologies)
            hint = f"nearest {tpu.generation} topologies: {', '.join(near)}"
        yield ctx.finding(
            "BP104",
            ("tpu_slices", index, "topology"),
            f"'{tpu.topology}' is not a {tpu.generation} topology",
            hint=hint,
        )


def nearest_topologies(dims: list[int], topologies: Mapping[str, TpuTopology], count: int = 4) -> list[str]:
    """The valid topologies closest to `dims` in size (chips), then shape: '4x4x3' -> 4x4x4 (64 chips),
    2x4x4 (32 chips), ... so the hint offers the slice just above and just below what was asked."""
    wanted = math.prod(dims)

    def distance(item: tuple[str, TpuTopology]) -> tuple[float, int]:
        name, shape = item
        sides = sorted(int(d) for d in name.split("x"))
        return abs(math.log(shape.chips / wanted)), sum(abs(a - b) for a, b in zip(sides, dims, strict=False))

    ranked = sorted(topologies.items(), key=distance)[:count]
    return [f"{name} ({shape.chips:,} chips)" for name, shape in ranked]


def check_tpu_zone(ctx: RuleContext) -> Iterator[Finding]:
    bp, cloud = ctx.blueprint, ctx.cloud
    if not cloud.offers_tpus or cloud.region_of_zone(ctx.catalog, bp.zone) != bp.region:
        return
    for index, tpu in enumerate(bp.tpu_slices):
        generation = ctx.catalog.tpu_generations.get(tpu.generation)
        if generation is None:
            continue
        yield from zone_offering(
            ctx,
            "BP207",
            what=f"TPU {tpu.generation}",
            zones=generation.zones,
            note=generation.unconfirmed.get("zones"),
            path=("tpu_slices", index, "generation"),
        )
