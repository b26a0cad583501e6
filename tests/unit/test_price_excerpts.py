"""The prices the cost tests pin, held to recorded excerpts of the sources prices.yaml cites.

tests/unit/test_cost.py checks the estimator's arithmetic on catalog prices (55.04 for a p5.48xlarge hour,
0.57285 for a v6e chip on spot, ...); whether those numbers are the vendors' is checked here, against
verbatim rows of the cited price tables (tests/fixtures/prices/SOURCES.md), read by this test on its own.
A price whose cited table could not be recorded is listed below with its number written out, so that it
cannot change unnoticed either.
"""

from __future__ import annotations

import ast
import csv
from decimal import Decimal

import pytest
import yaml

from clusterfab.catalog import load_catalog
from clusterfab.catalog.models import Price, PricingModel
from clusterfab.core.vocab import Cloud
from tests.conftest import REPO

CATALOG = load_catalog()
PRICES = REPO / "tests/fixtures/prices"
# prices.yaml writes per-chip TPU prices with at most four decimals: half a unit of the fourth.
FOUR_DECIMALS = Decimal("0.00005")
# Chips in the TPU slices whose rows are recorded: v5p-12288 counts TensorCores (two per chip).
SLICE_CHIPS = {"tpu-v5p": ("tpu-v5p-12288", 6144), "tpu-v6e": ("tpu-v6e-1", 1)}


def _usd(value: float) -> Decimal:
    return Decimal(repr(value))


def aws_rows(instance: str, region: str) -> list[dict[str, str]]:
    with (PRICES / "skypilot-catalog-v8-aws-vms-excerpt.csv").open(newline="") as rows:
        return [r for r in csv.DictReader(rows) if (r["InstanceType"], r["Region"]) == (instance, region)]


def tpu_rows(slice_name: str, region: str) -> list[dict[str, str]]:
    with (PRICES / "skypilot-catalog-v8-gcp-vms-excerpt.csv").open(newline="") as rows:
        return [
            r for r in csv.DictReader(rows) if (r["AcceleratorName"], r["Region"]) == (slice_name, region)
        ]


def cyclenerd(instance: str) -> dict[str, dict[str, str]]:
    # BaseLoader keeps every number as the text the file has.
    loaded = yaml.load((PRICES / "cyclenerd-pricing-excerpt.yml").read_text(), Loader=yaml.BaseLoader)
    cost: dict[str, dict[str, str]] = loaded["compute"]["instance"][instance]["cost"]
    return cost


def catalog_usd(cloud: Cloud, sku: str, region: str, model: PricingModel) -> Decimal:
    price = CATALOG.price(cloud, sku, region, model)
    assert price is not None, (sku, region, model)
    return _usd(price.usd)


@pytest.mark.parametrize("instance", ["p5.48xlarge", "c7i.4xlarge", "c7i.2xlarge", "m7i.large"])
def test_aws_on_demand_prices_are_the_price_lists(instance: str) -> None:
    rows = aws_rows(instance, "us-east-1")
    assert rows, instance
    assert {Decimal(r["Price"]) for r in rows} == {catalog_usd("aws", instance, "us-east-1", "on_demand")}


def test_aws_p5_spot_price_is_the_dearest_discounted_zone() -> None:
    # prices.yaml's rule: the highest per-AZ spot price, leaving out AZs at the on-demand price (no discount)
    # and Local Zones (use1-atl2-az1).
    rows = aws_rows("p5.48xlarge", "us-east-1")
    discounted = [
        Decimal(r["SpotPrice"])
        for r in rows
        if Decimal(r["SpotPrice"]) != Decimal(r["Price"]) and r["AvailabilityZone"].count("-") == 1
    ]
    assert catalog_usd("aws", "p5.48xlarge", "us-east-1", "spot") == max(discounted) == Decimal("25.7522")


TPU_ROWS = [
    p
    for p in CATALOG.prices
    if p.source == "S-SKY-GCP" and p.sku in SLICE_CHIPS and p.pricing_model in ("on_demand", "spot")
]


@pytest.mark.parametrize("price", TPU_ROWS, ids=lambda p: f"{p.sku}-{p.pricing_model}-{p.regions[0]}")
def test_tpu_chip_prices_are_the_slice_prices_per_chip(price: Price) -> None:
    slice_name, chips = SLICE_CHIPS[price.sku]
    column = "Price" if price.pricing_model == "on_demand" else "SpotPrice"
    for region in price.regions:
        per_chip = {Decimal(r[column]) / chips for r in tpu_rows(slice_name, region)}
        assert len(per_chip) == 1, (price.sku, region, per_chip)
        assert abs(_usd(price.usd) - per_chip.pop()) <= FOUR_DECIMALS, (price.sku, region)


def test_the_tpu_prices_the_cost_tests_pin_are_recorded() -> None:
    pinned: dict[tuple[str, str, PricingModel], str] = {
        ("tpu-v5p", "us-central1", "on_demand"): "4.20",
        ("tpu-v5p", "us-central1", "spot"): "0.9286",
        ("tpu-v6e", "us-east1", "spot"): "0.57285",
    }
    for (sku, region, model), usd in pinned.items():
        price = CATALOG.price("gcp", sku, region, model)
        assert price is not None
        assert price in TPU_ROWS
        assert _usd(price.usd) == Decimal(usd)


