"""What a blueprint costs, from the catalog's prices (architecture §2 flow 3, §5).

Pure and offline: a blueprint, the catalog and a date in, an estimate out; nothing here imports
Pulumi. Every item of the blueprint appears in the estimate, priced or not: a price the catalog lacks
leaves the item's money fields None, with a warning, and out of the totals (never a silent $0).

Money is exact decimal arithmetic on the catalog's figures as written, so 16 x $55.04 is $880.64 and
not 880.6400000000001. Nothing is rounded here: renderers round for people, the JSON keeps full
precision. A month is 730 hours, both ways: compute is priced per hour (monthly = hourly x 730) and
storage per GiB-month (hourly = monthly / 730).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from clusterfab.blueprint.models import (
    Blueprint,
    FilestoreSpec,
    LustreSpec,
    NodeGroupSpec,
    TpuSliceSpec,
)
from clusterfab.catalog import Catalog
from clusterfab.catalog.models import Confidence, Price, PriceUnit, PricingModel
from clusterfab.core.vocab import CapacityKind
from clusterfab.resolve import max_size, min_size, storage_tier_name

HOURS_PER_MONTH = Decimal(730)
"""The month of every monthly figure (architecture §5), as AWS and GCP price pages use it."""

ItemKind = Literal["node_group", "tpu_slice", "storage"]
WarningReason = Literal["missing", "stale", "unconfirmed", "fallback"]
ItemPath = tuple[str | int, ...]

_FALLBACK_NOTES: dict[str, str] = {
    "reservation": "discounts from commitments are not applied",
    "flex_start": "DWS flex-start prices are unconfirmed",
}
"""Capacity kinds priced at on-demand when the catalog has no price of their own, and why that is shaky."""

_SERVICES: dict[tuple[str, str], str] = {
    ("aws", "lustre"): "fsx-lustre",
    ("gcp", "lustre"): "managed-lustre",
    ("gcp", "filestore"): "filestore",
    ("aws", "filestore"): "filestore",
}
"""The `<service>` part of storage skus in prices.yaml (`<service>/<tier>[/<throughput>]`)."""


@dataclass(frozen=True, slots=True)
class CostItem:
    """One priced (or unpriced) part of the blueprint.

    `quantity` is what the unit price multiplies: nodes (at an autoscaled group's max, with the min in
    `min_quantity`), TPU chips over all slices, or GiB of storage. `capacity` is the capacity kind the
    blueprint asks for; `pricing_model` the catalog price applied (they differ when a reservation or
    flex-start is priced at on-demand). Money fields are None when the price is missing.
    """

    name: str
    kind: ItemKind
    path: ItemPath
    sku: str
    region: str
    capacity: CapacityKind | None
    pricing_model: PricingModel
    quantity: int
    min_quantity: int | None
    unit: PriceUnit
    price: Price | None
    unit_price_usd: Decimal | None
    hourly_usd: Decimal | None
    monthly_usd: Decimal | None

    @property
    def priced(self) -> bool:
        return self.price is not None

    @property
    def source(self) -> str | None:
        return self.price.source if self.price else None

    @property
    def as_of(self) -> dt.date | None:
        return self.price.as_of if self.price else None

    @property
    def confidence(self) -> Confidence | None:
        return self.price.confidence if self.price else None


@dataclass(frozen=True, slots=True)
class CostWarning:
    """A caveat about one item's price: missing, stale, unconfirmed, or a stand-in (fallback)."""

    item: str
    path: ItemPath
    reason: WarningReason
    detail: str
    """What is wrong with the price, without the item's name (findings name the field instead)."""

    @property
    def message(self) -> str:
        tail = "; left out of the totals" if self.reason == "missing" else ""
        return f"{self.item}: {self.detail}{tail}"


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """The blueprint's limits (None: no limit) against the estimate's totals."""

    max_hourly_usd: Decimal | None
    max_monthly_usd: Decimal | None
    hourly_exceeded: bool
    monthly_exceeded: bool

    @property
    def ok(self) -> bool:
        return not (self.hourly_exceeded or self.monthly_exceeded)


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """Items, totals over the priced items, warnings and the budget verdict for one blueprint."""

    name: str
    cloud: str
    region: str
    items: tuple[CostItem, ...]
    warnings: tuple[CostWarning, ...]
    hourly_usd: Decimal
    monthly_usd: Decimal
    hours: Decimal | None
    run_usd: Decimal | None
    budget: BudgetStatus
    catalog_version: str
    catalog_as_of: dt.date

    @property
    def unpriced(self) -> tuple[CostItem, ...]:
        """Items left out of the totals because the catalog has no price for them."""
        return tuple(item for item in self.items if not item.priced)


