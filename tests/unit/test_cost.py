"""The cost estimator, its renderers, the `cost` command and the budget rules.

Every expected figure is written out by hand from clusterfab/catalog/data/prices.yaml (the arithmetic
is in the comments), never recomputed with the code under test. Money is exact decimal arithmetic,
so compute items compare exactly; hourly storage (monthly / 730) is compared rounded to 9 decimals.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.core.vocab import Cloud
from clusterfab.cost import estimate_cost
from clusterfab.cost.render import cost_json, render_markdown, render_text, unit_price, usd
from clusterfab.load import load, load_bytes
from clusterfab.spec import ClusterSpec
from tests.conftest import BAD_FIXTURES, REPO, assert_golden
from tests.factories import TODAY, estimate, example_spec, spec, validated

"""The date prices are judged stale against: the catalog's as_of, fixed so the tests hold on any day."""
EXAMPLES_DIR = REPO / "blueprints" / "examples"

ITEM_KEYS = [
    "name",
    "kind",
    "sku",
    "region",
    "pricing_model",
    "quantity",
    "min_quantity",
    "unit",
    "unit_price_usd",
    "hourly_usd",
    "monthly_usd",
    "min_hourly_usd",
    "min_monthly_usd",
    "expected_hourly_usd",
    "expected_monthly_usd",
    "source",
    "as_of",
    "confidence",
    "ends_at",
    "term_hours",
    "term_usd",
]


def from_yaml(text: str, env: str | None = None) -> ClusterSpec:
    return validated(text, env, allow=frozenset({"BP401", "BP402"})).spec


