"""`clusterfab cost` on Kubernetes blueprints: the managed control plane's fee per cluster hour (GKE's flat
fee; EKS's standard fee, and its extended support fee once the version's standard support has ended) and
the system node pool, beside the GPU node pools.

Fees from the vendors' pages (S-GKE-PRICING, S-EKS-PRICING): $0.10 per cluster hour on GKE and on EKS
standard support, $0.60 in total on EKS extended support. EKS ends standard support of 1.34 on 2026-12-02
(facts.yaml). Monthly = 730 hours."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.clouds import profile
from clusterfab.core.vocab import Cloud
from tests.conftest import REPO

GKE = """\
version: 1
name: kube
cloud: gcp
project: demo-project
region: us-central1
zone: us-central1-a
node_groups:
  - name: trainers
    machine_type: a3-megagpu-8g
    count: 2
scheduler:
  kind: kubernetes
"""

EKS = """\
version: 1
name: kube
cloud: aws
region: us-east-1
zone: use1-az6
node_groups:
  - name: trainers
    machine_type: p5.48xlarge
    count: 2
scheduler:
  kind: kubernetes
  version: "1.34"
"""

FIELDS = ("name", "kind", "sku", "pricing_model", "quantity", "unit_price_usd", "hourly_usd", "monthly_usd")


def cost(tmp_path: Path, text: str, today: str) -> dict[str, Any]:
    path = tmp_path / "kube.yaml"
    path.write_text(text, "utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "clusterfab", "cost", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "CLUSTERFAB_TODAY": today},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def items(result: dict[str, Any]) -> list[tuple[object, ...]]:
    return [tuple(item[f] for f in FIELDS) for item in result["items"]]


def test_gke_prices_the_cluster_fee_and_the_system_nodes(tmp_path: Path) -> None:
    result = cost(tmp_path, GKE, "2026-11-29")
    # a3-megagpu-8g 2 x 93.400712807 (the catalog's GPU + vCPU + memory sum); gke/cluster 0.10 x 730 =
    # 73.00; e2-standard-8 2 x 0.268024 = 0.536048/h
    assert items(result) == [
        ("trainers", "node_group", "a3-megagpu-8g", "on_demand", 2, 93.400712807, 186.8, 136365.04),
        ("control-plane", "controller", "gke/cluster", "on_demand", 1, 0.1, 0.1, 73.0),
        ("system-nodes", "controller", "e2-standard-8", "on_demand", 2, 0.268024, 0.54, 391.32),
    ]
    assert (result["hourly_usd"], result["monthly_usd"]) == (187.44, 136829.36)
    plane = result["items"][1]
    assert (plane["source"], plane["as_of"], plane["confidence"]) == (
        "S-GKE-PRICING",
        "2026-11-29",
        "official",
    )


@pytest.mark.parametrize(
    ("today", "sku", "fee", "monthly_fee", "hourly", "monthly"),
    [
        # The day before 1.34's standard support ends: the standard fee.
        ("2026-12-01", "eks/cluster", 0.1, 73.0, 110.89, 80952.62),
        # From the end of standard support on: the extended support fee, $0.60 in total.
        ("2026-12-02", "eks/cluster-extended", 0.6, 438.0, 111.39, 81317.62),
    ],
)
def test_eks_prices_the_control_plane_at_the_fee_of_its_support(
    tmp_path: Path, today: str, sku: str, fee: float, monthly_fee: float, hourly: float, monthly: float
) -> None:
    result = cost(tmp_path, EKS, today)
    # p5.48xlarge 2 x 55.04 = 110.08/h; c7i.2xlarge 2 x 0.357 = 0.714/h (521.22/mo)
    assert items(result) == [
        ("trainers", "node_group", "p5.48xlarge", "on_demand", 2, 55.04, 110.08, 80358.4),
        ("control-plane", "controller", sku, "on_demand", 1, fee, fee, monthly_fee),
        ("system-nodes", "controller", "c7i.2xlarge", "on_demand", 2, 0.357, 0.71, 521.22),
    ]
    assert (result["hourly_usd"], result["monthly_usd"]) == (hourly, monthly)


@pytest.mark.parametrize(
    ("cloud", "sku", "usd"),
    [("gcp", "gke/cluster", 0.10), ("aws", "eks/cluster", 0.10), ("aws", "eks/cluster-extended", 0.60)],
)
def test_every_region_of_the_cloud_has_the_control_plane_fee(cloud: Cloud, sku: str, usd: float) -> None:
    catalog = load_catalog()
    regions = profile(cloud).regions(catalog)
    fees = {region: catalog.price(cloud, sku, region, "on_demand") for region in regions}
    assert {region: float(p.usd) if p else None for region, p in fees.items()} == dict.fromkeys(regions, usd)
