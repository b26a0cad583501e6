"""Price coverage: everything the catalog lets a blueprint buy has a price, or a declared gap with its reason.

`clusterfab cost` leaves an item it cannot price out of the totals with a warning. That is right at run time,
but a catalog that accepts a machine, a capacity kind or a storage tier it cannot price is a catalog bug:
these tests ask the estimator itself, for every (machine type or TPU generation, purchase option, region the
catalog offers it in) and every storage tier and throughput level in the regions the examples use, whether
it finds a price, and hold the answer to the `price_gaps` list in prices.yaml. A new gap fails until it is
declared with a reason; a gap that gets a price fails until its declaration is removed.
"""

from __future__ import annotations

import datetime as dt
import io
from collections import defaultdict
from collections.abc import Iterator
from importlib import resources
from typing import Any, NamedTuple, cast

import pytest
from pydantic import BaseModel, ConfigDict, Field
from ruamel.yaml import YAML

from clusterfab.catalog import load_catalog
from clusterfab.catalog.models import MachineType, PriceUnit, StorageTier
from clusterfab.clouds import profile
from clusterfab.core.vocab import CapacityKind, Cloud
from clusterfab.cost.estimate import CostLine, ItemKind, estimate_lines, storage_sku
from clusterfab.load import load_bytes
from clusterfab.scheduler.kubernetes.facts import kubernetes_facts
from tests.factories import EXAMPLES_DIR, TODAY, blueprint_yaml, estimate

CATALOG = load_catalog()


class Want(NamedTuple):
    """One way to buy something: a sku bought as `capacity` in `region` (storage: on_demand)."""

    cloud: Cloud
    sku: str
    capacity: CapacityKind
    region: str


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PriceGap(_Strict):
    """A sku, capacity kinds and regions the catalog offers with no citable price, and why."""

    cloud: Cloud
    sku: str
    capacity: list[CapacityKind] = Field(min_length=1)
    regions: list[str] = Field(min_length=1)
    reason: str = Field(min_length=20)


class UnlistedRegion(_Strict):
    """Prices for regions the catalog does not offer the sku in, kept on purpose, and why."""

    cloud: Cloud
    sku: str
    regions: list[str] = Field(min_length=1)
    reason: str = Field(min_length=20)


def _prices_file() -> dict[str, Any]:
    text = resources.files("clusterfab.catalog").joinpath("data", "prices.yaml").read_text("utf-8")
    data: dict[str, Any] = YAML(typ="safe").load(io.StringIO(text))
    return data


PRICES_FILE = _prices_file()
GAPS = [PriceGap.model_validate(g) for g in PRICES_FILE["price_gaps"]]
UNLISTED = [UnlistedRegion.model_validate(u) for u in PRICES_FILE["unlisted_regions"]]


def example_regions() -> dict[Cloud, set[str]]:
    """The regions the example blueprints are written for, per cloud."""
    regions: dict[Cloud, set[str]] = defaultdict(set)
    for path in sorted(EXAMPLES_DIR.glob("*.yaml")):
        data = YAML(typ="safe").load(path.read_text("utf-8"))
        regions[data["cloud"]].add(data["region"])
    return regions


def _zone_regions(cloud: Cloud, zones: list[str]) -> set[str]:
    return {r for z in zones if (r := profile(cloud).region_of_zone(CATALOG, z))}


def storage_skus(tier: StorageTier) -> list[str]:
    """The skus a tier is priced by: one per throughput level where the tier has several."""
    if len(tier.throughputs) > 1:
        return [storage_sku(tier, t) for t in tier.throughputs]
    return [storage_sku(tier, None)]


