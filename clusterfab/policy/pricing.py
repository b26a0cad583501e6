"""What planned resources cost, priced by the same estimator as `clusterfab cost`.

A CrossGuard stack policy sees resources, not the blueprint, and must price what will really be
created (a team's own Pulumi program included). The resources that cost money are read into the cost
lines `clusterfab cost` makes from a ClusterSpec (sku, capacity kind, quantity) and priced by the same
`estimate_lines`, so SKUs, pricing models, stand-in prices, full-size sizing and the budget verdict are
exactly those of `clusterfab cost`. For the example blueprints the two estimates agree item for item
(tested).

Each cloud's resources are read by `clusterfab.policy.<cloud>` (its `PRICING`: which resource types cost
money, and what each says of the machine type, the size, the capacity kind and the zone).
Anything else (networks, roles, buckets, budgets) is not priced, as in `clusterfab cost`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from clusterfab.blueprint.fields import ITEM_NAME_PATTERN
from clusterfab.blueprint.models import CLUSTER_NAME_PATTERN
from clusterfab.catalog import Catalog
from clusterfab.clouds import profile
from clusterfab.core.items import CONTROLLER_ITEM, LOGIN_ITEM, MONITORING_ITEM
from clusterfab.core.vocab import (
    BLUEPRINT_TAG,
    CLOUDS,
    COMPONENT_TAG,
    NODE_GROUP_TAG,
    SLURM_ROLE_TAG,
    CapacityKind,
    Cloud,
)
from clusterfab.cost.estimate import (
    CostEstimate,
    CostLine,
    ItemKind,
    estimate_lines,
    storage_sku,
)
from clusterfab.policy.resources import Resource, integer
from clusterfab.spec import Budget

_ITEM = re.compile(ITEM_NAME_PATTERN)
_CLUSTER = re.compile(CLUSTER_NAME_PATTERN)


class PricingError(ValueError):
    """The resources cannot be priced (no region to price them in)."""


@dataclass(frozen=True)
class ResourceCost:
    estimate: CostEstimate
    skipped: tuple[str, ...]
    """Resources that cost money but could not be read (their items are missing from the estimate)."""


ResourceRead = Callable[["Reader", Resource], None]
"""Reads one resource type's priced item into the reader (or says why it cannot)."""


@dataclass(frozen=True)
class CloudPricing:
    """How one cloud's resources are priced: `clusterfab.policy.<cloud>` exports it as `PRICING`."""

    readers: Mapping[str, ResourceRead]
    """Per resource type (Pulumi type token) that costs money, how to read it."""
    zones: Mapping[str, Callable[[Mapping[str, Any]], Any]]
    """Per resource type that says where the cluster is, its zone from its properties."""


def _pricing() -> CloudPricing:
    """Every shipped cloud's pricing in one (their type tokens never overlap)."""
    found = [cast("CloudPricing", importlib.import_module(f"{__package__}.{c}").PRICING) for c in CLOUDS]
    return CloudPricing(
        readers={k: v for p in found for k, v in p.readers.items()},
        zones={k: v for p in found for k, v in p.zones.items()},
    )


def price_resources(
    resources: Sequence[Resource],
    catalog: Catalog,
    *,
    today: dt.date,
    region: str | None = None,
    max_hourly_usd: float | None = None,
    max_monthly_usd: float | None = None,
) -> ResourceCost:
    """Price the resources (at full size) and judge them against the given limits."""
    cloud = _cloud(resources)
    reader = Reader(resources, catalog, cloud, today)
    reader.read()
    where = region or reader.region()
    if where is None:
        raise PricingError("cannot tell which region the resources are in: set `region` in the policy config")
    budget = Budget(
        max_hourly_usd=None if max_hourly_usd is None else Decimal(str(max_hourly_usd)),
        max_monthly_usd=None if max_monthly_usd is None else Decimal(str(max_monthly_usd)),
        alert_emails=(),
    )
    estimate = estimate_lines(
        reader.lines,
        catalog,
        name=reader.cluster_name(),
        cloud=cloud,
        region=where,
        budget=budget,
        today=today,
    )
    return ResourceCost(estimate=estimate, skipped=tuple(reader.skipped))


