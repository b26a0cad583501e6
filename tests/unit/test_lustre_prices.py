"""Every Lustre tier the catalog accepts is priced by `cost`, or `cost` says it is not.

A cluster's parallel file system is often its largest line after the accelerators, so the budget check must
see it. For each Lustre tier and throughput level the catalog accepts (storage.yaml), in the region the
examples use for the cloud, a blueprint holding one such file system is estimated and its line compared with
the figure worked out by hand from the price prices.yaml records (the arithmetic is in the comments). A tier
without a citable price stays a declared price gap (test_price_coverage.py): its line carries no price, a
warning says so, and the text output lists it as left out of the totals.
"""

from __future__ import annotations

from decimal import Decimal
from typing import NamedTuple

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.core.vocab import Cloud
from clusterfab.cost import estimate_cost
from clusterfab.cost.estimate import storage_sku
from clusterfab.cost.render import render_text
from tests.factories import TODAY, blueprint_yaml, validated

CATALOG = load_catalog()


class Tier(NamedTuple):
    """One Lustre file system to price: where, how big, how fast, and what the estimate must say."""

    cloud: Cloud
    deployment: str
    throughput: int | None
    capacity_gib: int
    sku: str
    source: str | None
    monthly: str | None
    """Monthly USD worked out by hand; None where the tier has no price."""
    hourly: str | None
    """Monthly / 730, rounded to 9 decimals."""


TIERS = [
    # FSx for Lustre, us-east-1 (S-FSX-PRICE).
    # SCRATCH_2: 2,400 GiB x 0.140 = 336/mo; 336 / 730 = 0.460273973/h
    Tier("aws", "scratch", None, 2400, "fsx-lustre/SCRATCH_2", "S-FSX-PRICE", "336", "0.460273973"),
    # PERSISTENT_2 at 125 MB/s/TiB: 2,400 x 0.145 = 348/mo; 348 / 730 = 0.476712329/h
    Tier("aws", "persistent", 125, 2400, "fsx-lustre/PERSISTENT_2/125", "S-FSX-PRICE", "348", "0.476712329"),
    # PERSISTENT_2 at 250, 500 and 1000 MB/s/TiB: no citable price (price_gaps in prices.yaml)
    Tier("aws", "persistent", 250, 2400, "fsx-lustre/PERSISTENT_2/250", None, None, None),
    Tier("aws", "persistent", 500, 2400, "fsx-lustre/PERSISTENT_2/500", None, None, None),
    Tier("aws", "persistent", 1000, 2400, "fsx-lustre/PERSISTENT_2/1000", None, None, None),
    # Managed Lustre, us-central1, each tier at its smallest capacity (storage.yaml).
    # 125 MB/s/TiB (S-LUSTRE-TNS): 72,000 GiB x 0.145 = 10,440/mo; 10,440 / 730 = 14.301369863/h
    Tier("gcp", "persistent", 125, 72000, "managed-lustre/125", "S-LUSTRE-TNS", "10440", "14.301369863"),
    # 250 MB/s/TiB (S-LUSTRE-SKU): 36,000 x 0.21 = 7,560/mo; 7,560 / 730 = 10.356164384/h
    Tier("gcp", "persistent", 250, 36000, "managed-lustre/250", "S-LUSTRE-SKU", "7560", "10.356164384"),
    # 500 MB/s/TiB (S-LUSTRE-SKU): 18,000 x 0.34 = 6,120/mo; 6,120 / 730 = 8.383561644/h
    Tier("gcp", "persistent", 500, 18000, "managed-lustre/500", "S-LUSTRE-SKU", "6120", "8.383561644"),
    # 1000 MB/s/TiB (S-LUSTRE-SKU): 9,000 x 0.60 = 5,400/mo; 5,400 / 730 = 7.397260274/h
    Tier("gcp", "persistent", 1000, 9000, "managed-lustre/1000", "S-LUSTRE-SKU", "5400", "7.397260274"),
    # Azure Managed Lustre, southcentralus, each tier at its smallest capacity: no citable price (price_gaps).
    Tier("azure", "persistent", 40, 49152, "amlfs/AMLFS-Durable-Premium-40", None, None, None),
    Tier("azure", "persistent", 125, 16384, "amlfs/AMLFS-Durable-Premium-125", None, None, None),
    Tier("azure", "persistent", 250, 8192, "amlfs/AMLFS-Durable-Premium-250", None, None, None),
    Tier("azure", "persistent", 500, 4096, "amlfs/AMLFS-Durable-Premium-500", None, None, None),
]
REGION: dict[Cloud, str] = {"aws": "us-east-1", "gcp": "us-central1", "azure": "southcentralus"}


def _blueprint(tier: Tier) -> str:
    storage: dict[str, object] = {
        "name": "datasets",
        "kind": "lustre",
        "deployment": tier.deployment,
        "capacity_gib": tier.capacity_gib,
        "mount_point": "/lustre",
    }
    if tier.throughput is not None:
        storage["throughput_mbps_per_tib"] = tier.throughput
    return blueprint_yaml(tier.cloud, storage=[storage])


def test_every_lustre_tier_the_catalog_accepts_is_in_the_table() -> None:
    accepted = {
        (t.cloud, storage_sku(t, throughput))
        for t in CATALOG.storage_tiers
        if t.kind == "lustre"
        for throughput in (t.throughputs or [None])
    }
    assert accepted == {(t.cloud, t.sku) for t in TIERS}


@pytest.mark.parametrize("tier", TIERS, ids=lambda t: t.sku)
def test_lustre_tier_cost(tier: Tier) -> None:
    result = estimate_cost(validated(_blueprint(tier)).spec, CATALOG, today=TODAY)
    [line] = result.items
    assert (line.name, line.sku, line.region, line.quantity) == (
        "datasets",
        tier.sku,
        REGION[tier.cloud],
        tier.capacity_gib,
    )
    if tier.monthly is None:
        assert (line.unit_price_usd, line.monthly_usd, line.hourly_usd) == (None, None, None)
        assert result.unpriced == (line,)
        assert [w.message for w in result.warnings] == [
            f"datasets: no price for {tier.sku} in {REGION[tier.cloud]}; left out of the totals"
        ]
        assert "not in the totals (no price): datasets" in render_text(result).splitlines()
        return
    assert line.price is not None
    assert line.price.source == tier.source
    assert line.monthly_usd == Decimal(tier.monthly)
    assert line.hourly_usd is not None
    assert round(line.hourly_usd, 9) == Decimal(tier.hourly)
    assert (result.monthly_usd, result.unpriced) == (Decimal(tier.monthly), ())