def offered_regions() -> dict[tuple[Cloud, str], set[str]]:
    """Every sku prices.yaml may name, with the regions the catalog offers it in."""
    offered: dict[tuple[Cloud, str], set[str]] = {}
    for aws in CATALOG.aws_machine_types.values():
        offered["aws", aws.name] = set(aws.locations)
    for gcp in CATALOG.gcp_machine_types.values():
        offered["gcp", gcp.name] = _zone_regions("gcp", gcp.zones)
    for tpu in CATALOG.tpu_generations.values():
        offered["gcp", f"tpu-{tpu.name}"] = _zone_regions("gcp", tpu.zones)
    # No stored source lists an Azure size's regions: every region the catalog knows may offer it.
    for azure in CATALOG.azure.machine_types.values():
        offered["azure", azure.name] = set(azure.regions) or profile("azure").regions(CATALOG)
    for tier in CATALOG.storage_tiers:
        for sku in storage_skus(tier):
            offered[tier.cloud, sku] = profile(tier.cloud).regions(CATALOG)
    # The monitoring node is a general-purpose type sold in every region the catalog knows.
    for machine in CATALOG.monitoring.machines:
        offered[machine.cloud, machine.name] = profile(machine.cloud).regions(CATALOG)
    # So are the Slurm controller and login machines.
    for slurm_machine in CATALOG.slurm.machines:
        offered[slurm_machine.cloud, slurm_machine.name] = profile(slurm_machine.cloud).regions(CATALOG)
    # A managed Kubernetes control plane's fee is sold wherever the cloud's service runs: every region.
    for plane in kubernetes_facts().control_planes:
        for fee in (plane.fee_sku, plane.extended_fee_sku):
            if fee is not None:
                offered[cast("Cloud", plane.cloud), fee] = profile(plane.cloud).regions(CATALOG)
    return offered


def _compute_wants() -> Iterator[tuple[Want, PriceUnit]]:
    offered = offered_regions()
    machines: list[MachineType] = [
        *CATALOG.aws_machine_types.values(),
        *CATALOG.gcp_machine_types.values(),
        *CATALOG.azure.machine_types.values(),
    ]
    for machine in machines:
        for region in offered[machine.cloud, machine.name]:
            for kind in machine.purchase_options:
                yield Want(machine.cloud, machine.name, kind, region), "hour"
    # The Slurm controller and login nodes and the monitoring node: bought on demand where examples run.
    regions = example_regions()
    for host in [*CATALOG.slurm.machines, *CATALOG.monitoring.machines]:
        for region in regions[host.cloud]:
            yield Want(host.cloud, host.name, "on_demand", region), "hour"
    for tpu in CATALOG.tpu_generations.values():
        sku = f"tpu-{tpu.name}"
        for region in offered["gcp", sku]:
            for kind in tpu.purchase_options:
                yield Want("gcp", sku, kind, region), "chip_hour"


def _storage_wants() -> Iterator[Want]:
    regions = example_regions()
    for tier in CATALOG.storage_tiers:
        for sku in storage_skus(tier):
            for region in regions[tier.cloud]:
                yield Want(tier.cloud, sku, "on_demand", region)


def wanted() -> set[Want]:
    return {w for w, _ in _compute_wants()} | set(_storage_wants())


ITEM_KINDS: dict[PriceUnit, ItemKind] = {
    "hour": "node_group",
    "chip_hour": "tpu_slice",
    "gib_month": "storage",
}


def _line(want: Want, unit: PriceUnit) -> CostLine:
    """One of `want`, as `clusterfab cost` makes lines (storage is sold one way: no capacity kind)."""
    capacity = None if unit == "gib_month" else want.capacity
    return CostLine(want.sku, ITEM_KINDS[unit], (), want.sku, capacity, 1, None, unit)


def unpriced(today: dt.date = TODAY) -> set[Want]:
    """What `clusterfab cost` leaves unpriced: asked of the estimator, fallbacks (reservation and flex-start
    at on-demand) included."""
    lines: dict[tuple[Cloud, str], list[tuple[Want, CostLine]]] = defaultdict(list)
    for want, unit in _compute_wants():
        lines[want.cloud, want.region].append((want, _line(want, unit)))
    for want in _storage_wants():
        lines[want.cloud, want.region].append((want, _line(want, "gib_month")))
    missing: set[Want] = set()
    for (cloud, region), pairs in lines.items():
        result = estimate_lines(
            [line for _, line in pairs],
            CATALOG,
            name="coverage",
            cloud=cloud,
            region=region,
            budget=None,
            today=today,
        )
        missing |= {want for (want, _), item in zip(pairs, result.items, strict=True) if not item.priced}
    return missing