def estimate_cost(
    blueprint: Blueprint, catalog: Catalog, *, hours: float | None = None, today: dt.date
) -> CostEstimate:
    """Price every node group, TPU slice and storage item of `blueprint` at full size.

    Args:
        blueprint: a validated blueprint (base or merged with an environment).
        catalog: where the prices come from.
        hours: length of a run to price (run_usd); None leaves run_usd None.
        today: the date prices are judged stale against (a parameter, so results are reproducible).
    """
    estimator = _Estimator(blueprint, catalog, today)
    for index, group in enumerate(blueprint.node_groups):
        estimator.node_group(index, group)
    for index, tpu in enumerate(blueprint.tpu_slices):
        estimator.tpu_slice(index, tpu)
    for index, storage in enumerate(blueprint.storage):
        estimator.storage(index, storage)

    items = tuple(estimator.items)
    hourly = sum((i.hourly_usd for i in items if i.hourly_usd is not None), Decimal(0))
    monthly = sum((i.monthly_usd for i in items if i.monthly_usd is not None), Decimal(0))
    run_hours = None if hours is None else Decimal(str(hours))
    return CostEstimate(
        name=blueprint.name,
        cloud=blueprint.cloud,
        region=blueprint.region,
        items=items,
        warnings=tuple(estimator.warnings),
        hourly_usd=hourly,
        monthly_usd=monthly,
        hours=run_hours,
        run_usd=None if run_hours is None else hourly * run_hours,
        budget=_budget(blueprint, hourly, monthly),
        catalog_version=catalog.version,
        catalog_as_of=catalog.index.as_of,
    )


def monthly_budget_limit(blueprint: Blueprint) -> float | None:
    """The monthly amount of the cloud budget: max_monthly_usd, else max_hourly_usd over a month."""
    budget = blueprint.budget
    if budget is None:
        return None
    if budget.max_monthly_usd is not None:
        return budget.max_monthly_usd
    if budget.max_hourly_usd is not None:
        return float(money(budget.max_hourly_usd) * HOURS_PER_MONTH)
    return None


def money(usd: float) -> Decimal:
    """A figure from the catalog or the blueprint as the exact decimal that was written."""
    return Decimal(str(usd))


def _budget(blueprint: Blueprint, hourly: Decimal, monthly: Decimal) -> BudgetStatus:
    spec = blueprint.budget
    max_hourly = money(spec.max_hourly_usd) if spec and spec.max_hourly_usd is not None else None
    max_monthly = money(spec.max_monthly_usd) if spec and spec.max_monthly_usd is not None else None
    return BudgetStatus(
        max_hourly_usd=max_hourly,
        max_monthly_usd=max_monthly,
        hourly_exceeded=max_hourly is not None and hourly > max_hourly,
        monthly_exceeded=max_monthly is not None and monthly > max_monthly,
    )


