"""Azure Database for MySQL flexible server, the managed accounting database on Azure: the compute tier a SKU
name belongs to (the REST API asks for both)."""

from __future__ import annotations

MYSQL_TIERS = {"B": "Burstable", "D": "GeneralPurpose", "E": "MemoryOptimized"}
"""A SKU's tier by the series letter after `Standard_`: Standard_B1ms is Burstable, Standard_D2ads_v5
General Purpose, Standard_E4ads_v5 Memory-Optimized (catalog source S-AZ-MYSQL)."""


def mysql_tier(sku: str) -> str:
    """The tier of a flexible server SKU whose name validate has checked (BP140)."""
    return MYSQL_TIERS[sku.removeprefix("Standard_")[:1]]
