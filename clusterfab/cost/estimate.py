"""What a blueprint costs, from the catalog's prices (architecture §2 flow 3, §5).

Pure and offline: a resolved blueprint (ClusterSpec), the catalog and a date in, an estimate out;
nothing here imports Pulumi. Every item of the blueprint appears in the estimate, priced or not: a
price the catalog lacks leaves the item's money fields None, with a warning, and out of the totals
(never a silent $0).

An autoscaled node group is priced at its max (the totals and the budget verdict: what the cluster can
cost) and at its min (what it costs idle); with a utilisation, also in between: its min nodes full
time and the nodes above the min that share of the time.

A capacity block with an end (`capacity.ends_at`) is priced for what is left of its term: from the start
of `today` (UTC) to its end. Its monthly figure counts only those hours when fewer than a month's are
left (it does not run after its end), a run counts it only until its end, and its item carries the end,
the hours left and what they cost.

Money is exact decimal arithmetic on the catalog's figures as written, so 16 x $55.04 is $880.64 and
not 880.6400000000001. Nothing is rounded here: renderers round for people, the JSON keeps full
precision. A month is 730 hours, both ways: compute is priced per hour (monthly = hourly x 730) and
storage per GiB-month (hourly = monthly / 730).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal, Protocol

from clusterfab.catalog import Catalog
from clusterfab.catalog.models import Confidence, Price, PriceUnit, PricingModel, StorageTier
from clusterfab.core.dates import start_of
from clusterfab.core.items import MONITORING_ITEM
from clusterfab.core.plugins import load_scheduler
from clusterfab.core.vocab import CapacityKind, Cloud
from clusterfab.spec import (
    Budget,
    CapacityBlock,
    ClusterSpec,
    LustreStorage,
    Monitoring,
    NodeGroup,
    Storage,
    Team,
    TpuSlice,
)

HOURS_PER_MONTH = Decimal(730)
"""The month of every monthly figure (architecture §5), as AWS and GCP price pages use it."""

MAX_RUN_HOURS = 100_000
"""Longest run `--hours` prices (about 11 years): a sanity limit that keeps every figure printable."""

ItemKind = Literal["node_group", "tpu_slice", "storage", "monitoring", "controller", "login"]
WarningReason = Literal["missing", "stale", "unconfirmed", "fallback"]
ItemPath = tuple[str | int, ...]

_FALLBACK_NOTES: dict[str, str] = {
    "reservation": "discounts from commitments are not applied",
    "flex_start": "DWS flex-start prices are unconfirmed",
}
"""Capacity kinds priced at on-demand when the catalog has no price of their own, and why that is shaky."""


@dataclass(frozen=True, slots=True)
class CostLine:
    """What an item is bought as: a sku, a capacity kind and a quantity, before any price is applied.

    `quantity` is what the unit price multiplies: nodes (at an autoscaled group's max, with the min in
    `min_quantity`), TPU chips over all slices, or GiB of storage (`capacity` None: storage is sold
    one way). `clusterfab cost` makes lines from a ClusterSpec; the policy pack from planned resources.
    """

    name: str
    kind: ItemKind
    path: ItemPath
    sku: str
    capacity: CapacityKind | None
    quantity: int
    min_quantity: int | None
    unit: PriceUnit
    ends_at: dt.datetime | None = None
    """When the capacity ends (a capacity block's `ends_at`): it costs nothing after."""


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
    """The next 730 hours' cost; of a capacity block with less than that left, only the hours left."""
    ends_at: dt.datetime | None = None
    """When the capacity ends (a capacity block's end); None: it runs on."""
    term_hours: Decimal | None = None
    """The hours left until `ends_at`, from the start of the estimate's day (UTC); None without an end."""

    @property
    def term_usd(self) -> Decimal | None:
        """What the hours left until `ends_at` cost; None without an end or a price."""
        if self.term_hours is None or self.hourly_usd is None:
            return None
        return self.hourly_usd * self.term_hours

    def run_hours(self, hours: Decimal) -> Decimal:
        """How many of a run's `hours` the item is up: all of them, or those before its end."""
        return hours if self.term_hours is None else min(hours, self.term_hours)

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

    @property
    def scales(self) -> bool:
        """An autoscaled group: its cost runs from `min_quantity` to `quantity` nodes."""
        return self.min_quantity is not None

    def quantity_at(self, utilisation: Decimal) -> Decimal:
        """The mean number of nodes up with the `min_quantity` nodes always up and the
        `quantity - min_quantity` above them up a fraction `utilisation` (0 to 1) of the time: 0 is the
        item at its min, 1 at its max. An item that does not scale is its `quantity` at any utilisation."""
        if self.min_quantity is None:
            return Decimal(self.quantity)
        return self.min_quantity + (self.quantity - self.min_quantity) * utilisation

    def hourly_at(self, utilisation: Decimal) -> Decimal | None:
        """The hourly cost at `quantity_at(utilisation)`."""
        if self.min_quantity is None or self.unit_price_usd is None:
            return self.hourly_usd
        return self.unit_price_usd * self.quantity_at(utilisation)

    def monthly_at(self, utilisation: Decimal) -> Decimal | None:
        """`hourly_at` over a month (only node groups scale, and they are priced per hour; a capacity block,
        the one item with an end, never scales)."""
        if self.min_quantity is None:
            return self.monthly_usd
        hourly = self.hourly_at(utilisation)
        return None if hourly is None else hourly * HOURS_PER_MONTH

    @property
    def min_hourly_usd(self) -> Decimal | None:
        """The hourly cost at an autoscaled group's min; every other item's `hourly_usd`."""
        return self.hourly_at(Decimal(0))

    @property
    def min_monthly_usd(self) -> Decimal | None:
        return self.monthly_at(Decimal(0))


@dataclass(frozen=True, slots=True)
class CostWarning:
    """A caveat about one item's price: missing, stale, unconfirmed, or a stand-in (fallback)."""

    item: str
    path: ItemPath
    reason: WarningReason
    detail: str
    """What is wrong with the price, without the item's name (findings name the field instead)."""
    shared: str = ""
    """For a stale or unconfirmed price: what it says of the price without naming it ("from 2025-11-01, 392
    days old (...; source S)"), so that prices with the same caveat from one source are told once."""
    group: str = ""
    """Warnings with the same non-empty group say `shared` of prices of one source, date and model."""

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
class TeamBudget:
    """A team's quota in dollars at the cluster's GPU price (None where no GPU of it is priced)."""

    name: str
    max_gpus: int
    gpu_hours_per_month: int | None
    usd_per_gpu_hour: Decimal | None
    """What a GPU-hour of the cluster costs: its priced node groups' hourly cost over their GPUs."""
    max_hourly_usd: Decimal | None
    """The team's max_gpus running for an hour."""
    monthly_usd: Decimal | None
    """The team's monthly GPU-hours it can reach (`reachable_gpu_hours` at most); None when the team has
    no monthly limit."""
    reachable_gpu_hours: int = 0
    """What the team can use in a month of HOURS_PER_MONTH: its max_gpus, or the cluster's GPUs when
    fewer, every hour. A monthly limit above it never binds and is not priced beyond it."""


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
    teams: tuple[TeamBudget, ...] = ()
    utilisation_percent: Decimal | None = None
    """`--utilisation`: how busy the autoscaled groups' nodes above their min are (0 to 100), or None."""
    not_priced: tuple[str, ...] = ()
    """Services the blueprint creates that the catalog has no price for (said beside the totals)."""
    priced_from: dt.datetime | None = None
    """The start of the estimate's day (UTC), from which the hours left of capacity with an end count."""

    @property
    def unpriced(self) -> tuple[CostItem, ...]:
        """Items left out of the totals because the catalog has no price for them."""
        return tuple(item for item in self.items if not item.priced)

    @property
    def ending(self) -> tuple[CostItem, ...]:
        """Items with an end (capacity blocks with `ends_at`), in blueprint order."""
        return tuple(item for item in self.items if item.ends_at is not None)

    @property
    def scales(self) -> bool:
        """Whether any item is an autoscaled group: then the totals have a min below their max."""
        return any(item.scales for item in self.items)

    @property
    def utilisation(self) -> Decimal | None:
        """`utilisation_percent` as a fraction (0 to 1), what `hourly_at` takes."""
        return None if self.utilisation_percent is None else self.utilisation_percent / 100

    def hourly_at(self, utilisation: Decimal) -> Decimal:
        """The total over the priced items (as `hourly_usd`) with the autoscaled groups at
        `utilisation` (CostItem.quantity_at): 0 at their min, 1 at their max (`hourly_usd`)."""
        return sum((h for i in self.items if (h := i.hourly_at(utilisation)) is not None), Decimal(0))

    def monthly_at(self, utilisation: Decimal) -> Decimal:
        return sum((m for i in self.items if (m := i.monthly_at(utilisation)) is not None), Decimal(0))

    @property
    def min_hourly_usd(self) -> Decimal:
        """The total with every autoscaled group at its min (`hourly_usd` is at their max)."""
        return self.hourly_at(Decimal(0))

    @property
    def min_monthly_usd(self) -> Decimal:
        return self.monthly_at(Decimal(0))

    @property
    def expected_hourly_usd(self) -> Decimal | None:
        """The total at `utilisation_percent` (min nodes full time, the rest that share of it), or None."""
        return None if self.utilisation is None else self.hourly_at(self.utilisation)

    @property
    def expected_monthly_usd(self) -> Decimal | None:
        return None if self.utilisation is None else self.monthly_at(self.utilisation)


def estimate_cost(
    spec: ClusterSpec,
    catalog: Catalog,
    *,
    hours: float | None = None,
    utilisation_percent: float | None = None,
    today: dt.date,
) -> CostEstimate:
    """Price every node group, TPU slice and storage item of `spec` at full size (and at min).

    Args:
        spec: a resolved blueprint (base or merged with an environment).
        catalog: where the prices come from.
        hours: length of a run to price (run_usd); None leaves run_usd None.
        utilisation_percent: how busy the autoscaled groups' nodes above their min are, 0 to 100
            (the expected totals); None leaves them None.
        today: the date prices are judged stale against (a parameter, so results are reproducible).
    """
    estimate = estimate_lines(
        cost_lines(spec),
        catalog,
        name=spec.name,
        cloud=spec.cloud,
        region=spec.region,
        budget=spec.budget,
        hours=hours,
        utilisation_percent=utilisation_percent,
        today=today,
    )
    not_priced = _scheduler(spec).unpriced(spec) if spec.scheduler is not None else ()
    if not_priced:
        estimate = dataclasses.replace(estimate, not_priced=not_priced)
    if not spec.teams:
        return estimate
    return dataclasses.replace(estimate, teams=team_budgets(spec.teams, estimate.items, spec.node_groups))


def team_budgets(
    teams: tuple[Team, ...], items: tuple[CostItem, ...], groups: tuple[NodeGroup, ...]
) -> tuple[TeamBudget, ...]:
    """Each team's quota priced at the cluster's mean GPU-hour price (exact for one kind of node)."""
    gpus_of = {g.name: g.gpus_per_node for g in groups}
    priced = [i for i in items if i.kind == "node_group" and i.hourly_usd is not None and gpus_of.get(i.name)]
    gpus = sum(i.quantity * gpus_of[i.name] for i in priced)
    hourly = sum((i.hourly_usd for i in priced if i.hourly_usd is not None), Decimal(0))
    per_gpu = hourly / gpus if gpus else None
    cluster_gpus = sum(g.max_gpus for g in groups)
    budgets = []
    for team in teams:
        reachable = int(min(team.max_gpus, cluster_gpus) * HOURS_PER_MONTH)
        limit = team.gpu_hours_per_month
        budgets.append(
            TeamBudget(
                name=team.name,
                max_gpus=team.max_gpus,
                gpu_hours_per_month=limit,
                usd_per_gpu_hour=per_gpu,
                max_hourly_usd=None if per_gpu is None else per_gpu * team.max_gpus,
                monthly_usd=None if per_gpu is None or limit is None else per_gpu * min(limit, reachable),
                reachable_gpu_hours=reachable,
            )
        )
    return tuple(budgets)


def cost_lines(spec: ClusterSpec) -> list[CostLine]:
    """The lines of a spec: its node groups, TPU slices, storage, monitoring node and the scheduler's hosts,
    in blueprint order."""
    lines = [_node_group_line(g) for g in spec.node_groups]
    lines += [_tpu_line(t) for t in spec.tpu_slices]
    lines += [_storage_line(s) for s in spec.storage]
    if spec.monitoring is not None:
        lines += _monitoring_lines(spec.monitoring)
    if spec.scheduler is not None:
        lines += _scheduler(spec).cost_lines(spec)
    return lines


class _Priced(Protocol):
    """What cost asks of the cluster's scheduler plugin (clusterfab.scheduler.SchedulerPlugin)."""

    def cost_lines(self, spec: ClusterSpec) -> list[CostLine]: ...

    def unpriced(self, spec: ClusterSpec) -> tuple[str, ...]: ...


def _scheduler(spec: ClusterSpec) -> _Priced:
    """The plugin of the cluster's scheduler, found by kind: it builds on cost, so cost does not import it."""
    assert spec.scheduler is not None
    found: _Priced = load_scheduler(spec.scheduler.kind)
    return found


def _monitoring_lines(monitoring: Monitoring) -> list[CostLine]:
    """The monitoring node, when the stack has one of its own (on the scheduler's controller it costs no
    more)."""
    if monitoring.host != "node" or monitoring.machine is None:
        return []
    line = CostLine(
        name=MONITORING_ITEM,
        kind="monitoring",
        path=monitoring.path,
        sku=monitoring.machine.name,
        capacity="on_demand",
        quantity=1,
        min_quantity=None,
        unit="hour",
    )
    return [line]


def _node_group_line(group: NodeGroup) -> CostLine:
    block = group.capacity
    return CostLine(
        name=group.name,
        kind="node_group",
        path=group.path,
        sku=group.machine.name,
        capacity=group.capacity.kind,
        quantity=group.max_size,
        min_quantity=group.min_size if group.autoscaled else None,
        unit="hour",
        ends_at=block.ends_at if isinstance(block, CapacityBlock) else None,
    )


def _tpu_line(tpu: TpuSlice) -> CostLine:
    return CostLine(
        name=tpu.name,
        kind="tpu_slice",
        path=tpu.path,
        sku=f"tpu-{tpu.generation.name}",
        capacity=tpu.capacity.kind,
        quantity=tpu.chips,
        min_quantity=None,
        unit="chip_hour",
    )


def storage_sku(tier: StorageTier, throughput_mbps_per_tib: int | None) -> str:
    """`<service>/<tier>[/<throughput>]`, as prices.yaml names storage."""
    sku = f"{tier.service}/{tier.tier}"
    # A tier with several throughputs (FSx PERSISTENT_2) is priced per throughput level.
    if len(tier.throughputs) > 1 and throughput_mbps_per_tib:
        sku += f"/{throughput_mbps_per_tib}"
    return sku


def _storage_line(storage: Storage) -> CostLine:
    throughput = storage.throughput_mbps_per_tib if isinstance(storage, LustreStorage) else None
    return CostLine(
        name=storage.name,
        kind="storage",
        path=storage.path,
        sku=storage_sku(storage.tier, throughput),
        capacity=None,
        quantity=storage.capacity_gib,
        min_quantity=None,
        unit="gib_month",
    )


def estimate_lines(
    lines: list[CostLine],
    catalog: Catalog,
    *,
    name: str,
    cloud: Cloud,
    region: str,
    budget: Budget | None,
    hours: float | None = None,
    utilisation_percent: float | None = None,
    today: dt.date,
) -> CostEstimate:
    """Price `lines` in `region` and judge the totals (at full size) against `budget`."""
    estimator = _Estimator(cloud, region, catalog, today)
    for line in lines:
        estimator.price(line)
    items = tuple(estimator.items)
    hourly = sum((i.hourly_usd for i in items if i.hourly_usd is not None), Decimal(0))
    monthly = sum((i.monthly_usd for i in items if i.monthly_usd is not None), Decimal(0))
    run_hours = None if hours is None else Decimal(str(hours))
    run = (
        None
        if run_hours is None
        else sum(
            (i.hourly_usd * i.run_hours(run_hours) for i in items if i.hourly_usd is not None), Decimal(0)
        )
    )
    return CostEstimate(
        name=name,
        cloud=cloud,
        region=region,
        items=items,
        warnings=tuple(estimator.warnings),
        hourly_usd=hourly,
        monthly_usd=monthly,
        hours=run_hours,
        run_usd=run,
        budget=_budget(budget, hourly, monthly),
        catalog_version=catalog.version,
        catalog_as_of=catalog.index.as_of,
        utilisation_percent=None if utilisation_percent is None else Decimal(str(utilisation_percent)),
        priced_from=estimator.now,
    )


def monthly_budget_limit(budget: Budget | None) -> Decimal | None:
    """The monthly amount of the cloud budget: max_monthly_usd, else max_hourly_usd over a month."""
    if budget is None:
        return None
    if budget.max_monthly_usd is not None:
        return budget.max_monthly_usd
    if budget.max_hourly_usd is not None:
        return budget.max_hourly_usd * HOURS_PER_MONTH
    return None


def money(usd: float) -> Decimal:
    """A figure from the catalog or the blueprint as the exact decimal that was written."""
    return Decimal(str(usd))


def _budget(budget: Budget | None, hourly: Decimal, monthly: Decimal) -> BudgetStatus:
    max_hourly = budget.max_hourly_usd if budget else None
    max_monthly = budget.max_monthly_usd if budget else None
    return BudgetStatus(
        max_hourly_usd=max_hourly,
        max_monthly_usd=max_monthly,
        hourly_exceeded=max_hourly is not None and hourly > max_hourly,
        monthly_exceeded=max_monthly is not None and monthly > max_monthly,
    )


class _Estimator:
    """Prices lines into the items and warnings of one estimate, in order."""

    def __init__(self, cloud: Cloud, region: str, catalog: Catalog, today: dt.date) -> None:
        self.cloud = cloud
        self.region = region
        self.catalog = catalog
        self.today = today
        self.now = start_of(today)
        self.items: list[CostItem] = []
        self.warnings: list[CostWarning] = []

    def price(self, line: CostLine) -> None:
        if line.capacity is None:
            self._storage(line)
        else:
            self._compute(line, line.capacity)

    def _storage(self, line: CostLine) -> None:
        price = self.catalog.price(self.cloud, line.sku, self.region, "on_demand")
        if price is None:
            self._missing(line, detail=f"no price for {line.sku} in {self.region}")
            return
        unit_price = money(price.usd)
        monthly = unit_price * line.quantity
        self._add(self._item(line, price, unit_price, hourly=monthly / HOURS_PER_MONTH, monthly=monthly))

    def _compute(self, line: CostLine, capacity: CapacityKind) -> None:
        cloud, region, sku, name, path = self.cloud, self.region, line.sku, line.name, line.path
        model: PricingModel = capacity  # capacity kinds are named after their pricing models
        price = self.catalog.price(cloud, sku, region, model)
        fallback = price is None and capacity in _FALLBACK_NOTES
        if fallback:
            price = self.catalog.price(cloud, sku, region, "on_demand")
        if price is None:
            tried = f"{model} or on_demand" if fallback else model
            self._missing(line, detail=f"no {tried} price for {sku} in {region}")
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
        hourly = unit_price * line.quantity
        term = self._term_hours(line)
        hours = HOURS_PER_MONTH if term is None else min(HOURS_PER_MONTH, term)
        self._add(self._item(line, price, unit_price, hourly=hourly, monthly=hourly * hours))

    def _term_hours(self, line: CostLine) -> Decimal | None:
        """The hours from the start of today (UTC) to the line's end, none once it is past; None: no end."""
        if line.ends_at is None:
            return None
        seconds = max(0, int((line.ends_at - self.now).total_seconds()))
        return Decimal(seconds) / 3600

    def _item(
        self, line: CostLine, price: Price, unit_price: Decimal, *, hourly: Decimal, monthly: Decimal
    ) -> CostItem:
        return CostItem(
            name=line.name,
            kind=line.kind,
            path=line.path,
            sku=line.sku,
            region=self.region,
            capacity=line.capacity,
            pricing_model=price.pricing_model,
            quantity=line.quantity,
            min_quantity=line.min_quantity,
            unit=price.unit,
            price=price,
            unit_price_usd=unit_price,
            hourly_usd=hourly,
            monthly_usd=monthly,
            ends_at=line.ends_at,
            term_hours=self._term_hours(line),
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
            shared = (
                f"from {price.as_of.isoformat()}, {age} days old (stale after {limit} days; "
                f"source {price.source})"
            )
            self.warnings.append(
                CostWarning(
                    item.name,
                    item.path,
                    "stale",
                    f"{what} is {shared}{'' if unconfirmed else note}",
                    shared=shared,
                    group=f"stale|{price.source}|{price.as_of}|{price.pricing_model}|{item.region}",
                )
            )
        if unconfirmed:
            shared = f"unconfirmed (source {price.source})"
            self.warnings.append(
                CostWarning(
                    item.name,
                    item.path,
                    "unconfirmed",
                    f"{what} is {shared}{note}",
                    shared=shared,
                    group=f"unconfirmed|{price.source}|{price.pricing_model}|{item.region}",
                )
            )

    def _missing(self, line: CostLine, *, detail: str) -> None:
        self.items.append(
            CostItem(
                name=line.name,
                kind=line.kind,
                path=line.path,
                sku=line.sku,
                region=self.region,
                capacity=line.capacity,
                pricing_model=line.capacity or "on_demand",
                quantity=line.quantity,
                min_quantity=line.min_quantity,
                unit=line.unit,
                price=None,
                unit_price_usd=None,
                hourly_usd=None,
                monthly_usd=None,
                ends_at=line.ends_at,
                term_hours=self._term_hours(line),
            )
        )
        self.warnings.append(CostWarning(line.name, line.path, "missing", detail))