class _Estimator:
    """Builds the items and warnings of one estimate, in blueprint order."""

    def __init__(self, blueprint: Blueprint, catalog: Catalog, today: dt.date) -> None:
        self.blueprint = blueprint
        self.catalog = catalog
        self.today = today
        self.items: list[CostItem] = []
        self.warnings: list[CostWarning] = []

    def node_group(self, index: int, group: NodeGroupSpec) -> None:
        low, high = min_size(group), max_size(group)
        self._compute(
            name=group.name,
            kind="node_group",
            path=("node_groups", index),
            sku=group.machine_type,
            capacity=group.capacity.kind,
            quantity=high,
            min_quantity=low if group.autoscaling is not None else None,
            unit="hour",
        )

    def tpu_slice(self, index: int, tpu: TpuSliceSpec) -> None:
        sku = f"tpu-{tpu.generation}"
        generation = self.catalog.tpu_generations.get(tpu.generation)
        topology = generation.topologies.get(tpu.topology) if generation else None
        if topology is None:
            # Only an invalid blueprint gets here (validation reports the topology); without a chip
            # count there is nothing to multiply, so the item is unpriced rather than $0.
            self._missing(
                name=tpu.name,
                kind="tpu_slice",
                path=("tpu_slices", index),
                sku=sku,
                capacity=tpu.capacity.kind,
                quantity=0,
                min_quantity=None,
                unit="chip_hour",
                detail=f"topology {tpu.topology} of {tpu.generation} is not in the catalog, so its "
                "chips cannot be counted",
            )
            return
        self._compute(
            name=tpu.name,
            kind="tpu_slice",
            path=("tpu_slices", index),
            sku=sku,
            capacity=tpu.capacity.kind,
            quantity=topology.chips * tpu.slices,
            min_quantity=None,
            unit="chip_hour",
        )

    def storage(self, index: int, storage: LustreSpec | FilestoreSpec) -> None:
        cloud, region = self.blueprint.cloud, self.blueprint.region
        path: ItemPath = ("storage", index)
        sku = self._storage_sku(storage)
        price = self.catalog.price(cloud, sku, region, "on_demand")
        if price is None:
            self._missing(
                name=storage.name,
                kind="storage",
                path=path,
                sku=sku,
                capacity=None,
                quantity=storage.capacity_gib,
                min_quantity=None,
                unit="gib_month",
                detail=f"no price for {sku} in {region}",
            )
            return
        unit_price = money(price.usd)
        monthly = unit_price * storage.capacity_gib
        self._add(
            CostItem(
                name=storage.name,
                kind="storage",
                path=path,
                sku=sku,
                region=region,
                capacity=None,
                pricing_model="on_demand",
                quantity=storage.capacity_gib,
                min_quantity=None,
                unit=price.unit,
                price=price,
                unit_price_usd=unit_price,
                hourly_usd=monthly / HOURS_PER_MONTH,
                monthly_usd=monthly,
            )
        )

    def _storage_sku(self, storage: LustreSpec | FilestoreSpec) -> str:
        cloud = self.blueprint.cloud
        service = _SERVICES[(cloud, storage.kind)]
        tier = storage_tier_name(storage, cloud)
        if tier is None:
            return service
        sku = f"{service}/{tier}"
        # FSx prices PERSISTENT_2 per throughput level; the GCP Managed Lustre tier is the throughput.
        if isinstance(storage, LustreSpec) and tier == "PERSISTENT_2" and storage.throughput_mbps_per_tib:
            sku += f"/{storage.throughput_mbps_per_tib}"
        return sku

    def _compute(
        self,
        *,
        name: str,
        kind: ItemKind,
        path: ItemPath,
        sku: str,
        capacity: CapacityKind,
        quantity: int,
        min_quantity: int | None,
        unit: PriceUnit,
    ) -> None:
        cloud, region = self.blueprint.cloud, self.blueprint.region
        model: PricingModel = capacity  # capacity kinds are named after their pricing models
        price = self.catalog.price(cloud, sku, region, model)
        fallback = price is None and capacity in _FALLBACK_NOTES
        if fallback:
            price = self.catalog.price(cloud, sku, region, "on_demand")
        if price is None:
            tried = f"{model} or on_demand" if fallback else model
            self._missing(
                name=name,
                kind=kind,
                path=path,
                sku=sku,
                capacity=capacity,
                quantity=quantity,
                min_quantity=min_quantity,
                unit=unit,
                detail=f"no {tried} price for {sku} in {region}",
            )
            return
        if fallback:
            self.warnings.append(
                CostWarning(
                    name,
                    path,
                    "fallback",
                    f"{capacity} priced at on-demand; the catalog has no {capacity} price for "
                    f"{sku} in {region} ({_FALLBACK_NOTES[capacity]})",
                )
            )
        unit_price = money(price.usd)
        hourly = unit_price * quantity
        self._add(
            CostItem(
                name=name,
                kind=kind,
                path=path,
                sku=sku,
                region=region,
                capacity=capacity,
                pricing_model=price.pricing_model,
                quantity=quantity,
                min_quantity=min_quantity,
                unit=price.unit,
                price=price,
                unit_price_usd=unit_price,
                hourly_usd=hourly,
                monthly_usd=hourly * HOURS_PER_MONTH,
            )
        )

    def _add(self, item: CostItem) -> None:
        """Record a priced item and the caveats of its price (age, confidence)."""
        self.items.append(item)
        price = item.price
        if price is None:
            return
        what = f"the {price.pricing_model} price of {item.sku} in {item.region}"
        note = f"; note: {price.note}" if price.note else ""
        unconfirmed = price.confidence == "unconfirmed"
        if self.catalog.is_stale(price.as_of, self.today):
            age = (self.today - price.as_of).days
            limit = self.catalog.index.stale_after_days
            self.warnings.append(
                CostWarning(
                    item.name,
                    item.path,
                    "stale",
                    f"{what} is from {price.as_of.isoformat()}, {age} days old (stale after {limit} days; "
                    f"source {price.source}){'' if unconfirmed else note}",
                )
            )
        if unconfirmed:
            self.warnings.append(
                CostWarning(
                    item.name,
                    item.path,
                    "unconfirmed",
                    f"{what} is unconfirmed (source {price.source}){note}",
                )
            )

    def _missing(
        self,
        *,
        name: str,
        kind: ItemKind,
        path: ItemPath,
        sku: str,
        capacity: CapacityKind | None,
        quantity: int,
        min_quantity: int | None,
        unit: PriceUnit,
        detail: str,
    ) -> None:
        self.items.append(
            CostItem(
                name=name,
                kind=kind,
                path=path,
                sku=sku,
                region=self.blueprint.region,
                capacity=capacity,
                pricing_model=capacity or "on_demand",
                quantity=quantity,
                min_quantity=min_quantity,
                unit=unit,
                price=None,
                unit_price_usd=None,
                hourly_usd=None,
                monthly_usd=None,
            )
        )
        self.warnings.append(CostWarning(name, path, "missing", detail))
