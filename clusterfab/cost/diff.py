"""The cost delta between two estimates, item by item (matched by kind and name) and in total.

Like with like: full size against full size (autoscaled groups at their max, what the budget judges)
and min against min (what the cluster costs idle), so a change to an autoscaled group's min shows even
when its max, and so the full-size total, stays the same."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from clusterfab.core.dates import utc_stamp
from clusterfab.cost.estimate import HOURS_PER_MONTH, CostEstimate, CostItem


@dataclass(frozen=True)
class ItemDelta:
    name: str
    kind: str
    before: CostItem | None
    after: CostItem | None

    @property
    def before_hourly(self) -> Decimal | None:
        return self.before.hourly_usd if self.before else Decimal(0)

    @property
    def after_hourly(self) -> Decimal | None:
        return self.after.hourly_usd if self.after else Decimal(0)

    @property
    def delta_hourly(self) -> Decimal | None:
        """None when either side is unpriced: a delta against an unknown is unknown."""
        if self.before_hourly is None or self.after_hourly is None:
            return None
        return self.after_hourly - self.before_hourly

    @property
    def before_monthly(self) -> Decimal | None:
        """The item's monthly figure at full size: 730 hours, or a capacity block's hours left if fewer."""
        return _monthly(self.before)

    @property
    def after_monthly(self) -> Decimal | None:
        return _monthly(self.after)

    @property
    def delta_monthly(self) -> Decimal | None:
        """None when either side is unpriced."""
        if self.before_monthly is None or self.after_monthly is None:
            return None
        return self.after_monthly - self.before_monthly

    @property
    def before_min_hourly(self) -> Decimal | None:
        return self.before.min_hourly_usd if self.before else Decimal(0)

    @property
    def after_min_hourly(self) -> Decimal | None:
        return self.after.min_hourly_usd if self.after else Decimal(0)

    @property
    def delta_min_hourly(self) -> Decimal | None:
        """The delta with autoscaled groups at their min; None when either side is unpriced."""
        if self.before_min_hourly is None or self.after_min_hourly is None:
            return None
        return self.after_min_hourly - self.before_min_hourly

    @property
    def scales(self) -> bool:
        """Either side is an autoscaled group (then its min figures differ from its full-size ones)."""
        return any(side is not None and side.scales for side in (self.before, self.after))

    @property
    def changed(self) -> bool:
        if self.before is None or self.after is None:
            return True
        return _key(self.before) != _key(self.after)

    def description(self) -> str:
        """What changed about the item, for people: `p5.48xlarge x 16 -> 24, spot -> on_demand`."""
        if self.before is None and self.after is not None:
            return f"added: {_shape(self.after)}"
        if self.after is None and self.before is not None:
            return f"removed: {_shape(self.before)}"
        assert self.before is not None
        assert self.after is not None
        parts = []
        if self.before.sku != self.after.sku:
            parts.append(f"{self.before.sku} -> {self.after.sku}")
        if _size(self.before) != _size(self.after):
            parts.append(f"{self.after.sku} x {_size(self.before)} -> {_size(self.after)}")
        if self.before.capacity != self.after.capacity:
            parts.append(f"{self.before.capacity} -> {self.after.capacity}")
        if self.before.ends_at != self.after.ends_at:
            parts.append(f"ends {_end(self.before)} -> {_end(self.after)}")
        return ", ".join(parts) or _shape(self.after)


def _monthly(item: CostItem | None) -> Decimal | None:
    if item is None:
        return Decimal(0)
    if item.hourly_usd is None:
        return None
    return item.monthly_usd if item.monthly_usd is not None else item.hourly_usd * HOURS_PER_MONTH


def _end(item: CostItem) -> str:
    return "never" if item.ends_at is None else utc_stamp(item.ends_at)


def _key(item: CostItem) -> tuple[object, ...]:
    return (
        item.sku,
        item.quantity,
        item.min_quantity,
        item.capacity,
        item.pricing_model,
        item.hourly_usd,
        item.ends_at,
    )


def _size(item: CostItem) -> str:
    """`16`, or `2-10` for an autoscaled group (min-max)."""
    if item.min_quantity is None:
        return f"{item.quantity:,}"
    return f"{item.min_quantity:,}-{item.quantity:,}"


def _shape(item: CostItem) -> str:
    capacity = f", {item.capacity}" if item.capacity else ""
    return f"{item.sku} x {_size(item)}{capacity}"


@dataclass(frozen=True)
class CostDiff:
    before: CostEstimate
    after: CostEstimate
    items: tuple[ItemDelta, ...]

    @property
    def delta_hourly(self) -> Decimal:
        return self.after.hourly_usd - self.before.hourly_usd

    @property
    def delta_monthly(self) -> Decimal:
        return self.after.monthly_usd - self.before.monthly_usd

    @property
    def delta_min_hourly(self) -> Decimal:
        return self.after.min_hourly_usd - self.before.min_hourly_usd

    @property
    def delta_min_monthly(self) -> Decimal:
        return self.after.min_monthly_usd - self.before.min_monthly_usd

    @property
    def scales(self) -> bool:
        """Either side has an autoscaled group: its totals at min differ from those at full size."""
        return self.before.scales or self.after.scales

    @property
    def percent_monthly(self) -> Decimal | None:
        if self.before.monthly_usd == 0:
            return None
        return self.delta_monthly / self.before.monthly_usd * 100

    def changed_items(self) -> list[ItemDelta]:
        return [item for item in self.items if item.changed]

    @property
    def unpriced(self) -> tuple[ItemDelta, ...]:
        """Changed items with a side the catalog cannot price. The totals leave unpriced items out, so
        while there is one the change in cost is unknown: it may be any amount in either direction."""
        return tuple(item for item in self.changed_items() if item.delta_hourly is None)

    @property
    def unpriced_at_min(self) -> tuple[ItemDelta, ...]:
        return tuple(item for item in self.changed_items() if item.delta_min_hourly is None)


def diff_costs(before: CostEstimate, after: CostEstimate) -> CostDiff:
    """Pair items by (kind, name): before's order first, then items only `after` has."""
    old = {(i.kind, i.name): i for i in before.items}
    new = {(i.kind, i.name): i for i in after.items}
    keys = list(old) + [k for k in new if k not in old]
    items = tuple(ItemDelta(name=k[1], kind=k[0], before=old.get(k), after=new.get(k)) for k in keys)
    return CostDiff(before=before, after=after, items=items)