def _cloud(resources: Sequence[Resource]) -> Cloud:
    """The one cloud the resources live in (a cluster spans one)."""
    found = [c for c in CLOUDS if any(r.cloud == c for r in resources)]
    if len(found) > 1:
        raise PricingError(f"the resources span several clouds ({', '.join(found)}); price one cluster")
    return found[0] if found else CLOUDS[0]


class Reader:
    """Reads the priced items of a list of resources, in order; each cloud's `CloudPricing` reads its
    own resource types into it."""

    def __init__(self, resources: Sequence[Resource], catalog: Catalog, cloud: Cloud, today: dt.date) -> None:
        self.resources = resources
        self.today = today
        """The date dated facts are judged against (a control plane's support end)."""
        self.catalog = catalog
        self.cloud = profile(cloud)
        self.lines: list[CostLine] = []
        self.skipped: list[str] = []
        self.zone: str | None = None
        self._names: set[str] = set()
        self._pricing = _pricing()
        self._slices: dict[tuple[str | None, str, CapacityKind], list[Resource]] = {}

    def _path(self, list_name: str) -> tuple[str, int]:
        """Where the next line of a kind would sit in a blueprint (warnings find their item by it)."""
        return (list_name, sum(1 for line in self.lines if line.path[0] == list_name))

    def read(self) -> None:
        for resource in self.resources:
            read = self._pricing.readers.get(resource.type)
            if read is not None:
                read(self, resource)
            self._note_zone(resource)
        for (_, accelerator, capacity), slices in self._slices.items():
            self.tpu(slices[0], accelerator, capacity, len(slices))

    def skip(self, message: str) -> None:
        """A resource that costs money but cannot be read (`message` says which, and why)."""
        self.skipped.append(message)

    # --- where ------------------------------------------------------------------------------

    def _note_zone(self, resource: Resource) -> None:
        if self.zone is not None:
            return
        zone_of = self._pricing.zones.get(resource.type)
        zone = zone_of(resource.props) if zone_of is not None else None
        if isinstance(zone, str) and self.cloud.region_of_zone(self.catalog, zone):
            self.zone = zone

    def region(self) -> str | None:
        if self.zone is not None:
            return self.cloud.region_of_zone(self.catalog, self.zone)
        for resource in self.resources:
            # GCP and AWS resources name their region; Azure's their location.
            region = resource.props.get("region") or resource.props.get("location")
            if isinstance(region, str) and region:
                return region
        return None

    def cluster_name(self) -> str:
        for resource in self.resources:
            name = resource.tags().get(BLUEPRINT_TAG)
            if name and _CLUSTER.fullmatch(name):
                return name
        return "planned"

    # --- items ------------------------------------------------------------------------------

    def _name(self, resource: Resource, prefix: str) -> str:
        """The item name: the clusterfab label or tag naming it, else one made from the resource name."""
        tags = resource.tags()
        candidates = [tags.get(NODE_GROUP_TAG)]
        component = tags.get(COMPONENT_TAG, "")
        candidates.append(component.removeprefix(prefix) if component.startswith(prefix) else None)
        base = next((c for c in candidates if c and _ITEM.fullmatch(c)), None)
        if base is None:
            cleaned = re.sub(r"[^a-z0-9-]+", "-", resource.name.lower()).strip("-")[:30].strip("-")
            base = cleaned if cleaned and cleaned[0].isalpha() else f"item-{cleaned}"[:30].strip("-")
        name, counter = base, 2
        while name in self._names:
            suffix = f"-{counter}"
            name, counter = base[: 30 - len(suffix)] + suffix, counter + 1
        self._names.add(name)
        return name

    def sibling(self, resource: Resource, kind: str, prop: str) -> Resource | None:
        """The resource of type `kind` this one refers to: by dependency, else the one of its component."""
        wanted = set(resource.dependencies.get(prop, ()))
        for other in self.resources:
            if other.type == kind and other.urn in wanted:
                return other
        siblings = [r for r in self.resources if r.type == kind and r.parent == resource.parent]
        return siblings[0] if resource.parent is not None and len(siblings) == 1 else None

    def instance(self, instance: Resource, machine: Any, capacity: CapacityKind) -> None:
        """A single instance: the monitoring node, a Slurm host, or a node group of one."""
        if not isinstance(machine, str):
            self.skipped.append(f"{instance.name}: no machine type")
            return
        if instance.tags().get(COMPONENT_TAG) == MONITORING_ITEM:
            self.lines.append(
                CostLine(MONITORING_ITEM, "monitoring", ("monitoring",), machine, capacity, 1, None, "hour")
            )
            return
        role = instance.tags().get(SLURM_ROLE_TAG)
        if role in ("controller", "login"):
            self._slurm_host(role, machine, capacity)
            return
        self.group(instance, machine, 1, 1, capacity)

    def _slurm_host(self, role: str, machine: str, capacity: CapacityKind) -> None:
        """The controller, or one more login node (`clusterfab cost` prices them as one line)."""
        kind_of: ItemKind = "controller" if role == "controller" else "login"
        name = CONTROLLER_ITEM if role == "controller" else LOGIN_ITEM
        for index, line in enumerate(self.lines):
            if line.name == name and line.sku == machine:
                self.lines[index] = dataclasses.replace(line, quantity=line.quantity + 1)
                return
        self.lines.append(CostLine(name, kind_of, ("scheduler", role), machine, capacity, 1, None, "hour"))

    def group(
        self,
        resource: Resource,
        machine: str,
        low: int,
        high: int,
        capacity: CapacityKind,
        *,
        ends_at: dt.datetime | None = None,
    ) -> None:
        """A node group of `machine`: `high` nodes at most, `low` at least; `ends_at`: when its capacity
        ends (priced for what is left of the term, as `clusterfab cost` prices it)."""
        if high < 1:
            return  # an empty group costs nothing
        self.lines.append(
            CostLine(
                name=self._name(resource, "node-group-"),
                kind="node_group",
                path=self._path("node_groups"),
                sku=machine,
                capacity=capacity,
                quantity=high,
                min_quantity=None if low == high else max(0, min(low, high)),
                unit="hour",
                ends_at=ends_at,
            )
        )

    def add_slice(
        self, resource: Resource, accelerator: str, capacity: CapacityKind, group: str | None = None
    ) -> None:
        """A TPU slice; the slices of one component (or of one `group`: a GKE TPU slice group's node
        pools, one component each), shape and capacity form one multislice item."""
        key = group if group is not None else resource.parent
        self._slices.setdefault((key, accelerator, capacity), []).append(resource)

    def tpu(self, first: Resource, accelerator: str, capacity: CapacityKind, slices: int) -> None:
        """`slices` TPU slices of one accelerator type, priced as one item named after the first."""
        found = self._tpu_shape(accelerator)
        if found is None:
            self.skipped.append(f"{first.name}: TPU accelerator {accelerator!r} is not in the catalog")
            return
        generation, chips = found
        self.lines.append(
            CostLine(
                name=self._name(first, "tpu-"),
                kind="tpu_slice",
                path=self._path("tpu_slices"),
                sku=f"tpu-{generation}",
                capacity=capacity,
                quantity=chips * slices,
                min_quantity=None,
                unit="chip_hour",
            )
        )

    def _tpu_shape(self, accelerator: str) -> tuple[str, int] | None:
        """(generation, chips per slice) of `v5p-128` (N counts cores or chips) or `V5P:4x4x4`."""
        generations = self.catalog.tpu_generations.values()
        if ":" in accelerator:
            kind, _, topology = accelerator.partition(":")
            for generation in generations:
                if generation.accelerator_config_type == kind and topology in generation.topologies:
                    return generation.name, generation.topologies[topology].chips
            return None
        prefix, _, number = accelerator.rpartition("-")
        count = integer(number)
        for generation in generations:
            if generation.type_prefix != prefix or count is None or count % generation.cores_per_chip:
                continue
            chips = count // generation.cores_per_chip
            if any(shape.chips == chips for shape in generation.topologies.values()):
                return generation.name, chips
        return None

    def storage(
        self, resource: Resource, kind: str, tier_name: str, capacity: int | None, throughput: int | None
    ) -> None:
        """A file system of a catalog tier (by the tier's name), `capacity` GiB."""
        tier = self.catalog.storage_tier(self.cloud.name, kind, tier_name)
        if capacity is None or capacity <= 0 or tier is None:
            self.skipped.append(f"{resource.name}: no capacity, or a {kind} tier the catalog lacks")
            return
        self.lines.append(
            CostLine(
                name=self._name(resource, "storage-"),
                kind="storage",
                path=self._path("storage"),
                sku=storage_sku(tier, throughput),
                capacity=None,
                quantity=capacity,
                min_quantity=None,
                unit="gib_month",
            )
        )
