"""Catalog rules for storage: kind per cloud, tier, throughput, capacity grid."""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab.blueprint.models import FilestoreSpec, LustreSpec
from clusterfab.catalog.models import StorageTier
from clusterfab.core.findings import Finding
from clusterfab.core.hints import listing
from clusterfab.resolve import storage_tier_name
from clusterfab.rules.context import RuleContext


def grid_text(tier: StorageTier) -> str:
    """The capacity grid in words: '1200, then multiples of 2400 from 2400'."""
    parts = []
    for band in tier.capacity_bands:
        if band.min_gib == band.max_gib:
            parts.append(f"{band.min_gib}")
        elif band.max_gib is None:
            parts.append(f"multiples of {band.step_gib} from {band.min_gib}")
        else:
            parts.append(f"{band.min_gib}-{band.max_gib} in steps of {band.step_gib}")
    return ", then ".join(parts)


def _label(storage: LustreSpec | FilestoreSpec, cloud: str, tier: str) -> str:
    if isinstance(storage, FilestoreSpec):
        return f"Filestore {tier}"
    return f"FSx for Lustre {tier}" if cloud == "aws" else f"Managed Lustre tier {tier}"


def check_storage(ctx: RuleContext) -> Iterator[Finding]:
    bp, catalog = ctx.blueprint, ctx.catalog
    for index, storage in enumerate(bp.storage):
        base = ("storage", index)
        if not catalog.storage_tiers_for(bp.cloud, storage.kind):
            yield ctx.finding(
                "BP210",
                (*base, "kind"),
                f"{storage.kind} is not available on {bp.cloud}",
                hint="on AWS use kind: lustre (FSx for Lustre)"
                if bp.cloud == "aws"
                else "use kind: lustre or filestore",
            )
            continue
        tier_name = storage_tier_name(storage, bp.cloud)
        if isinstance(storage, LustreSpec):
            yield from _throughput(ctx, storage, index, tier_name)
        if tier_name is None:
            continue
        tier = catalog.storage_tier(bp.cloud, storage.kind, tier_name)
        if tier is None:
            continue  # _throughput reported the unknown tier
        capacity = storage.capacity_gib
        if not tier.fits(capacity):
            label = _label(storage, bp.cloud, tier_name)
            low, high = tier.capacity_bands[0].min_gib, tier.capacity_bands[-1].max_gib
            if capacity < low:
                message = f"{capacity} GiB is below the {label} minimum of {low} GiB"
            elif high is not None and capacity > high:
                message = f"{capacity} GiB is above the {label} maximum of {high} GiB"
            else:
                message = f"{capacity} GiB is not on the {label} capacity grid"
            nearest = " or ".join(str(v) for v in tier.nearest(capacity))
            yield ctx.finding(
                "BP208",
                (*base, "capacity_gib"),
                message,
                hint=f"nearest valid: {nearest} GiB (grid: {grid_text(tier)})",
            )


def _throughput(
    ctx: RuleContext, storage: LustreSpec, index: int, tier_name: str | None
) -> Iterator[Finding]:
    bp, catalog = ctx.blueprint, ctx.catalog
    path = ("storage", index, "throughput_mbps_per_tib")
    value = storage.throughput_mbps_per_tib
    if bp.cloud == "gcp":
        offered = sorted(int(t.tier) for t in catalog.storage_tiers_for("gcp", "lustre"))
        if value is None:
            yield ctx.finding(
                "BP209",
                path,
                "Managed Lustre needs a throughput tier",
                hint=f"add `throughput_mbps_per_tib:` one of {listing(offered)}",
                anchor=("storage", index, "name"),
            )
        elif value not in offered:
            yield ctx.finding(
                "BP209",
                path,
                f"Managed Lustre has no {value} MB/s per TiB tier",
                hint=f"use one of {listing(offered)}",
            )
        return
    tier = catalog.storage_tier("aws", "lustre", tier_name or "")
    if tier is None:
        return
    if tier.fixed_throughput is not None:
        if value is not None and value != tier.fixed_throughput:
            yield ctx.finding(
                "BP209",
                path,
                f"{tier.tier} has a fixed {tier.fixed_throughput} MB/s per TiB",
                hint="remove it, or use deployment: persistent to choose a throughput",
            )
        return
    if value is None:
        yield ctx.finding(
            "BP209",
            path,
            f"{tier.tier} needs a throughput per TiB",
            hint=f"add `throughput_mbps_per_tib:` one of {listing(tier.throughputs)}",
            anchor=("storage", index, "name"),
        )
    elif value not in tier.throughputs:
        yield ctx.finding(
            "BP209",
            path,
            f"{tier.tier} offers no {value} MB/s per TiB",
            hint=f"use one of {listing(tier.throughputs)}",
        )
