"""Catalog rules for storage: kind per cloud, tier, throughput, capacity grid."""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab.blueprint.models import FilestoreSpec, LustreSpec
from clusterfab.blueprint.overlay import environment_protected
from clusterfab.catalog.models import StorageTier
from clusterfab.core.findings import Finding
from clusterfab.core.hints import did_you_mean, listing
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


def check_storage_protection(ctx: RuleContext) -> Iterator[Finding]:
    """A file system left unprotected in an environment that protects its stateful resources: what the
    policy pack refuses (clusterfab-protect-stateful) after the plan, said first and at its line."""
    environment = ctx.environment
    if environment is None or not environment_protected(ctx.blueprint.environments, environment):
        return
    for index, storage in enumerate(ctx.blueprint.storage):
        if storage.protect is False:
            yield ctx.finding(
                "BP155",
                ("storage", index, "protect"),
                f"storage {storage.name} is unprotected in environment {environment}, which protects its "
                "stateful resources: the policy pack refuses the plan",
                hint=f"remove `protect: false`, or, if nothing in {environment} needs keeping, say so with "
                f"`protected: false` under environments.{environment}",
            )


def check_storage(ctx: RuleContext) -> Iterator[Finding]:
    bp, catalog, cloud = ctx.blueprint, ctx.catalog, ctx.cloud
    for index, storage in enumerate(bp.storage):
        base = ("storage", index)
        if storage.kind not in cloud.storage_kinds():
            yield ctx.finding(
                "BP210",
                (*base, "kind"),
                f"{storage.kind} is not available on {bp.cloud}",
                hint=f"on {cloud.title} use kind: {' or '.join(cloud.storage_kinds())}",
            )
            continue
        tier_name = _tier_name(ctx, storage)
        if isinstance(storage, LustreSpec):
            yield from _throughput(ctx, storage, index, tier_name)
        if tier_name is None:
            continue
        tier = catalog.storage_tier(bp.cloud, storage.kind, tier_name)
        if tier is None and isinstance(storage, FilestoreSpec):
            tiers = [t.tier for t in catalog.storage_tiers_for(bp.cloud, "filestore")]
            yield ctx.finding(
                "BP217",
                (*base, "tier"),
                f"no Filestore tier '{tier_name}' in the catalog",
                hint=did_you_mean(tier_name, tiers, what="Filestore tiers"),
            )
        if tier is None:
            continue  # for Lustre, _throughput reported the unknown tier
        if isinstance(storage, LustreSpec) and storage.efa and not tier.efa:
            efa_tiers = [t.tier for t in catalog.storage_tiers_for(bp.cloud, "lustre") if t.efa]
            yield ctx.finding(
                "BP220",
                (*base, "efa"),
                f"{cloud.storage_title('lustre', tier.tier)} cannot be EFA-enabled",
                hint=f"use a tier that can: {listing(efa_tiers)}" if efa_tiers else "remove `efa`",
            )
        if storage.kms_key is not None and not tier.customer_managed_key:
            yield _keyless_tier(ctx, storage, index, tier)
        yield from _capacity_grid(ctx, storage, base, tier)


def _capacity_grid(
    ctx: RuleContext, storage: LustreSpec | FilestoreSpec, base: tuple[str | int, ...], tier: StorageTier
) -> Iterator[Finding]:
    """BP208: the capacity within the tier's range and on its step grid."""
    cloud, tier_name = ctx.cloud, tier.tier
    capacity = storage.capacity_gib
    if not tier.fits(capacity) and tier.capacity_unit == "TiB":
        yield _off_tib_grid(ctx, (*base, "capacity_gib"), capacity, tier)
    elif not tier.fits(capacity):
        label = cloud.storage_title(storage.kind, tier_name)
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


def _tier_name(ctx: RuleContext, storage: LustreSpec | FilestoreSpec) -> str | None:
    if isinstance(storage, FilestoreSpec):
        return storage.tier
    return ctx.cloud.lustre_tier(storage.deployment, storage.throughput_mbps_per_tib)