A3_MEGA_BILLING = [p for p in CATALOG.prices if p.source == "S-GCP-BILLING" and p.sku == "a3-megagpu-8g"]


@pytest.mark.parametrize("price", A3_MEGA_BILLING, ids=lambda p: f"{p.pricing_model}-{p.regions[0]}")
def test_a3_mega_prices_are_the_billing_catalogs(price: Price) -> None:
    field = "hour" if price.pricing_model == "on_demand" else "hour_spot"
    for region in price.regions:
        assert _usd(price.usd) == Decimal(cyclenerd("a3-megagpu-8g")[region][field]), region


def test_every_billing_region_of_a3_mega_is_in_the_catalog() -> None:
    recorded = {(p.pricing_model, r) for p in A3_MEGA_BILLING for r in p.regions}
    regions = cyclenerd("a3-megagpu-8g")
    assert recorded == {(m, r) for r in regions for m in ("on_demand", "spot")}
    # The billing table has no us-central1 row for a3-megagpu-8g: that price comes from S-GCP-PRICE below.
    assert "us-central1" not in regions


# Prices test_cost.py and test_lustre_prices.py pin whose cited source could not be recorded
# (tests/fixtures/prices/SOURCES.md):
# (cloud, sku, region, pricing model) -> (source, usd).
UNRECORDED: dict[tuple[Cloud, str, str, PricingModel], tuple[str, str]] = {
    ("aws", "p6-b200.48xlarge", "us-east-1", "capacity_block"): ("S-CB-OCT26", "113.666"),
    ("aws", "fsx-lustre/PERSISTENT_2/125", "us-east-1", "on_demand"): ("S-FSX-PRICE", "0.145"),
    ("aws", "fsx-lustre/SCRATCH_2", "us-east-1", "on_demand"): ("S-FSX-PRICE", "0.140"),
    ("gcp", "a3-megagpu-8g", "us-central1", "on_demand"): ("S-GCP-PRICE", "93.400712807"),
    ("gcp", "a3-megagpu-8g", "us-central1", "spot"): ("S-GCP-PRICE", "55.894488548"),
    ("gcp", "a3-ultragpu-8g", "us-central1", "on_demand"): ("S-GCP-PRICE", "84.806908493"),
    ("gcp", "e2-standard-8", "us-central1", "on_demand"): ("S-GCE-E2", "0.268024"),
    ("gcp", "e2-standard-4", "us-central1", "on_demand"): ("S-GCE-E2", "0.134012"),
    ("gcp", "filestore/ZONAL", "us-central1", "on_demand"): ("S-FILESTORE", "0.25"),
    ("gcp", "filestore/BASIC_SSD", "us-central1", "on_demand"): ("S-FILESTORE", "0.30"),
    ("gcp", "managed-lustre/125", "us-central1", "on_demand"): ("S-LUSTRE-TNS", "0.145"),
    ("gcp", "managed-lustre/250", "us-central1", "on_demand"): ("S-LUSTRE-SKU", "0.21"),
    ("gcp", "managed-lustre/500", "us-central1", "on_demand"): ("S-LUSTRE-SKU", "0.34"),
    ("gcp", "managed-lustre/1000", "us-central1", "on_demand"): ("S-LUSTRE-SKU", "0.60"),
}


@pytest.mark.parametrize("key", list(UNRECORDED), ids=lambda k: f"{k[1]}-{k[3]}")
def test_unrecorded_pinned_prices_are_written_out(key: tuple[Cloud, str, str, PricingModel]) -> None:
    cloud, sku, region, model = key
    source, usd = UNRECORDED[key]
    price = CATALOG.price(cloud, sku, region, model)
    assert price is not None
    assert (price.source, _usd(price.usd)) == (source, Decimal(usd))


def azure_items() -> list[dict[str, object]]:
    """The recorded Retail Prices API rows (a Python list literal in the source; read as data, never run)."""
    text = (PRICES / "llm-vram-planner-price-check-excerpt.txt").read_text()
    items = ast.literal_eval(text.split("AZURE_H100_ITEMS = ", 1)[1])
    assert isinstance(items, list)
    return items


@pytest.mark.parametrize(("model", "meter"), [("on_demand", "ND96isrH100v5"), ("spot", "ND96isrH100v5 Spot")])
def test_azure_nd_h100_prices_are_the_retail_price_apis_linux_meters(model: PricingModel, meter: str) -> None:
    # Linux and Windows share a meter name; the Linux row's product has no " Windows" suffix.
    (row,) = [
        item
        for item in azure_items()
        if (item["armRegionName"], item["armSkuName"], item["meterName"], item["productName"])
        == ("eastus", "Standard_ND96isr_H100_v5", meter, "Virtual Machines NDsr H100 v5 Series")
    ]
    assert (row["currencyCode"], row["unitOfMeasure"], row["type"]) == ("USD", "1 Hour", "Consumption")
    assert catalog_usd("azure", "Standard_ND96isr_H100_v5", "eastus", model) == _usd(
        float(str(row["retailPrice"]))
    )
    assert CATALOG.price("azure", "Standard_ND96isr_H100_v5", "southcentralus", model) is None