def cli(*args: str, today: str = "2026-11-22") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CLUSTERFAB_TODAY": today}
    return subprocess.run(
        [sys.executable, "-m", "clusterfab", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        check=False,
    )


# --- every example, base and dev ---------------------------------------------------------------

EXAMPLE_TOTALS = [
    # p5.48xlarge capacity block 4 x 47.757 = 191.028/h (139,450.44/mo); spot at max 2 x 25.7522 = 51.5044/h
    # (37,598.212/mo); system nodes c7i.2xlarge 2 x 0.357 = 0.714/h (521.22/mo); the EKS control plane's
    # standard support fee 0.10/h (73/mo)
    ("aws-eks-p5", None, "243.346400000", "177642.8720"),
    # 1 x 47.757 = 47.757/h (34,862.61/mo); spot 1 x 25.7522 (18,799.106/mo); the same system nodes and fee
    ("aws-eks-p5", "dev", "74.323200000", "54255.9360"),
    # p5.48xlarge OD 16 x 55.04 = 880.64/h (642,867.20/mo); FSx PERSISTENT_2/125 36000 x 0.145 = 5,220/mo
    ("aws-p5-efa-fsx", None, "887.790684932", "648087.20"),
    # p5.48xlarge spot us-east-1 2 x 25.7522 = 51.5044/h (37,598.212/mo); FSx 2400 x 0.145 = 348/mo
    ("aws-p5-efa-fsx", "dev", "51.981112329", "37946.212"),
    # p6-b200 capacity block 8 x 113.666 = 909.328/h (663,809.44/mo); SCRATCH_2 4800 x 0.140 = 672/mo
    # p5.48xlarge OD 8 x 55.04 = 440.32/h; SCRATCH_2 4800 x 0.140 = 672/mo; monitoring m7i.large 0.1008/h
    ("aws-p5-monitored", None, "441.341347945", "322179.184"),
    # p5.48xlarge spot 1 x 25.7522 = 25.7522/h; SCRATCH_2 672/mo; monitoring 0.1008/h (73.584/mo)
    ("aws-p5-monitored", "dev", "26.773547945", "19544.69"),
    ("aws-p6-b200-capacity-block", None, "910.248547945", "664481.44"),
    # p5.48xlarge OD 8 x 55.04 = 440.32/h (321,433.60/mo); FSx PERSISTENT_2/125 4800 x 0.145 = 696/mo;
    # Slurm controller c7i.4xlarge 0.714/h (521.22/mo) and one login c7i.2xlarge 0.357/h (260.61/mo)
    ("aws-p5-slurm", None, "442.344424658", "322911.43"),
    # 2 x 55.04 = 110.08/h (80,358.40/mo); the same FSx, controller and login
    ("aws-p5-slurm", "dev", "112.104424658", "81836.23"),
    # 1 x 113.666 = 113.666/h (82,976.18/mo); SCRATCH_2 1200 x 0.140 = 168/mo
    ("aws-p6-b200-capacity-block", "dev", "113.896136986", "83144.18"),
    # a3-megagpu-8g OD 8 x 93.400712807 = 747.205702456/h (545,460.16279288/mo); ZONAL 10240 x 0.25 = 2,560/mo
    ("gcp-a3mega-tcpxo-filestore", None, "750.712551771", "548020.16279288"),
    # spot 2 x 55.894488548 = 111.788977096/h (81,605.95328008/mo); ZONAL 1024 x 0.25 = 256/mo
    ("gcp-a3mega-tcpxo-filestore", "dev", "112.139662028", "81861.95328008"),
    # reservation at OD 16 x 84.806908493 = 1,356.910535888/h (990,544.69119824/mo); Managed Lustre 500
    # 36000 x 0.34 = 12,240/mo (12,240 / 730 = 16.767123287671/h); Slurm controller e2-standard-8 0.268024/h
    # + login e2-standard-4 0.134012/h (x 730 = 293.48628/mo)
    ("gcp-a3ultra-roce-lustre", None, "1374.079695176", "1003078.17747824"),
    # flex_start at OD 2 x 84.806908493 = 169.613816986/h (123,818.08639978/mo); Managed Lustre 500
    # 18000 x 0.34 = 6,120/mo (8.383561643836/h); the same Slurm hosts
    ("gcp-a3ultra-roce-lustre", "dev", "178.399414630", "130231.57267978"),
    # GKE: a3-megagpu-8g reservation at OD 8 x 93.400712807 = 747.205702456/h; v5p 2x2x4 = 16 chips x 2 slices
    # x 4.20 = 134.40/h; the cluster fee 0.10/h; system nodes 2 x e2-standard-8 0.268024 = 0.536048/h; ZONAL
    # 10240 x 0.25 = 2,560/mo
    ("gcp-gke-a3mega", None, "885.748599771", "646596.47783288"),
    # spot 2 x 55.894488548 = 111.788977096/h; v5p 2x2x2 = 8 chips spot x 0.9286 = 7.4288/h; the same fee,
    # system nodes and share
    ("gcp-gke-a3mega", "dev", "123.360674411", "90053.29232008"),
    # v5p 4x4x4 = 64 chips x 2 slices x 4.20 = 537.60/h (392,448/mo); BASIC_SSD 2560 x 0.30 = 768/mo
    ("gcp-tpu-v5p-multislice", None, "538.652054795", "393216.00"),
    # v5p 2x2x2 = 8 chips spot x 0.9286 = 7.4288/h (5,423.024/mo); BASIC_SSD 768/mo
    ("gcp-tpu-v5p-multislice", "dev", "8.480854795", "6191.024"),
    # v6e 16x16 = 256 chips spot us-east1 x 0.57285 = 146.6496/h (107,054.208/mo)
    ("gcp-tpu-v6e-spot", None, "146.649600000", "107054.208"),
    # v6e 4x4 = 16 chips x 0.57285 = 9.1656/h (6,690.888/mo)
    ("gcp-tpu-v6e-spot", "dev", "9.165600000", "6690.888"),
    # Azure: neither Standard_ND96isr_H100_v5 nor AMLFS has a citable price (declared price gaps): 0 in the
    # totals, both lines unpriced
    ("azure-ndv5-ib", None, "0", "0"),
    ("azure-ndv5-ib", "dev", "0", "0"),
    ("azure-ndv5-ib-slurm", None, "0", "0"),
    ("azure-ndv5-ib-slurm", "dev", "0", "0"),
]


@pytest.mark.parametrize(
    ("example", "env", "hourly", "monthly"),
    EXAMPLE_TOTALS,
    ids=[f"{e}-{env or 'base'}" for e, env, *_ in EXAMPLE_TOTALS],
)
def test_example_totals(example: str, env: str | None, hourly: str, monthly: str) -> None:
    result = estimate(example, env)
    assert round(result.hourly_usd, 9) == Decimal(hourly)
    assert result.monthly_usd == Decimal(monthly)
    assert result.run_usd is None
    assert result.budget.ok


def test_team_quotas_are_priced_at_the_clusters_gpu_hour() -> None:
    # 8 p5.48xlarge at $55.04/h hold 64 GPUs: $6.88 per GPU-hour.
    research, applied, interns = estimate("aws-p5-slurm").teams
    assert (research.name, research.max_gpus, research.gpu_hours_per_month) == ("research", 64, 30000)
    assert research.usd_per_gpu_hour == Decimal("6.88")
    assert research.max_hourly_usd == Decimal("440.32")
    assert research.monthly_usd == Decimal("206400.00")
    assert (applied.max_hourly_usd, applied.monthly_usd) == (Decimal("220.16"), Decimal("68800.00"))
    assert (interns.max_hourly_usd, interns.monthly_usd) == (Decimal("55.04"), Decimal("6880.00"))


def test_slurm_controller_and_login_are_priced_on_demand() -> None:
    items = {item.name: item for item in estimate("aws-p5-slurm").items}
    controller, login = items["slurm-controller"], items["slurm-login"]
    assert (controller.kind, controller.sku, controller.quantity) == ("controller", "c7i.4xlarge", 1)
    assert (controller.hourly_usd, controller.monthly_usd) == (Decimal("0.714"), Decimal("521.220"))
    assert (login.kind, login.sku, login.quantity) == ("login", "c7i.2xlarge", 1)
    assert (login.hourly_usd, login.monthly_usd) == (Decimal("0.357"), Decimal("260.610"))


def test_the_managed_accounting_database_is_named_as_not_priced() -> None:
    """The catalog has no RDS prices: the totals leave the database out and say so beside them."""
    managed = spec(
        node_groups=[{"name": "h100", "machine_type": "p5.48xlarge", "count": 1}],
        scheduler={"kind": "slurm", "accounting": "managed"},
    )
    result = estimate_cost(managed, load_catalog(), today=TODAY)
    assert result.not_priced == ("the accounting database (db.m7g.large, 50 GiB and its backups)",)
    assert [i.name for i in result.items] == ["h100", "slurm-controller", "slurm-login"]
    text = render_text(result)
    assert (
        "not priced: the accounting database (db.m7g.large, 50 GiB and its backups), block storage"
        in " ".join(text.split())
    )
    embedded = spec(
        node_groups=[{"name": "h100", "machine_type": "p5.48xlarge", "count": 1}], scheduler={"kind": "slurm"}
    )
    assert estimate_cost(embedded, load_catalog(), today=TODAY).not_priced == ()
    cloud_sql = spec(
        "gcp",
        node_groups=[{"name": "h100", "machine_type": "a3-megagpu-8g", "count": 1}],
        scheduler={"kind": "slurm", "accounting": "managed", "database": {"storage_gib": 80}},
    )
    assert estimate_cost(cloud_sql, load_catalog(), today=TODAY).not_priced == (
        "the accounting database (db-custom-2-8192, 80 GiB and its backups)",
    )


def test_every_example_is_costed() -> None:
    assert {e for e, *_ in EXAMPLE_TOTALS} == {p.stem for p in EXAMPLES_DIR.glob("*.yaml")}


def test_example_items_in_detail() -> None:
    trainers, datasets = estimate("aws-p5-efa-fsx").items
    assert (trainers.name, trainers.kind, trainers.sku, trainers.region) == (
        "trainers",
        "node_group",
        "p5.48xlarge",
        "us-east-1",
    )
    assert (trainers.pricing_model, trainers.quantity, trainers.unit) == ("on_demand", 16, "hour")
    assert trainers.unit_price_usd == Decimal("55.04")
    assert trainers.hourly_usd == Decimal("880.64")
    assert trainers.monthly_usd == Decimal("642867.20")
    assert (trainers.source, trainers.as_of, trainers.confidence) == (
        "S-PL",
        dt.date(2026, 7, 28),
        "secondary",
    )
    assert datasets.sku == "fsx-lustre/PERSISTENT_2/125"
    assert (datasets.kind, datasets.quantity, datasets.unit) == ("storage", 36000, "gib_month")


def test_storage_arithmetic() -> None:
    _, datasets = estimate("aws-p5-efa-fsx").items
    # 36,000 GiB x $0.145 per GiB-month = $5,220 per month = 5220 / 730 = $7.150684931... per hour
    assert datasets.unit_price_usd == Decimal("0.145")
    assert datasets.monthly_usd == Decimal("5220.000")
    assert round(datasets.hourly_usd or 0, 9) == Decimal("7.150684932")


def test_storage_skus_match_the_price_list() -> None:
    assert [i.sku for i in estimate("aws-p6-b200-capacity-block").items] == [
        "p6-b200.48xlarge",
        "fsx-lustre/SCRATCH_2",
    ]
    assert estimate("gcp-a3mega-tcpxo-filestore").items[1].sku == "filestore/ZONAL"
    assert estimate("gcp-tpu-v5p-multislice").items[1].sku == "filestore/BASIC_SSD"
    assert estimate("gcp-a3ultra-roce-lustre").items[1].sku == "managed-lustre/500"


def test_tpu_chip_hour_arithmetic() -> None:
    pretrain = estimate("gcp-tpu-v5p-multislice").items[0]
    # v5p 4x4x4 = 64 chips per slice x 2 slices = 128 chips x $4.20 = $537.60 per hour
    assert (pretrain.kind, pretrain.sku, pretrain.unit) == ("tpu_slice", "tpu-v5p", "chip_hour")
    assert pretrain.quantity == 128
    assert pretrain.unit_price_usd == Decimal("4.2")
    assert pretrain.hourly_usd == Decimal("537.60")
    assert pretrain.monthly_usd == Decimal("392448.00")


def test_spot_is_cheaper_than_on_demand_for_the_same_group() -> None:
    template = """
version: 1
name: compare
cloud: {cloud}
region: {region}
zone: {zone}
node_groups:
  - name: trainers
    machine_type: {machine}
    count: 4
    capacity: {{kind: {kind}}}
"""
    cases = [
        ("aws", "us-east-1", "use1-az6", "p5.48xlarge", "220.16", "103.0088"),  # 4 x 55.04 vs 4 x 25.7522
        # 4 x 93.400712807 vs 4 x 55.894488548
        ("gcp", "us-central1", "us-central1-a", "a3-megagpu-8g", "373.602851228", "223.577954192"),
    ]
    for cloud, region, zone, machine, on_demand, spot in cases:
        fields = {"cloud": cloud, "region": region, "zone": zone, "machine": machine}
        od = estimate_cost(
            from_yaml(template.format(kind="on_demand", **fields)), load_catalog(), today=TODAY
        )
        sp = estimate_cost(from_yaml(template.format(kind="spot", **fields)), load_catalog(), today=TODAY)
        assert od.hourly_usd == Decimal(on_demand)
        assert sp.hourly_usd == Decimal(spot)
        assert sp.hourly_usd < od.hourly_usd
        assert (od.items[0].pricing_model, sp.items[0].pricing_model) == ("on_demand", "spot")


def test_run_cost_for_hours() -> None:
    # v6e: 146.6496/h x 336 h = 49,274.2656
    assert estimate("gcp-tpu-v6e-spot", hours=336).run_usd == Decimal("49274.2656")
    # p5 example: (880.64 + 5220/730) x 336 = 298,297.670136986...
    run = estimate("aws-p5-efa-fsx", hours=336).run_usd
    assert run is not None
    assert round(run, 9) == Decimal("298297.670136986")
    # fractional hours: 146.6496 x 1.5 = 219.9744
    assert estimate("gcp-tpu-v6e-spot", hours=1.5).run_usd == Decimal("219.9744")


UNPRICED_FSX = """
version: 1
name: p2-250
cloud: aws
region: us-east-1
zone: use1-az6
node_groups:
  - {name: trainers, machine_type: p5.48xlarge, count: 2}
storage:
  - name: datasets
    kind: lustre
    deployment: persistent
    capacity_gib: 2400
    throughput_mbps_per_tib: 250
"""
"""FSx for Lustre PERSISTENT_2 at 250 MB/s/TiB: a tier with no citable price (a declared price gap)."""


def test_missing_price_is_null_warned_and_left_out() -> None:
    result = estimate_cost(from_yaml(UNPRICED_FSX), load_catalog(), today=TODAY)
    datasets = result.items[1]
    assert (datasets.name, datasets.sku, datasets.quantity) == (
        "datasets",
        "fsx-lustre/PERSISTENT_2/250",
        2400,
    )
    assert (datasets.unit_price_usd, datasets.hourly_usd, datasets.monthly_usd, datasets.price) == (
        None,
        None,
        None,
        None,
    )
    assert result.unpriced == (datasets,)
    assert "datasets: no price for fsx-lustre/PERSISTENT_2/250 in us-east-1; left out of the totals" in [
        w.message for w in result.warnings
    ]
    # The total is the node group's alone (2 x 55.04 = 110.08/h), never the storage at $0 added silently.
    assert result.items[0].hourly_usd == Decimal("110.08")
    assert result.hourly_usd == sum(i.hourly_usd for i in result.items if i.hourly_usd) == Decimal("110.08")
    item = cost_json(result)["items"][1]
    assert [item[k] for k in ("unit_price_usd", "hourly_usd", "monthly_usd", "source", "as_of")] == [
        None,
        None,
        None,
        None,
        None,
    ]
    assert item["confidence"] is None


def test_price_missing_for_the_region() -> None:
    bp = from_yaml(
        """
version: 1
name: seoul
cloud: aws
region: ap-northeast-2
zone: apne2-az1
node_groups:
  - {name: trainers, machine_type: p5.48xlarge, count: 2, capacity: {kind: spot}}
"""
    )
    # p5 is offered in apne2-az1, but the spot snapshot has no price there (a declared price gap)
    result = estimate_cost(bp, load_catalog(), today=TODAY)
    assert result.items[0].hourly_usd is None
    assert result.hourly_usd == Decimal(0)
    assert [w.message for w in result.warnings] == [
        "trainers: no spot price for p5.48xlarge in ap-northeast-2; left out of the totals"
    ]


def test_reservation_and_flex_start_fall_back_to_on_demand_with_a_warning() -> None:
    base = estimate("gcp-a3ultra-roce-lustre")
    dev = estimate("gcp-a3ultra-roce-lustre", "dev")
    for result, kind in ((base, "reservation"), (dev, "flex_start")):
        trainers = result.items[0]
        assert (trainers.capacity, trainers.pricing_model) == (kind, "on_demand")
        assert trainers.unit_price_usd == Decimal("84.806908493")
        assert result.warnings[0].reason == "fallback"
        assert result.warnings[0].message.startswith(f"trainers: {kind} priced at on-demand; ")
    assert "DWS flex-start prices are unconfirmed" in dev.warnings[0].message


# --- autoscaled groups: at max, at min and at a utilisation -------------------------------------

ELASTIC = """
version: 1
name: elastic
cloud: aws
region: us-east-1
zone: use1-az6
node_groups:
  - name: trainers
    machine_type: p5.48xlarge
    autoscaling: {min: 2, max: 10}
storage:
  - name: datasets
    kind: lustre
    deployment: persistent
    capacity_gib: 2400
    throughput_mbps_per_tib: 125
"""
"""An autoscaled group (2 to 10 p5.48xlarge) next to a fixed-size item (2,400 GiB of FSx)."""


def catalog_price(cloud: Cloud, sku: str, region: str = "us-east-1") -> Decimal:
    """The on-demand unit price the catalog records, as written in prices.yaml."""
    price = load_catalog().price(cloud, sku, region, "on_demand")
    assert price is not None, sku
    return Decimal(str(price.usd))


def test_autoscaled_group_is_priced_at_max_at_min_and_at_a_utilisation() -> None:
    p5 = catalog_price("aws", "p5.48xlarge")
    fsx = catalog_price("aws", "fsx-lustre/PERSISTENT_2/125")
    assert (p5, fsx) == (Decimal("55.04"), Decimal("0.145"))  # prices.yaml, S-PL and S-FSX-PRICE
    result = estimate_cost(from_yaml(ELASTIC), load_catalog(), utilisation_percent=25, today=TODAY)
    trainers, datasets = result.items
    assert (trainers.quantity, trainers.min_quantity, datasets.min_quantity) == (10, 2, None)
    # at max: 10 x 55.04 = 550.40/h, 401,792.00/mo; at min: 2 x 55.04 = 110.08/h, 80,358.40/mo;
    # at 25 %: 2 + (10 - 2) x 0.25 = 4 nodes on average = 220.16/h, 160,716.80/mo
    assert (trainers.hourly_usd, trainers.monthly_usd) == (10 * p5, 10 * p5 * 730)
    assert (trainers.hourly_usd, trainers.monthly_usd) == (Decimal("550.40"), Decimal("401792.00"))
    assert (trainers.min_hourly_usd, trainers.min_monthly_usd) == (2 * p5, 2 * p5 * 730)
    assert (trainers.min_hourly_usd, trainers.min_monthly_usd) == (Decimal("110.08"), Decimal("80358.40"))
    quarter = Decimal("0.25")
    assert trainers.quantity_at(quarter) == 4
    assert trainers.hourly_at(quarter) == 4 * p5 == Decimal("220.16")
    assert trainers.monthly_at(quarter) == 4 * p5 * 730 == Decimal("160716.80")
    # the file system does not scale: the same 2,400 x 0.145 = 348/mo at min, max and any utilisation
    assert datasets.monthly_usd == datasets.min_monthly_usd == datasets.monthly_at(quarter) == 2400 * fsx
    # totals: the group plus the file system (348/mo, 348 / 730 per hour)
    assert (result.hourly_usd, result.monthly_usd) == (10 * p5 + 2400 * fsx / 730, 10 * p5 * 730 + 2400 * fsx)
    assert result.monthly_usd == Decimal("402140.00")
    assert result.min_monthly_usd == 2 * p5 * 730 + 2400 * fsx == Decimal("80706.40")
    assert result.min_hourly_usd == 2 * p5 + 2400 * fsx / 730
    assert result.utilisation_percent == 25
    assert result.expected_monthly_usd == 4 * p5 * 730 + 2400 * fsx == Decimal("161064.80")
    assert result.expected_hourly_usd == 4 * p5 + 2400 * fsx / 730
    # the budget and the run are judged at full size
    assert estimate_cost(from_yaml(ELASTIC), load_catalog(), hours=10, today=TODAY).run_usd == (
        (10 * p5 + 2400 * fsx / 730) * 10
    )


@pytest.mark.parametrize(
    ("percent", "nodes"),
    [(0, "2"), (100, "10"), (12.5, "3"), (33.3, "4.664")],  # 2 + 8 x p / 100
)
def test_utilisation_runs_from_min_to_max(percent: float, nodes: str) -> None:
    p5 = catalog_price("aws", "p5.48xlarge")
    result = estimate_cost(from_yaml(ELASTIC), load_catalog(), utilisation_percent=percent, today=TODAY)
    trainers = result.items[0]
    assert trainers.quantity_at(Decimal(str(percent)) / 100) == Decimal(nodes)
    assert result.expected_monthly_usd == Decimal(nodes) * p5 * 730 + 348


def test_an_elastic_slurm_group_scales_and_the_controller_does_not() -> None:
    # Built without the rules: an elastic group under Slurm is what issue 14 adds (BP129 refuses it
    # until then); the estimate does not care who scales the group.
    elastic = spec(
        name="elastic-slurm",
        node_groups=[{"name": "h100", "machine_type": "p5.48xlarge", "autoscaling": {"min": 1, "max": 8}}],
        scheduler={"kind": "slurm", "login": {"count": 1}},
    )
    p5 = catalog_price("aws", "p5.48xlarge")
    controller = catalog_price("aws", "c7i.4xlarge")
    login = catalog_price("aws", "c7i.2xlarge")
    assert (p5, controller, login) == (Decimal("55.04"), Decimal("0.714"), Decimal("0.357"))
    result = estimate_cost(elastic, load_catalog(), utilisation_percent=50, today=TODAY)
    assert [(i.name, i.min_quantity) for i in result.items] == [
        ("h100", 1),
        ("slurm-controller", None),
        ("slurm-login", None),
    ]
    always = controller + login  # 1.071/h
    assert result.hourly_usd == 8 * p5 + always == Decimal("441.391")
    assert result.min_hourly_usd == 1 * p5 + always == Decimal("56.111")
    assert result.expected_hourly_usd == Decimal("4.5") * p5 + always == Decimal("248.751")  # 1 + 7 x 0.5
    assert result.expected_monthly_usd == Decimal("248.751") * 730


def test_utilisation_without_an_autoscaled_group_changes_nothing() -> None:
    result = estimate_cost(
        example_spec("aws-p5-efa-fsx"), load_catalog(), utilisation_percent=25, today=TODAY
    )
    assert not result.scales
    assert result.min_monthly_usd == result.expected_monthly_usd == result.monthly_usd == Decimal("648087.20")
    text = render_text(result)
    assert "TOTAL at" not in text
    assert "--utilisation 25% changes nothing: no group autoscales" in text


def test_text_labels_max_min_and_utilisation() -> None:
    result = estimate_cost(from_yaml(ELASTIC), load_catalog(), utilisation_percent=25, hours=10, today=TODAY)
    lines = render_text(result).splitlines()
    table = [" ".join(line.split()) for line in lines[2:11]]
    assert table == [
        "ITEM KIND SKU PRICING QUANTITY UNIT PRICE HOURLY MONTHLY",
        "trainers node_group p5.48xlarge on_demand 10 nodes (max) $55.04/h $550.40 $401,792.00",
        "at min 2 nodes $110.08 $80,358.40",
        "at 25% utilisation 4 nodes (mean) $220.16 $160,716.80",
        "datasets storage fsx-lustre/PERSISTENT_2/125 on_demand 2,400 GiB $0.145/GiB-mo $0.48 $348.00",
        "TOTAL at max $550.88 $402,140.00",
        "TOTAL at min $110.56 $80,706.40",  # 110.08 + 348 / 730 = 110.5567
        "TOTAL at 25% utilisation $220.64 $161,064.80",
        "",
    ]
    assert lines[4].startswith("  at min ")  # under its group, indented
    assert "run of 10 hours: $5,508.77 (autoscaled groups at their max)" in lines  # 550.8767 x 10
    assert "at min: autoscaled groups at their min; at 25% utilisation" in " ".join(lines)
    markdown = render_markdown(result).splitlines()
    assert "| &nbsp;&nbsp;_at 25% utilisation_ | | | | 4 nodes (mean) | | $220.16 | $160,716.80 |" in markdown
    assert "| **Total at min** | | | | | | **$110.56** | **$80,706.40** |" in markdown


def test_cost_json_at_min_max_and_utilisation(tmp_path: Path) -> None:
    path = tmp_path / "elastic.yaml"
    path.write_text(ELASTIC)
    proc = cli("cost", str(path), "--utilisation", "25", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    totals = {k: payload[k] for k in list(payload)[7:14]}
    assert totals == {
        "hourly_usd": 550.88,  # 550.40 + 348 / 730
        "monthly_usd": 402140.0,
        "min_hourly_usd": 110.56,
        "min_monthly_usd": 80706.4,
        "utilisation_percent": 25,
        "expected_hourly_usd": 220.64,
        "expected_monthly_usd": 161064.8,
    }
    trainers, datasets = payload["items"]
    assert {k: trainers[k] for k in ITEM_KEYS[5:15]} == {
        "quantity": 10,
        "min_quantity": 2,
        "unit": "hour",
        "unit_price_usd": 55.04,
        "hourly_usd": 550.4,
        "monthly_usd": 401792.0,
        "min_hourly_usd": 110.08,
        "min_monthly_usd": 80358.4,
        "expected_hourly_usd": 220.16,
        "expected_monthly_usd": 160716.8,
    }
    assert datasets["min_quantity"] is None
    assert datasets["monthly_usd"] == datasets["min_monthly_usd"] == datasets["expected_monthly_usd"] == 348
    alias = cli("cost", str(path), "--utilization", "25", "--format", "json")
    assert alias.returncode == 0, alias.stderr
    assert json.loads(alias.stdout) == payload
    plain = json.loads(cli("cost", str(path), "--format", "json").stdout)
    assert (plain["utilisation_percent"], plain["expected_monthly_usd"]) == (None, None)
    assert plain["items"][0]["expected_hourly_usd"] is None
    assert plain["min_monthly_usd"] == 80706.4


def test_stale_and_unconfirmed_prices_are_warned_against_a_fixed_today() -> None:
    dev = example_spec("aws-p5-efa-fsx", "dev")  # spot p5 us-east-1: as_of 2025-11-01, stale after 180 days
    fresh = estimate_cost(dev, load_catalog(), today=dt.date(2026, 4, 30))  # 180 days: not yet stale
    assert fresh.warnings == ()
    stale = estimate_cost(dev, load_catalog(), today=dt.date(2026, 5, 1))  # 181 days
    assert [w.message for w in stale.warnings] == [
        "trainers: the spot price of p5.48xlarge in us-east-1 is from 2025-11-01, 181 days old "
        "(stale after 180 days; source S-SKY-AWS-V8); note: use1-az2 19.2531, az3 21.1543, az5 25.7522, "
        "az6 17.6289; use1-az1, az4 at the on-demand price"
    ]
    bp = from_yaml(
        """
version: 1
name: iowa
cloud: gcp
region: us-central1
zone: us-central1-a
project: ml-platform-dev
storage:
  - {name: home, kind: filestore, tier: BASIC_HDD, capacity_gib: 1024, mount_point: /home}
"""
    )
    result = estimate_cost(bp, load_catalog(), today=TODAY)
    assert result.items[0].confidence == "unconfirmed"
    # an unconfirmed price's note goes with the unconfirmed warning, not the stale one
    assert [(w.reason, w.message) for w in result.warnings] == [
        (
            "stale",
            "home: the on_demand price of filestore/BASIC_HDD in us-central1 is from 2026-01-01, "
            "325 days old (stale after 180 days; source S-FILESTORE-PRICE)",
        ),
        (
            "unconfirmed",
            "home: the on_demand price of filestore/BASIC_HDD in us-central1 is unconfirmed "
            "(source S-FILESTORE-PRICE); note: assumed equal to us-west1",
        ),
    ]


def test_budget_limits_and_verdict() -> None:
    # p5 example: 887.79/h within 1,000/h; 648,087.20/mo within 700,000
    budget = estimate("aws-p5-efa-fsx").budget
    assert (budget.max_hourly_usd, budget.max_monthly_usd, budget.ok) == (
        Decimal("1000"),
        Decimal("700000"),
        True,
    )
    # no monthly limit in this example
    assert cost_json(estimate("gcp-tpu-v6e-spot"))["budget"] == {
        "max_hourly_usd": 200.0,
        "max_monthly_usd": None,
        "ok": True,
    }
    text = """
version: 1
name: limits
cloud: aws
region: us-east-1
zone: use1-az6
node_groups: [{name: trainers, machine_type: p5.48xlarge, count: 4}]
"""
    # 4 x 55.04 = 220.16/h exactly at the limit is within it; a cent less is over
    at_limit = estimate_cost(
        from_yaml(text + "budget: {max_hourly_usd: 220.16}"), load_catalog(), today=TODAY
    ).budget
    assert at_limit.ok
    over = estimate_cost(from_yaml(text + "budget: {max_hourly_usd: 220.15}"), load_catalog(), today=TODAY)
    assert (over.budget.hourly_exceeded, over.budget.monthly_exceeded, over.budget.ok) == (True, False, False)
    none = estimate_cost(from_yaml(text), load_catalog(), today=TODAY).budget
    assert (none.max_hourly_usd, none.max_monthly_usd, none.ok) == (None, None, True)


# --- JSON contract -----------------------------------------------------------------------------


def test_json_contract_keys_exactly() -> None:
    payload = cost_json(estimate("gcp-a3ultra-roce-lustre", hours=24))
    assert list(payload) == [
        "schema_version",
        "blueprint",
        "env",
        "cloud",
        "region",
        "ok",
        "currency",
        "hourly_usd",
        "monthly_usd",
        "min_hourly_usd",
        "min_monthly_usd",
        "utilisation_percent",
        "expected_hourly_usd",
        "expected_monthly_usd",
        "run_usd",
        "hours",
        "items",
        "catalog",
        "warnings",
        "budget",
        "teams",
        "findings",
    ]
    assert payload["currency"] == "USD"
    for item in payload["items"]:
        assert list(item) == ITEM_KEYS
    assert list(payload["catalog"]) == ["version", "as_of"]
    assert list(payload["budget"]) == ["max_hourly_usd", "max_monthly_usd", "ok"]
    assert all(isinstance(w, str) for w in payload["warnings"])
    kinds = {"node_group", "tpu_slice", "storage", "monitoring", "controller", "login"}
    assert {i["kind"] for i in payload["items"]} <= kinds


def test_json_money_is_rounded_to_the_cent_and_catalog_figures_are_as_written() -> None:
    # docs/json/README.md: computed money is rounded half up to the cent from the exact sums;
    # unit prices and budget limits are the catalog's and the blueprint's figures as written.
    payload = cost_json(estimate("aws-p5-efa-fsx", hours=336))
    assert payload["hourly_usd"] == 887.79  # 880.64 + 5220 / 730 = 887.790684...
    assert payload["monthly_usd"] == 648087.2
    assert payload["run_usd"] == 298297.67  # 887.790684... x 336 = 298297.670137...
    assert payload["hours"] == 336
    trainers, datasets = payload["items"]
    assert trainers == {
        "name": "trainers",
        "kind": "node_group",
        "sku": "p5.48xlarge",
        "region": "us-east-1",
        "pricing_model": "on_demand",
        "quantity": 16,
        "min_quantity": None,
        "unit": "hour",
        "unit_price_usd": 55.04,
        "hourly_usd": 880.64,
        "monthly_usd": 642867.2,
        "min_hourly_usd": 880.64,
        "min_monthly_usd": 642867.2,
        "expected_hourly_usd": None,
        "expected_monthly_usd": None,
        "source": "S-PL",
        "as_of": "2026-07-28",
        "confidence": "secondary",
        "ends_at": None,
        "term_hours": None,
        "term_usd": None,
    }
    assert datasets["hourly_usd"] == 7.15  # 36,000 GiB x $0.145 / 730 h = 7.1506...
    assert datasets["unit_price_usd"] == 0.145
    catalog = load_catalog()
    assert payload["catalog"] == {"version": catalog.version, "as_of": catalog.index.as_of.isoformat()}
    assert payload["warnings"] == []


# --- display -----------------------------------------------------------------------------------


def test_money_formatting() -> None:
    assert usd(Decimal("648087.2")) == "$648,087.20"
    assert usd(Decimal("7.150684931")) == "$7.15"
    assert usd(Decimal("0.005")) == "$0.01"
    assert unit_price(Decimal("55.04")) == "$55.04"
    assert unit_price(Decimal("0.145")) == "$0.145"
    assert unit_price(Decimal("93.400712807")) == "$93.4007"
    assert unit_price(Decimal("4.2")) == "$4.20"
    assert unit_price(Decimal("1234.5")) == "$1,234.50"


@pytest.mark.parametrize(
    ("example", "env", "hours"),
    [
        ("aws-p5-efa-fsx", None, None),
        ("gcp-a3ultra-roce-lustre", "dev", None),
        ("gcp-tpu-v5p-multislice", None, "336"),
    ],
)
def test_golden_text_and_markdown(example: str, env: str | None, hours: str | None) -> None:
    args = ["cost", f"blueprints/examples/{example}.yaml"]
    args += ["--env", env] if env else []
    args += ["--hours", hours] if hours else []
    name = f"{example}-{env or 'base'}"
    text = cli(*args)
    assert text.returncode == 0, text.stderr
    assert text.stderr == ""
    assert_golden(f"cost/{name}.txt", text.stdout)
    markdown = cli(*args, "--format", "markdown")
    assert markdown.returncode == 0, markdown.stderr
    assert_golden(f"cost/{name}.md", markdown.stdout)


def test_renderers_state_the_environment() -> None:
    dev = estimate("gcp-tpu-v6e-spot", "dev")
    assert render_text(dev, environment="dev").splitlines()[0] == (
        "Cost of trillium-spot (environment dev) on gcp us-east1"
    )
    assert render_markdown(estimate("gcp-tpu-v6e-spot")).splitlines()[0] == (
        "### Cost of `trillium-spot` (base blueprint) on gcp us-east1"
    )


# --- the cost command --------------------------------------------------------------------------


def test_cost_json_via_cli() -> None:
    proc = cli("cost", "blueprints/examples/gcp-tpu-v6e-spot.yaml", "--hours", "336", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["hourly_usd"] == 146.65  # 256 chips x $0.57285
    assert payload["monthly_usd"] == 107054.21  # 146.6496 x 730 = 107054.208
    assert payload["run_usd"] == 49274.27  # 146.6496 x 336 = 49274.2656
    assert (payload["blueprint"], payload["env"], payload["cloud"]) == (
        "blueprints/examples/gcp-tpu-v6e-spot.yaml",
        None,
        "gcp",
    )
    assert payload["items"][0]["quantity"] == 256


def test_cost_over_budget_exits_1() -> None:
    path = str(BAD_FIXTURES / "BP401-hourly-budget.yaml")
    proc = cli("cost", path)
    assert proc.returncode == 1
    assert "budget: OVER BUDGET (hourly $220.16 over the $200.00 limit)" in proc.stdout.splitlines(), (
        proc.stdout
    )
    proc = cli("cost", path, "--format", "json")
    assert proc.returncode == 1
    payload = json.loads(proc.stdout)
    assert payload["hourly_usd"] == 220.16
    assert payload["budget"] == {"max_hourly_usd": 200.0, "max_monthly_usd": None, "ok": False}
    monthly = cli("cost", str(BAD_FIXTURES / "BP402-monthly-budget.yaml"), "--format", "markdown")
    assert monthly.returncode == 1
    assert (
        "**Budget:** **OVER BUDGET (hourly $55.04 of $100.00 limit; monthly $40,179.20 over the "
        "$40,000.00 limit)**"
    ) in monthly.stdout


def test_cost_of_base_is_not_blocked_by_an_environment_over_budget(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text(
        """version: 1
name: grow
cloud: aws
region: us-east-1
zone: use1-az6
node_groups: [{name: trainers, machine_type: p5.48xlarge, count: 1}]
budget: {max_hourly_usd: 100}
environments:
  big: {node_groups: [{name: trainers, count: 4}]}
"""
    )
    assert cli("cost", str(path)).returncode == 0
    big = cli("cost", str(path), "--env", "big")
    assert big.returncode == 1
    assert "OVER BUDGET (hourly $220.16 over the $100.00 limit)" in big.stdout
    # validate reports the environment's overrun as BP401, pointing at the base's limit
    result = load(path, today=TODAY)
    assert [(f.code, f.field, f.line, f.column, f.message) for f in result.findings] == [
        (
            "BP401",
            "budget.max_hourly_usd",
            7,
            26,
            "the estimate of $220.16/h is over the budget of $100.00/h (environment 'big')",
        )
    ]


def test_cost_of_an_invalid_blueprint_exits_1_with_the_findings() -> None:
    path = str(BAD_FIXTURES / "BP104-tpu-topology.yaml")
    proc = cli("cost", path)
    # Findings go to stdout, like every command's (docs/cli.md): CI posts stdout as it is.
    assert proc.returncode == 1
    assert proc.stderr == ""
    assert "error[BP104] tpu_slices[0].topology: '4x4x3' is not a v5p topology" in proc.stdout
    assert proc.stdout.rstrip().endswith("invalid (1 error, 0 warnings, 0 notes); not costed")
    proc = cli("cost", path, "--format", "json")
    assert proc.returncode == 1
    payload = json.loads(proc.stdout)
    assert payload["ok"] is False
    assert [f["code"] for f in payload["findings"]] == ["BP104"]
    proc = cli("cost", path, "--format", "markdown")
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[:3] == [
        f"### clusterfab cost: `{path}` is invalid",
        "",
        "**1 error, 0 warnings, 0 notes**",
    ]
    assert (
        f"| error | BP104 | `{path}:11:15` | `tpu_slices[0].topology` | '4x4x3' is not a v5p topology | "
        "nearest v5p topologies: 4x4x4 (64 chips), 2x4x4 (32 chips), 4x4x8 (128 chips), 2x2x4 (16 chips) |"
    ) in proc.stdout.splitlines()


@pytest.mark.parametrize(
    ("args", "today", "message"),
    [
        (
            ("cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--env", "staging"),
            "2026-11-22",
            "error: environment 'staging' is not defined in blueprints/examples/aws-p5-efa-fsx.yaml "
            "(defined: dev, prod)",
        ),
        (
            ("cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--hours", "0"),
            "2026-11-22",
            "error: --hours must be a positive number of hours up to 100,000, not 0",
        ),
        (
            ("cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--hours", "nan"),
            "2026-11-22",
            "error: --hours must be a positive number of hours up to 100,000, not nan",
        ),
        (
            ("cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--hours", "1e25"),
            "2026-11-22",
            "error: --hours must be a positive number of hours up to 100,000, not 1e+25",
        ),
        (
            ("cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--hours", "inf"),
            "2026-11-22",
            "error: --hours must be a positive number of hours up to 100,000, not inf",
        ),
        (
            ("cost", "blueprints/examples/aws-p5-efa-fsx.yaml"),
            "22/11/2026",
            "error: CLUSTERFAB_TODAY='22/11/2026' is not an ISO date (YYYY-MM-DD)",
        ),
        (("cost", "no/such.yaml"), "2026-11-22", "error: no such file: no/such.yaml"),
        (
            ("cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--utilisation", "120"),
            "2026-11-22",
            "error: --utilisation must be a percentage from 0 to 100, not 120",
        ),
        (
            ("cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--utilisation", "-5"),
            "2026-11-22",
            "error: --utilisation must be a percentage from 0 to 100, not -5",
        ),
        (
            ("cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--utilization", "100.5"),
            "2026-11-22",
            "error: --utilisation must be a percentage from 0 to 100, not 100.5",
        ),
        (
            ("cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--utilisation", "nan"),
            "2026-11-22",
            "error: --utilisation must be a percentage from 0 to 100, not nan",
        ),
    ],
)
def test_cost_usage_errors_exit_2(args: tuple[str, ...], today: str, message: str) -> None:
    proc = cli(*args, today=today)
    assert proc.returncode == 2
    assert proc.stderr.strip() == message
    assert "Traceback" not in proc.stderr


def test_cost_utilisation_that_is_not_a_number_is_a_usage_error() -> None:
    proc = cli("cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--utilisation", "abc")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert "Invalid value for '--utilisation' / '--utilization'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_uses_the_system_date_without_clusterfab_today() -> None:
    env = {k: v for k, v in os.environ.items() if k != "CLUSTERFAB_TODAY"}
    proc = subprocess.run(
        [sys.executable, "-m", "clusterfab", "cost", "blueprints/examples/aws-p6-b200-capacity-block.yaml"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Cost of b200-finetune (base blueprint) on aws us-east-1\n")


def test_cost_package_imports_no_pulumi() -> None:
    code = (
        "import sys, clusterfab.cost, clusterfab.cost.render, clusterfab.rules.budget\n"
        "print(sorted(m for m in sys.modules if m == 'pulumi' or m.startswith(('pulumi.', 'pulumi_'))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.stdout.strip() == "[]", proc.stderr


# --- budget rules in validate ------------------------------------------------------------------


def test_budget_findings_messages_and_hints() -> None:
    result = load(BAD_FIXTURES / "BP401-hourly-budget.yaml", today=TODAY)
    (finding,) = result.findings
    assert finding.message == "the estimate of $220.16/h is over the budget of $200.00/h"
    assert finding.hint == (
        "largest costs: trainers (4 x p5.48xlarge, on_demand) $220.16/h (100%); lower them (fewer nodes "
        "or chips, cheaper capacity such as spot) or raise budget.max_hourly_usd"
    )
    result = load(BAD_FIXTURES / "BP402-monthly-budget.yaml", today=TODAY)
    (finding,) = result.findings
    assert finding.message == (
        "the estimate of $40,179.20/month (730 h) is over the budget of $40,000.00/month"
    )


def test_budget_over_with_unpriced_items_says_so() -> None:
    result = load_bytes(
        b"""version: 1
name: partial
cloud: aws
region: us-east-1
zone: use1-az6
node_groups: [{name: trainers, machine_type: p5.48xlarge, count: 4}]
storage: [{name: data, kind: lustre, capacity_gib: 2400, throughput_mbps_per_tib: 500}]
budget: {max_hourly_usd: 200}
""",
        "partial.yaml",
        today=TODAY,
    )
    assert [(f.code, f.message) for f in result.findings] == [
        ("BP403", "no price for fsx-lustre/PERSISTENT_2/500 in us-east-1; left out of the budget check"),
        ("BP401", "the estimate of $220.16/h (without 1 unpriced item) is over the budget of $200.00/h"),
    ]


def test_no_budget_no_budget_findings() -> None:
    # The same unpriced storage without a budget: nothing for validate to say about cost.
    result = load_bytes(
        b"""version: 1
name: partial
cloud: aws
region: us-east-2
zone: use2-az1
node_groups: [{name: trainers, machine_type: p5.48xlarge, count: 4}]
storage: [{name: data, kind: lustre, capacity_gib: 2400, throughput_mbps_per_tib: 500}]
""",
        "partial.yaml",
        today=TODAY,
    )
    assert result.findings == []


def test_unknown_catalog_names_get_no_budget_noise() -> None:
    result = load_bytes(
        b"""version: 1
name: typo
cloud: aws
region: us-east-1
zone: use1-az6
node_groups: [{name: trainers, machine_type: p5.48xlarg, count: 4}]
budget: {max_hourly_usd: 1}
""",
        "typo.yaml",
        today=TODAY,
    )
    assert [f.code for f in result.findings] == ["BP201"]


def test_cost_of_the_base_is_not_blocked_by_a_broken_overlay(tmp_path: Path) -> None:
    path = tmp_path / "bp.yaml"
    path.write_text(
        "version: 1\nname: base-only\ncloud: aws\nregion: us-east-1\nzone: use1-az6\n"
        "node_groups: [{name: g, machine_type: p5.48xlarge, count: 1}]\n"
        "environments:\n  dev: {node_groups: [{name: g, count: 0}]}\n"
    )
    base = subprocess.run(
        [sys.executable, "-m", "clusterfab", "cost", str(path), "-f", "json"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "CLUSTERFAB_TODAY": "2026-11-22"},
    )
    assert base.returncode == 0, base.stderr
    assert json.loads(base.stdout)["hourly_usd"] == 55.04
    dev = subprocess.run(
        [sys.executable, "-m", "clusterfab", "cost", str(path), "--env", "dev"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert dev.returncode == 1
    assert "error[BP009] node_groups[0].count" in dev.stdout