def _throughput(
    ctx: RuleContext, storage: LustreSpec, index: int, tier_name: str | None
) -> Iterator[Finding]:
    catalog, cloud = ctx.catalog, ctx.cloud
    path = ("storage", index, "throughput_mbps_per_tib")
    value = storage.throughput_mbps_per_tib
    tier = catalog.storage_tier(cloud.name, "lustre", tier_name) if tier_name is not None else None
    if tier is None:
        # The cloud picks its Lustre tier by throughput (Managed Lustre), and none fits.
        tiers = catalog.storage_tiers_for(cloud.name, "lustre")
        offered = sorted({t for candidate in tiers for t in candidate.throughputs})
        if value is None:
            yield ctx.finding(
                "BP209",
                path,
                f"{cloud.lustre_product} needs a throughput tier",
                hint=f"add `throughput_mbps_per_tib:` one of {listing(offered)}",
                anchor=("storage", index, "name"),
            )
        else:
            yield ctx.finding(
                "BP209",
                path,
                f"{cloud.lustre_product} has no {value} MB/s per TiB tier",
                hint=f"use one of {listing(offered)}",
            )
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
    if value is None and tier.throughputs:
        yield ctx.finding(
            "BP209",
            path,
            f"{tier.tier} needs a throughput per TiB",
            hint=f"add `throughput_mbps_per_tib:` one of {listing(tier.throughputs)}",
            anchor=("storage", index, "name"),
        )
    elif value is not None and value not in tier.throughputs:
        yield ctx.finding(
            "BP209",
            path,
            f"{tier.tier} offers no {value} MB/s per TiB",
            hint=f"use one of {listing(tier.throughputs)}",
        )


def _keyless_tier(
    ctx: RuleContext, storage: LustreSpec | FilestoreSpec, index: int, tier: StorageTier
) -> Finding:
    keyed = [t for t in ctx.catalog.storage_tiers_for(ctx.cloud.name, storage.kind) if t.customer_managed_key]
    # Lustre tiers follow from `deployment` (FSx) or the throughput (Managed Lustre); Filestore's are named.
    if isinstance(storage, LustreSpec):
        choice = " or ".join(sorted({f"deployment: {t.deployment}" for t in keyed}))
    else:
        choice = f"tier: {' or '.join(t.tier for t in keyed)}"
    return ctx.finding(
        "BP223",
        ("storage", index, "kms_key"),
        f"{ctx.cloud.storage_title(storage.kind, tier.tier)} is always encrypted with the service's own key",
        hint=f"remove `kms_key`, or use {choice}" if keyed else "remove `kms_key`",
    )


def _off_tib_grid(ctx: RuleContext, path: tuple[str | int, ...], capacity: int, tier: StorageTier) -> Finding:
    """BP208 for a tier sized in TiB (one band): the service rounds a size up, never down, so the hint gives
    the valid size just above (Azure Managed Lustre)."""
    band, tib = tier.capacity_bands[0], 1024
    low, step = band.min_gib // tib, band.step_gib // tib
    high = None if band.max_gib is None else band.max_gib // tib
    label = ctx.cloud.storage_title("lustre", tier.tier)
    grid = f"{low}-{high} TiB in steps of {step} TiB" if high is not None else f"multiples of {step} TiB"
    asked = f"{capacity} GiB ({capacity / tib:g} TiB)"
    if high is not None and capacity > band.max_gib:  # type: ignore[operator]
        message = f"{asked} is above the {label} maximum of {high} TiB"
        hint = f"at most {high} TiB = {band.max_gib} GiB (grid: {grid}; larger sizes only on request)"
    else:
        up = max(low, -(-capacity // band.step_gib) * step)
        below = "below the minimum" if capacity < band.min_gib else "not a multiple of the step"
        message = f"{asked} is {below} of {label} ({grid})"
        hint = f"rounded up: {up} TiB = {up * tib} GiB (the service rounds a size up, never down)"
    return ctx.finding("BP208", path, message, hint=hint)