def declared_gaps() -> set[Want]:
    return {
        Want(gap.cloud, gap.sku, kind, region)
        for gap in GAPS
        for kind in gap.capacity
        for region in gap.regions
    }


def _listing(wants: set[Want]) -> str:
    return "\n".join(f"  {w.cloud} {w.sku} {w.capacity} {w.region}" for w in sorted(wants))


def test_everything_the_catalog_sells_is_priced_or_a_declared_gap() -> None:
    missing, declared = unpriced(), declared_gaps()
    undeclared, priced_now = missing - declared, declared - missing
    assert not undeclared, f"no price and no price_gaps entry for:\n{_listing(undeclared)}"
    assert not priced_now, f"price_gaps entries that have a price (remove them):\n{_listing(priced_now)}"


def test_gaps_name_only_what_the_catalog_offers_and_each_once() -> None:
    wants = wanted()
    for gap in GAPS:
        for kind in gap.capacity:
            for region in gap.regions:
                assert Want(gap.cloud, gap.sku, kind, region) in wants, (gap.sku, kind, region)
    assert len(declared_gaps()) == sum(len(g.capacity) * len(g.regions) for g in GAPS), "a gap declared twice"


def test_every_price_is_for_a_region_its_sku_is_offered_in() -> None:
    offered = offered_regions()
    kept = {(u.cloud, u.sku, r) for u in UNLISTED for r in u.regions}
    found: set[tuple[Cloud, str, str]] = set()
    for price in CATALOG.prices:
        assert (price.cloud, price.sku) in offered, f"{price.sku}: sold by no catalog record"
        for region in price.regions:
            if region not in offered[price.cloud, price.sku]:
                found.add((price.cloud, price.sku, region))
    assert found == kept, (sorted(found - kept), sorted(kept - found))


def test_every_price_row_is_unique_per_sku_model_region_and_date() -> None:
    # Catalog.price keeps the newest row; two rows of the same date for one region would make the pick
    # depend on file order.
    seen: set[tuple[object, ...]] = set()
    for price in CATALOG.prices:
        for region in price.regions:
            key = (price.cloud, price.sku, price.pricing_model, region, price.as_of)
            assert key not in seen, key
            seen.add(key)


@pytest.mark.parametrize(
    ("cloud", "machine", "sold_as"),
    [
        ("aws", "p5e.48xlarge", "spot, capacity_block, reservation"),
        ("gcp", "a4-highgpu-8g", "spot, reservation, flex_start"),
    ],
)
def test_machines_without_an_on_demand_price_refuse_on_demand(cloud: str, machine: str, sold_as: str) -> None:
    zone = {"aws": "use2-az1", "gcp": "us-central1-b"}[cloud]
    region = {"aws": "us-east-2", "gcp": "us-central1"}[cloud]
    text = blueprint_yaml(
        cloud,
        region=region,
        zone=zone,
        node_groups=[{"name": "g", "machine_type": machine, "count": 2, "capacity": {"kind": "on_demand"}}],
    )
    findings = load_bytes(text.encode(), "test.yaml", today=TODAY).findings
    bp206 = [f for f in findings if f.code == "BP206"]
    assert [(f.message, f.hint) for f in bp206] == [
        (f"{machine} is not sold as on_demand", f"{machine} is sold as: {sold_as}")
    ]


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES_DIR.glob("*.yaml")))
def test_examples_leave_out_only_declared_gaps(name: str) -> None:
    declared = declared_gaps()
    environments = (
        YAML(typ="safe").load((EXAMPLES_DIR / f"{name}.yaml").read_text("utf-8")).get("environments", {})
    )
    for env in [None, *environments]:
        result = estimate(name, env)
        for item in result.unpriced:
            capacity: CapacityKind = item.capacity or "on_demand"
            want = Want(cast("Cloud", result.cloud), item.sku, capacity, result.region)
            assert want in declared, (name, env, item.sku)
